"""Step ``cascade``: extraction stages tried in ``extract.cascade`` order, each judged by the steps after it.

For each stage the cascade runs the stage, then the rest of ``pipeline.steps`` (language ID,
sentences, the filter, ...) on its text, and keeps the result unless :func:`filtered_too_much`
(its fallback rule) says the filter removed too much; a stage that overrules the filter (the block
stage) then keeps its text with the filter's removals undone (:meth:`Cascade.overrule_filter`).
A stage that raises, times out, returns nothing or shows evidence that its text is incomplete
(:func:`incomplete`) passes the page to the next stage, or to the later stage its evidence names
(:meth:`~pipeline.steps.extractors.Extractor.skip_to`; the stages between count ``skipped``); the
last stage's result is kept as it is.
A step after the cascade that drops the page ends it (no fallback). A page whose reader names its
extractor (:attr:`~pipeline.document.Page.extractor`: a WET record's text is ``wet``) has that one stage.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from typing import Callable

from pipeline.config import ExtractSettings, Settings
from pipeline.document import Document
from pipeline.steps import guards
from pipeline.steps.base import Step
from pipeline.steps.extractors import Extractor, build_extractor
from pipeline.perplexity_rule import REASON_PREFIX

FallbackRule = Callable[[Document, ExtractSettings], "str | None"]

_COUNTS = re.compile(r"_\d+of\d+$")  # `blocks_short_12of340`, `x_filtered_9of10`


def fallback_kind(reason: str) -> str:
    """A fallback reason without its counts (``blocks_short_12of340`` -> ``blocks_short``): what stats count."""
    return _COUNTS.sub("", reason)


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
    pass, :func:`pipeline.steps.blocks.step.shorter_than_primary`)."""
    if len(doc.text.strip()) < max(1, settings.min_text_chars):
        return "empty"
    return extractor.incomplete(doc) if has_next else None


class Cascade(Step):
    """The extraction cascade (SORE's fallback): ``extractors``, each followed by ``then``."""

    name = "cascade"

    def __init__(self, extractors: list[Extractor], then: list[Step], settings: ExtractSettings,
                 fallback: FallbackRule = filtered_too_much,
                 build: Callable[[str], Extractor] | None = None) -> None:
        super().__init__(settings)
        self.extractors = extractors
        self.then = then
        self.fallback = fallback
        self.build_stage = build  # an extractor by name, for the pages that name their own (Page.extractor)
        self.named: dict[str, Extractor] = {}  # ... built when the first such page comes

    @classmethod
    def build(cls, settings: Settings, then: list[Step]) -> "Cascade":
        names = settings.extract.cascade
        return cls([build_extractor(name, settings, first=i == 0) for i, name in enumerate(names)], then,
                   settings.extract, build=functools.partial(build_extractor, settings=settings))

    @property
    def steps(self) -> list[Step]:
        """Every step the cascade runs (whose counters the split's stats take in)."""
        return [*self.extractors, *self.named.values(), *self.then]

    def __call__(self, doc: Document) -> Document | None:
        return self.run(doc)  # each stage and step times itself

    def prepare(self, docs: list[Document]) -> None:
        """Let the first stage prepare the HTML pages of the loop's window (:meth:`Extractor.prepare`) before
        they come one by one. A guard interrupt while preparing leaves each page to be extracted on its own."""
        htmls = [doc.html for doc in docs if doc.page.extractor is None]
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
        return self._go_on(doc, _Attempt(self._stages(doc)))

    def run_window(self, docs: list[Document]) -> list[tuple[Document, bool]]:
        """:meth:`run` of each page of the loop's window, and whether it went through (the loop's ``_through``).

        Each page's first text goes through the steps after the cascade one step at a time over the whole
        window (every page's language, then every page's sentences, then the filter), so that each step's
        model stays in the CPU's caches across the window instead of being pushed out by the others' page by
        page: the same results, less CPU. A page whose text the fallback rule rejects goes on alone, as in
        :meth:`run`. Each step call has a fresh time limit; a guard interrupt in one ends that page only, as
        ``error.timeout``/``error.memory``.
        """
        results: list[tuple[Document, bool] | None] = [None] * len(docs)
        attempts = [_Attempt(self._stages(doc)) for doc in docs]
        pending = []  # the pages whose text waits for the steps
        for i, (doc, attempt) in enumerate(zip(docs, attempts)):
            guards.restart()
            try:
                extracted = self._extract(doc, attempt)
            except guards.GUARD_INTERRUPTS as exc:  # outside a stage (a stage's own falls through to the next)
                results[i] = (guards.interrupted(doc, exc), False)
                continue
            if extracted:
                pending.append(i)
            else:
                self._exhausted(doc, attempt)
                results[i] = (doc, False)
        for step in self.then:
            going = []
            for i in pending:
                guards.restart()
                try:
                    if step(docs[i]) is None:
                        results[i] = (docs[i], False)
                        continue
                except guards.GUARD_INTERRUPTS as exc:
                    results[i] = (guards.interrupted(docs[i], exc), False)
                    continue
                going.append(i)
            pending = going
        for i in pending:
            guards.restart()
            try:
                judged = self._judge(docs[i], attempts[i])
            except guards.GUARD_INTERRUPTS as exc:
                results[i] = (guards.interrupted(docs[i], exc), False)
                continue
            results[i] = (docs[i], judged is not None)
        return results  # type: ignore[return-value]  # every page has its result

    def _stages(self, doc: Document) -> list[Extractor]:
        """The page's stages: the cascade's, or the one its reader names."""
        name = doc.page.extractor
        if name is None:
            return self.extractors
        if name not in self.named:
            self.named[name] = self.build_stage(name)
        return [self.named[name]]

    def _go_on(self, doc: Document, attempt: "_Attempt") -> Document | None:
        """The cascade from ``attempt.position`` on: each stage's text through the steps after it until one is kept."""
        if not self._extract(doc, attempt):
            return self._exhausted(doc, attempt)
        for step in self.then:
            if step(doc) is None:
                return None
        return self._judge(doc, attempt)

    def _extract(self, doc: Document, attempt: "_Attempt") -> bool:
        """Run the stages from ``attempt.position`` until one gives text for the steps after it (True; its position
        is then ``attempt.position``), passing the page on when a stage raises, times out, returns nothing or
        shows its text is incomplete (False: no stage is left)."""
        stages = attempt.stages
        last_stage = len(stages) - 1
        for position in range(attempt.position, len(stages)):
            extractor = stages[position]
            if attempt.skip_to is not None:
                if extractor.name != attempt.skip_to:
                    extractor.count("skipped")
                    if doc.trace is not None:
                        doc.trace.tried(extractor.name, "skipped", f"passed over for {attempt.skip_to}")
                    continue
                attempt.skip_to = None
            try:
                extractor(doc)
            except guards.GUARD_INTERRUPTS as exc:  # too slow or too big: the next stage gets a fresh limit
                attempt.guard_failure = guards.guard_kind(exc)
                extractor.count(f"error.{attempt.guard_failure}")
                attempt.first_reason = attempt.first_reason or f"{extractor.name}_{attempt.guard_failure}"
                guards.restart()
                if doc.trace is not None:
                    doc.trace.tried(extractor.name, attempt.guard_failure, f"{type(exc).__name__}: {exc}")
                continue
            except Exception as exc:
                extractor.count(f"error.{type(exc).__name__}")
                attempt.first_reason = attempt.first_reason or f"{extractor.name}_error"
                if doc.trace is not None:
                    doc.trace.tried(extractor.name, "error", f"{type(exc).__name__}: {exc}")
                continue
            guards.restart()  # the time limit holds per stage: the steps after it get their own
            reason = incomplete(extractor, doc, self.settings, position < last_stage)
            if reason:
                extractor.count(reason.split("_")[0])
                attempt.first_reason = attempt.first_reason or f"{extractor.name}_{reason}"
                target = extractor.skip_to(reason)
                attempt.skip_to = target if target in [stage.name for stage in stages[position + 1:]] else None
                if doc.trace is not None:
                    doc.trace.tried(extractor.name, reason.split("_")[0], reason, doc)
                continue
            doc.fallback_reason = attempt.first_reason
            attempt.position = position
            return True
        return False

    def _judge(self, doc: Document, attempt: "_Attempt") -> Document | None:
        """After the steps: the page kept (the filter overruled where its stage does), or, when the fallback rule
        rejects the stage's text, the page going on from the next stage (:meth:`_go_on`)."""
        extractor = attempt.stages[attempt.position]
        reason = self.fallback(doc, self.settings) if attempt.position < len(attempt.stages) - 1 else None
        if doc.trace is not None:  # the stage's sentences as the filter left them, before an overruling undoes it
            doc.trace.tried(extractor.name, ("filter_overruled" if extractor.overrules_filter else "filtered_too_much")
                            if reason else "kept", reason, doc)
        if reason and extractor.overrules_filter:
            return self.overrule_filter(extractor, doc, attempt.first_reason or f"{extractor.name}_kept_{reason}")
        if reason:
            extractor.count("filtered_too_much")
            attempt.first_reason = attempt.first_reason or f"{extractor.name}_{reason}"
            attempt.position += 1
            return self._go_on(doc, attempt)
        return doc

    def _exhausted(self, doc: Document, attempt: "_Attempt") -> None:
        """No stage gave text that was kept: the page is dropped with the first reason."""
        doc.text, doc.sentences, doc.extractor, doc.fallback_reason = "", [], None, attempt.first_reason
        return self.drop(doc, f"error.{attempt.guard_failure}" if attempt.guard_failure else "empty_extraction")


@dataclass
class _Attempt:
    """Where a page is in the cascade: its stages, the one running, and what the earlier ones left."""

    stages: list[Extractor]
    position: int = 0
    first_reason: str | None = None
    guard_failure: str | None = None
    skip_to: str | None = None
