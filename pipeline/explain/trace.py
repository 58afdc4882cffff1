"""The run's own loop, with a trace: what ``warcplex explain`` shows is what ``warcplex run`` did.

:class:`TracingLoop` is :class:`~pipeline.steps.loop.StepLoop` built from the same settings, whose documents
carry a :class:`~pipeline.document.Trace`: the cascade notes each stage it tried and why it moved on, the block
stage leaves its decisions (``Document.trace`` is None on every page of a run, so a run records nothing).
"""

from __future__ import annotations

from typing import Iterable

from pipeline.config import Settings
from pipeline.document import Document, Page, Trace
from pipeline.steps.loop import StepLoop
from pipeline.steps.perplexity import PerplexityFilter


class TracingLoop(StepLoop):
    """The steps of ``settings``, run as a run runs them (windows, guards), each page traced."""

    def document(self, page: Page) -> Document:
        doc = super().document(page)
        doc.trace = Trace()
        return doc

    def threshold(self, language: str) -> float | None:
        """The filter's threshold for ``language`` under these settings (None: no filter or no model)."""
        for step in self.all_steps:
            if isinstance(step, PerplexityFilter):
                entry = step.entry(language)
                return entry.threshold_for(step.settings) if entry is not None else None
        return None


def traced(settings: Settings, pages: Iterable[Page]) -> list[Document]:
    """``pages`` through the steps of ``settings``, each with its trace."""
    return list(TracingLoop(settings).run(pages))
