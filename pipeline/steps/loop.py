"""The per-page pipeline: the steps of ``pipeline.steps``, run in order by one loop.

A step name names a :class:`~pipeline.steps.base.Step` part (:func:`pipeline.parts.find`: ``min_words`` is the
step of that name in ``pipeline/steps/min_words.py``), or is a ``package.module:Class`` path for a step of your
own. ``cascade`` runs the steps listed after it once per extraction stage (:mod:`pipeline.steps.cascade`).
"""

from __future__ import annotations

import gc
from typing import Iterable, Iterator

from pipeline import parts
from pipeline.config import Settings
from pipeline.document import Document, Page
from pipeline.reading.readahead import read_ahead
from pipeline.steps import guards
from pipeline.steps.base import Step
from pipeline.steps.cascade import Cascade


def step_class(name: str) -> type[Step]:
    """The step class a ``pipeline.steps`` entry names."""
    return parts.find(Step, name)


def cascade_runs(names: list[str]) -> list[str]:
    """The ``pipeline.steps`` entries ``cascade`` runs on each stage's text: those after it (none without it)."""
    return names[names.index("cascade") + 1:] if "cascade" in names else []


def build_steps(settings: Settings) -> list[Step]:
    """The steps of ``pipeline.steps``; ``cascade`` takes the steps after it."""
    names = settings.pipeline.steps
    steps: list[Step] = []
    for name in names:
        if name == "cascade":
            then = [step_class(n).from_settings(settings) for n in cascade_runs(names)]
            steps.append(Cascade.build(settings, then))
            break
        steps.append(step_class(name).from_settings(settings))
    return steps


_windows_run = 0  # windows this process has run (settle_heap's schedule)


def settle_heap() -> None:
    """After this process's 1st, 2nd, 4th, 8th... window: a full collection, then everything still alive moves
    to the collector's permanent generation (``gc.freeze``).

    The modules, models and caches a worker has loaded by then (tens of thousands of objects) are no longer
    scanned by each automatic full collection, which a window's short-lived pages, blocks and sentences set
    off again and again. Reference counting still frees what is frozen once it is unreachable; only a
    reference cycle that was alive at one of these few points would never be collected. In one process over
    bench-dev, the collector's CPU went from 1.80 to 0.61 s on the default cascade and from 0.52 to 0.22 s
    on the primary path."""
    global _windows_run
    _windows_run += 1
    if _windows_run & (_windows_run - 1) == 0:
        gc.collect()
        gc.freeze()


class StepLoop:
    """Runs every page through the steps under the per-record guards, a window of pages at a time."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.steps = build_steps(settings)
        # The steps before the cascade take one page at a time; the cascade prepares a window of them.
        self.cascade_at = next((i for i, step in enumerate(self.steps) if isinstance(step, Cascade)), len(self.steps))

    @property
    def all_steps(self) -> list[Step]:
        """Every step, the cascade's stages and the steps it runs included (for their counters)."""
        result: list[Step] = []
        for step in self.steps:
            result.append(step)
            if isinstance(step, Cascade):
                result.extend(step.steps)
        return result

    def step(self, name: str) -> Step:
        """The step (or cascade stage) called ``name``."""
        for step in self.all_steps:
            if step.name == name:
                return step
        raise KeyError(name)

    def process(self, page: Page) -> Document:
        """One page through the steps; ``doc.outcome`` says where it ended."""
        return self.process_window([page])[0]

    def process_window(self, pages: list[Page]) -> list[Document]:
        """Pages through the steps, returned in their order; ``doc.outcome`` says where each ended.

        The steps before the cascade take one page at a time; the cascade then prepares the pages that
        reached it together (:meth:`Cascade.prepare`: the block stage classifies them phase by phase), and
        runs them through its stages and the steps after it (:meth:`Cascade.run_window`: those steps one at a
        time over the window). A guard interrupt outside an extraction stage ends its page as
        ``error.timeout``/``error.memory``.
        """
        cut = self.cascade_at
        docs = [self._through(self.document(page), self.steps[:cut]) for page in pages]
        if cut < len(self.steps):
            cascade = self.steps[cut]
            reached = [doc for doc, going in docs if going]
            cascade.prepare(reached)
            after = iter(cascade.run_window(reached))
            docs = [next(after) if going else (doc, going) for doc, going in docs]
        for doc, through in docs:
            if through and not doc.clean_text.strip():
                doc.outcome = "empty_after_filter"
        return [doc for doc, _ in docs]

    # A page's document as it enters the steps: ``document(page)`` (``warcplex explain``'s loop gives it a trace).
    document = staticmethod(Document)

    @staticmethod
    def _through(doc: Document, steps: list[Step]) -> tuple[Document, bool]:
        """``doc`` after ``steps``, and whether it went through all of them (none dropped it)."""
        guards.restart()
        try:
            for step in steps:
                if step(doc) is None:
                    return doc, False
        except guards.GUARD_INTERRUPTS as exc:
            return guards.interrupted(doc, exc), False
        return doc, True

    def run(self, pages: Iterable[Page]) -> Iterator[Document]:
        """Every page through the steps, ``extract.prepare_window`` pages at a time, under
        ``extract.timeout_s`` and ``extract.memory_limit_mb``.

        The pages are cleaned in a thread of their own, the one the guards watch: what the caller does with
        each document (writing it, a slow S3 write, counting it) is never interrupted, and a guard that
        fires outside every stage ends the pages of its window as errors instead of the task."""
        for docs in read_ahead(self._windows(pages), depth=0, waiting=guards.restart, name="warcplex-cleaner"):
            docs.reverse()
            while docs:  # each document let go once the caller is done with it, before the next window is made
                yield docs.pop()

    def _windows(self, pages: Iterable[Page]) -> Iterator[list[Document]]:
        """:meth:`run`'s work in the cleaning thread: the documents of each window, one window when asked for (the
        threads take turns, as the loop and its caller did in one thread)."""
        size = self.settings.extract.prepare_window
        with guards.record_guards(self.settings.extract):
            # Pages are read in another thread, so a remote read backing off (S3 SlowDown)
            # is never cut short by the time guard, which restarts while the loop waits.
            window: list[Page] = []
            for page in read_ahead(pages, idle=guards.restart):
                window.append(page)
                if len(window) >= size:
                    yield self._settled(window)
                    window = []
            if window:
                yield self._settled(window)

    def _settled(self, pages: list[Page]) -> list[Document]:
        """:meth:`process_window`, then :func:`settle_heap`. A guard interrupt that escapes the stages' own
        handlers (it landed between them) ends each page of the window as ``error.timeout``/``error.memory``."""
        try:
            docs = self.process_window(pages)
        except guards.GUARD_INTERRUPTS as exc:
            docs = [guards.interrupted(self.document(page), exc) for page in pages]
        try:
            guards.restart()
            settle_heap()
        except guards.GUARD_INTERRUPTS:
            guards.restart()  # the collection ran past the time limit (its freeze waits for the next one); go on
        return docs
