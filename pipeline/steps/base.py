"""The step interface: ``step(doc) -> doc | None``, with counting, timing and drop reasons here.

A step holds only settings (it pickles to executors cheaply) and fetches native models from
:mod:`pipeline.model_cache` on first use in each worker. :class:`Step` times every call under
``cpu.<name>`` and keeps its counters under ``stage.<name>.*``; a step that drops a page
returns ``None`` after :meth:`Step.drop` has written the reason into ``doc.outcome``, which
the split runner counts as ``outcome.<reason>``. A :class:`Filter` only answers
``filter(doc) -> bool | (bool, reason)``, as datatrove's ``BaseFilter`` does.
"""

from __future__ import annotations

from typing import Any, ContextManager

from pipeline.config import Settings
from pipeline.document import Document
from pipeline.stats import Stats, timed


class Step:
    """Base class of every step: counters, CPU time and the drop reason. A step is a part (:mod:`pipeline.parts`): a
    subclass in a module of ``pipeline/steps/`` that says its ``name``, which ``pipeline.steps`` lists."""

    part, home, setting = "step", "pipeline.steps", "pipeline.steps"
    name = "step"
    section: str | None = None  # the section of Settings the step is built with, if any

    def __init__(self, settings: Any = None) -> None:
        self.settings = settings
        self.stats = Stats()

    @classmethod
    def from_settings(cls, settings: Settings) -> "Step":
        """The step as the run's settings configure it: with its :attr:`section`, if it has one."""
        return cls(getattr(settings, cls.section)) if cls.section else cls()

    def __call__(self, doc: Document) -> Document | None:
        with self.timed():
            return self.run(doc)

    def run(self, doc: Document) -> Document | None:
        """The step's work on one document: the document (changed in place) or ``None`` to drop it."""
        raise NotImplementedError

    def drop(self, doc: Document, reason: str) -> None:
        """End ``doc`` here with ``reason`` as its outcome."""
        doc.outcome = reason
        return None

    def count(self, key: str, amount: float = 1) -> None:
        self.stats.add(f"stage.{self.name}.{key}", amount)

    def timed(self) -> ContextManager[None]:
        """Count the CPU time of a ``with`` block under ``cpu.<name>``."""
        return timed(self.stats, f"cpu.{self.name}")


class Filter(Step):
    """A step that keeps or drops whole documents; the reason defaults to ``<name>``."""

    def filter(self, doc: Document) -> bool | tuple[bool, str]:
        raise NotImplementedError

    def run(self, doc: Document) -> Document | None:
        verdict = self.filter(doc)
        keep, reason = verdict if isinstance(verdict, tuple) else (verdict, self.name)
        return doc if keep else self.drop(doc, reason)
