"""Spark SQL column expressions over a document's ``text`` (one paragraph per line): no Python UDF.

The normalisation (:mod:`pipeline.corpus.normalize`) and the quality signals
(:mod:`pipeline.corpus.signals`) are Python, run on the workers.
"""

from __future__ import annotations

from pyspark.sql import Column
from pyspark.sql import functions as F

_SPACES = r"(?U)\s+"


def lines(text: Column) -> Column:
    """The document's lines (paragraphs)."""
    return F.split(text, "\n")


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
