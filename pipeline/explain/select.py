"""Which pages to explain: by URL, by record id, a sample, or a few of each outcome group.

A page's outcome group (:func:`group`) is what the report's sample is drawn by: ``emptied`` (no text extracted,
or the filter removed it all), ``error``, ``unscored_language``, ``mostly_dropped`` (the filter removed more than
half of the text), ``fell_back:<reason>`` (a later stage's text, or the filter overruled), ``kept_filtered`` (some
lines dropped), ``kept_whole``; a page another step dropped is grouped by that step's reason. The same page is in
the same group whether it is told from its document or from its output row. A sample takes, in each group, the pages
with the smallest SHA-1 of their record id (:func:`~pipeline.writing.index_sample.sample_key`), so the sample of a run is
the union of its splits' samples, cut.
"""

from __future__ import annotations

import hashlib
import re

from pipeline.document import Document
from pipeline.steps.cascade import fallback_kind
from pipeline.writing.index_sample import sample_key

MOSTLY = 0.5  # the filter removed more than this share of the text's bytes: ``mostly_dropped``
GROUPS = {  # each group's name as the report and the index show it
    "kept_whole": "kept whole",
    "kept_filtered": "kept, some lines dropped by the filter",
    "mostly_dropped": "most of the text dropped by the filter",
    "fell_back": "fell back",
    "emptied": "emptied",
    "unscored_language": "unscored language",
    "error": "error",
}


def group(outcome: str, fallback_reason: str | None, sentences: int, scored: bool, raw_bytes: int,
          clean_bytes: int) -> str:
    """The outcome group of a page (see the module's docstring)."""
    if outcome in ("empty_extraction", "empty_after_filter"):
        return "emptied"
    if outcome.startswith("error"):
        return "error"
    if outcome == "unknown_language_dropped":
        return "unscored_language"
    if outcome != "kept":
        return outcome
    if raw_bytes and clean_bytes < (1 - MOSTLY) * raw_bytes:
        return "mostly_dropped"
    if fallback_reason:
        return f"fell_back:{fallback_kind(fallback_reason)}"
    if sentences and not scored:
        return "unscored_language"
    return "kept_filtered" if clean_bytes < raw_bytes else "kept_whole"


def document_group(doc: Document) -> str:
    """:func:`group` of a page the steps have run on."""
    return group(doc.outcome, doc.fallback_reason, len(doc.sentences),
                 any(s.perplexity is not None for s in doc.sentences), len(doc.text.encode("utf-8")),
                 len(doc.clean_text.encode("utf-8")))


def row_group(row: dict) -> str:
    """:func:`group` of an output row (every row is a kept page)."""
    return group("kept", row.get("fallback_reason"), row.get("n_sentences") or 0,
                 row.get("perplexity_median") is not None, row.get("text_bytes_raw") or 0,
                 row.get("text_bytes_clean") or 0)


def group_title(name: str) -> str:
    head, _, reason = name.partition(":")
    return f"{GROUPS.get(head, head)}: {reason}" if reason else GROUPS.get(head, head)


def smallest(items: list[tuple[str, str]], per_group: int) -> list[tuple[str, str]]:
    """Of ``(record_id, group)`` pairs, the ``per_group`` of each group with the smallest sample keys, groups in
    :data:`GROUPS` order."""
    by_group: dict[str, list[str]] = {}
    for record_id, name in items:
        by_group.setdefault(name, []).append(record_id)
    order = list(GROUPS)
    chosen = []
    for name in sorted(by_group, key=lambda n: (order.index(n.split(":")[0]) if n.split(":")[0] in order
                                                  else len(order), n)):
        chosen += [(record_id, name) for record_id in sorted(set(by_group[name]), key=sample_key)[:per_group]]
    return chosen


def file_name(number: int, url: str, record_id: str) -> str:
    """An explanation's file name: its number, the URL readable, a hash of the record id."""
    readable = re.sub(r"[^A-Za-z0-9]+", "-", re.sub(r"^[a-z]+://", "", url or "page")).strip("-")[:60]
    return f"{number:03d}-{readable}-{hashlib.sha1(record_id.encode()).hexdigest()[:8]}.html"
