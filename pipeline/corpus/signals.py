"""The quality signals of one document (Gopher/C4 style): the one definition.

The quality stage runs :func:`with_signals` on the Python workers (``mapInArrow``), where the same
work as Spark SQL expressions (arrays of words and n-grams, per-line and per-word Java regexes, a
stop-word explode and join) cost the JVM about 10 CPU-seconds on 3,200 pages. The rules are this
module's character sets and its Python (:func:`_reference_signals`, 0.53 ms a document of 6,400
characters); the compiled ``SignalCounter`` (the ``text`` part) computes the same values from the same sets in
0.17 ms and runs where it is built.

Character classes are spelled out so that they do not depend on the regex engine's defaults:
words are separated by Unicode ``White_Space`` (:mod:`pipeline.corpus.characters`); the end-of-line
patterns allow ASCII whitespace (and a final line separator) after the mark.
"""

from __future__ import annotations

import re
import unicodedata
from collections import Counter
from functools import lru_cache
from typing import Iterator

import pyarrow as pa

from pipeline import _native
from pipeline.corpus.characters import WHITE_SPACE, character_kind, character_kinds, is_mark, words
# A line's end: ASCII white space, then at most one line separator.
LINE_SPACE = " \t\n\x0b\x0c\r"
LINE_BREAK = "\x85\u2028\u2029"
_LINE_END = f"[{re.escape(LINE_SPACE)}]*[{LINE_BREAK}]?\\Z"
# Lines that end a sentence (C4: . ! ? and a closing quote; CJK full-width terminators too).
TERMINAL = ".!?\"'”’»…。！？"
BULLETS = "•‣◦·●○▪▫■□➢➤►▶-*–—"
_TERMINAL = re.compile(f"[{re.escape(TERMINAL)}]" + _LINE_END)
_BULLET = re.compile(f"[{re.escape(LINE_SPACE)}]*[{re.escape(BULLETS)}]")
_ELLIPSIS_END = re.compile(r"(?:\.\.\.|…)" + _LINE_END)
_SYMBOL = re.compile(r"#|\.\.\.|…")

# (name, Arrow type) of the columns :func:`with_signals` appends, in this order.
SIGNAL_COLUMNS: list[tuple[str, pa.DataType]] = [
    ("q_words", pa.int32()), ("q_lines", pa.int32()), ("q_mean_word_length", pa.float64()),
    ("q_symbol_word_ratio", pa.float64()), ("q_punctuation_lines", pa.float64()), ("q_bullet_lines", pa.float64()),
    ("q_ellipsis_lines", pa.float64()), ("q_duplicate_lines", pa.float64()), ("q_duplicate_ngrams", pa.float64()),
    ("q_stop_words", pa.int32()), ("q_stop_word_share", pa.float64()),
]


def _share(part: int, whole: int) -> float:
    return part / whole if whole > 0 else 0.0


@lru_cache(maxsize=None)
def stop_words(language: str | None) -> frozenset[str] | None:
    """The lower-cased stop words of ``language`` (the stop-words package), None when it has no list."""
    from stop_words import LANGUAGE_MAPPING, get_stop_words

    if language not in LANGUAGE_MAPPING:
        return None
    listed = frozenset(word.lower() for word in get_stop_words(language))
    return listed or None


@lru_cache(maxsize=1 << 16)
def _punctuation_or_symbol(char: str) -> bool:
    return is_mark(unicodedata.category(char))


def _stripped(word: str) -> str:
    """``word`` without leading and trailing punctuation and symbols (how it is matched against stop words)."""
    if word[0].isalnum() and word[-1].isalnum():  # no letter or digit is punctuation or a symbol
        return word
    start, end = 0, len(word)
    while start < end and _punctuation_or_symbol(word[start]):
        start += 1
    while end > start and _punctuation_or_symbol(word[end - 1]):
        end -= 1
    return word[start:end]


def _reference_signals(text: str, stop: frozenset[str] | None, ngram_words: int) -> tuple:
    """:func:`document_signals` in Python: the reference the compiled ``SignalCounter`` agrees with
    (``tests/test_native.py``), and what runs without it."""
    lines = text.split("\n")
    tokens = words(text)
    n_lines, n_words = len(lines), len(tokens)
    lowered = words(text.lower())
    n_grams = len(lowered) - ngram_words + 1
    if n_grams > 1:
        grams = zip(*(lowered[i:] for i in range(ngram_words)))
        duplicate_ngrams = _share(n_grams - len(set(grams)), n_grams)
    else:  # one n-gram (the whole text when it is shorter than n words) or none: nothing repeats
        duplicate_ngrams = 0.0
    n_stop = None if stop is None else sum(n for word, n in Counter(lowered).items() if _stripped(word) in stop)
    return (
        n_words,
        n_lines,
        _share(sum(map(len, tokens)), n_words),
        _share(len(_SYMBOL.findall(text)), n_words),
        _share(sum(1 for line in lines if _TERMINAL.search(line)), n_lines),
        _share(sum(1 for line in lines if _BULLET.match(line)), n_lines),
        _share(sum(1 for line in lines if _ELLIPSIS_END.search(line)), n_lines),
        _share(n_lines - len(set(lines)), n_lines),
        duplicate_ngrams,
        n_stop,
        None if n_stop is None else _share(n_stop, n_words),
    )


@lru_cache(maxsize=1)
def _compiled():
    """The compiled signals (``SignalCounter`` of the compiled ``text`` part, about 3 times faster), or None without
    it."""
    module = _native.compiled("text")
    if module is None:
        return None
    return module.SignalCounter(character_kinds(), character_kind, WHITE_SPACE, TERMINAL, BULLETS,
                                LINE_SPACE, LINE_BREAK)


def document_signals(text: str, language: str | None, ngram_words: int) -> tuple:
    """The values of :data:`SIGNAL_COLUMNS` for one document (``text``: one paragraph per line).

    Shares are 0.0 when their whole is 0; the stop-word columns are None for a language without a list.
    """
    counter = _compiled()
    if counter is not None:
        return counter.signals(text, stop_words(language), ngram_words)
    return _reference_signals(text, stop_words(language), ngram_words)


def with_signals(batches: Iterator[pa.RecordBatch], ngram_words: int) -> Iterator[pa.RecordBatch]:
    """Each batch (with ``text`` and ``language`` columns) with the :data:`SIGNAL_COLUMNS` appended."""
    for batch in batches:
        texts = batch.column(batch.schema.get_field_index("text")).to_pylist()
        languages = batch.column(batch.schema.get_field_index("language")).to_pylist()
        rows = [document_signals(text or "", language, ngram_words) for text, language in zip(texts, languages)]
        columns = list(zip(*rows)) if rows else [()] * len(SIGNAL_COLUMNS)
        arrays = batch.columns + [pa.array(values, kind) for values, (_, kind) in zip(columns, SIGNAL_COLUMNS)]
        yield pa.RecordBatch.from_arrays(arrays, names=batch.schema.names + [name for name, _ in SIGNAL_COLUMNS])
