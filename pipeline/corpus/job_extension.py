"""The corpus stages composed into ``warcplex run`` and ``warcplex nightly`` as a job extension."""

from __future__ import annotations

from typing import Any

from pipeline.config import Settings
from pipeline.corpus.accounting import summary_lines
from pipeline.spark.extension import JobExtension


class CorpusStages(JobExtension):
    """Runs :class:`~pipeline.corpus.builder.CorpusBuilder` after the splits; adds ``stats.corpus``."""

    def __init__(self) -> None:
        self.result: dict[str, Any] | None = None

    def check(self, settings: Settings) -> None:
        if settings.corpus.enabled:  # every stage corpus.stages names, with its options
            from pipeline.corpus.builder import enabled_stages

            enabled_stages(settings)

    def with_spark(self, sc, settings: Settings, output: str) -> None:
        if not settings.corpus.enabled:
            return  # no SparkSession either: loading Spark SQL costs the JVM about 2 CPU-seconds
        from pipeline.corpus.builder import run_corpus  # Spark SQL is loaded only when the corpus stages run
        from pipeline.spark.session import sql_session

        self.result = run_corpus(sql_session(sc), settings, output)

    def add_stats(self, stats: dict[str, Any], settings: Settings) -> None:
        if self.result is not None:
            stats["corpus"] = self.result
            self.result = None

    def summary_lines(self, stats: dict[str, Any]) -> list[str]:
        return summary_lines(stats.get("corpus"))
