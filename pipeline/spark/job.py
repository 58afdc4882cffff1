"""The Spark job base class (cc-pyspark style) and the WARC cleaning job.

A job parses its arguments, resolves inputs into splits, ships the model files to the
executors, runs :meth:`WarcJob.process_split` once per split in a Spark task, and merges
the per-split stats (:class:`SplitTotals`; with many splits, on the executors first). A
subclass overrides ``process_split`` (and, if it needs more flags, ``add_arguments``).
Run-level work around the job (the analysis: CO2, index statistics, the report) comes in as
:class:`~pipeline.spark.extension.JobExtension` objects, composed by the ``warcplex run`` command, so the
runtime never imports it. How a run ends is :mod:`pipeline.spark.exits`, its summary
:mod:`pipeline.spark.summary`.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
import time
from collections import Counter
from typing import Any, Sequence

from pipeline.config import Settings, load_settings
from pipeline.reading.reader import ShardReadError, pages_read, plan_splits
from pipeline.reading.shards import Shard, Split
from pipeline.reading.sources import is_remote, resolve_shards
from pipeline.reading.warc import is_wat
from pipeline.redact import redact
from pipeline.model_registry import load_registry, unscored_languages, unscored_message
from pipeline.spark.cpu import JobCpu, pages_per_cpu_second
from pipeline.spark.duplicate_ids import duplicate_skip_sets
from pipeline.spark.exits import WAT_MESSAGE, run_cli
from pipeline.spark.extension import JobExtension
from pipeline.spark.progress import Progress
from pipeline.spark.runner import dump_json, run_split
from pipeline.spark.session import job_context, model_files, under_spark_submit
from pipeline.spark.summary import summary_text
from pipeline.stats import Stats
from pipeline.steps.loop import build_steps
from pipeline.user_errors import OneLineParser, UsageError
from pipeline.writing.outdir import prepare_output
from pipeline.writing.output import OutputTarget
from pipeline.writing.index_sample import per_split_pages

log = logging.getLogger("warcplex")


class WarcJob:
    """Base class: arguments, inputs -> splits, one Spark task per split, merged stats."""

    name = "warc_job"
    description = "Process WARC files with Spark."

    def __init__(self, extensions: Sequence[JobExtension] = ()) -> None:
        self.extensions = list(extensions)

    def __getstate__(self) -> dict[str, Any]:
        """What a Spark task receives: the job without its extensions, which run on the driver only and may hold
        what cannot be pickled (codecarbon's tracker, with its lock)."""
        return {**self.__dict__, "extensions": []}

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        """Hook for a subclass's extra flags."""

    def build_parser(self, parser: argparse.ArgumentParser | None = None) -> argparse.ArgumentParser:
        parser = parser or OneLineParser(prog=self.name, description=self.description)
        parser.add_argument("--input", nargs="+", action="extend", required=True, metavar="SPEC",
                            help="WARC files, directories, globs, warc.paths(.gz) manifests, s3:// or https:// URLs "
                                 "(repeatable: every --input counts)")
        parser.add_argument("--output", required=True, help="output directory (local path or s3://bucket/prefix)")
        parser.add_argument("--config", help="YAML preset, e.g. conf/local.yaml (defaults are built in)")
        parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                            help="override one config key, e.g. --set perplexity.threshold=5000 (repeatable)")
        parser.add_argument("--input-base-url", help="base for relative paths in a manifest (input.base_url)")
        parser.add_argument("--dropped", help="also write every dropped sentence with its score and reason here")
        parser.add_argument("--sentences", help="also write every sentence with its perplexity here "
                            "(for `warcplex sweep` and the real index sizes)")
        parser.add_argument("--explain-sample", type=int, metavar="N",
                            help="also explain N pages of each outcome group in OUTPUT/explain/ (output.explain_sample)")
        parser.add_argument("--no-resume", action="store_true", help="reprocess splits that have a completion marker")
        parser.add_argument("--overwrite", action="store_true",
                            help="replace an earlier run's output (its own files only), e.g. after a config change")
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
        if getattr(args, "explain_sample", None) is not None:
            overrides.append(f"output.explain_sample={args.explain_sample}")
        return load_settings(args.config, overrides)

    def check(self, settings: Settings) -> None:
        """Before Spark starts: raise ConfigError for settings the tasks could not run with (the parts they name)."""

    def process_split(self, split: Split, settings: Settings, output: str,
                      skip_ids: frozenset[str] = frozenset()) -> dict[str, Any]:
        """The work of one Spark task: return the split's stats dict (``skip_ids``: duplicate record ids)."""
        raise NotImplementedError

    def run_task(self, split: Split, settings: Settings, output: str, skip_ids: frozenset[str]) -> dict[str, Any]:
        """:meth:`process_split`, with a shard that cannot be read turned into a failed split (no marker)."""
        try:
            return self.process_split(split, settings, output, skip_ids)
        except ShardReadError as exc:
            failed = Stats()
            failed.add("splits.failed")
            failed.file_errors[split.uri] = f"not read, retried by the next run: {exc}"
            return failed.to_dict()

    def has_spark_extensions(self) -> bool:
        """Whether an extension does Spark work after the splits (the corpus stages)."""
        return any(type(e).with_spark is not JobExtension.with_spark for e in self.extensions)

    def files(self) -> list[str]:
        """The run-level files this job writes besides stats.json (its own, then its extensions')."""
        return [name for extension in self.extensions for name in extension.files]

    def write_files(self, output: str, stats: dict[str, Any], settings: Settings) -> None:
        """Write the run-level files after stats.json."""
        for extension in self.extensions:
            extension.write(output, stats, settings)

    def run(self, args: argparse.Namespace, shards: list[Shard] | None = None) -> dict[str, Any]:
        """Run the job over ``args.input`` (or the already resolved ``shards``); return the merged stats."""
        settings = self.settings_from_args(args)
        if shards is None:
            shards = resolve_shards(args.input, settings.s3, settings.input.base_url)
        refuse_wat(shards)
        files = model_files(settings)  # first: the steps built by check() open these files
        self.check(settings)
        for extension in self.extensions:
            extension.check(settings)
        unscored = unscored_languages(settings.perplexity) if settings.perplexity.enabled else []
        if unscored:
            print(unscored_message(settings.perplexity, unscored), file=sys.stderr)
        prepare_output(args.output, settings, args.input, overwrite=getattr(args, "overwrite", False))
        OutputTarget(args.output, settings.s3).retract_success()
        started = time.time()
        for extension in self.extensions:
            extension.start(settings)
        with job_context(settings) as sc:
            cpu = JobCpu(sc)
            # Files already shipped with spark-submit --files are found by name on executors.
            shipped = {os.path.basename(f) for f in sc.getConf().get("spark.files", "").split(",") if f}
            for path in files:
                if os.path.basename(path) not in shipped:
                    sc.addFile(path)
            parallelism = (os.cpu_count() or 1) if settings.spark.master.startswith("local") and \
                not under_spark_submit() else sc.defaultParallelism
            splits = plan_splits(shards, settings.input, settings.s3, parallelism)
            settings = with_split_sample(settings, len(splits))
            output = args.output
            skip_sets = (duplicate_skip_sets(sc, splits, OutputTarget(output, settings.s3).finished_split_ids(),
                                             output, settings.input, settings.s3)
                         if settings.input.dedup_record_ids else {})
            job = self
            pages = sc.accumulator(0)

            def task(split: Split) -> dict[str, Any]:
                result = job.run_task(split, settings, output, skip_sets.get(split.split_id, frozenset()))
                if not result.get("splits", {}).get("resumed"):
                    pages.add(pages_read(result.get("records", {})))
                return result

            with Progress(sc, len(splits), pages):
                totals = sc.parallelize(splits, max(1, len(splits))).map(task).treeAggregate(
                    SplitTotals(), SplitTotals.add, SplitTotals.merge, depth=tree_depth(len(splits)))
            if self.has_spark_extensions():
                cpu.read_pages_done(sc, sc.defaultParallelism)
            for extension in self.extensions:
                extension.with_spark(sc, settings, output)
            cpu.read_spark(sc, sc.defaultParallelism)
        wall = time.time() - started
        # local inputs recorded absolute: `warcplex explain --from-output` finds them from any directory
        inputs = [uri if is_remote(uri) else os.path.abspath(uri) for uri in args.input]
        stats = self.merge_stats(output, len(splits), totals.stats, settings, wall, inputs)
        stats["job_cpu"] = cpu.section(totals.this_run["start_up"], totals.this_run["cpu"])
        stats["job_cpu"]["pages"] = totals.this_run["pages"]
        stats["run"]["pages_per_cpu_second"] = pages_per_cpu_second(stats["job_cpu"])
        for extension in self.extensions:
            extension.add_stats(stats, settings)
        stats["run"]["files"] = ["stats.json", *self.files()]
        target = OutputTarget(output, settings.s3)
        target.write_bytes("stats.json", dump_json(stats).encode("utf-8"))
        self.write_files(output, stats, settings)
        target.publish_success()  # the final commit: a manifest of every file with its size
        stats["run"]["files"].append("_SUCCESS")
        return stats

    def merge_stats(self, output: str, split_count: int, merged: Stats, settings: Settings,
                    wall: float, inputs: list[str]) -> dict[str, Any]:
        tree = merged.to_dict()
        pages = pages_read(tree.get("records", {}))
        tree["run"] = {
            "inputs": inputs,
            "output": output,
            "splits": split_count,
            "splits_resumed": tree.get("splits", {}).get("resumed", 0),
            "splits_failed": tree.get("splits", {}).get("failed", 0),
            "wall_seconds": round(wall, 3),
            "pages_per_second": round(pages / wall, 2) if wall else None,
            "pages_per_cpu_second": None,  # the whole job's, once its CPU is read (pages_per_cpu_second)
            "config": settings.model_dump(mode="json"),
        }
        tree["run"] = redact(tree["run"])  # the config's secrets and credentials in input or output URLs
        tree["coverage"] = language_coverage(tree, settings)
        return tree

    def summary(self, stats: dict[str, Any]) -> str:
        """The run's summary (:func:`summary_text`), with its extensions' lines."""
        return summary_text(stats, self.extensions)

    def main(self, argv: list[str] | None = None) -> int:
        parser = self.build_parser()
        args = parser.parse_args(argv)
        return run_cli(self, args)


# Up to this many splits, the driver merges their results itself; above it, the executors merge them in a tree
# first, so that the driver holds about the square root of their number (90,000 splits: 300 partial merges).
TREE_MERGE_FROM = 1000


def tree_depth(splits: int) -> int:
    """treeAggregate's depth for this many splits: 1 (one result per split to the driver) or 2."""
    return 1 if splits <= TREE_MERGE_FROM else 2


class SplitTotals:
    """What the driver keeps of the splits' results: their stats merged, and this run's share (a split an earlier run
    finished, resumed from its marker, spent none of this run's CPU and read none of its pages)."""

    __slots__ = ("stats", "this_run")

    def __init__(self) -> None:
        self.stats = Stats()
        self.this_run: Counter[str] = Counter()

    def add(self, result: dict[str, Any]) -> "SplitTotals":
        split = Stats.from_dict(result)
        self.stats.merge(split)
        if not result.get("splits", {}).get("resumed"):
            counts = split.counts
            start_up = counts["cpu_start_up.python_workers"] + counts["cpu_start_up.model_loads"]
            self.this_run.update({"start_up": start_up, "cpu": counts["cpu.total"],
                                  "pages": pages_read(result.get("records", {}))})
        return self

    def merge(self, other: "SplitTotals") -> "SplitTotals":
        self.stats.merge(other.stats)
        self.this_run.update(other.this_run)
        return self


def with_split_sample(settings: Settings, splits: int) -> Settings:
    """``settings`` with ``index.per_split_pages`` worked out for a run of ``splits`` splits when it is 0
    (:func:`~pipeline.writing.index_sample.per_split_pages`)."""
    if settings.index.per_split_pages or not settings.index.sample_pages:
        return settings
    quota = per_split_pages(settings.index.sample_pages, splits)
    return settings.model_copy(update={"index": settings.index.model_copy(update={"per_split_pages": quota})})


def refuse_wat(shards: list[Shard]) -> None:
    """A WAT input ends the run before Spark starts, in one line."""
    wat = [shard.uri for shard in shards if is_wat(shard.uri)]
    if wat:
        more = f" (and {len(wat) - 1} more)" if len(wat) > 1 else ""
        raise UsageError(f"{wat[0]}{more} {WAT_MESSAGE}")


def language_coverage(stats: dict[str, Any], settings: Settings) -> dict[str, dict[str, Any]]:
    """Per language: pages, pages kept, sentences scored and unscored, and the KenLM model used.

    ``model`` is the registry's model file, or None when the language has none (its sentences
    pass unscored, or its pages are dropped with ``perplexity.unknown_language: drop``) or the
    filter is off.
    """
    registry = load_registry(settings.perplexity.registry) if settings.perplexity.enabled else {}
    coverage = {}
    for lang, counts in sorted(stats.get("lang", {}).items()):
        entry = registry.get(lang)
        coverage[lang] = {
            "pages": int(counts.get("pages", 0)),
            "pages_kept": int(counts.get("pages_kept", 0)),
            "sentences_scored": int(counts.get("sentences_scored", 0)),
            "sentences_unscored": int(counts.get("sentences_unscored", 0)),
            "model": os.path.basename(entry.path) if entry and entry.scores_under(settings.perplexity) else None,
        }
    return coverage


class CleanWarcJob(WarcJob):
    """WARC shards -> extraction -> language ID -> sentence perplexity filter -> Parquet."""

    name = "clean_warc"
    description = "Clean WARC shards into a Parquet text corpus (perplexity-filtered sentences)."

    def check(self, settings: Settings) -> None:
        build_steps(settings)  # every step and extractor it names, with its options

    def process_split(self, split: Split, settings: Settings, output: str,
                      skip_ids: frozenset[str] = frozenset()) -> dict[str, Any]:
        return run_split(split, settings, output, settings.output.dropped, skip_ids)

    def files(self) -> list[str]:
        return ["summary.txt", *super().files()]

    def write_files(self, output: str, stats: dict[str, Any], settings: Settings) -> None:
        OutputTarget(output, settings.s3).write_bytes("summary.txt", (self.summary(stats) + "\n").encode("utf-8"))
        super().write_files(output, stats, settings)
