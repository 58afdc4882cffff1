"""The per-page pipeline: the steps of ``pipeline.steps``, run in order by one loop.

A step name is a module of :mod:`warcplex.steps` holding a :class:`~warcplex.steps.base.Step`
subclass of that ``name`` (``min_words`` -> ``warcplex/steps/min_words.py``), or a
``package.module:Class`` path for a step of your own. ``cascade`` runs the steps listed after
it once per extraction stage (:mod:`warcplex.steps.cascade`).
"""

from __future__ import annotations

import importlib
from typing import Iterable, Iterator

from warcplex.config import ConfigError, Settings
from warcplex.document import Document
from warcplex.reading.warc import Page
from warcplex.steps import guards
from warcplex.steps.base import Step
from warcplex.steps.cascade import Cascade


def step_class(name: str) -> type[Step]:
    """The step class a ``pipeline.steps`` entry names."""
    module_name, _, class_name = name.partition(":")
    if not class_name:
        module_name = f"warcplex.steps.{name}"
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise ConfigError(f"pipeline.steps: no step {name!r} ({exc})") from None
    if class_name:
        found = getattr(module, class_name, None)
        if isinstance(found, type) and issubclass(found, Step):
            return found
    else:
        for value in vars(module).values():
            if isinstance(value, type) and issubclass(value, Step) and value.__module__ == module_name \
                    and value.name == name:
                return value
    raise ConfigError(f"pipeline.steps: {module_name} has no step {class_name or name!r}")


def build_steps(settings: Settings) -> list[Step]:
    """The steps of ``pipeline.steps``; ``cascade`` takes the steps after it."""
    names = settings.pipeline.steps
    steps: list[Step] = []
    for position, name in enumerate(names):
        if name == "cascade":
            then = [step_class(n).from_settings(settings) for n in names[position + 1:]]
            steps.append(Cascade.build(settings, then))
            break
        steps.append(step_class(name).from_settings(settings))
    return steps


class StepLoop:
    """Runs every page through the steps under the per-record guards."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.steps = build_steps(settings)

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
        """One page through the steps; ``doc.outcome`` says where it ended.

        A guard interrupt outside an extraction stage ends the page as ``error.timeout``/``error.memory``.
        """
        guards.restart()
        doc = Document(page)
        try:
            for step in self.steps:
                if step(doc) is None:
                    return doc
        except guards.GUARD_INTERRUPTS as exc:
            guards.restart()
            return Document(page, outcome=f"error.{guards.guard_kind(exc)}")
        if not doc.clean_text:
            doc.outcome = "empty_after_filter"
        return doc

    def run(self, pages: Iterable[Page]) -> Iterator[Document]:
        """Every page through the steps, under ``extract.timeout_s`` and ``extract.memory_limit_mb``."""
        with guards.record_guards(self.settings.extract):
            for page in pages:
                yield self.process(page)
