"""The per-language model registry (``conf/models.yaml``).

Every reader of a threshold goes through :meth:`RegistryEntry.threshold_for` (the filter, the
report); every decision "which sentences are kept" goes through
:func:`pipeline.perplexity_rule.rule_mask` (the filter, the sweep, calibration).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

import yaml

from pipeline import model_cache
from pipeline.config import PerplexitySettings


class RegistryError(ValueError):
    """A registry entry that cannot answer what is asked of it."""


@dataclass(frozen=True)
class RegistryEntry:
    """One language's model: its KenLM path, calibrated threshold and perplexity percentiles."""

    language: str
    path: str
    threshold: float | None = None
    percentiles: dict[str, float] = field(default_factory=dict)

    def scores_under(self, settings: PerplexitySettings) -> bool:
        """True when a run with ``settings`` has a threshold for this language (:meth:`threshold_for` answers).

        A language without one, such as a language with no percentiles in percentile mode, is treated as a
        language without a model (``perplexity.unknown_language``); :func:`unscored_languages` names them.
        """
        if settings.threshold is not None:
            return True
        if settings.threshold_mode == "percentile":
            return str(settings.percentile) in self.percentiles
        return self.threshold is not None

    def threshold_for(self, settings: PerplexitySettings) -> float:
        """The threshold a run with ``settings`` uses: the global override, a percentile, or the registry's."""
        if settings.threshold is not None:
            return settings.threshold
        if settings.threshold_mode == "percentile":
            value = self.percentiles.get(str(settings.percentile))
            if value is None:
                raise RegistryError(f"{settings.registry}: models.{self.language} has no "
                                    f"percentiles.{settings.percentile}; run `warcplex calibrate`")
            return float(value)
        if self.threshold is None:
            raise RegistryError(f"{settings.registry}: models.{self.language} has no threshold")
        return float(self.threshold)


def _entry_path(registry: str, path: str) -> str:
    """A registry entry's model path: next to the registry file if it is there, else as given.

    A registry copied together with its models (``make dist``, ``--files``) finds them by
    file name in its own directory; otherwise a relative path resolves against the working
    directory or the project root (:func:`pipeline.model_cache.locate`, which prefers Spark's shipped copy).
    """
    if os.path.isabs(path):
        return path
    here = os.path.dirname(os.path.abspath(registry))
    for candidate in (os.path.join(here, path), os.path.join(here, os.path.basename(path))):
        if os.path.exists(candidate):
            return candidate
    return path


def load_registry(path: str) -> dict[str, RegistryEntry]:
    """The registry at ``path``: language -> :class:`RegistryEntry`, read once per process."""
    def load(resolved: str) -> dict[str, RegistryEntry]:
        with open(resolved, encoding="utf-8") as fh:
            tree = yaml.safe_load(fh) or {}
        entries = tree.get("models", {})
        if not isinstance(entries, dict):
            raise ValueError(f"{path}: `models` must map language codes to entries")
        result = {}
        for lang, entry in entries.items():
            if not isinstance(entry, dict) or "path" not in entry:
                raise ValueError(f"{path}: models.{lang} needs a `path`")
            threshold = entry.get("threshold")
            percentiles: dict[Any, Any] = entry.get("percentiles") or {}
            result[str(lang)] = RegistryEntry(
                language=str(lang), path=_entry_path(resolved, str(entry["path"])),
                threshold=float(threshold) if threshold is not None else None,
                percentiles={str(k): float(v) for k, v in percentiles.items()})
        return result

    return model_cache.cached("registry", path, load)


def unscored_languages(settings: PerplexitySettings) -> list[str]:
    """The registry's languages a run with ``settings`` cannot score (no threshold for its mode), sorted."""
    return sorted(lang for lang, entry in load_registry(settings.registry).items()
                  if not entry.scores_under(settings))


def unscored_message(settings: PerplexitySettings, languages: list[str]) -> str:
    """One line for the user: which languages go unscored, what happens to their pages, how to score them."""
    what = (f"no percentiles.{settings.percentile}" if settings.threshold_mode == "percentile"
            else "no threshold")
    fate = "are dropped" if settings.unknown_language == "drop" else "pass unscored"
    return (f"warcplex: warning: {settings.registry}: {', '.join(languages)} {'has' if len(languages) == 1 else 'have'} "
            f"{what}; their pages {fate} (perplexity.unknown_language). To score them, run "
            f"`warcplex calibrate --data DIR --write` on pages of those languages (docs/models.md)")
