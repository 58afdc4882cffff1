"""Spark SQL column expressions over a document's ``text`` (one paragraph per line): no Python UDF.
(The quality signals are computed in Python, :mod:`warcplex.corpus.signals`.)

The normalisation is cc_net's paragraph normalisation without accent stripping (Spark SQL has
no Unicode decomposition): lower case, every digit to 0, punctuation and symbols removed,
whitespace collapsed. Two lines that differ only in case, numbers or punctuation hash alike.
"""

from __future__ import annotations

from pyspark.sql import Column
from pyspark.sql import functions as F

_PUNCT_SYMBOLS = r"[\p{P}\p{S}]+"
_SPACES = r"(?U)\s+"
_DIGIT = r"(?U)\d"


def normalize(text: Column) -> Column:
    """cc_net's normalisation of one line (or of any string)."""
    lowered = F.regexp_replace(F.lower(text), _DIGIT, "0")
    spaced = F.regexp_replace(F.regexp_replace(lowered, _PUNCT_SYMBOLS, " "), _SPACES, " ")
    return F.trim(spaced)


def lines(text: Column) -> Column:
    """The document's lines (paragraphs)."""
    return F.split(text, "\n")


def normalized_text(text: Column) -> Column:
    """Every line normalised, empty ones left out, joined by newlines: the key of exact dedup."""
    normalized = F.transform(lines(text), normalize)
    return F.array_join(F.filter(normalized, lambda line: line != ""), "\n")


def words(text: Column) -> Column:
    """Whitespace-separated words (non-empty)."""
    return F.filter(F.split(text, _SPACES), lambda word: word != "")


def ngrams(tokens: Column, n: int) -> Column:
    """Word n-grams as strings; a document shorter than ``n`` words is one n-gram (none when empty).

    Built from ``n`` shifted slices zipped together. ``tokens`` must be a column reference: an
    expression would be evaluated once per slice, and Spark does not share it (an inlined split
    made the quality stage 20 times slower).
    """
    count = F.greatest(F.size(tokens) - n + 1, F.lit(1))
    zipped = F.arrays_zip(*[F.slice(tokens, j + 1, count).alias(f"w{j}") for j in range(n)])
    grams = F.transform(zipped, lambda s: F.concat_ws(" ", *[s[f"w{j}"] for j in range(n)]))
    return F.when(F.size(tokens) > 0, grams).otherwise(F.array().cast("array<string>"))
