"""The quality signals of one document (Gopher/C4 style): the one definition.

The quality stage runs :func:`signal_batch` on the Python workers (``mapInArrow``), where the same
work as Spark SQL expressions (arrays of words and n-grams, per-line and per-word Java regexes, a
stop-word explode and join) cost the JVM about 10 CPU-seconds on 3,200 pages. The compiled ``SignalCounter``
(the ``text`` part) is the one implementation, fed this module's character sets: 0.17 ms a document of 6,400
characters (0.53 ms in plain Python). ``tests/corpus_oracles.py`` states the rules for the tests.

Character classes are spelled out so that they do not depend on the regex engine's defaults:
words are separated by Unicode ``White_Space`` (:mod:`pipeline.corpus.characters`); the end-of-line
patterns allow ASCII whitespace (and a final line separator) after the mark.
"""

from __future__ import annotations

from functools import lru_cache

import pyarrow as pa

from pipeline import _native
from pipeline.corpus.characters import WHITE_SPACE, character_kind, character_kinds

# A line's end: ASCII white space, then at most one line separator.
LINE_SPACE = " \t\n\x0b\x0c\r"
LINE_BREAK = "\x85\u2028\u2029"
# Lines that end a sentence (C4: . ! ? and a closing quote; CJK full-width terminators too).
TERMINAL = ".!?\"'”’»…。！？"
BULLETS = "•‣◦·●○▪▫■□➢➤►▶-*–—"

# (name, Arrow type) of the columns :func:`signal_batch` appends, in this order.
SIGNAL_COLUMNS: list[tuple[str, pa.DataType]] = [
    ("q_words", pa.int32()), ("q_lines", pa.int32()), ("q_mean_word_length", pa.float64()),
    ("q_symbol_word_ratio", pa.float64()), ("q_punctuation_lines", pa.float64()), ("q_bullet_lines", pa.float64()),
    ("q_ellipsis_lines", pa.float64()), ("q_duplicate_lines", pa.float64()), ("q_duplicate_ngrams", pa.float64()),
    ("q_stop_words", pa.int32()), ("q_stop_word_share", pa.float64()),
]


@lru_cache(maxsize=None)
def stop_words(language: str | None) -> frozenset[str] | None:
    """The lower-cased stop words of ``language`` (the stop-words package), None when it has no list."""
    from stop_words import LANGUAGE_MAPPING, get_stop_words

    if language not in LANGUAGE_MAPPING:
        return None
    listed = frozenset(word.lower() for word in get_stop_words(language))
    return listed or None


@lru_cache(maxsize=1)
def _counter():
    """The compiled signals (``SignalCounter`` of the compiled ``text`` part), fed this module's character sets."""
    return _native.compiled("text").SignalCounter(character_kinds(), character_kind, WHITE_SPACE, TERMINAL, BULLETS,
                                                  LINE_SPACE, LINE_BREAK)


def document_signals(text: str, language: str | None, ngram_words: int) -> tuple:
    """The values of :data:`SIGNAL_COLUMNS` for one document (``text``: one paragraph per line).

    Shares are 0.0 when their whole is 0; the stop-word columns are None for a language without a list.
    """
    return _counter().signals(text, stop_words(language), ngram_words)


def signal_batch(batch: pa.RecordBatch, ngram_words: int) -> pa.RecordBatch:
    """``batch`` (with ``text`` and ``language`` columns) with the :data:`SIGNAL_COLUMNS` appended (run by the tasks
    that read the documents, or by a pass of its own)."""
    texts = batch.column(batch.schema.get_field_index("text")).to_pylist()
    languages = batch.column(batch.schema.get_field_index("language")).to_pylist()
    rows = [document_signals(text or "", language, ngram_words) for text, language in zip(texts, languages)]
    columns = list(zip(*rows)) if rows else [()] * len(SIGNAL_COLUMNS)
    arrays = batch.columns + [pa.array(values, kind) for values, (_, kind) in zip(columns, SIGNAL_COLUMNS)]
    return pa.RecordBatch.from_arrays(arrays, names=batch.schema.names + [name for name, _ in SIGNAL_COLUMNS])
