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

Spark reads and writes a local (or cluster) path. With an ``s3://`` output the stages work in a
staging directory (``corpus.staging_dir``): ``data/`` is copied there with pyarrow, and the final
``corpus/``, ``corpus_dropped/`` and ``_corpus/`` are uploaded before the marker.

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
import os
import tempfile
import time
from typing import Any, Callable

from pyarrow import fs as pafs
from pyspark.sql import DataFrame, Observation, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import StructField, StructType

from pipeline import parts
from pipeline.config import S3Settings, Settings
from pipeline.corpus.lists import with_domains
from pipeline.corpus.stages import DROPPED_DOC_COLUMNS, CorpusStage, StageOutput
from pipeline.writing.index_sample import CORPUS_SAMPLE_DIR, sample_record_ids
from pipeline.writing.output import (CORPUS_DIR, CORPUS_DROPPED_DIR, CORPUS_STATE_DIR, DATASET_DIR, PARTITION_COLUMN,
                                     PARTITION_TYPE, OutputTarget)

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
        self.staged = not isinstance(self.target.fs, pafs.LocalFileSystem)
        # Where Spark reads and writes: the output itself, or the staging directory of an s3:// output.
        self.work = OutputTarget(self._staging_dir(settings, output), settings.s3) if self.staged else self.target
        self.compression = settings.output.compression if settings.output.compression != "none" else "uncompressed"
        self.sample_ids = self._index_sample()
        self.stages = enabled_stages(settings)
        self.schemas: dict[str, StructType] = {}  # of the outputs this run wrote: read back without inference

    def _read(self, relative: str) -> DataFrame:
        """The Parquet folder ``relative`` of the work directory, with its known schema when this run wrote it
        (a schema inferred from the files costs a Spark job)."""
        schema = self.schemas.get(relative)
        reader = self.spark.read if schema is None else self.spark.read.schema(schema)
        return reader.parquet(self._uri(relative))

    def _index_sample(self) -> list[str] | None:
        """The record ids whose text after each stage the index chain measures (None: no index statistics)."""
        if not self.settings.index.enabled:
            return None
        try:
            return sample_record_ids(self.target.uri, self.settings.s3, self.settings.index.sample_pages)
        except ValueError:
            return None

    @staticmethod
    def _staging_dir(settings: Settings, output: str) -> str:
        if settings.corpus.staging_dir:
            return settings.corpus.staging_dir
        name = hashlib.sha256(output.encode("utf-8")).hexdigest()[:16]
        return os.path.join(tempfile.gettempdir(), f"warcplex-corpus-{name}")

    def _uri(self, relative: str) -> str:
        return f"file://{self.work.path(relative)}"

    def _data_files(self) -> list[tuple[str, int]]:
        return [(path, size) for path, size in self.target.list_files()
                if path.startswith(f"{DATASET_DIR}/") and path.endswith(".parquet")]

    def fingerprint(self, files: list[tuple[str, int]]) -> str:
        """Hash of the input file list (with sizes) and of every setting the stages read."""
        basis = {"files": files, "corpus": self.settings.corpus.model_dump(mode="json", exclude={"staging_dir"}),
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
        self.spark.conf.set("spark.sql.sources.partitionColumnTypeInference.enabled", "false")
        if self.staged:
            self._stage_input(files)
        stats: dict[str, Any] = {"fingerprint": fingerprint, "stages": {}, "order": []}
        docs, first = self._checkpoint(f"{work}/0-input", lambda: StageOutput(self._input()), None)
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

    def _stage_input(self, files: list[tuple[str, int]]) -> None:
        """Copy the ``data/`` files of an s3:// output into the staging directory (those already there are kept)."""
        wanted = dict(files)
        have = {path: size for path, size in self.work.list_files() if path.startswith(f"{DATASET_DIR}/")}
        for path in sorted(set(have) - set(wanted)):
            self.work.fs.delete_file(self.work.path(path))
        for path, size in files:
            if have.get(path) != size:
                copied = _copy_file(self.target.fs, self.target.path(path), self.work.fs, self.work.path(path))
                if copied != size:
                    raise OSError(f"staging {path}: read {copied} of its {size} bytes")
        log.info("corpus stages: %d data/ files staged in %s", len(files), self.work.root)

    def _input(self) -> DataFrame:
        # every file holds its language: no partition discovery (whose column would clash with the file's)
        docs = self.spark.read.option("recursiveFileLookup", "true").parquet(self._uri(DATASET_DIR))
        return with_domains(docs).withColumn("lines_removed", F.lit(0))

    def _checkpoint(self, folder: str, produce: Callable[[], StageOutput],
                    before: dict[str, Any] | None) -> tuple[DataFrame, dict[str, Any]]:
        """Run a stage and write its outputs under ``folder``, or read them back if it finished before."""
        done = self.work.read_bytes(f"{folder}/_DONE.json")
        if done is None:
            started = time.time()
            output = produce()
            # The counts are observed while each output is written (no second pass over the written files).
            rows = F.count(F.lit(1)).alias("n")
            metrics = {"docs": [rows, F.sum(F.octet_length("text")).alias("b")], "dropped_docs": [rows],
                       "dropped_lines": [rows, F.sum(F.octet_length("line")).alias("b")]}
            observed = {}
            for name, frame in (("docs", output.docs), ("dropped_docs", output.dropped_docs),
                                ("dropped_lines", output.dropped_lines)):
                if frame is not None:
                    observed[name] = Observation(name)
                    (frame.observe(observed[name], *metrics[name]).write.mode("overwrite")
                     .option("compression", self.compression).parquet(self._uri(f"{folder}/{name}")))
                    # Parquet columns are read back nullable, as Spark writes them.
                    self.schemas[f"{folder}/{name}"] = StructType(
                        [StructField(f.name, f.dataType, True) for f in frame.schema.fields])
            counts = self._count(folder, {name: o.get for name, o in observed.items()}, before)
            counts["wall_seconds"] = round(time.time() - started, 3)
            self.work.write_bytes(f"{folder}/_DONE.json", json.dumps(counts, sort_keys=True).encode("utf-8"))
            log.info("corpus stage %s: %s", folder.rsplit("/", 1)[-1], counts)
        else:
            counts = json.loads(done)
        return self._read(f"{folder}/docs"), counts

    def _count(self, folder: str, observed: dict[str, dict[str, Any]], before: dict[str, Any] | None) -> dict[str, Any]:
        """A stage's counts from the metrics ``observed`` while its outputs were written (``n`` rows, ``b`` bytes)."""
        docs = observed["docs"]
        counts: dict[str, Any] = {"documents_out": docs["n"], "bytes_out": int(docs["b"] or 0),
                                  "documents_dropped": 0, "dropped": {}, "lines_removed": 0}
        if before is not None:
            counts["documents_in"], counts["bytes_in"] = before["documents_out"], before["bytes_out"]
        if observed.get("dropped_docs", {}).get("n"):
            reasons = self._read(f"{folder}/dropped_docs").groupBy("reason").count().collect()
            counts["dropped"] = {r["reason"]: r["count"] for r in sorted(reasons, key=lambda r: r["reason"])}
            counts["documents_dropped"] = sum(counts["dropped"].values())
        if "dropped_lines" in observed:
            counts["lines_removed"] = observed["dropped_lines"]["n"]
            counts["line_bytes_removed"] = int(observed["dropped_lines"]["b"] or 0)
        return counts

    def _write_sorted(self, frame: DataFrame, relative: str, files_per_language: int, key: str) -> None:
        """``frame`` as ``relative/language=<code>/part-<n>.parquet`` files sorted by ``key``, ``files_per_language``
        of them a language (spread by a hash of ``key``), the ``language`` column kept inside each file with the type
        pyarrow gives the directory's value (:data:`~pipeline.writing.output.PARTITION_TYPE`): each Spark task
        writes its partition's files with pyarrow (:func:`language_files_writer`), as the split runner writes data/."""
        languages = max(1, frame.select("language").distinct().count())
        bucket = F.pmod(F.xxhash64(key), F.lit(files_per_language))
        write = language_files_writer(self.work.uri, self.settings.s3, relative, self.settings.output.compression)
        (frame.repartition(languages * files_per_language, "language", bucket)
         .sortWithinPartitions("language", key)
         .mapInArrow(write, "path string, rows long").collect())
        self.work.fs.create_dir(self.work.path(relative), recursive=True)  # an empty dataset is an empty folder

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
        self._tidy(final)

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
        (sample.coalesce(1).sortWithinPartitions("stage", "warc_record_id").write.mode("overwrite")
         .option("compression", self.compression).parquet(self._uri(f"{final}/{CORPUS_SAMPLE_DIR}")))
        self._tidy(f"{final}/{CORPUS_SAMPLE_DIR}")

    def _tidy(self, final: str) -> None:
        """Remove Spark's bookkeeping files and give every part file a name that depends on its partition only."""
        fs = self.work.fs
        for info in fs.get_file_info(pafs.FileSelector(self.work.path(final), recursive=True)):
            if not info.is_file:
                continue
            name = info.base_name
            if not name.endswith(".parquet"):
                fs.delete_file(info.path)
            elif name.startswith("part-") and name.count("-") > 1:  # Spark's part-<n>-<uuid>...: part-<n>
                fs.move(info.path, f"{info.path.rsplit('/', 1)[0]}/{name.split('-')[0]}-{name.split('-')[1]}.parquet")

    def _commit(self, final: str, stats: dict[str, Any]) -> None:
        """Swap the new dataset into place (moved, or uploaded from staging); the marker, written last, is the commit."""
        fs = self.target.fs
        if self.target.exists(MARKER):
            fs.delete_file(self.target.path(MARKER))
        for name in (CORPUS_DIR, CORPUS_DROPPED_DIR, CORPUS_SAMPLE_DIR):
            if self.target.exists(name):
                fs.delete_dir(self.target.path(name))
            if not self.work.exists(f"{final}/{name}"):
                continue
            if self.staged:
                source = self.work.path(f"{final}/{name}")
                for info in self.work.fs.get_file_info(pafs.FileSelector(source, recursive=True)):
                    if info.is_file:
                        _copy_file(self.work.fs, info.path, fs, self.target.path(name) + info.path[len(source):])
            else:
                fs.create_dir(self.target.path(name).rsplit("/", 1)[0], recursive=True)
                fs.move(self.target.path(f"{final}/{name}"), self.target.path(name))
        self.target.write_bytes(MARKER, json.dumps(stats, sort_keys=True).encode("utf-8"))
        self.work.fs.delete_dir(self.work.path(WORK_DIR) if not self.staged else self.work.root)


def language_files_writer(uri: str, s3: S3Settings, relative: str, compression: str) -> Callable:
    """The function each Spark task runs over its partition's Arrow batches (sorted by language): one Parquet file a
    language, ``<relative>/language=<code>/part-<partition>.parquet`` under the output ``uri``, written to a temporary
    name and moved into place (a retried task writes the same name); ``language`` is cast to
    :data:`~pipeline.writing.output.PARTITION_TYPE`, timestamps to UTC microseconds."""
    codec = None if compression == "none" else compression

    def write(batches):
        import pyarrow as pa
        import pyarrow.compute as pc
        import pyarrow.parquet as pq
        from pyspark import TaskContext

        context = TaskContext.get()
        name = f"part-{context.partitionId():05d}"
        target = OutputTarget(uri, s3)
        writer, language, path, rows = None, None, None, 0

        def close():
            if writer is not None:
                writer.close()
                target.fs.move(f"{path}.{context.attemptNumber()}.tmp", path)
                yield pa.RecordBatch.from_pydict({"path": [path], "rows": [rows]})

        for batch in batches:
            table = pa.Table.from_batches([batch])
            fields = [pa.field(f.name, PARTITION_TYPE if f.name == PARTITION_COLUMN else
                               pa.timestamp("us", tz="UTC") if pa.types.is_timestamp(f.type) else f.type)
                      for f in table.schema]
            table = table.cast(pa.schema(fields))
            values = table.column(PARTITION_COLUMN).combine_chunks().dictionary_decode()
            for code in pc.unique(values).to_pylist():
                part = table.filter(pc.equal(values, code))
                if code != language:
                    yield from close()
                    language, rows = code, 0
                    path = target.path(f"{relative}/{PARTITION_COLUMN}={code}/{name}.parquet")
                    target.fs.create_dir(path.rsplit("/", 1)[0], recursive=True)
                    writer = pq.ParquetWriter(f"{path}.{context.attemptNumber()}.tmp", part.schema,
                                              filesystem=target.fs, compression=codec)
                writer.write_table(part)
                rows += part.num_rows
        yield from close()

    return write


def _copy_file(source_fs: pafs.FileSystem, source: str, dest_fs: pafs.FileSystem, dest: str) -> int:
    """Copy one file between file systems as a stream (the S3 file system retries each request); its bytes."""
    dest_fs.create_dir(dest.rsplit("/", 1)[0], recursive=True)
    copied = 0
    with source_fs.open_input_stream(source) as reader, dest_fs.open_output_stream(dest) as writer:
        while chunk := reader.read(8 << 20):
            writer.write(chunk)
            copied += len(chunk)
    return copied


def run_corpus(spark: SparkSession, settings: Settings, output: str) -> dict[str, Any] | None:
    """The corpus stages of a finished run, or None when ``corpus.enabled`` is off."""
    if not settings.corpus.enabled:
        return None
    return CorpusBuilder(spark, settings, output).run()
