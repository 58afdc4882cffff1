"""The Spark job base class (cc-pyspark style) and the WARC cleaning job.

A job parses its arguments, resolves inputs into splits, ships the model files to the
executors, runs :meth:`WarcJob.process_split` once per split in a Spark task, and merges
the per-split stats from the completion markers. A subclass overrides ``process_split``
(and, if it needs more flags, ``add_arguments``). Run-level work around the job (the
analysis: CO2, index statistics, the report) comes in as :class:`JobExtension` objects,
composed by the ``warcplex run`` command, so the runtime never imports it.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
import time
from typing import Any, Sequence

from warcplex.config import ConfigError, Settings, load_settings
from warcplex.corpus.accounting import summary_lines as corpus_summary_lines
from warcplex.reading.sources import InputError, resolve_inputs
from warcplex.reading.warc import Split, plan_splits
from warcplex.spark.runner import dump_json, run_split
from warcplex.spark.session import OneLineParser, UsageError, model_files, spark_session, under_spark_submit
from warcplex.stats import Stats
from warcplex.writing.output import OutputTarget

log = logging.getLogger("warcplex")


class JobExtension:
    """Run-level work composed around a job: started before Spark, adds to stats.json, writes files."""

    files: tuple[str, ...] = ()  # the files :meth:`write` writes into the output

    def start(self, settings: Settings) -> None:
        """Before the Spark job starts."""

    def with_spark(self, spark, settings: Settings, output: str) -> None:
        """After the splits, on the driver with the SparkSession still up (the corpus stages)."""

    def add_stats(self, stats: dict[str, Any], settings: Settings) -> None:
        """After the splits are merged, before stats.json is written: add sections to ``stats``."""

    def write(self, output: str, stats: dict[str, Any], settings: Settings) -> None:
        """After stats.json is written: write :attr:`files`."""


class WarcJob:
    """Base class: arguments, inputs -> splits, one Spark task per split, merged stats."""

    name = "warc_job"
    description = "Process WARC files with Spark."

    def __init__(self, extensions: Sequence[JobExtension] = ()) -> None:
        self.extensions = list(extensions)

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        """Hook for a subclass's extra flags."""

    def build_parser(self, parser: argparse.ArgumentParser | None = None) -> argparse.ArgumentParser:
        parser = parser or OneLineParser(prog=self.name, description=self.description)
        parser.add_argument("--input", nargs="+", required=True, metavar="SPEC",
                            help="WARC files, directories, globs, warc.paths(.gz) manifests, s3:// or https:// URLs")
        parser.add_argument("--output", required=True, help="output directory (local path or s3://bucket/prefix)")
        parser.add_argument("--config", help="YAML preset, e.g. conf/local.yaml (defaults are built in)")
        parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                            help="override one config key, e.g. --set perplexity.threshold=5000 (repeatable)")
        parser.add_argument("--input-base-url", help="base for relative paths in a manifest (input.base_url)")
        parser.add_argument("--dropped", help="also write every dropped sentence with its score and reason here")
        parser.add_argument("--sentences", help="also write every sentence with its perplexity here "
                            "(for `warcplex sweep` and the real index sizes)")
        parser.add_argument("--no-resume", action="store_true", help="reprocess splits that have a completion marker")
        self.add_arguments(parser)
        return parser

    def settings_from_args(self, args: argparse.Namespace) -> Settings:
        overrides = list(args.set)
        if args.input_base_url:
            overrides.append(f"input.base_url={args.input_base_url}")
        if args.dropped:
            overrides.append(f"output.dropped={args.dropped}")
        if args.sentences:
            overrides.append(f"output.sentences={args.sentences}")
        if args.no_resume:
            overrides.append("output.resume=false")
        return load_settings(args.config, overrides)

    def process_split(self, split: Split, settings: Settings, output: str) -> dict[str, Any]:
        """The work of one Spark task: return the split's stats dict."""
        raise NotImplementedError

    def files(self) -> list[str]:
        """The run-level files this job writes besides stats.json (its own, then its extensions')."""
        return [name for extension in self.extensions for name in extension.files]

    def write_files(self, output: str, stats: dict[str, Any], settings: Settings) -> None:
        """Write the run-level files after stats.json."""
        for extension in self.extensions:
            extension.write(output, stats, settings)

    def run(self, args: argparse.Namespace) -> dict[str, Any]:
        settings = self.settings_from_args(args)
        shards = resolve_inputs(args.input, settings.s3, settings.input.base_url)
        files = model_files(settings)
        OutputTarget(args.output, settings.s3).retract_success()
        started = time.time()
        for extension in self.extensions:
            extension.start(settings)
        spark = spark_session(settings)
        try:
            sc = spark.sparkContext
            # Files already shipped with spark-submit --files are found by name on executors.
            shipped = {os.path.basename(f) for f in sc.getConf().get("spark.files", "").split(",") if f}
            for path in files:
                if os.path.basename(path) not in shipped:
                    sc.addFile(path)
            parallelism = (os.cpu_count() or 1) if settings.spark.master.startswith("local") and \
                not under_spark_submit() else sc.defaultParallelism
            splits = [split for shard in shards for split in plan_splits(shard, settings.input, parallelism)]
            output = args.output
            job = self
            results = (sc.parallelize(splits, max(1, len(splits)))
                       .map(lambda split: job.process_split(split, settings, output))
                       .collect())
            for extension in self.extensions:
                extension.with_spark(spark, settings, output)
        finally:
            spark.stop()
        wall = time.time() - started
        stats = self.merge_stats(output, [s.split_id for s in splits], results, settings, wall, args.input)
        for extension in self.extensions:
            extension.add_stats(stats, settings)
        stats["run"]["files"] = ["stats.json", *self.files()]
        target = OutputTarget(output, settings.s3)
        target.write_bytes("stats.json", dump_json(stats).encode("utf-8"))
        self.write_files(output, stats, settings)
        target.publish_success()  # the final commit: a manifest of every file with its size
        stats["run"]["files"].append("_SUCCESS")
        return stats

    def merge_stats(self, output: str, split_ids: list[str], results: list[dict], settings: Settings,
                    wall: float, inputs: list[str]) -> dict[str, Any]:
        merged = Stats()
        for result in results:
            merged.merge(Stats.from_dict(result))
        tree = merged.to_dict()
        pages = tree.get("records", {}).get("html", 0)
        cpu = tree.get("cpu", {}).get("total", 0.0)
        tree["run"] = {
            "inputs": inputs,
            "output": output,
            "splits": len(split_ids),
            "splits_resumed": tree.get("splits", {}).get("resumed", 0),
            "wall_seconds": round(wall, 3),
            "pages_per_second": round(pages / wall, 2) if wall else None,
            "pages_per_cpu_second": round(pages / cpu, 2) if cpu else None,
            "config": settings.model_dump(mode="json"),
        }
        return tree

    def main(self, argv: list[str] | None = None) -> int:
        parser = self.build_parser()
        args = parser.parse_args(argv)
        return run_cli(self, args)


def run_cli(job: WarcJob, args: argparse.Namespace) -> int:
    """Run a job, turning user errors into one-line messages and exit status 2."""
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s")
    try:
        stats = job.run(args)
    except (UsageError, ConfigError, InputError) as exc:
        print(f"warcplex: error: {exc}", file=sys.stderr)
        return 2
    print(summary_text(stats))
    return 0


def summary_text(stats: dict[str, Any]) -> str:
    """The short human summary printed at the end of a run and saved as summary.txt."""
    run = stats["run"]
    records = stats.get("records", {})
    outcome = stats.get("outcome", {})
    sentences = stats.get("sentences", {})
    text_bytes = stats.get("bytes", {})
    raw, clean = text_bytes.get("text_raw", 0), text_bytes.get("text_clean", 0)
    skipped = Stats.from_dict({"skip": stats.get("skip", {})}).counts
    outcomes = Stats.from_dict({"outcome": outcome}).counts
    languages = sorted(stats.get("lang", {}).items(), key=lambda kv: -kv[1].get("pages_kept", 0))[:8]
    lines = [
        f"warcplex: {records.get('read', 0)} WARC records read from {run['splits']} split(s) "
        f"in {run['wall_seconds']:.1f} s ({run['pages_per_second'] or 0:.1f} HTML pages/s)",
        f"  HTML pages: {records.get('html', 0)}; "
        + ", ".join(f"{k.removeprefix('outcome.')} {v}" for k, v in sorted(outcomes.items(), key=lambda kv: -kv[1])),
        f"  skipped records: {sum(skipped.values())} "
        + "(" + ", ".join(f"{k.removeprefix('skip.')} {v}" for k, v in sorted(skipped.items())) + ")",
        f"  sentences kept: {sentences.get('kept', 0)} of {sentences.get('total', 0)}; "
        f"text bytes {raw} -> {clean} ({100 * clean / raw if raw else 0:.1f}% kept)",
        "  languages (pages kept): " + ", ".join(f"{lang} {v.get('pages_kept', 0)}" for lang, v in languages),
    ]
    carbon = stats.get("carbon", {})
    if carbon:
        lines.append(f"  CPU {carbon['cpu_hours'] * 3600:.1f} s, est. {carbon['kg_co2'] * 1000:.4f} g CO2 "
                     f"(eq. 9, C_e {carbon['grid_intensity_kg_per_kwh']} kg/kWh)")
    snapshot = carbon.get("snapshot")
    if snapshot:
        lines.append(f"  one snapshot ({snapshot['pages']:,} pages): {snapshot['core_hours']:,.0f} core-hours, "
                     f"${snapshot['dollars']:,.0f}, {snapshot['kg_co2']:,.0f} kg CO2")
    index = stats.get("index", {})
    if "raw" in index:
        lines.append(f"  tantivy index of {index['pages']} pages: {index['raw']['index_bytes']:,} -> "
                     f"{index['clean']['index_bytes']:,} bytes ({100 * index['ratio']['index_bytes']:.1f}%), "
                     f"query speed-up {index['queries']['speedup'] or 0:.2f}x")
    elif index.get("skipped"):
        lines.append(f"  index statistics skipped: {index['skipped']}")
    lines += corpus_summary_lines(stats.get("corpus"))
    if stats.get("file_errors"):
        lines.append(f"  unreadable parts of {len(stats['file_errors'])} file(s), see stats.json file_errors")
    lines.append(f"  output: {run['output']} ({', '.join(run.get('files', []))})")
    return "\n".join(lines)


class CleanWarcJob(WarcJob):
    """WARC shards -> extraction -> language ID -> sentence perplexity filter -> Parquet."""

    name = "clean_warc"
    description = "Clean WARC shards into a Parquet text corpus (perplexity-filtered sentences)."

    def process_split(self, split: Split, settings: Settings, output: str) -> dict[str, Any]:
        return run_split(split, settings, output, settings.output.dropped)

    def files(self) -> list[str]:
        return ["summary.txt", *super().files()]

    def write_files(self, output: str, stats: dict[str, Any], settings: Settings) -> None:
        OutputTarget(output, settings.s3).write_bytes("summary.txt", (summary_text(stats) + "\n").encode("utf-8"))
        super().write_files(output, stats, settings)
