"""The extension API of a job: run-level work composed around it (the corpus stages, the analysis) by the command
that builds the job, so that the runtime never imports it."""

from __future__ import annotations

from typing import Any

from pipeline.config import Settings


class JobExtension:
    """Run-level work composed around a job: started before Spark, adds to stats.json, writes files."""

    files: tuple[str, ...] = ()  # the files :meth:`write` writes into the output

    def check(self, settings: Settings) -> None:
        """Before anything is written: raise ConfigError for settings it could not run with."""

    def start(self, settings: Settings) -> None:
        """Before the Spark job starts."""

    def with_spark(self, sc, settings: Settings, output: str) -> None:
        """After the splits, on the driver with the SparkContext still up (the corpus stages)."""

    def add_stats(self, stats: dict[str, Any], settings: Settings) -> None:
        """After the splits are merged, before stats.json is written: add sections to ``stats``."""

    def write(self, output: str, stats: dict[str, Any], settings: Settings) -> None:
        """After stats.json is written: write :attr:`files`."""

    def summary_lines(self, stats: dict[str, Any]) -> list[str]:
        """Its lines of the run's summary (summary.txt), from the stats it added."""
        return []
