"""Spark SQL column expressions over a document's ``text`` (one paragraph per line): no Python UDF.

The normalisation is cc_net's paragraph normalisation without accent stripping (Spark SQL has
no Unicode decomposition): lower case, every digit to 0, punctuation and symbols removed,
whitespace collapsed. Two lines that differ only in case, numbers or punctuation hash alike.
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

_PUNCT_SYMBOLS = r"[\p{P}\p{S}]+"
_SPACES = r"(?U)\s+"
_DIGIT = r"(?U)\d"
# Lines that end a sentence (C4: . ! ? and a closing quote; CJK full-width terminators too).
_TERMINAL = r"[.!?\"'”’»…。！？]\s*$"
_BULLET = r"^\s*[•‣◦·●○▪▫■□➢➤►▶\-*–—]"
_ELLIPSIS_END = r"(\.\.\.|…)\s*$"


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

    Built from ``n`` shifted slices zipped together. ``tokens`` must be a column reference (see
    :func:`with_quality_signals`): an expression would be evaluated once per slice, and Spark does not
    share it (an inlined split made the quality stage 20 times slower).
    """
    count = F.greatest(F.size(tokens) - n + 1, F.lit(1))
    zipped = F.arrays_zip(*[F.slice(tokens, j + 1, count).alias(f"w{j}") for j in range(n)])
    grams = F.transform(zipped, lambda s: F.concat_ws(" ", *[s[f"w{j}"] for j in range(n)]))
    return F.when(F.size(tokens) > 0, grams).otherwise(F.array().cast("array<string>"))


def share(part: Column, whole: Column) -> Column:
    """``part / whole`` as a double, 0.0 when ``whole`` is 0 (Spark's ANSI mode raises on division by 0)."""
    return F.when(whole > 0, part.cast("double") / whole).otherwise(F.lit(0.0))


def count_matching(items: Column, pattern: str) -> Column:
    """How many strings of an array match a Java regex."""
    return F.size(F.filter(items, lambda item: item.rlike(pattern)))


def with_quality_signals(docs: DataFrame, ngram_words: int) -> DataFrame:
    """``docs`` with the Gopher/C4 signals of each document as ``q_*`` columns (stop words are joined
    separately). The lines, words and n-grams are columns of their own first, so each is computed
    once per document however many signals read it."""
    docs = docs.withColumns({"_lines": lines(F.col("text")), "_words": words(F.col("text")),
                             "_lower_words": words(F.lower(F.col("text")))})
    docs = docs.withColumn("_grams", ngrams(F.col("_lower_words"), ngram_words))
    doc_lines, tokens, grams = F.col("_lines"), F.col("_words"), F.col("_grams")
    n_lines, n_words = F.size(doc_lines), F.size(tokens)
    word_chars = F.aggregate(tokens, F.lit(0), lambda acc, word: acc + F.length(word))
    symbols = F.size(F.regexp_extract_all(F.col("text"), F.lit(r"(#|\.\.\.|…)"), 1))
    return docs.withColumns({
        "q_words": n_words,
        "q_lines": n_lines,
        "q_mean_word_length": share(word_chars, n_words),
        "q_symbol_word_ratio": share(symbols, n_words),
        "q_punctuation_lines": share(count_matching(doc_lines, _TERMINAL), n_lines),
        "q_bullet_lines": share(count_matching(doc_lines, _BULLET), n_lines),
        "q_ellipsis_lines": share(count_matching(doc_lines, _ELLIPSIS_END), n_lines),
        "q_duplicate_lines": share(n_lines - F.size(F.array_distinct(doc_lines)), n_lines),
        "q_duplicate_ngrams": share(F.size(grams) - F.size(F.array_distinct(grams)), F.size(grams)),
    }).drop("_lines", "_words", "_lower_words", "_grams")


def stop_word_tokens(text: Column) -> Column:
    """Lower-cased words with surrounding punctuation removed, as matched against stop-word lists."""
    stripped = F.transform(words(F.lower(text)), lambda w: F.regexp_replace(w, r"^[\p{P}\p{S}]+|[\p{P}\p{S}]+$", ""))
    return F.filter(stripped, lambda w: w != "")
