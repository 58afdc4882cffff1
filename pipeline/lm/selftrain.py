"""``perplexity.unknown_language: self-train``: bootstrap models for the languages a run has no model for.

The job runs twice. Pass 1 writes a complete output into ``OUTPUT.selftrain/pass1`` (next to
the output, which stays a directory of warcplex's own entries) with ``unknown_language: keep``
(its unknown-language sentences pass unscored). For every language without a registry model and
with at least ``perplexity.self_train_min_pages`` pages in pass 1,
:func:`pipeline.lm.train.train_lm` trains a model from pass 1's text into
``OUTPUT.selftrain/<xx>/``, whose ``models.yaml`` is the run's registry plus the models trained
so far. Pass 2 is the same job into ``OUTPUT`` scored with that registry; its stats.json has a
``self_train`` section (languages, models, thresholds, training counts, pass-1 wall time).

Cost: the whole job runs twice (extraction included) plus one lmplz per trained language; a
rerun of the same command resumes both passes and retrains the same models (deterministic).
Languages below the page count stay unscored, as with ``keep``.
"""

from __future__ import annotations

import argparse
import copy
import logging
from pathlib import Path
from typing import Any

from pipeline.config import Settings
from pipeline.document import UNKNOWN_LANGUAGE
from pipeline.lm.train import TrainError, TrainOptions, train_lm
from pipeline.model_registry import load_registry
from pipeline.spark.extension import JobExtension
from pipeline.spark.job import CleanWarcJob
from pipeline.user_errors import UsageError

log = logging.getLogger("warcplex")

SELF_TRAIN_SUFFIX = ".selftrain"


class SelfTrainStats(JobExtension):
    """Adds the ``self_train`` section to pass 2's stats.json."""

    def __init__(self, section: dict[str, Any]) -> None:
        self.section = section

    def add_stats(self, stats: dict[str, Any], settings: Settings) -> None:
        stats["self_train"] = self.section


def candidates(stats: dict[str, Any], settings: Settings) -> dict[str, int]:
    """Languages of a pass-1 run with no registry model and enough pages: language -> pages."""
    models = load_registry(settings.perplexity.registry)
    return {lang: int(counts.get("pages", 0)) for lang, counts in sorted(stats.get("lang", {}).items())
            if lang not in models and lang != UNKNOWN_LANGUAGE
            and counts.get("pages", 0) >= settings.perplexity.self_train_min_pages}


class SelfTrainingJob(CleanWarcJob):
    """The cleaning job, run as two passes around the training of models (:func:`run_self_trained`) where
    ``perplexity.unknown_language`` is ``self-train`` (each pass itself runs with ``keep``)."""

    def run(self, args: argparse.Namespace, shards=None) -> dict[str, Any]:
        settings = self.settings_from_args(args)
        if settings.perplexity.unknown_language == "self-train":
            return run_self_trained(self, args, settings, shards)
        return super().run(args, shards)


def run_self_trained(job, args: argparse.Namespace, settings: Settings, shards=None) -> dict[str, Any]:
    """Pass 1, training, pass 2 (module docstring); returns pass 2's stats."""
    if not settings.perplexity.enabled:  # nothing is scored: one ordinary pass
        plain = copy.copy(args)
        plain.set = [*args.set, "perplexity.unknown_language=keep"]
        return job.run(plain, shards)
    if "://" in args.output:
        raise UsageError("perplexity.unknown_language=self-train needs a local --output (models are trained there)")
    workdir = Path(args.output.rstrip("/") + SELF_TRAIN_SUFFIX)
    first = copy.copy(args)
    first.output = str(workdir / "pass1")
    first.dropped = first.sentences = None
    first.set = [*args.set, "perplexity.unknown_language=keep", "output.dropped=null", "output.sentences=null"]
    log.info("self-train: pass 1 into %s", first.output)
    stats1 = job.run(first, shards)
    section: dict[str, Any] = {"pass1_wall_seconds": stats1["run"]["wall_seconds"],
                               "min_pages": settings.perplexity.self_train_min_pages, "languages": {}}
    registry = settings.perplexity.registry
    for lang, pages in candidates(stats1, settings).items():
        try:
            card = train_lm(first.output, workdir / lang, TrainOptions(language=lang), base_registry=registry)
        except TrainError as exc:
            section["languages"][lang] = {"pages": pages, "model": None, "reason": str(exc)}
            log.warning("self-train: %s not trained: %s", lang, exc)
            continue
        registry = card["registry"]  # each new registry keeps the languages trained before it
        section["languages"][lang] = {"pages": pages, "model": card["model"], "threshold": card["threshold"],
                                      "train_sentences": card["corpus"]["train_sentences"],
                                      "pages_used": card["corpus"]["pages_selected"], "seconds": card["seconds"]}
    section["registry"] = registry
    second = copy.copy(args)
    second.set = [*args.set, f"perplexity.registry={registry}", "perplexity.unknown_language=keep"]
    job.extensions.append(SelfTrainStats(section))
    try:
        return job.run(second, shards)
    finally:
        job.extensions.pop()

