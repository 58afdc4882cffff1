"""The corpus stages in the summary and the report: one place that reads ``stats["corpus"]``."""

from __future__ import annotations

from typing import Any


def summary_lines(corpus: dict[str, Any] | None) -> list[str]:
    """Lines for summary.txt: documents and bytes in and out, then each stage's own counts."""
    if not corpus:
        return []
    if corpus.get("skipped"):
        return [f"  corpus stages skipped: {corpus['skipped']}"]
    resumed = " (unchanged input: kept from the previous run)" if corpus.get("resumed") else ""
    lines = [f"  corpus: {corpus['documents_in']} -> {corpus['documents_out']} documents, "
             f"{corpus['bytes_in']} -> {corpus['bytes_out']} text bytes{resumed}"]
    if corpus.get("build") == "incremental":
        lines.append(f"  corpus build {corpus['generation']}: added {corpus['documents_new']} new documents to the "
                     f"earlier builds; {corpus.get('demoted', 0)} earlier documents demoted by an earlier copy, "
                     f"{corpus.get('files_rewritten', 0)} earlier files rewritten")
    elif corpus.get("full_reason"):
        lines.append(f"  corpus: this build read all of data/: {corpus['full_reason']}")
    for name, row in stage_rows(corpus):
        lines.append(f"    {name}: {row}")
    return lines


def stage_rows(corpus: dict[str, Any]) -> list[tuple[str, str]]:
    """(stage, what it removed) in stage order."""
    rows = []
    for name in corpus.get("order", []):
        stage = corpus["stages"][name]
        parts = []
        if stage.get("lines_removed"):
            parts.append(f"{stage['lines_removed']} lines removed ({stage.get('line_bytes_removed', 0)} bytes)")
        parts += [f"{count} {reason}" for reason, count in sorted(stage.get("dropped", {}).items())]
        processed = stage.get("documents_processed", stage.get("documents_in"))
        per_doc = stage["wall_seconds"] / processed if processed else 0.0
        with_final = " with the final write" if stage.get("with_final_write") else ""
        parts.append(f"{stage['wall_seconds']:.1f} s wall{with_final} ({1000 * per_doc:.2f} ms/document)")
        rows.append((name, ", ".join(parts) if len(parts) > 1 else f"nothing removed, {parts[-1]}"))
    return rows


def report_table(corpus: dict[str, Any] | None) -> list[list[Any]]:
    """Rows [stage, documents in, documents out, bytes in, bytes out, lines removed, dropped by reason]."""
    if not corpus or corpus.get("skipped"):
        return []
    rows = []
    for name in corpus.get("order", []):
        stage = corpus["stages"][name]
        dropped = ", ".join(f"{reason} {count}" for reason, count in sorted(stage.get("dropped", {}).items()))
        rows.append([name, stage.get("documents_in", 0), stage["documents_out"], stage.get("bytes_in", 0),
                     stage["bytes_out"], stage.get("lines_removed", 0), dropped or "-"])
    return rows
