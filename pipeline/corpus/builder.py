"""Runs the corpus stages over a run's ``data/`` and commits ``corpus/`` and ``corpus_dropped/`` atomically.

Layout added to an output directory::

    corpus/language=<code>/part-<n>.parquet          the final dataset (data/ columns, cleaned text,
                                                      host, registered_domain, lines_removed, q_* signals,
                                                      perplexity_bucket)
    corpus_dropped/documents/language=<code>/...      every dropped document: reason, duplicate_of
    corpus_dropped/lines/language=<code>/...          every removed line: reason repeated_line, its counts
    _corpus/marker.json                               the commit: fingerprint of the input and the stats
    _corpus/inputs/language=<code>.parquet             the data/ files the builds so far read, a list a data/ folder
    _corpus/index_sample/part-0.parquet                the index statistics' sampled pages after each stage
                                                      (stage ``<i>-<name>``, warc_record_id, text; null text:
                                                      the run's, no stage so far changed it)
    _tmp/corpus/<fingerprint>/<i>-<stage>/            checkpoints of finished stages (resume), then removed

The stages' files are read and written by the Spark tasks with pyarrow (:mod:`pipeline.corpus.folders`), on a
local path or ``s3://`` alike: the data never passes through the driver nor a local copy, and no disk is shared
between the driver and the executors. The checkpoints live in the output itself (``_tmp/corpus/``), so a killed
run resumes from any host.

The corpus is recomputed from all of ``data/`` (every night's pages), so a document that is
already in it is never added twice. The fingerprint covers the ``data/`` file list with sizes
and the corpus settings: a rerun with the same input and settings is skipped, a killed run
resumes after its last finished stage. Spark's file names are replaced by ``part-<n>.parquet``
(rows sorted by record id), so the same input gives the same files.
"""

from __future__ import annotations

import hashlib
import json
import logging
import time
from functools import partial
from typing import Any, Callable

import pyarrow as pa
import pyarrow.parquet as pq
from pyarrow import fs as pafs
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.pandas.types import from_arrow_schema
from pyspark.sql.types import IntegerType, StringType, StructField, StructType, TimestampType

from pipeline import parts
from pipeline.config import Settings
from pipeline.corpus.demotions import build_prefix, rewrite
from pipeline.corpus.folders import TASK_BYTES, Planned, Tally, count_folder, read_folder, write_folder
from pipeline.corpus.input_plan import (INPUTS_DIR, FolderPlan, earlier_folders, load_summary, migrate_json_list,
                                        plan_inputs, save_summary, share_names)
from pipeline.corpus.lists import with_domain_columns
from pipeline.corpus.stages import (DROPPED_DOC_COLUMNS, PERCENTILE_COLUMNS, CorpusStage, ExactDedup, Quality,
                                    RecordIds, StageOutput, by_ids, key_batch, key_schema)
from pipeline.writing.index_sample import CORPUS_SAMPLE_DIR, sample_record_ids
from pipeline.writing.output import CORPUS_DIR, CORPUS_DROPPED_DIR, CORPUS_STATE_DIR, DATASET_DIR, OutputTarget
from pipeline.writing.rows import PAGE_SCHEMA

log = logging.getLogger("pipeline.corpus")

MARKER = f"{CORPUS_STATE_DIR}/marker.json"
KEYS_DIR = f"{CORPUS_STATE_DIR}/keys"  # exact_dedup's keys of every build: keys/g<build>/part-<n>.parquet
WORK_DIR = "_tmp/corpus"
LISTING = f"{WORK_DIR}/listing"  # where the tasks write each data/ folder's plan, until the build keeps it
# The dropped rows of a build (documents, lines) are written a task per this many rows, at most one per language.
DROPPED_ROWS_PER_TASK = 200_000
KEYS_SCHEMA = StructType([
    StructField("_hash", StringType()),
    StructField("_order", StructType([StructField("ts", TimestampType()), StructField("id", StringType()),
                                      StructField("shard", StringType())])),
    StructField("warc_record_id", StringType()), StructField("generation", IntegerType()),
    StructField("language", StringType())])
# The index sample's rows a stage dropped, as Spark and as Arrow see them: three string columns.
SAMPLE_COLUMNS = ("stage", "warc_record_id", "text")
SAMPLE_SCHEMA = StructType([StructField(name, StringType()) for name in SAMPLE_COLUMNS])
SAMPLE_ARROW_SCHEMA = pa.schema([(name, pa.string()) for name in SAMPLE_COLUMNS])


def enabled_stages(settings: Settings) -> list[CorpusStage]:
    """The stages ``corpus.stages`` lists, in its order, but those their own settings switch off
    (:meth:`CorpusStage.from_settings`)."""
    stages = (parts.find(CorpusStage, name).from_settings(settings) for name in settings.corpus.stages)
    return [stage for stage in stages if stage is not None]


class CorpusBuilder:
    """The corpus stages of one output directory, run on the driver's SparkSession."""

    def __init__(self, spark: SparkSession, settings: Settings, output: str) -> None:
        self.spark = spark
        self.settings = settings
        self.target = OutputTarget(output, settings.s3)
        self.compression = settings.output.compression if settings.output.compression != "none" else "uncompressed"
        self.sample_ids = self._index_sample()
        self._sample_ids_df: DataFrame | None = None
        self.stages = enabled_stages(settings)

    def _read(self, folder: str) -> DataFrame:
        """The Parquet folder ``folder`` of a finished checkpoint, read by the tasks with the schema its
        ``_DONE.json`` recorded."""
        done = json.loads(self.target.read_bytes(f"{folder.rsplit('/', 1)[0]}/_DONE.json") or b"{}")
        name = folder.rsplit("/", 1)[1]
        schema = StructType.fromJson(done["schemas"][name])
        files = done["files"][name]
        return read_folder(self.spark, self.target.uri, self.settings.s3, [(f["path"], f["size"]) for f in files],
                           schema)

    def _index_sample(self) -> list[str] | None:
        """The record ids whose text after each stage the index chain measures (None: no index statistics)."""
        if not self.settings.index.enabled:
            return None
        try:
            return sample_record_ids(self.target.uri, self.settings.s3, self.settings.index.sample_pages)
        except ValueError:
            return None

    def basis(self) -> str:
        """Hash of every setting the stages read: builds with the same basis can add to each other."""
        basis = {"corpus": self.settings.corpus.model_dump(mode="json"),
                 "stages": [stage.name for stage in self.stages], "compression": self.compression}
        return hashlib.sha256(json.dumps(basis, sort_keys=True).encode("utf-8")).hexdigest()[:20]

    def fingerprint(self, folders: list[FolderPlan]) -> str:
        """Hash of the input (each data/ folder's hash of its files and sizes), of every setting the stages read and
        of the index sample."""
        basis = {"inputs": [[folder.folder, folder.digest] for folder in folders], "basis": self.basis(),
                 "index_sample": hashlib.sha256("\n".join(self.sample_ids).encode()).hexdigest()
                 if self.sample_ids is not None else None}
        return hashlib.sha256(json.dumps(basis, sort_keys=True).encode("utf-8")).hexdigest()[:20]

    def not_incremental(self) -> list[str]:
        """Why this build cannot keep what a later build needs to add to it (empty: it can)."""
        if not self.settings.corpus.incremental:
            return ["corpus.incremental is off"]
        return [f"{stage.name}: {reason}" for stage in self.stages if (reason := stage.not_incremental())]

    def _base(self, folders: list[FolderPlan], work: str) -> tuple[dict[str, Any] | None, str | None]:
        """(the earlier build this one adds to: its ``generation`` and ``stats``, None), or (None, why it reads all
        of data/; None for a first build), from the plan of each data/ folder (``folders``).

        The base is saved in the build's work folder first, so that a killed build resumes against the same one."""
        saved = self.target.read_bytes(f"{work}/base.json")
        if saved is not None:
            return json.loads(saved), None
        marker = self.target.read_bytes(MARKER)
        if marker is None or not self.target.exists(CORPUS_DIR):
            return None, None
        why = self.not_incremental()
        earlier = json.loads(marker)
        if not why and not self.settings.output.resume:
            why = ["output.resume is off"]
        if not why and earlier.get("basis") != self.basis():
            why = ["the corpus settings changed since the last build"]
        listed = earlier_folders(self.target)
        if not why and (listed is None or "generation" not in earlier):
            why = ["the last build kept no keys"]
        if not why and (any(folder.changed for folder in folders) or listed - {folder.folder for folder in folders}):
            why = [f"{DATASET_DIR}/ files of the last build changed or are gone"]
        if why:
            return None, "; ".join(why)
        base = {"generation": earlier["generation"], "stats": earlier}
        self.target.write_json(f"{work}/base.json", base)
        return base, None

    def _plan(self) -> tuple[list[FolderPlan], str | None]:
        """Each data/ folder's plan (:mod:`~pipeline.corpus.input_plan`), listed into :data:`LISTING`, and the
        build's fingerprint (None: data/ holds no file)."""
        migrate_json_list(self.target)
        self.target.fs.delete_dir_contents(self.target.path(LISTING), missing_dir_ok=True)
        folders = plan_inputs(self.spark, self.target, self.settings.s3, LISTING)
        return folders, self.fingerprint(folders) if any(folder.files for folder in folders) else None

    def _keep_plan(self, folders: list[FolderPlan], work: str) -> list[FolderPlan]:
        """The listed plan kept as ``<work>/plan``; or, when a build of the same fingerprint was killed, the plan it
        made first (the files it took for new are those it took before its commit began)."""
        plan = f"{work}/plan"
        saved = load_summary(self.target, plan)
        if saved is None:
            self.target.fs.delete_dir_contents(self.target.path(plan), missing_dir_ok=True)
            self.target.fs.create_dir(self.target.path(plan), recursive=True)
            for folder in folders:
                self.target.fs.move(self.target.path(f"{LISTING}/{folder.folder}.parquet"),
                                    self.target.path(f"{plan}/{folder.folder}.parquet"))
            save_summary(self.target, plan, folders)
        self._drop_listing()
        return folders if saved is None else saved

    def _drop_listing(self) -> None:
        """:data:`LISTING` removed (and the work folder, when nothing else is in it)."""
        fs = self.target.fs
        if self.target.exists(LISTING):
            fs.delete_dir(self.target.path(LISTING))
        work = self.target.path(WORK_DIR)
        if self.target.exists(WORK_DIR) and not fs.get_file_info(pafs.FileSelector(work, allow_not_found=True)):
            fs.delete_dir(work)

    def run(self) -> dict[str, Any]:
        """Run (or resume, or skip) the stages; return the ``corpus`` section of stats.json."""
        folders, fingerprint = self._plan()
        if fingerprint is None:
            self._drop_listing()
            return {"skipped": f"no documents in {DATASET_DIR}/"}
        previous = self.target.read_bytes(MARKER)
        if previous and self.settings.output.resume:
            done = json.loads(previous)
            if done.get("fingerprint") == fingerprint and self.target.exists(CORPUS_DIR):
                self._drop_listing()
                done["resumed"] = True
                return done
        started = time.time()
        work = f"{WORK_DIR}/{fingerprint}"
        folders = self._keep_plan(folders, work)
        base, why = self._base(folders, work)
        if base is not None and not any(folder.new for folder in folders):
            # Nothing new since the last build (whose marker has another fingerprint: an earlier version's): the
            # corpus is that build's, now under this fingerprint.
            done = {**base["stats"], "fingerprint": fingerprint}
            self.target.write_bytes(MARKER, json.dumps(done, sort_keys=True).encode("utf-8"))
            self.target.fs.delete_dir(self.target.path(work))
            self._drop_listing()
            return {**done, "resumed": True}
        keeps_keys = not self.not_incremental()
        generation = base["generation"] + 1 if base else 0
        new_files = share_names(f"{work}/plan", folders, adding=base is not None)
        if why:
            log.warning("corpus: this build reads all of %s/: %s", DATASET_DIR, why)
        stats: dict[str, Any] = {"fingerprint": fingerprint, "basis": self.basis(), "stages": {}, "order": [],
                                 "build": "incremental" if base else "full", "generation": generation}
        if why:
            stats["full_reason"] = why
        docs, first = self._input(new_files), self._input_counts(f"{work}/0-input", new_files)
        # The index sample after each stage: its documents, read (where a stage did not rewrite them) from data/ by
        # tasks that keep only the sampled ids; while no stage has changed the text, the text is written as null (the
        # index statistics have the run's), and a full build needs no read: the sampled ids less those dropped.
        sample = docs if self.sample_ids is None else self._input(new_files, only=self.sample_ids)
        # While every stage so far only removed documents (their folders and counts: ``removals``), a stage can read
        # data/ less those itself: exact dedup hashes the text in the reading tasks, the quality stage's percentiles
        # read their columns alone.
        removals: list[tuple[str, dict[str, Any]]] | None = []
        sampled_left = set(self.sample_ids) if self.sample_ids is not None and base is None else None
        text_unchanged = True
        stats["documents_in"], stats["bytes_in"] = first["documents_out"], first["bytes_out"]
        stats["documents_new"] = first["documents_out"]
        dropped_docs, dropped_lines, stage_docs, keys_folder, demoted = [], [], [], None, None
        previous_counts, written_by_final = first, None
        unique_ids = self.settings.input.dedup_record_ids
        for index, stage in enumerate(self.stages, start=1):
            folder = f"{work}/{index}-{stage.name}"
            if index == len(self.stages) and stage.keeps_all():
                # Not checkpointed: the final write runs it. Its documents and texts are the previous stage's.
                stage_docs.append((folder, self._sample_entry(sample, sampled_left, text_unchanged)))
                docs, written_by_final = self._apply(stage, docs, new_files, removals).docs, stage.name
                stats["stages"][stage.name] = {
                    "documents_in": previous_counts["documents_out"], "bytes_in": previous_counts["bytes_out"],
                    "documents_out": previous_counts["documents_out"], "bytes_out": previous_counts["bytes_out"],
                    "documents_dropped": 0, "dropped": {}, "lines_removed": 0, "with_final_write": True}
                stats["order"].append(stage.name)
                continue
            incremental = (None, None)
            if keeps_keys and isinstance(stage, ExactDedup):
                keys_folder = f"{folder}/keys"
                incremental = (self._earlier_keys() if base else None, generation)
            produce = partial(self._apply, stage, docs, new_files, None if removals is None else list(removals),
                              incremental)
            # A stage that only removes documents keeps its dropped ones; the kept are its input less those (by
            # record id, so only where ids are unique).
            removed_from = docs if unique_ids and stage.removes_only() else None
            docs, stage_stats = self._checkpoint(folder, produce, previous_counts, removed_from)
            stats["stages"][stage.name] = stage_stats
            stats["order"].append(stage.name)
            sample = self._less_dropped(sample, folder, stage_stats) if removed_from is not None else docs
            removals = removals + [(folder, stage_stats)] if removed_from is not None and removals is not None else None
            text_unchanged = text_unchanged and stage.keeps_text()
            sampled_dropped = stage_stats.pop("sampled_dropped", [])
            if sampled_left is not None and text_unchanged and unique_ids:
                sampled_left -= set(sampled_dropped)  # with ids repeated, a dropped id's other copy stays
            stage_docs.append((folder, self._sample_entry(sample, sampled_left, text_unchanged)))
            unique_ids = unique_ids or isinstance(stage, RecordIds)
            previous_counts = stage_stats
            if stage_stats["documents_dropped"]:
                dropped_docs.append(self._read(f"{folder}/dropped_docs"))
            if stage_stats["lines_removed"]:
                dropped_lines.append(self._read(f"{folder}/dropped_lines"))
            if stage_stats.get("demoted"):
                demoted = self._read(f"{folder}/demoted")
        stats["documents_out"], stats["bytes_out"] = previous_counts["documents_out"], previous_counts["bytes_out"]
        report = self._rewrite(demoted, work) if base and demoted is not None else []
        languages = sum(1 for folder in folders if (folder.new if base else folder.files))
        written = {"documents": stats["documents_out"], "text_bytes": stats["bytes_out"],
                   "dropped": sum(stage["documents_dropped"] for stage in stats["stages"].values()),
                   "lines": sum(stage["lines_removed"] for stage in stats["stages"].values())}
        final_started = time.time()
        self._write_final(docs, dropped_docs, dropped_lines, f"{work}/final", build_prefix(generation), languages,
                          written)
        if written_by_final is not None:  # the stage's time is the final write's, which ran it
            stats["stages"][written_by_final]["wall_seconds"] = round(time.time() - final_started, 3)
        self._write_index_sample(stage_docs, f"{work}/final", base is not None, demoted if base else None)
        if base:
            stats = merged_stats(base["stats"], stats, report)
        stats["wall_seconds"] = round(time.time() - started, 3)
        self._commit(work, stats, base, keys_folder, report, [folder.folder for folder in folders])
        stats["resumed"] = False
        return stats

    def _apply(self, stage: CorpusStage, docs: DataFrame, files: Planned,
               removals: list[tuple[str, dict[str, Any]]] | None, incremental: tuple = (None, None)) -> StageOutput:
        """The stage over ``docs``, which are data/'s ``files`` less the documents the ``removals`` dropped where
        these are given: then exact dedup's keys and the quality signals are made by the reading tasks (the text
        does not pass through the JVM for them), and the quality stage's percentiles read their columns alone.
        ``incremental``: exact dedup's earlier keys and build (:meth:`ExactDedup.apply_new`)."""
        if isinstance(stage, ExactDedup):
            hashed = self._from_data(files, removals, then=(key_batch, key_schema)) if removals is not None else None
            return stage.apply_new(docs, *incremental, hashed)
        if isinstance(stage, Quality):
            if removals is not None:
                source = self._from_data(files, removals, columns=PERCENTILE_COLUMNS)
                return stage.apply(docs, source=source, signaled=self._from_data(files, removals,
                                                                                 then=stage.in_reading()))
            # (a stage of one's own may have left out a column: the percentiles then read the documents)
            source = docs.select(*PERCENTILE_COLUMNS) if set(PERCENTILE_COLUMNS) <= set(docs.columns) else docs
            return stage.apply(docs, source=source)
        return stage.apply(docs)

    def _from_data(self, files: Planned, removals: list[tuple[str, dict[str, Any]]], **read: Any) -> DataFrame:
        """data/'s ``files`` (:meth:`_input` with ``read``) less the documents the ``removals`` dropped."""
        frame = self._input(files, **read)
        for folder, counts in removals:
            frame = self._less_dropped(frame, folder, counts)
        return frame

    def _earlier_keys(self) -> DataFrame:
        """The exact_dedup keys every earlier build kept (``_corpus/keys/``), read by the tasks."""
        files = self.target.list_files(KEYS_DIR)
        return read_folder(self.spark, self.target.uri, self.settings.s3, files, KEYS_SCHEMA)

    def _rewrite(self, demoted: DataFrame, work: str) -> list[dict[str, Any]]:
        """The earlier builds' files that hold ``demoted`` documents, rewritten into ``<work>/rewrite`` (once: a
        killed build reads the report back)."""
        done = self.target.read_bytes(f"{work}/rewrite/_DONE.json")
        if done is not None:
            return json.loads(done)["report"]
        codec = None if self.compression == "uncompressed" else self.compression
        report = rewrite(demoted, self.target.uri, self.settings.s3, f"{work}/rewrite", codec)
        report.sort(key=lambda row: (row["action"], row["path"], row["reason"]))
        self.target.write_bytes(f"{work}/rewrite/_DONE.json", json.dumps({"report": report}).encode("utf-8"))
        return report

    def _input(self, files: Planned, only: list[str] | None = None, columns: tuple[str, ...] | None = None,
               then: tuple[Callable, Callable] | None = None) -> DataFrame:
        """The documents of the data/ ``files`` (the shares of the plan: all files, or the new ones; ``only`` those
        record ids, when given), with the corpus columns; or only the data/ ``columns`` (the tasks read no other);
        or as ``then`` makes them (a function of a record batch of the documents, run by the reading tasks, and the
        schema it makes of theirs)."""
        schema = StructType([StructField(f.name, f.dataType, True) for f in from_arrow_schema(PAGE_SCHEMA).fields]
                            + [StructField("language", StringType(), True)])
        if columns is not None:
            return read_folder(self.spark, self.target.uri, self.settings.s3, files,
                               StructType([schema[name] for name in columns]), partition="language")
        extended = StructType([StructField("host", StringType(), True), *schema.fields,
                               StructField("registered_domain", StringType(), True),
                               StructField("lines_removed", IntegerType(), True)])
        if then is not None:
            more, shaped = then
            return read_folder(self.spark, self.target.uri, self.settings.s3, files, schema, partition="language",
                               extend=lambda batch: more(with_domain_columns(batch)), extended=shaped(extended))
        return read_folder(self.spark, self.target.uri, self.settings.s3, files, schema, partition="language",
                           extend=with_domain_columns, extended=extended,
                           only=None if only is None else ("warc_record_id", only))

    def _input_counts(self, folder: str, files: Planned) -> dict[str, Any]:
        """The documents and text bytes of the data/ ``files`` this build reads (counted once: a killed build reads
        them back). The input itself is not copied: the first stage reads data/, which a build never changes."""
        done = self.target.read_bytes(f"{folder}/_DONE.json")
        if done is not None:
            return json.loads(done)
        documents, size = count_folder(self.spark, self.target.uri, self.settings.s3, files, "text")
        counts = {"documents_out": documents, "bytes_out": size}
        self.target.write_bytes(f"{folder}/_DONE.json", json.dumps(counts, sort_keys=True).encode("utf-8"))
        return counts

    def _checkpoint(self, folder: str, produce: Callable[[], StageOutput], before: dict[str, Any] | None,
                    removed_from: DataFrame | None = None) -> tuple[DataFrame, dict[str, Any]]:
        """Run a stage and write its outputs under ``folder``, or read them back if it finished before.
        ``removed_from``: the input of a stage that only removes documents; its kept documents are not written,
        they are ``removed_from`` less the dropped ones."""
        found = self.target.read_bytes(f"{folder}/_DONE.json")
        done = json.loads(found) if found is not None else None
        if done is None or "sampled_dropped" not in done:  # (or finished by a version that did not record it)
            started = time.time()
            output = produce()
            # The counts are those of the files the tasks wrote (no second pass over them).
            measured = {"docs": "text", "dropped_docs": None, "dropped_lines": "line", "keys": None, "demoted": None}
            written: dict[str, list[dict[str, Any]]] = {}
            schemas: dict[str, Any] = {}
            for name, frame in (("docs", output.docs), ("dropped_docs", output.dropped_docs),
                                ("dropped_lines", output.dropped_lines), ("keys", output.keys),
                                ("demoted", output.demoted)):
                if frame is not None and not (name == "docs" and removed_from is not None):
                    # the dropped documents' counts by reason, and the index sample's ids among them, from the tasks
                    # that write them
                    tally = Tally("reason", "text_bytes", "warc_record_id", frozenset(self.sample_ids or ())) \
                        if name == "dropped_docs" else None
                    written[name] = write_folder(frame, self.target, self.settings.s3, f"{folder}/{name}",
                                                 self.compression, measure=measured[name], tally=tally)
                    # Parquet columns are read back nullable.
                    schemas[name] = StructType([StructField(f.name, f.dataType, True)
                                                for f in frame.schema.fields]).jsonValue()
            counts = self._count(written, before, removed_from is not None)
            counts["wall_seconds"] = round(time.time() - started, 3)
            sizes = {info.path: info.size for info in self.target.fs.get_file_info(
                pafs.FileSelector(self.target.path(folder), recursive=True, allow_not_found=True))}
            files = {name: [{"path": f["path"], "size": sizes[self.target.path(f["path"])]} for f in found]
                     for name, found in written.items()}
            self.target.write_bytes(f"{folder}/_DONE.json", json.dumps(
                {**counts, "files": files, "schemas": schemas}, sort_keys=True).encode("utf-8"))
            log.info("corpus stage %s: %s", folder.rsplit("/", 1)[-1], counts)
        else:
            counts = {k: v for k, v in done.items() if k not in ("files", "schemas")}
        if removed_from is None:
            return self._read(f"{folder}/docs"), counts
        return self._less_dropped(removed_from, folder, counts), counts

    def _less_dropped(self, docs: DataFrame, folder: str, counts: dict[str, Any]) -> DataFrame:
        """``docs`` less the documents the finished stage in ``folder`` dropped (its ``counts``), by record id."""
        if not counts["documents_dropped"]:
            return docs
        dropped = self._read(f"{folder}/dropped_docs").select("warc_record_id")
        return docs.join(by_ids(dropped, counts["documents_dropped"]), "warc_record_id", "left_anti")

    @staticmethod
    def _count(written: dict[str, list[dict[str, Any]]], before: dict[str, Any], removes_only: bool) -> dict[str, Any]:
        """A stage's counts from the files its tasks ``written`` (``rows``, ``bytes``, and the dropped documents'
        ``tally``: by reason, and the index sample's ids among them, ``sampled_dropped``); a stage that
        ``removes_only`` wrote no documents: they are those ``before`` less the dropped."""
        def total(name: str, key: str) -> int:
            return sum(f[key] for f in written.get(name, []))

        counts: dict[str, Any] = {"documents_out": total("docs", "rows"), "bytes_out": total("docs", "bytes"),
                                  "documents_dropped": 0, "dropped": {}, "lines_removed": 0, "sampled_dropped": [],
                                  "documents_in": before["documents_out"], "bytes_in": before["bytes_out"]}
        dropped_bytes = 0
        if total("dropped_docs", "rows"):
            tally = Tally.merged(written["dropped_docs"])
            counts["sampled_dropped"] = tally["marked"]
            counts["dropped"] = {reason: rows for reason, (rows, _) in sorted(tally["by"].items())}
            counts["documents_dropped"] = sum(counts["dropped"].values())
            dropped_bytes = sum(size for _, size in tally["by"].values())
        if removes_only:
            counts["documents_out"] = counts["documents_in"] - counts["documents_dropped"]
            counts["bytes_out"] = counts["bytes_in"] - dropped_bytes
        if "dropped_lines" in written:
            counts["lines_removed"] = total("dropped_lines", "rows")
            counts["line_bytes_removed"] = total("dropped_lines", "bytes")
        if "demoted" in written:
            counts["demoted"] = total("demoted", "rows")
        return counts

    def _write_sorted(self, frame: DataFrame, relative: str, files_per_language: int, key: str, name: str,
                      tasks: int) -> None:
        """``frame`` spread over ``tasks`` tasks by (language, a hash of ``key`` into ``files_per_language``
        buckets), sorted within each, written one file per task and language."""
        bucket = F.pmod(F.xxhash64(key), F.lit(files_per_language))
        ordered = (frame.repartition(max(1, tasks), "language", bucket)
                   .sortWithinPartitions("language", key))
        write_folder(ordered, self.target, self.settings.s3, relative, self.compression, partition="language",
                     name=name)

    def _write_final(self, docs: DataFrame, dropped_docs: list[DataFrame], dropped_lines: list[DataFrame],
                     final: str, name: str, languages: int, counts: dict[str, int]) -> None:
        """The build's own files, ``<name>-<n>.parquet`` (:func:`~pipeline.corpus.demotions.build_prefix`).
        ``languages``: how many the input has (the stages keep a document's language); ``counts``: the rows of each
        folder (``documents``, ``dropped``, ``lines``) and the documents' ``text_bytes``: the dropped rows take a
        task per :data:`DROPPED_ROWS_PER_TASK` (one file per language and task), so that a few dropped rows are not
        spread over a task per language. The documents take a task per file of each language
        (``corpus.files_per_language``); with one file a language, no more tasks than a task per
        :data:`~pipeline.corpus.folders.TASK_BYTES` or the cluster's cores need, so that a task writes the files of
        a few small languages."""
        per_language = self.settings.corpus.files_per_language
        tasks = languages * per_language
        if per_language == 1:
            needed = -(-counts["text_bytes"] // TASK_BYTES)
            tasks = min(tasks, max(needed, self.spark.sparkContext.defaultParallelism))
        self._write_sorted(docs, f"{final}/{CORPUS_DIR}", per_language, "warc_record_id", name, tasks)
        empty_docs = self.spark.createDataFrame([], "warc_record_id string, url string, warc_date timestamp, "
                                                "language string, registered_domain string, reason string, "
                                                "duplicate_of string, text_bytes long")
        all_docs = empty_docs
        for frame in dropped_docs:
            all_docs = all_docs.unionByName(frame.select(*DROPPED_DOC_COLUMNS))
        self._write_sorted(all_docs, f"{final}/{CORPUS_DROPPED_DIR}/documents", 1, "warc_record_id", name,
                           min(languages, -(-counts["dropped"] // DROPPED_ROWS_PER_TASK)))
        if dropped_lines:
            lines = dropped_lines[0]
            for frame in dropped_lines[1:]:
                lines = lines.unionByName(frame)
            ordered = lines.withColumn("_line_key", F.format_string("%s:%09d", "warc_record_id", "line_number"))
            self._write_sorted(ordered, f"{final}/{CORPUS_DROPPED_DIR}/lines", 1, "_line_key", name,
                               min(languages, -(-counts["lines"] // DROPPED_ROWS_PER_TASK)))

    @staticmethod
    def _sample_entry(sample: DataFrame, sampled_left: set[str] | None,
                      text_unchanged: bool) -> tuple[DataFrame | list[str], bool]:
        """What :meth:`_write_index_sample` takes for a stage: the sampled ids left, or the documents; and whether
        their text is the run's."""
        if text_unchanged and sampled_left is not None:
            return sorted(sampled_left), True
        return sample, text_unchanged

    def _sample_ids_frame(self) -> DataFrame:
        """The index sample's ids, one column ``warc_record_id`` (a few thousand rows, made once)."""
        if self._sample_ids_df is None:
            self._sample_ids_df = self.spark.createDataFrame([(i,) for i in self.sample_ids], "warc_record_id string")
        return self._sample_ids_df

    def _write_index_sample(self, stage_docs: list[tuple[str, tuple[DataFrame | list[str], bool]]], final: str,
                            adding: bool, demoted: DataFrame | None) -> None:
        """The sampled pages' text after each stage (``stage_docs``: each stage's folder and :meth:`_sample_entry`:
        the documents whose texts it passes on, or the sampled ids it passed on; a text no stage changed so far is
        written as null), one small file (only ids the sample holds). A build that adds to an earlier one adds its
        pages' rows to the earlier sample's, less the stages ``demoted`` documents no longer pass."""
        folder = f"{final}/{CORPUS_SAMPLE_DIR}"
        if self.sample_ids is None or not stage_docs or self.target.exists(f"{folder}/_DONE"):
            return
        stage_folders = [stage for stage, _ in stage_docs]
        earlier = [(path, size) for path, size in self.target.list_files(CORPUS_SAMPLE_DIR)
                   if path.endswith(".parquet")]
        if all(isinstance(docs, list) for _, (docs, _) in stage_docs) and not (adding and earlier):
            # Only ids (a few thousand at most): written here, as one task would write them.
            rows = sorted((stage.rsplit("/", 1)[-1], i) for stage, (docs, _) in stage_docs for i in docs)
            table = pa.table({"stage": [r[0] for r in rows], "warc_record_id": [r[1] for r in rows],
                              "text": pa.nulls(len(rows), pa.string())}, schema=SAMPLE_ARROW_SCHEMA)
            buffer = pa.BufferOutputStream()
            pq.write_table(table, buffer, compression=None if self.compression == "uncompressed" else self.compression)
            self.target.write_bytes(f"{folder}/part-00000.parquet", buffer.getvalue().to_pybytes())
            self.target.write_bytes(f"{folder}/_DONE", b"")
            return
        ids = self._sample_ids_frame()
        frames = [self.spark.createDataFrame([(stage.rsplit("/", 1)[-1], i, None) for i in docs], SAMPLE_SCHEMA)
                  if isinstance(docs, list) else
                  docs.join(F.broadcast(ids), "warc_record_id")
                  .select(F.lit(stage.rsplit("/", 1)[-1]).alias("stage"), "warc_record_id",
                          F.lit(None).cast("string").alias("text") if unchanged else F.col("text"))
                  for stage, (docs, unchanged) in stage_docs]
        if adding and earlier:
            rows = read_folder(self.spark, self.target.uri, self.settings.s3, earlier,
                               SAMPLE_SCHEMA).join(F.broadcast(ids), "warc_record_id")
            if demoted is not None:
                exact = next(int(stage.rsplit("/", 1)[-1].split("-", 1)[0]) for stage in stage_folders
                             if stage.endswith(f"-{ExactDedup.name}"))
                gone = demoted.select("warc_record_id", F.lit(True).alias("_gone"))
                rows = (rows.join(gone, "warc_record_id", "left")
                        .where(F.col("_gone").isNull()
                               | (F.split("stage", "-").getItem(0).cast("int") < F.lit(exact)))
                        .select("stage", "warc_record_id", "text"))
            frames.append(rows.select("stage", "warc_record_id", "text"))
        sample = frames[0]
        for frame in frames[1:]:
            sample = sample.unionByName(frame)
        write_folder(sample.coalesce(1).sortWithinPartitions("stage", "warc_record_id"), self.target,
                     self.settings.s3, folder, self.compression)
        self.target.write_bytes(f"{folder}/_DONE", b"")

    def _commit(self, work: str, stats: dict[str, Any], base: dict[str, Any] | None, keys_folder: str | None,
                report: list[dict[str, Any]], folders: list[str]) -> None:
        """Put the build's files into place, file by file from the tasks (on S3 a server-side copy); the marker,
        written last, is the commit. A full build replaces the corpus; a build that adds to an earlier one adds its
        own files, the earlier builds' files it rewrote and its keys. ``_corpus/inputs/`` records the data/
        files read so far, a list a data/ ``folders`` (the build's plan), for the next build."""
        fs, final = self.target.fs, f"{work}/final"
        if self.target.exists(MARKER):
            fs.delete_file(self.target.path(MARKER))
        moves: list[tuple[str, str]] = []

        def move_folder(source_relative: str, destination_relative: str) -> None:
            source = self.target.path(source_relative)
            moves.extend((info.path, self.target.path(destination_relative) + info.path[len(source):])
                         for info in fs.get_file_info(pafs.FileSelector(source, recursive=True,
                                                                       allow_not_found=True))
                         if info.is_file and info.base_name != "_DONE")

        for name in (CORPUS_DIR, CORPUS_DROPPED_DIR, CORPUS_SAMPLE_DIR):
            if base is None or name == CORPUS_SAMPLE_DIR:
                if self.target.exists(name) and (base is None or self.target.exists(f"{final}/{name}")):
                    fs.delete_dir(self.target.path(name))
            move_folder(f"{final}/{name}", name)
        if base is None and self.target.exists(KEYS_DIR):
            fs.delete_dir(self.target.path(KEYS_DIR))
        if keys_folder is not None:
            move_folder(keys_folder, f"{KEYS_DIR}/g{stats['generation']:05d}")
        for row in report:
            if row["action"] == "write":
                moves.append((self.target.path(f"{work}/rewrite/{row['path']}"), self.target.path(row["path"])))
        if moves:
            uri, s3 = self.target.uri, self.settings.s3
            tasks = max(1, min(len(moves), self.spark.sparkContext.defaultParallelism * 4))
            self.spark.sparkContext.parallelize(moves, tasks).foreachPartition(
                lambda pairs: _move_files(uri, s3, pairs))
        for row in report:
            if row["action"] == "delete" and self.target.exists(row["path"]):
                fs.delete_file(self.target.path(row["path"]))
        if self.target.exists(INPUTS_DIR):
            fs.delete_dir(self.target.path(INPUTS_DIR))
        if keys_folder is not None:  # copied, not moved: a build killed before its marker resumes with its plan
            fs.create_dir(self.target.path(INPUTS_DIR), recursive=True)
            for folder in folders:
                fs.copy_file(self.target.path(f"{work}/plan/{folder}.parquet"),
                             self.target.path(f"{INPUTS_DIR}/{folder}.parquet"))
        self.target.write_bytes(MARKER, json.dumps(stats, sort_keys=True).encode("utf-8"))
        fs.delete_dir(self.target.path(WORK_DIR))


def merged_stats(earlier: dict[str, Any], night: dict[str, Any], report: list[dict[str, Any]]) -> dict[str, Any]:
    """The counts of the whole corpus after a build that added to ``earlier``: its own counts (``night``, over its
    new documents) added, then the documents its demotions took from later stages (``report``: the rewrite tasks'
    ``moved`` rows) moved to ``exact_dedup``'s dropped ones. Each stage keeps this build's ``wall_seconds`` and says
    how many documents it processed (``documents_processed``)."""
    merged = json.loads(json.dumps(night))
    for key in ("documents_in", "bytes_in"):
        merged[key] = earlier.get(key, 0) + night[key]
    for name in night["order"]:
        stage, before = merged["stages"][name], earlier["stages"].get(name, {})
        stage["documents_processed"] = night["stages"][name].get("documents_in", 0)
        for key in ("documents_in", "bytes_in", "documents_out", "bytes_out", "documents_dropped", "lines_removed",
                    "line_bytes_removed", "demoted"):
            if key in stage or key in before:
                stage[key] = stage.get(key, 0) + before.get(key, 0)
        for reason, count in before.get("dropped", {}).items():
            stage["dropped"][reason] = stage["dropped"].get(reason, 0) + count
    order = night["order"]
    exact = order.index(ExactDedup.name) if ExactDedup.name in order else None
    for row in (r for r in report if r["action"] == "moved" and exact is not None):
        documents, text_bytes = row["documents"], row["bytes"]
        dedup = merged["stages"][order[exact]]
        dedup["documents_out"] -= documents
        dedup["bytes_out"] -= text_bytes
        dedup["documents_dropped"] += documents
        dedup["dropped"]["exact_duplicate"] = dedup["dropped"].get("exact_duplicate", 0) + documents
        for name in order[exact + 1:]:
            stage = merged["stages"][name]
            stage["documents_in"] -= documents
            stage["bytes_in"] -= text_bytes
            if row["reason"] and row["reason"] in stage["dropped"]:
                stage["dropped"][row["reason"]] -= documents
                stage["documents_dropped"] -= documents
                if not stage["dropped"][row["reason"]]:
                    del stage["dropped"][row["reason"]]
                break
            stage["documents_out"] -= documents
            stage["bytes_out"] -= text_bytes
    last = merged["stages"][order[-1]] if order else merged
    merged["documents_out"], merged["bytes_out"] = last["documents_out"], last["bytes_out"]
    merged["demoted"] = night["stages"][order[exact]].get("demoted", 0) if exact is not None else 0
    merged["files_rewritten"] = sum(1 for row in report if row["action"] in ("write", "delete"))
    return merged


def _move_files(uri: str, s3, pairs) -> None:
    """A task's share of :meth:`CorpusBuilder._commit`: move each (source, destination) file of the output."""
    from pipeline.writing.output import filesystem_for

    fs, _ = filesystem_for(uri, s3)
    for source, destination in pairs:
        if fs.get_file_info(source).type == pafs.FileType.NotFound:
            continue  # moved by an earlier attempt of this task
        fs.create_dir(destination.rsplit("/", 1)[0], recursive=True)
        fs.move(source, destination)


def run_corpus(spark: SparkSession, settings: Settings, output: str) -> dict[str, Any] | None:
    """The corpus stages of a finished run, or None when ``corpus.enabled`` is off."""
    if not settings.corpus.enabled:
        return None
    return CorpusBuilder(spark, settings, output).run()
