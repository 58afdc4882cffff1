"""Step ``cascade``: extraction stages tried in ``extract.cascade`` order, each judged by the steps after it.

For each stage the cascade runs the stage, then the rest of ``pipeline.steps`` (language ID,
sentences, the filter, ...) on its text, and keeps the result unless :func:`filtered_too_much`
(its fallback rule) says the filter removed too much; a stage that overrules the filter (the block
stage) then keeps its text with the filter's removals undone (:meth:`Cascade.overrule_filter`).
A stage that raises, times out, returns nothing or shows evidence that its text is incomplete
(:func:`incomplete`) passes the page to the next stage, or to the later stage its evidence names
(:meth:`~warcplex.steps.extractors.Extractor.skip_to`; the stages between count ``skipped``); the
last stage's result is kept as it is.
A step after the cascade that drops the page ends it (no fallback). A WET record's text
(``wet``) is the one stage of a WET page.
"""

from __future__ import annotations

from typing import Callable

from warcplex.config import ExtractSettings, Settings
from warcplex.document import Document
from warcplex.steps import guards
from warcplex.steps.base import Step
from warcplex.steps.extractors import Extractor, WetExtractor, build_extractor
from warcplex.steps.perplexity import REASON_PREFIX

FallbackRule = Callable[[Document, ExtractSettings], "str | None"]


def filtered_too_much(doc: Document, settings: ExtractSettings) -> str | None:
    """The fallback rule: the filter removed more than ``extract.max_removed_share`` of the sentences."""
    total = len(doc.sentences)
    removed = sum(1 for s in doc.sentences if not s.kept)
    if total and removed / total > settings.max_removed_share:
        return f"filtered_{removed}of{total}"
    return None


def incomplete(extractor: Extractor, doc: Document, settings: ExtractSettings, has_next: bool) -> str | None:
    """The rule before the steps after a stage: ``empty`` (fewer than ``extract.min_text_chars``
    characters), or, when a later stage exists, the stage's own evidence that its text misses main
    content (the block stage: ``short_<kept>of<primary>`` words against resiliparse's main-content
    pass, :func:`warcplex.steps.blocks.step.shorter_than_primary`)."""
    if len(doc.text.strip()) < max(1, settings.min_text_chars):
        return "empty"
    return extractor.incomplete(doc.text) if has_next else None


class Cascade(Step):
    """The extraction cascade (SORE's fallback): ``extractors``, each followed by ``then``."""

    name = "cascade"

    def __init__(self, extractors: list[Extractor], then: list[Step], settings: ExtractSettings,
                 fallback: FallbackRule = filtered_too_much) -> None:
        super().__init__(settings)
        self.extractors = extractors
        self.wet = WetExtractor()
        self.then = then
        self.fallback = fallback

    @classmethod
    def build(cls, settings: Settings, then: list[Step]) -> "Cascade":
        names = settings.extract.cascade
        return cls([build_extractor(name, settings, first=i == 0) for i, name in enumerate(names)], then,
                   settings.extract)

    @property
    def steps(self) -> list[Step]:
        """Every step the cascade runs (whose counters the split's stats take in)."""
        return [*self.extractors, self.wet, *self.then]

    def __call__(self, doc: Document) -> Document | None:
        return self.run(doc)  # each stage and step times itself

    def prepare(self, docs: list[Document]) -> None:
        """Let the first stage prepare the HTML pages of the loop's window (:meth:`Extractor.prepare`) before
        they come one by one. A guard interrupt while preparing leaves each page to be extracted on its own."""
        htmls = [doc.html for doc in docs if doc.page.kind != "wet"]
        if htmls and self.extractors:
            try:
                self.extractors[0].prepare(htmls)
            except guards.GUARD_INTERRUPTS:
                guards.restart()

    @staticmethod
    def overrule_filter(extractor: Extractor, doc: Document, reason: str) -> Document:
        """Keep a stage whose own evidence outweighs the filter's (:attr:`Extractor.overrules_filter`) although
        the filter removed too much of it: the filter's removals are undone (scores stay), the decision is
        the row's ``fallback_reason`` (``<stage>_kept_filtered_<removed>of<total>``)."""
        for sentence in doc.sentences:
            if sentence.reason is not None and sentence.reason.startswith(REASON_PREFIX):
                sentence.kept, sentence.reason = True, None
        extractor.count("filter_overruled")
        doc.fallback_reason = reason
        return doc

    def run(self, doc: Document) -> Document | None:
        first_reason: str | None = None
        guard_failure: str | None = None
        stages = [self.wet] if doc.page.kind == "wet" else self.extractors
        last_stage = len(stages) - 1
        skip_to: str | None = None
        for position, extractor in enumerate(stages):
            if skip_to is not None:
                if extractor.name != skip_to:
                    extractor.count("skipped")
                    continue
                skip_to = None
            try:
                extractor(doc)
            except guards.GUARD_INTERRUPTS as exc:  # too slow or too big: the next stage gets a fresh limit
                guard_failure = guards.guard_kind(exc)
                extractor.count(f"error.{guard_failure}")
                first_reason = first_reason or f"{extractor.name}_{guard_failure}"
                guards.restart()
                continue
            except Exception as exc:
                extractor.count(f"error.{type(exc).__name__}")
                first_reason = first_reason or f"{extractor.name}_error"
                continue
            guards.restart()  # the time limit holds per stage: the steps after it get their own
            reason = incomplete(extractor, doc, self.settings, position < last_stage)
            if reason:
                extractor.count(reason.split("_")[0])
                first_reason = first_reason or f"{extractor.name}_{reason}"
                target = extractor.skip_to(reason)
                skip_to = target if target in [stage.name for stage in stages[position + 1:]] else None
                continue
            doc.fallback_reason = first_reason
            for step in self.then:
                if step(doc) is None:
                    return None
            reason = self.fallback(doc, self.settings) if position < last_stage else None
            if reason and extractor.overrules_filter:
                return self.overrule_filter(extractor, doc, first_reason or f"{extractor.name}_kept_{reason}")
            if reason:
                extractor.count("filtered_too_much")
                first_reason = first_reason or f"{extractor.name}_{reason}"
                continue
            return doc
        doc.text, doc.sentences, doc.extractor, doc.fallback_reason = "", [], None, first_reason
        return self.drop(doc, f"error.{guard_failure}" if guard_failure else "empty_extraction")
