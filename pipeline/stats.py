"""Additive run statistics: every task counts into a :class:`Stats`, the driver merges them.

Counters are flat dotted keys (``records.kept``, ``skip.not_html``, ``lang.en.pages``,
``cpu.extract``) so merging is plain addition; :meth:`Stats.to_dict` nests them for
``stats.json``. File-level read errors are kept per file with their message.
"""

from __future__ import annotations

import time
from collections import Counter
from contextlib import contextmanager
from typing import Any, Iterator

from pipeline.redact import redact


class Stats:
    """Mergeable counters plus per-file errors."""

    __slots__ = ("counts", "file_errors")

    def __init__(self) -> None:
        self.counts: Counter[str] = Counter()
        self.file_errors: dict[str, str] = {}

    def add(self, key: str, amount: float = 1) -> None:
        self.counts[key] += amount

    def set_max(self, key: str, value: float) -> None:
        """A counter that merges by maximum, not sum (``*.max_*`` keys, e.g. peak RSS)."""
        if ".max_" not in key:
            raise ValueError(f"stats key {key!r}: max counters need '.max_' in their name")
        self.counts[key] = max(self.counts.get(key, value), value)

    def merge(self, other: "Stats") -> "Stats":
        maxima = {k: max(v, self.counts[k]) for k, v in other.counts.items() if ".max_" in k and k in self.counts}
        self.counts.update(other.counts)
        for key, value in maxima.items():  # Counter.update added them; max counters keep the maximum
            self.counts[key] = value
        for name, error in other.file_errors.items():
            self.file_errors.setdefault(name, error)
        return self

    def to_dict(self) -> dict[str, Any]:
        nested: dict[str, Any] = {}
        for key in sorted(self.counts):
            node = nested
            *parents, leaf = key.split(".")
            for part in parents:
                node = node.setdefault(part, {})
                if not isinstance(node, dict):
                    raise ValueError(f"stats key {key!r} collides with a counter")
            value = self.counts[key]
            node[leaf] = round(value, 6) if isinstance(value, float) else value
        if self.file_errors:
            nested["file_errors"] = redact(dict(sorted(self.file_errors.items())), secret_keys=False)
        return nested

    @classmethod
    def from_dict(cls, tree: dict[str, Any]) -> "Stats":
        stats = cls()
        stats.file_errors.update(tree.get("file_errors", {}))

        def walk(node: dict[str, Any], prefix: str) -> None:
            for key, value in node.items():
                if prefix == "" and key == "file_errors":
                    continue
                full = f"{prefix}{key}"
                if isinstance(value, dict):
                    walk(value, full + ".")
                else:
                    stats.counts[full] = value

        walk(tree, "")
        return stats


def index_summary_lines(index: dict[str, Any]) -> list[str]:
    """summary.txt lines of ``stats["index"]``: the tantivy indexes along the chain with the search side (index
    size, query CPU and its spread over repeated passes, and a payback only where the query CPU differs from all
    visible text's by more than that spread), or why they were skipped."""
    if index.get("skipped"):
        return [f"  index statistics skipped: {index['skipped']}"]
    chain = index.get("chain", [])
    if not chain:
        return []
    sample = index.get("sample", {})
    drawn = (f"{index['pages']:,} of {sample.get('of_pages', 0):,} pages"
             + ("" if sample.get("exact", True) else ", a per-split sample")
             + f", {sample.get('splits', 1)} split(s) keeping at most {sample.get('per_split', 0):,} each")
    first = chain[0]["step"]
    queries = index["queries"]
    lines = [f"  search side ({drawn}; tantivy; {queries['count']} queries drawn from the pages, CPU per query: "
             f"median and spread of {queries.get('repeats', 1)} passes):"]
    for link in chain:
        if link["step"] == first:
            paid = ""
        elif not link.get("query_difference_measurable"):
            paid = f"; payback not measurable at this size (query CPU within the spread of {first})"
        elif link.get("breakeven_queries") is None:
            paid = "; cleaning never pays back (its queries cost no less)"
        else:
            paid = f"; cleaning paid back after {link['breakeven_queries']:,} queries"
        spread = link.get("query_cpu_spread_seconds", 0.0) * 1e6
        lines.append(f"    {link['step']}: {link['index_bytes']:,} B ({100 * (link['share_of_first']['index_bytes'] or 0):.1f}%"
                     f" of {first}), {link['query_cpu_seconds'] * 1e6:,.2f} us/query (spread {spread:,.2f}){paid}")
    lines += [f"  index chain: no {missing}" for missing in index.get("chain_missing", [])]
    return lines


@contextmanager
def timed(stats: Stats, key: str) -> Iterator[None]:
    """Add the CPU seconds (``time.process_time``) of a ``with`` block to ``stats[key]``."""
    start = time.process_time()
    try:
        yield
    finally:
        stats.add(key, time.process_time() - start)
