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
import warnings
from typing import Any, Sequence

from pipeline.config import ConfigError, Settings, load_settings
from pipeline.reading.sources import InputError, resolve_shards
from pipeline.reading.reader import ShardReadError, pages_line, pages_read, plan_splits
from pipeline.reading.shards import Shard, Split
from pipeline.reading.warc import is_wat
from pipeline.redact import install_log_redaction, redact, redact_text
from pipeline.registry import load_registry
from pipeline.spark.cpu import JobCpu
from pipeline.spark.dedup import duplicate_skip_sets
from pipeline.spark.progress import Progress
from pipeline.spark.runner import dump_json, run_split
from pipeline.spark.session import model_files, spark_context, under_spark_submit
from pipeline.stats import Stats, index_summary_lines
from pipeline.steps.loop import build_steps
from pipeline.usage import OneLineParser, UsageError
from pipeline.writing.outdir import OutputError, prepare_output
from pipeline.writing.output import OutputTarget
from pipeline.writing.sample import per_split_pages

log = logging.getLogger("warcplex")

# Exit statuses of `warcplex run` and `warcplex nightly` (README, "Exit statuses").
EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_FAILED_SHARDS = 0, 1, 2, 3
USER_ERRORS = (ConfigError, InputError, OutputError)
FAILED_SHARDS_NAMED = 20  # the shards summary.txt names when some could not be read (all are in stats.json)


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
        self.check(settings)
        for extension in self.extensions:
            extension.check(settings)
        files = model_files(settings)
        prepare_output(args.output, settings, args.input, overwrite=getattr(args, "overwrite", False))
        OutputTarget(args.output, settings.s3).retract_success()
        started = time.time()
        for extension in self.extensions:
            extension.start(settings)
        sc = spark_context(settings)
        cpu = JobCpu(sc)
        try:
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
                results = sc.parallelize(splits, max(1, len(splits))).map(task).collect()
            if self.has_spark_extensions():
                cpu.read_pages_done(sc, sc.defaultParallelism)
            for extension in self.extensions:
                extension.with_spark(sc, settings, output)
            cpu.read_spark(sc, sc.defaultParallelism)
        finally:
            sc.stop()
        wall = time.time() - started
        stats = self.merge_stats(output, [s.split_id for s in splits], results, settings, wall, args.input)
        this_run = [Stats.from_dict(r).counts for r in results if not r.get("splits", {}).get("resumed")]
        stats["job_cpu"] = cpu.section(sum(c["cpu_start_up.python_workers"] + c["cpu_start_up.model_loads"]
                                           for c in this_run), sum(c["cpu.total"] for c in this_run))
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
        pages = pages_read(tree.get("records", {}))
        cpu = tree.get("cpu", {}).get("total", 0.0)
        tree["run"] = {
            "inputs": inputs,
            "output": output,
            "splits": len(split_ids),
            "splits_resumed": tree.get("splits", {}).get("resumed", 0),
            "splits_failed": tree.get("splits", {}).get("failed", 0),
            "wall_seconds": round(wall, 3),
            "pages_per_second": round(pages / wall, 2) if wall else None,
            "pages_per_cpu_second": round(pages / cpu, 2) if cpu else None,
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


def with_split_sample(settings: Settings, splits: int) -> Settings:
    """``settings`` with ``index.per_split_pages`` worked out for a run of ``splits`` splits when it is 0
    (:func:`~pipeline.writing.sample.per_split_pages`)."""
    if settings.index.per_split_pages or not settings.index.sample_pages:
        return settings
    quota = per_split_pages(settings.index.sample_pages, splits)
    return settings.model_copy(update={"index": settings.index.model_copy(update={"per_split_pages": quota})})


WAT_MESSAGE = ("is WAT (JSON metadata records, no page text): warcplex reads WARC files (HTML responses) "
               "and WET files (text); give it the .warc.gz or the .warc.wet.gz of the same segment")


def refuse_wat(shards: list[Shard]) -> None:
    """A WAT input ends the run before Spark starts, in one line."""
    wat = [shard.uri for shard in shards if is_wat(shard.uri)]
    if wat:
        more = f" (and {len(wat) - 1} more)" if len(wat) > 1 else ""
        raise UsageError(f"{wat[0]}{more} {WAT_MESSAGE}")


def no_pages_message(stats: dict[str, Any]) -> str | None:
    """What to say when the input held no HTML response and no WET record, else None."""
    records = stats.get("records", {})
    if pages_read(records):
        return None
    skipped = Stats.from_dict({"skip": stats.get("skip", {})}).counts
    kinds = ", ".join(f"{k.removeprefix('skip.')} {v:g}" for k, v in sorted(skipped.items())) or "none"
    return (f"found no HTML response and no WET conversion record in {records.get('read', 0):g} WARC "
            f"records (skipped: {kinds})")


def quiet_third_party() -> None:
    """Silence known noise: pyspark's pandas-version FutureWarning and py4j's closing INFO line."""
    warnings.filterwarnings("ignore", message="PySpark does not yet fully support pandas", category=FutureWarning)
    logging.getLogger("py4j").setLevel(logging.WARNING)


def setup_logging() -> None:
    """INFO logging to stderr with every message redacted, and third-party noise off."""
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s")
    install_log_redaction()
    quiet_third_party()


def exit_status(stats: dict[str, Any]) -> int:
    """0 when every split was read, 3 when some shards could not be (they are retried next run)."""
    return EXIT_FAILED_SHARDS if stats["run"].get("splits_failed") else EXIT_OK


def run_cli(job: WarcJob, args: argparse.Namespace) -> int:
    """Run a job, turning user errors into one-line messages and exit status 2."""
    setup_logging()
    try:
        stats = job.run(args)
    except (UsageError, *USER_ERRORS) as exc:
        print(f"warcplex: error: {redact_text(str(exc))}", file=sys.stderr)
        return EXIT_USAGE
    print(job.summary(stats))
    nothing = no_pages_message(stats)
    if nothing:
        metadata_only = set(stats.get("skip", {}).get("not_response", {})) <= {"metadata", "warcinfo"}
        if metadata_only and stats.get("skip", {}).get("not_response", {}).get("metadata"):
            print(f"warcplex: error: the input {WAT_MESSAGE}", file=sys.stderr)
            return EXIT_USAGE
        print(f"warcplex: {nothing}", file=sys.stderr)
    return exit_status(stats)


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
            "model": os.path.basename(entry.path) if entry else None,
        }
    return coverage


def _coverage_note(entry: dict[str, Any]) -> str:
    """`(12% unscored)`, `(100% unscored, no model)`; empty when every sentence was scored."""
    total = entry["sentences_scored"] + entry["sentences_unscored"]
    if not entry["sentences_unscored"]:
        return "" if entry["model"] or not total else " (no model)"
    note = f"{100 * entry['sentences_unscored'] / total:.0f}% unscored"
    return f" ({note}{'' if entry['model'] else ', no model'})"


def _unscored_line(coverage: dict[str, dict[str, Any]], preformatted: int = 0) -> str:
    """How many kept sentences no model scored, in which languages without a model (most first), and how many
    sentences of preformatted text (code) the filter left unscored."""
    unscored = {lang: v["sentences_unscored"] for lang, v in coverage.items() if v["sentences_unscored"]}
    total = sum(v["sentences_scored"] + v["sentences_unscored"] for v in coverage.values())
    no_model = sorted((lang for lang in unscored if not coverage[lang]["model"]), key=lambda l: -unscored[l])
    return (f"  sentences unscored: {sum(unscored.values())} of {total}; languages without a model: "
            + (", ".join(f"{lang} {unscored[lang]}" for lang in no_model) or "none")
            + (f"; preformatted text (code): {preformatted}" if preformatted else ""))


def _filter_line(languages: dict[str, dict[str, Any]]) -> str | None:
    """What the perplexity filter removed per language: sentences and LM tokens of those it scored."""
    rows = sorted(((lang, v) for lang, v in languages.items() if v.get("sentences_scored")),
                  key=lambda kv: -kv[1]["sentences_scored"])[:8]
    if not rows:
        return None
    return "  perplexity filter removed (sentences, LM tokens of the scored): " + ", ".join(
        f"{lang} {v.get('sentences_filtered', 0)} of {v['sentences_scored']} sentences, "
        f"{100 * v.get('tokens_filtered', 0) / max(v.get('tokens_scored', 0), 1):.1f}% of tokens" for lang, v in rows)


def native_summary_lines(native: dict[str, dict[str, int]], splits: int) -> list[str]:
    """The compiled parts that did not run (``native.<missing|stale>.<part>``: splits that ran its Python reference)."""
    return [f"  compiled code: the {part} part was {cause} in {count} of {splits} split(s), which ran its Python "
            "reference (the same output, slower; `pip install -e .` builds it, `make dist` ships it)"
            for cause, parts in sorted(native.items()) for part, count in sorted(parts.items())]


def summary_text(stats: dict[str, Any], extensions: Sequence[JobExtension] = ()) -> str:
    """The short human summary printed at the end of a run and saved as summary.txt (with the lines of the job's
    ``extensions``)."""
    run = stats["run"]
    records = stats.get("records", {})
    outcome = stats.get("outcome", {})
    sentences = stats.get("sentences", {})
    text_bytes = stats.get("bytes", {})
    raw, clean = text_bytes.get("text_raw", 0), text_bytes.get("text_clean", 0)
    skipped = Stats.from_dict({"skip": stats.get("skip", {})}).counts
    outcomes = Stats.from_dict({"outcome": outcome}).counts
    languages = sorted(stats.get("lang", {}).items(), key=lambda kv: -kv[1].get("pages_kept", 0))[:8]
    coverage = stats.get("coverage", {})
    lines = [
        f"warcplex: {records.get('read', 0)} WARC records read from {run['splits']} split(s) "
        f"in {run['wall_seconds']:.1f} s ({run['pages_per_second'] or 0:.1f} HTML pages/s)",
        f"  {pages_line(records)}; "
        + ", ".join(f"{k.removeprefix('outcome.')} {v}" for k, v in sorted(outcomes.items(), key=lambda kv: -kv[1])),
        f"  skipped records: {sum(skipped.values())} "
        + "(" + ", ".join(f"{k.removeprefix('skip.')} {v}" for k, v in sorted(skipped.items())) + ")",
        f"  sentences kept: {sentences.get('kept', 0)} of {sentences.get('total', 0)}; "
        f"text bytes {raw} -> {clean} ({100 * clean / raw if raw else 0:.1f}% kept)",
        "  languages (pages kept): " + ", ".join(
            f"{lang} {v.get('pages_kept', 0)}" + (_coverage_note(coverage[lang]) if lang in coverage else "")
            for lang, v in languages),
        _unscored_line(coverage, stats.get("stage", {}).get("perplexity", {}).get("sentences_preformatted", 0)),
    ]
    removed = _filter_line(stats.get("lang", {}))
    if removed:
        lines.append(removed)
    carbon = stats.get("carbon", {})
    if carbon:
        lines.append(f"  CPU {carbon['cpu_hours'] * 3600:.1f} s, est. {carbon['kg_co2'] * 1000:.4f} g CO2 "
                     f"(eq. 9, C_e {carbon['grid_intensity_kg_per_kwh']} kg/kWh)")
    job = stats.get("job_cpu")
    if job:
        parts = job["parts"]
        shown = ", ".join(f"{name.replace('_', ' ')} {parts[name]:.1f}" for name in
                          ("driver_jvm", "executor_jvms", "python_driver", "python_workers")
                          if parts.get(name) is not None)
        lines.append(f"  whole job's CPU {job['total']:.1f} s: {shown} (Spark task metrics "
                     f"{job['executor_tasks']:.1f}); start-up {job['start_up']['total']:.1f} s")
    snapshot = carbon.get("snapshot")
    if snapshot:
        rough = f"rough, extrapolated from only {snapshot['measured_pages']:,} pages" if snapshot.get("rough") \
            else f"extrapolated from {snapshot.get('measured_pages', 0):,} pages"
        fixed = (f"; {100 * snapshot['start_up_share']:.0f}% of the measured CPU is start-up, without it "
                 f"{snapshot['core_hours_without_start_up']:,.0f} core-hours"
                 if snapshot.get("start_up_share") and snapshot.get("core_hours_without_start_up") is not None else "")
        lines.append(f"  one snapshot ({snapshot['pages']:,} pages; {rough}): {snapshot['core_hours']:,.0f} "
                     f"core-hours, ${snapshot['dollars']:,.0f}, {snapshot['kg_co2']:,.0f} kg CO2{fixed}")
    lines += native_summary_lines(stats.get("native", {}), run["splits"])
    lines += index_summary_lines(stats.get("index", {}))
    for extension in extensions:
        lines += extension.summary_lines(stats)
    failed = run.get("splits_failed", 0)
    if failed:
        lines.append(f"  FAILED: {failed} split(s) could not be read; they have no completion marker and the next "
                     "run retries them (exit status 3):")
        unread = [(uri, error) for uri, error in sorted(stats.get("file_errors", {}).items())
                  if error.startswith("not read")]
        lines += [f"    {uri}: {error}" for uri, error in unread[:FAILED_SHARDS_NAMED]]
        if len(unread) > FAILED_SHARDS_NAMED:
            lines.append(f"    and {len(unread) - FAILED_SHARDS_NAMED} more (stats.json file_errors)")
    if len(stats.get("file_errors", {})) > failed:
        lines.append(f"  unreadable parts of {len(stats['file_errors']) - failed} file(s), "
                     "see stats.json file_errors")
    duplicates = stats.get("skip", {}).get("duplicate_record_id", 0)
    if duplicates:
        lines.append(f"  {duplicates} record(s) dropped as duplicate WARC-Record-IDs of records kept elsewhere")
    lines.append(f"  output: {run['output']} ({', '.join(run.get('files', []))})")
    return "\n".join(lines)


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
