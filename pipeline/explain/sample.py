"""``warcplex run --explain-sample N``: N pages of each outcome group explained with the run, under ``OUTPUT/explain/``.

Each split keeps, per outcome group (:func:`~pipeline.explain.select.document_group`), the N pages with the smallest
sample keys it has seen, and after its pages runs those again through the traced loop
(:class:`~pipeline.explain.trace.TracingLoop`, the same settings) and writes their explanations with a list of them
(``explain/<split>.json``). The report links the N of each group with the smallest keys over all splits
(:func:`explained_pages`). A run without the option builds none of this.
"""

from __future__ import annotations

import json

from pyarrow import fs as pafs

from pipeline.config import S3Settings, Settings
from pipeline.document import Document
from pipeline.explain.render import dropped_sentences, explanation, index_page
from pipeline.explain.select import document_group, file_name, smallest
from pipeline.explain.trace import TracingLoop
from pipeline.stats import Stats
from pipeline.writing.output import OutputTarget
from pipeline.writing.index_sample import sample_key

EXPLAIN_DIR = "explain"


def entry(doc: Document, name: str, file: str, run_text: str | None,
          run_dropped: list[tuple[str, str]] | None = None) -> dict:
    """A line of an explanation list (:func:`~pipeline.explain.render.index_page`); ``same``: the kept text (and the
    dropped sentences, when given) are the run's, None when there is nothing to compare."""
    same = None if run_text is None else doc.clean_text == run_text
    if same and run_dropped is not None:
        same = sorted(run_dropped) == sorted(dropped_sentences(doc))
    return {"record_id": doc.page.record_id, "url": doc.page.url, "group": name, "file": file,
            "outcome": doc.outcome, "extractor": doc.extractor, "fallback_reason": doc.fallback_reason,
            "language": doc.language_code, "same": same, "extracted": len(doc.text.encode("utf-8")),
            "written": len(doc.clean_text.encode("utf-8"))}


class RunSample:
    """The pages of one split to explain: ``per_group`` of each outcome group, the smallest sample keys."""

    def __init__(self, per_group: int) -> None:
        self.per_group = per_group
        self.groups: dict[str, list[tuple[bytes, object, str]]] = {}  # group -> (key, page, the text the run wrote)

    def offer(self, doc: Document) -> None:
        chosen = self.groups.setdefault(document_group(doc), [])
        key = sample_key(doc.page.record_id)
        if len(chosen) < self.per_group or key < chosen[-1][0]:
            chosen.append((key, doc.page, doc.clean_text))
            chosen.sort(key=lambda item: item[0])
            del chosen[self.per_group:]

    def write(self, settings: Settings, target: OutputTarget, split_id: str, stats: Stats) -> None:
        """Explain the chosen pages into ``explain/<split_id>/`` and list them in ``explain/<split_id>.json``."""
        chosen = [(name, page, text) for name, items in self.groups.items() for _, page, text in items]
        if not chosen:
            return
        loop = TracingLoop(settings)
        entries = []
        for number, ((name, page, run_text), doc) in enumerate(zip(chosen, loop.run(p for _, p, _ in chosen))):
            file = f"{split_id}/{file_name(number, page.url, page.record_id)}"
            page_html = explanation(doc, settings, loop.threshold, run_text, index="../index.html")
            target.write_bytes(f"{EXPLAIN_DIR}/{file}", page_html.encode("utf-8"))
            entries.append(entry(doc, name, file, run_text))
            stats.add("explain.pages")
            if not entries[-1]["same"]:
                stats.add("explain.differs")  # the traced run did not make the run's decisions
        target.write_bytes(f"{EXPLAIN_DIR}/{split_id}.json", json.dumps(entries, indent=1).encode("utf-8"))


def all_explained(output: str, s3: S3Settings) -> list[dict]:
    """Every explanation a run wrote (the ``explain/<split>.json`` lists), ``file`` relative to ``explain/``."""
    target = OutputTarget(output, s3)
    selector = pafs.FileSelector(target.path(EXPLAIN_DIR), recursive=False, allow_not_found=True)
    entries = []
    for info in sorted(target.fs.get_file_info(selector), key=lambda i: i.base_name):
        if info.base_name.endswith(".json"):
            entries += json.loads(target.read_bytes(f"{EXPLAIN_DIR}/{info.base_name}") or b"[]")
    return entries


def explained_pages(entries: list[dict], per_group: int) -> list[dict]:
    """Of a run's explanations, the ``per_group`` of each outcome group the report links (smallest sample keys)."""
    by_id = {(e["record_id"], e["group"]): e for e in entries}
    return [by_id[key] for key in smallest([(e["record_id"], e["group"]) for e in entries], per_group)]


def write_index(output: str, settings: Settings) -> int:
    """``explain/index.html``: every explanation of the run; returns how many (0: none, nothing written)."""
    entries = all_explained(output, settings.s3)
    if entries:
        page = index_page(explained_pages(entries, len(entries)), "warcplex: pages explained with the run")
        OutputTarget(output, settings.s3).write_bytes(f"{EXPLAIN_DIR}/index.html", page.encode("utf-8"))
    return len(entries)
