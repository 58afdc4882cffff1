"""cc_net's paragraph normalisation: the one definition the corpus stages share.

Lower case, every decimal digit to 0, runs of punctuation and symbols to a space, whitespace
collapsed and trimmed; no accent stripping. Two lines that differ only in case, numbers or
punctuation normalise alike. The stages run it on the Python workers (``mapInArrow``,
:func:`with_normalized`): exact dedup hashes the normalised text, repeated lines counts
normalised lines, near dedup shingles the normalised words. As Java regexes in Spark SQL it was
most of exact dedup's JVM time (about 4 CPU-seconds on 3,200 pages); as Python regexes 0.21 ms a
document; compiled (``Normalizer`` of the compiled ``text`` part, fed :func:`character_kind`), the one
implementation, 0.04 ms. ``tests/corpus_oracles.py`` states the rule for the tests.
"""

from __future__ import annotations

import hashlib
from functools import lru_cache
from typing import Iterator

import pyarrow as pa

from pipeline import _native
from pipeline.corpus.characters import character_kind, character_kinds


@lru_cache(maxsize=1)
def _normalizer():
    """The compiled normaliser (``Normalizer`` of the compiled ``text`` part), fed this package's character kinds."""
    return _native.compiled("text").Normalizer(character_kinds(), character_kind)


def normalized_lines(text: str) -> list[str]:
    """Each line of ``text`` normalised (empty when nothing is left), aligned with ``text.split("\\n")``."""
    return _normalizer().lines(text)


def normalized_text(text: str) -> str:
    """The non-empty normalised lines joined by newlines: what exact dedup hashes."""
    return _normalizer().text(text)


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
