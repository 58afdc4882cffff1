"""Runs the corpus stages over a run's ``data/`` and commits ``corpus/`` and ``corpus_dropped/`` atomically.

Layout added to an output directory::

    corpus/language=<code>/part-<n>.parquet          the final dataset (data/ columns, cleaned text,
                                                      host, registered_domain, lines_removed, q_* signals,
                                                      perplexity_bucket)
    corpus_dropped/documents/language=<code>/...      every dropped document: reason, duplicate_of
    corpus_dropped/lines/language=<code>/...          every removed line: reason repeated_line, its counts
    _corpus/marker.json                               the commit: fingerprint of the input and the stats
    _corpus/index_sample/part-0.parquet                the index statistics' sampled pages after each stage
                                                      (stage ``<i>-<name>``, warc_record_id, text)
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
from typing import Any, Callable

from pyarrow import fs as pafs
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.pandas.types import from_arrow_schema
from pyspark.sql.types import StringType, StructField, StructType

from pipeline import parts
from pipeline.config import Settings
from pipeline.corpus.folders import read_folder, write_folder
from pipeline.corpus.lists import with_domains
from pipeline.corpus.stages import DROPPED_DOC_COLUMNS, CorpusStage, StageOutput
from pipeline.writing.index_sample import CORPUS_SAMPLE_DIR, sample_record_ids
from pipeline.writing.output import CORPUS_DIR, CORPUS_DROPPED_DIR, CORPUS_STATE_DIR, DATASET_DIR, OutputTarget
from pipeline.writing.rows import PAGE_SCHEMA

log = logging.getLogger("pipeline.corpus")

MARKER = f"{CORPUS_STATE_DIR}/marker.json"
WORK_DIR = "_tmp/corpus"


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

    def _data_files(self) -> list[tuple[str, int]]:
        return [(path, size) for path, size in self.target.list_files()
                if path.startswith(f"{DATASET_DIR}/") and path.endswith(".parquet")]

    def fingerprint(self, files: list[tuple[str, int]]) -> str:
        """Hash of the input file list (with sizes) and of every setting the stages read."""
        basis = {"files": files, "corpus": self.settings.corpus.model_dump(mode="json"),
                 "stages": [stage.name for stage in self.stages],
                 "compression": self.compression,
                 "index_sample": hashlib.sha256("\n".join(self.sample_ids).encode()).hexdigest()
                 if self.sample_ids is not None else None}
        return hashlib.sha256(json.dumps(basis, sort_keys=True).encode("utf-8")).hexdigest()[:20]

    def run(self) -> dict[str, Any]:
        """Run (or resume, or skip) the stages; return the ``corpus`` section of stats.json."""
        files = self._data_files()
        if not files:
            return {"skipped": f"no documents in {DATASET_DIR}/"}
        fingerprint = self.fingerprint(files)
        previous = self.target.read_bytes(MARKER)
        if previous and self.settings.output.resume:
            done = json.loads(previous)
            if done.get("fingerprint") == fingerprint and self.target.exists(CORPUS_DIR):
                done["resumed"] = True
                return done
        started = time.time()
        work = f"{WORK_DIR}/{fingerprint}"
        stats: dict[str, Any] = {"fingerprint": fingerprint, "stages": {}, "order": []}
        docs, first = self._checkpoint(f"{work}/0-input", lambda: StageOutput(self._input(files)), None)
        stats["documents_in"], stats["bytes_in"] = first["documents_out"], first["bytes_out"]
        dropped_docs, dropped_lines, stage_folders = [], [], []
        previous_counts = first
        for index, stage in enumerate(self.stages, start=1):
            folder = f"{work}/{index}-{stage.name}"
            docs, stage_stats = self._checkpoint(folder, lambda: stage.apply(docs), previous_counts)
            stats["stages"][stage.name] = stage_stats
            stats["order"].append(stage.name)
            stage_folders.append(folder)
            previous_counts = stage_stats
            if stage_stats["documents_dropped"]:
                dropped_docs.append(self._read(f"{folder}/dropped_docs"))
            if stage_stats["lines_removed"]:
                dropped_lines.append(self._read(f"{folder}/dropped_lines"))
        stats["documents_out"], stats["bytes_out"] = previous_counts["documents_out"], previous_counts["bytes_out"]
        self._write_final(docs, dropped_docs, dropped_lines, f"{work}/final")
        self._write_index_sample(stage_folders, f"{work}/final")
        stats["wall_seconds"] = round(time.time() - started, 3)
        self._commit(f"{work}/final", stats)
        stats["resumed"] = False
        return stats

    def _input(self, files: list[tuple[str, int]]) -> DataFrame:
        schema = StructType([StructField(f.name, f.dataType, True) for f in from_arrow_schema(PAGE_SCHEMA).fields]
                            + [StructField("language", StringType(), True)])
        docs = read_folder(self.spark, self.target.uri, self.settings.s3, files, schema, partition="language")
        return with_domains(docs).withColumn("lines_removed", F.lit(0))

    def _checkpoint(self, folder: str, produce: Callable[[], StageOutput],
                    before: dict[str, Any] | None) -> tuple[DataFrame, dict[str, Any]]:
        """Run a stage and write its outputs under ``folder``, or read them back if it finished before."""
        done = self.target.read_bytes(f"{folder}/_DONE.json")
        if done is None:
            started = time.time()
            output = produce()
            # The counts are those of the files the tasks wrote (no second pass over them).
            measured = {"docs": "text", "dropped_docs": None, "dropped_lines": "line"}
            written: dict[str, list[dict[str, Any]]] = {}
            schemas: dict[str, Any] = {}
            for name, frame in (("docs", output.docs), ("dropped_docs", output.dropped_docs),
                                ("dropped_lines", output.dropped_lines)):
                if frame is not None:
                    written[name] = write_folder(frame, self.target, self.settings.s3, f"{folder}/{name}",
                                                 self.compression, measure=measured[name])
                    # Parquet columns are read back nullable.
                    schemas[name] = StructType([StructField(f.name, f.dataType, True)
                                                for f in frame.schema.fields]).jsonValue()
            counts = self._count(folder, written, schemas, before)
            counts["wall_seconds"] = round(time.time() - started, 3)
            sizes = {info.path: info.size for info in self.target.fs.get_file_info(
                pafs.FileSelector(self.target.path(folder), recursive=True))}
            files = {name: [{"path": f["path"], "size": sizes[self.target.path(f["path"])]} for f in found]
                     for name, found in written.items()}
            self.target.write_bytes(f"{folder}/_DONE.json", json.dumps(
                {**counts, "files": files, "schemas": schemas}, sort_keys=True).encode("utf-8"))
            log.info("corpus stage %s: %s", folder.rsplit("/", 1)[-1], counts)
        else:
            counts = {k: v for k, v in json.loads(done).items() if k not in ("files", "schemas")}
        return self._read(f"{folder}/docs"), counts

    def _count(self, folder: str, written: dict[str, list[dict[str, Any]]], schemas: dict[str, Any],
               before: dict[str, Any] | None) -> dict[str, Any]:
        """A stage's counts from the files its tasks ``written`` (``rows``, ``bytes``)."""
        def total(name: str, key: str) -> int:
            return sum(f[key] for f in written.get(name, []))

        counts: dict[str, Any] = {"documents_out": total("docs", "rows"), "bytes_out": total("docs", "bytes"),
                                  "documents_dropped": 0, "dropped": {}, "lines_removed": 0}
        if before is not None:
            counts["documents_in"], counts["bytes_in"] = before["documents_out"], before["bytes_out"]
        if total("dropped_docs", "rows"):
            files = [(f["path"], 0) for f in written["dropped_docs"]]
            dropped = read_folder(self.spark, self.target.uri, self.settings.s3, files,
                                  StructType.fromJson(schemas["dropped_docs"]))
            reasons = dropped.groupBy("reason").count().collect()
            counts["dropped"] = {r["reason"]: r["count"] for r in sorted(reasons, key=lambda r: r["reason"])}
            counts["documents_dropped"] = sum(counts["dropped"].values())
        if "dropped_lines" in written:
            counts["lines_removed"] = total("dropped_lines", "rows")
            counts["line_bytes_removed"] = total("dropped_lines", "bytes")
        return counts

    def _write_sorted(self, frame: DataFrame, relative: str, files_per_language: int, key: str) -> None:
        languages = max(1, frame.select("language").distinct().count())
        bucket = F.pmod(F.xxhash64(key), F.lit(files_per_language))
        ordered = (frame.repartition(languages * files_per_language, "language", bucket)
                   .sortWithinPartitions("language", key))
        write_folder(ordered, self.target, self.settings.s3, relative, self.compression, partition="language")

    def _write_final(self, docs: DataFrame, dropped_docs: list[DataFrame], dropped_lines: list[DataFrame],
                     final: str) -> None:
        self._write_sorted(docs, f"{final}/{CORPUS_DIR}", self.settings.corpus.files_per_language, "warc_record_id")
        empty_docs = self.spark.createDataFrame([], "warc_record_id string, url string, warc_date timestamp, "
                                                "language string, registered_domain string, reason string, "
                                                "duplicate_of string, text_bytes long")
        all_docs = empty_docs
        for frame in dropped_docs:
            all_docs = all_docs.unionByName(frame.select(*DROPPED_DOC_COLUMNS))
        self._write_sorted(all_docs, f"{final}/{CORPUS_DROPPED_DIR}/documents", 1, "warc_record_id")
        if dropped_lines:
            lines = dropped_lines[0]
            for frame in dropped_lines[1:]:
                lines = lines.unionByName(frame)
            ordered = lines.withColumn("_line_key", F.format_string("%s:%09d", "warc_record_id", "line_number"))
            self._write_sorted(ordered, f"{final}/{CORPUS_DROPPED_DIR}/lines", 1, "_line_key")

    def _write_index_sample(self, stage_folders: list[str], final: str) -> None:
        """The sampled pages' text after each stage, one small file (only ids the sample holds)."""
        if self.sample_ids is None or not stage_folders:
            return
        ids = self.spark.createDataFrame([(i,) for i in self.sample_ids], "warc_record_id string")
        frames = [self._read(f"{folder}/docs").join(F.broadcast(ids), "warc_record_id")
                  .select(F.lit(folder.rsplit("/", 1)[-1]).alias("stage"), "warc_record_id", "text")
                  for folder in stage_folders]
        sample = frames[0]
        for frame in frames[1:]:
            sample = sample.unionByName(frame)
        write_folder(sample.coalesce(1).sortWithinPartitions("stage", "warc_record_id"), self.target,
                     self.settings.s3, f"{final}/{CORPUS_SAMPLE_DIR}", self.compression)

    def _commit(self, final: str, stats: dict[str, Any]) -> None:
        """Swap the new dataset into place, file by file from the tasks (on S3 a server-side copy); the marker,
        written last, is the commit."""
        fs = self.target.fs
        if self.target.exists(MARKER):
            fs.delete_file(self.target.path(MARKER))
        moves = []
        for name in (CORPUS_DIR, CORPUS_DROPPED_DIR, CORPUS_SAMPLE_DIR):
            if self.target.exists(name):
                fs.delete_dir(self.target.path(name))
            source = self.target.path(f"{final}/{name}")
            moves += [(info.path, self.target.path(name) + info.path[len(source):])
                      for info in fs.get_file_info(pafs.FileSelector(source, recursive=True, allow_not_found=True))
                      if info.is_file]
        if moves:
            uri, s3 = self.target.uri, self.settings.s3
            tasks = max(1, min(len(moves), self.spark.sparkContext.defaultParallelism * 4))
            self.spark.sparkContext.parallelize(moves, tasks).foreachPartition(
                lambda pairs: _move_files(uri, s3, pairs))
        self.target.write_bytes(MARKER, json.dumps(stats, sort_keys=True).encode("utf-8"))
        fs.delete_dir(self.target.path(WORK_DIR))


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
