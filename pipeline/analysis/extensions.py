"""The analysis composed after the Spark job by ``warcplex run``: CO2, index statistics, the report.

Each is a :class:`~pipeline.spark.job.JobExtension`; the runtime never imports this module.
"""

from __future__ import annotations

import time
from typing import Any

from pipeline.analysis.carbon import CodecarbonMeter, carbon_report, start_codecarbon
from pipeline.analysis.index_stats import run_index_stats
from pipeline.analysis.report import write_report
from pipeline.config import Settings
from pipeline.explain.sample import write_index
from pipeline.spark.job import JobExtension


class Carbon(JobExtension):
    """``stats.carbon``: eq. 9 per stage and the snapshot extrapolation; codecarbon's measure when enabled."""

    def __init__(self) -> None:
        self.meter: CodecarbonMeter | None = None

    def start(self, settings: Settings) -> None:
        self.meter = start_codecarbon(settings.carbon)

    def add_stats(self, stats: dict[str, Any], settings: Settings) -> None:
        stats["carbon"] = carbon_report(stats, settings.carbon)
        if self.meter is not None:
            stats["carbon"]["codecarbon_measured"] = self.meter.stop()
            self.meter = None


class IndexStats(JobExtension):
    """``stats.index``: real tantivy index statistics of the sampled pages along the chain, or why skipped."""

    def add_stats(self, stats: dict[str, Any], settings: Settings) -> None:
        stats["index"] = self.index_stats(settings, stats.get("run", {}).get("output"))

    @staticmethod
    def index_stats(settings: Settings, output: str | None = None) -> dict[str, Any]:
        if not settings.index.enabled:
            return {"skipped": "index.enabled is false"}
        if not settings.output.sentences:
            return {"skipped": "no sentence scores written (run with --sentences DIR or output.sentences)"}
        started = time.process_time()
        try:
            result = run_index_stats(settings.output.sentences, settings.s3, settings.index, output)
        except ValueError as exc:
            return {"skipped": str(exc)}
        result["driver_cpu_seconds"] = round(time.process_time() - started, 3)
        return result


class Explanations(JobExtension):
    """``explain/index.html``: every page explained with the run (``--explain-sample``), when there are any."""

    def write(self, output: str, stats: dict[str, Any], settings: Settings) -> None:
        write_index(output, settings)


class Report(JobExtension):
    """``report.html`` from the run's stats."""

    files = ("report.html",)

    def write(self, output: str, stats: dict[str, Any], settings: Settings) -> None:
        write_report(output, settings.s3, stats)


def run_extensions() -> list[JobExtension]:
    """What ``warcplex run`` composes after the job, in order."""
    return [Carbon(), IndexStats(), Explanations(), Report()]
