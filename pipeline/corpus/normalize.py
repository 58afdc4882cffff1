"""cc_net's paragraph normalisation: the one definition the corpus stages share.

Lower case, every decimal digit to 0, runs of punctuation and symbols to a space, whitespace
collapsed and trimmed; no accent stripping. Two lines that differ only in case, numbers or
punctuation normalise alike. The stages run it on the Python workers (``mapInArrow``,
:func:`with_normalized`): exact dedup hashes the normalised text, repeated lines counts
normalised lines, near dedup shingles the normalised words. As Java regexes in Spark SQL it was
most of exact dedup's JVM time (about 4 CPU-seconds on 3,200 pages); as Python regexes 0.21 ms a
document, and compiled (``Normalizer`` of the compiled ``text`` part, fed this module's :func:`character_kind`)
0.04 ms.
"""

from __future__ import annotations

import hashlib
import re
import unicodedata
from functools import lru_cache
from typing import Iterator

import pyarrow as pa

from pipeline import _native
from pipeline.corpus.characters import character_kind, character_kinds, is_digit, is_mark, words


def _bmp_class(predicate) -> str:
    """A regex character class of every code point of the Basic Multilingual Plane whose category matches.

    Only the BMP: Python's regex engine tests such a class with a bitmap, while ranges beyond it are
    tested one by one at every position (30 times slower here)."""
    spans, start = [], None
    for code in range(0x10000 + 1):
        inside = code < 0x10000 and predicate(unicodedata.category(chr(code)))
        if inside and start is None:
            start = code
        elif not inside and start is not None:
            spans.append(re.escape(chr(start)) + ("-" + re.escape(chr(code - 1)) if code - 1 > start else ""))
            start = None
    return f"[{''.join(spans)}]"


@lru_cache(maxsize=1)
def _patterns() -> tuple[re.Pattern, re.Pattern]:
    """(decimal digits, punctuation and symbols) of the BMP, built once per process from ``unicodedata``."""
    return re.compile(_bmp_class(is_digit)), re.compile(_bmp_class(is_mark) + "+")


_ASTRAL = re.compile("[\U00010000-\U0010ffff]")


def _astral(match: re.Match) -> str:
    char = match.group()
    category = unicodedata.category(char)
    return "0" if is_digit(category) else " " if is_mark(category) else char


def _reference_lines(text: str) -> list[str]:
    """:func:`normalized_lines` with regular expressions: the reference the compiled :func:`_compiled`
    agrees with (``tests/test_native.py``), and what runs without it."""
    digits, marks = _patterns()
    # Lower-casing and the replacements never cross or create a line break, so the whole text is done
    # at once; a mark becomes a space alone or in a run alike, since spaces are collapsed after.
    lowered = text.lower()
    if _ASTRAL.search(lowered):
        lowered = _ASTRAL.sub(_astral, lowered)
    replaced = marks.sub(" ", digits.sub("0", lowered))
    return [" ".join(words(line)) for line in replaced.split("\n")]


@lru_cache(maxsize=1)
def _compiled():
    """The compiled normaliser (``Normalizer`` of the compiled ``text`` part, about 5 times faster), or None without
    it."""
    module = _native.compiled("text")
    return None if module is None else module.Normalizer(character_kinds(), character_kind)


def normalized_lines(text: str) -> list[str]:
    """Each line of ``text`` normalised (empty when nothing is left), aligned with ``text.split("\\n")``."""
    normalizer = _compiled()
    return normalizer.lines(text) if normalizer is not None else _reference_lines(text)


def normalized_text(text: str) -> str:
    """The non-empty normalised lines joined by newlines: what exact dedup hashes."""
    normalizer = _compiled()
    if normalizer is not None:
        return normalizer.text(text)
    return "\n".join(line for line in _reference_lines(text) if line)


def text_hash(text: str) -> str:
    """Hex SHA-256 of :func:`normalized_text`: the key of exact dedup."""
    return hashlib.sha256(normalized_text(text).encode("utf-8")).hexdigest()


# form -> (function of the text, Arrow type of the ``_normalized`` column)
FORMS = {
    "hash": (text_hash, pa.string()),
    "text": (normalized_text, pa.string()),
    "lines": (normalized_lines, pa.list_(pa.string())),
}


def with_normalized(batches: Iterator[pa.RecordBatch], form: str, keep_text: bool) -> Iterator[pa.RecordBatch]:
    """Each batch with a ``_normalized`` column (``form`` of :data:`FORMS`) after its others; ``text`` is
    dropped unless ``keep_text``."""
    function, kind = FORMS[form]
    for batch in batches:
        index = batch.schema.get_field_index("text")
        values = pa.array([function(text or "") for text in batch.column(index).to_pylist()], kind)
        kept = [i for i in range(batch.num_columns) if keep_text or i != index]
        yield pa.RecordBatch.from_arrays([batch.column(i) for i in kept] + [values],
                                         names=[batch.schema.names[i] for i in kept] + ["_normalized"])
