"""The analysis composed after the Spark job by ``warcplex run``: CO2, index statistics, the report.

Each is a :class:`~pipeline.spark.extension.JobExtension`; the runtime never imports this module.
"""

from __future__ import annotations

import time
from typing import Any

from pipeline.analysis.carbon import CodecarbonMeter, carbon_report, carbon_summary_lines, start_codecarbon
from pipeline.analysis.index_stats import run_index_stats
from pipeline.analysis.report import draw_charts, read_sweep, write_report
from pipeline.config import Settings
from pipeline.explain.sample import write_index
from pipeline.spark.cpu import pages_per_cpu_second, refresh_python_driver
from pipeline.spark.extension import JobExtension
from pipeline.steps.loop import cascade_runs, step_class


class Carbon(JobExtension):
    """``stats.carbon``: eq. 9 for the whole job, per part and per stage, and the snapshot extrapolation;
    codecarbon's measure when enabled. Composed after :class:`IndexStats`, whose driver CPU it counts."""

    def __init__(self) -> None:
        self.meter: CodecarbonMeter | None = None

    def start(self, settings: Settings) -> None:
        self.meter = start_codecarbon(settings.carbon)

    def add_stats(self, stats: dict[str, Any], settings: Settings) -> None:
        if stats.get("job_cpu"):  # the Python driver's part again, now that its analysis ran
            stats["job_cpu"] = refresh_python_driver(stats["job_cpu"])
            stats["run"]["pages_per_cpu_second"] = pages_per_cpu_second(stats["job_cpu"])
        stats["carbon"] = carbon_report(stats, settings.carbon)
        if self.meter is not None:
            stats["carbon"]["codecarbon_measured"] = self.meter.stop()
            self.meter = None

    def summary_lines(self, stats: dict[str, Any]) -> list[str]:
        return carbon_summary_lines(stats)


class IndexStats(JobExtension):
    """``stats.index``: real tantivy indexes of the run's index sample along the chain, with the search side
    (query CPU, CO2 per million queries, break-even), or why it was skipped."""

    def add_stats(self, stats: dict[str, Any], settings: Settings) -> None:
        stats["index"] = self.index_stats(settings, stats)

    @staticmethod
    def index_stats(settings: Settings, stats: dict[str, Any]) -> dict[str, Any]:
        if not settings.index.enabled:
            return {"skipped": "index.enabled is false"}
        output = stats.get("run", {}).get("output")
        started = time.process_time()
        try:
            after = [step_class(name).name for name in cascade_runs(settings.pipeline.steps)]  # their CPU keys
            result = run_index_stats(output, settings.s3, settings.index, settings.carbon, stats,
                                     settings.extract.cascade, after)
        except ValueError as exc:
            return {"skipped": str(exc)}
        result["driver_cpu_seconds"] = round(time.process_time() - started, 3)
        return result


class Explanations(JobExtension):
    """``explain/index.html``: every page explained with the run (``--explain-sample``), when there are any."""

    def write(self, output: str, stats: dict[str, Any], settings: Settings) -> None:
        write_index(output, settings)


class Report(JobExtension):
    """``report.html`` from the run's stats; its charts are drawn in :meth:`add_stats`, before :class:`Carbon`
    reads the driver's CPU, so that the whole job's figure counts them."""

    files = ("report.html",)

    def __init__(self) -> None:
        self.charts: dict[str, str | None] | None = None

    def add_stats(self, stats: dict[str, Any], settings: Settings) -> None:
        output = stats.get("run", {}).get("output")
        sweep = read_sweep(output, settings.s3) if output else None
        # the per-stage chart's CO2 does not depend on the driver's part, read later
        self.charts = draw_charts({**stats, "carbon": carbon_report(stats, settings.carbon)}, sweep)

    def write(self, output: str, stats: dict[str, Any], settings: Settings) -> None:
        write_report(output, settings.s3, stats, self.charts)
        self.charts = None


def run_extensions() -> list[JobExtension]:
    """What ``warcplex run`` composes after the job, in order (the whole job's CPU is read last)."""
    return [IndexStats(), Explanations(), Report(), Carbon()]
