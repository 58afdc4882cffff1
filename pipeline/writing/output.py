"""Atomic, deterministic output on a local path or ``s3://`` (pyarrow filesystems, no Hadoop jars).

Layout of an output directory::

    data/language=<code>/part-<split_id>.parquet   the dataset, hive-partitioned by language
    _markers/<split_id>.json                  completion marker of a split, holding its stats
    _index/pages/<split_id>.parquet           the split's candidates for the index statistics' sample
    _tmp/<split_id>/...                       files being written (never read by readers)
    _SUCCESS                                  written last: JSON list of every file with its size

A split writes under ``_tmp/``, renames its files into place, then writes its marker: the
marker is the commit. Names depend only on the input, so a rerun overwrites what a killed
run left half-done and skips what it finished. Readers (pyarrow, Spark, DuckDB) ignore
paths starting with ``_``.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from pyarrow import fs as pafs

from pipeline.config import S3Settings, check_s3_address

ROW_GROUP_ROWS = 2000
SUCCESS = "_SUCCESS"  # written last: the manifest of a complete output
JSON_BATCH = 10_000  # list items (manifest entries, listed files) written or hashed at a time


def filesystem_for(uri: str, s3: S3Settings) -> tuple[pafs.FileSystem, str]:
    """The pyarrow filesystem and root path for a local directory or an ``s3://bucket/prefix``."""
    if uri.startswith("s3://"):
        check_s3_address(uri)
        bucket_and_prefix = uri[len("s3://"):].rstrip("/")
        kwargs: dict[str, Any] = {"region": s3.region or "us-east-1",
                                  "retry_strategy": pafs.AwsStandardS3RetryStrategy(max_attempts=s3.max_attempts)}
        if s3.endpoint_url:
            scheme, _, host = s3.endpoint_url.partition("://")
            kwargs.update(endpoint_override=host or scheme, scheme=scheme if host else "https")
        return pafs.S3FileSystem(**kwargs), bucket_and_prefix
    root = os.path.abspath(uri)
    return pafs.LocalFileSystem(), root


def json_chunks(value: Any, batch: int = JSON_BATCH) -> Iterator[str]:
    """``json.dumps(value, sort_keys=True)`` in pieces, a list ``batch`` items at a time, so that a list of millions
    (an output's files) is never one string; joined, the pieces are that text exactly."""
    if isinstance(value, dict):
        yield "{"
        for n, key in enumerate(sorted(value)):
            yield (", " if n else "") + json.dumps(key) + ": "
            yield from json_chunks(value[key], batch)
        yield "}"
    elif isinstance(value, (list, tuple)):
        yield "["
        for start in range(0, len(value), batch):
            yield (", " if start else "") + ", ".join(json.dumps(item, sort_keys=True)
                                                      for item in value[start:start + batch])
        yield "]"
    else:
        yield json.dumps(value, sort_keys=True)


class OutputTarget:
    """An output directory: file writes with tmp-then-rename, markers and small JSON/text files."""

    def __init__(self, uri: str, s3: S3Settings) -> None:
        self.uri = uri
        self.fs, self.root = filesystem_for(uri, s3)

    def path(self, relative: str) -> str:
        return f"{self.root}/{relative}"

    def exists(self, relative: str) -> bool:
        return self.fs.get_file_info(self.path(relative)).type != pafs.FileType.NotFound

    @contextmanager
    def atomic_stream(self, relative: str) -> Iterator[Any]:
        """An output stream for a file written atomically: to ``_tmp/`` first, moved into place when it closes."""
        tmp = self.path(f"_tmp/{relative.replace('/', '__')}.tmp")
        self.fs.create_dir(tmp.rsplit("/", 1)[0], recursive=True)
        with self.fs.open_output_stream(tmp) as out:
            yield out
        final = self.path(relative)
        self.fs.create_dir(final.rsplit("/", 1)[0], recursive=True)
        self.fs.move(tmp, final)

    def write_bytes(self, relative: str, data: bytes) -> None:
        """Write a file atomically (:meth:`atomic_stream`)."""
        with self.atomic_stream(relative) as out:
            out.write(data)

    def write_json(self, relative: str, value: Any) -> None:
        """Write ``value`` as JSON with sorted keys, atomically, in pieces (:func:`json_chunks`)."""
        with self.atomic_stream(relative) as out:
            for chunk in json_chunks(value):
                out.write(chunk.encode("utf-8"))

    def read_bytes(self, relative: str) -> bytes | None:
        try:
            with self.fs.open_input_stream(self.path(relative)) as stream:
                return stream.read()
        except (FileNotFoundError, OSError):
            return None

    def marker_name(self, split_id: str) -> str:
        return f"_markers/{split_id}.json"

    def read_marker(self, split_id: str) -> dict | None:
        data = self.read_bytes(self.marker_name(split_id))
        return json.loads(data) if data else None

    def write_marker(self, split_id: str, stats: dict) -> None:
        self.write_bytes(self.marker_name(split_id), json.dumps(stats, sort_keys=True).encode("utf-8"))

    def markers(self) -> dict[str, dict]:
        """All completion markers: split id -> its stats."""
        selector = pafs.FileSelector(self.path("_markers"), allow_not_found=True)
        found = {}
        for info in self.fs.get_file_info(selector):
            if info.is_file and info.base_name.endswith(".json"):
                with self.fs.open_input_stream(info.path) as stream:
                    found[info.base_name[: -len(".json")]] = json.loads(stream.read())
        return found

    def finished_split_ids(self) -> set[str]:
        """Split ids with a completion marker (names only; the markers are not read)."""
        selector = pafs.FileSelector(self.path("_markers"), allow_not_found=True)
        return {info.base_name[: -len(".json")] for info in self.fs.get_file_info(selector)
                if info.is_file and info.base_name.endswith(".json")}

    def walk_files(self, under: str = "") -> Iterator[tuple[str, int]]:
        """Every committed file under the folder ``under`` (the whole output by default) as (relative path, size),
        ``_tmp/`` and ``_SUCCESS`` excluded: listed one folder at a time, in name order, so that memory holds the
        largest folder's listing (a language's files: one a split), not the output's (one a split and language)."""
        prefix = self.root.rstrip("/") + "/"
        selector = pafs.FileSelector(self.path(under.rstrip("/")) if under else self.root, allow_not_found=True)
        folders = []
        for info in sorted(self.fs.get_file_info(selector), key=lambda info: info.path):
            relative = info.path[len(prefix):] if info.path.startswith(prefix) else info.path
            if relative == "_tmp" or relative == SUCCESS:
                continue
            if info.is_file:
                yield relative, info.size
            elif info.type == pafs.FileType.Directory:
                folders.append(relative)
        for folder in folders:
            yield from self.walk_files(folder)

    def list_files(self, under: str = "") -> list[tuple[str, int]]:
        """:meth:`walk_files` as a list, sorted by path."""
        return sorted(self.walk_files(under))

    def retract_success(self) -> None:
        """Remove a previous run's ``_SUCCESS``: the output is incomplete until this run publishes."""
        if self.exists(SUCCESS):
            self.fs.delete_file(self.path(SUCCESS))

    def publish_success(self) -> dict:
        """The final commit: write ``_SUCCESS``, a manifest of every file with its size (``{"files": [{"path",
        "size"}, ...], "file_count", "total_bytes"}``), streamed as :meth:`walk_files` lists the output; returns its
        ``file_count`` and ``total_bytes``."""
        count = total = 0
        with self.atomic_stream(SUCCESS) as out:
            out.write(b'{"files": [')
            lines: list[str] = []
            for path, size in self.walk_files():
                lines.append(("\n " if not count else ",\n ") + json.dumps({"path": path, "size": size},
                                                                            sort_keys=True))
                count, total = count + 1, total + size
                if len(lines) == JSON_BATCH:
                    out.write("".join(lines).encode("utf-8"))
                    lines.clear()
            out.write("".join(lines).encode("utf-8"))
            out.write(f'\n], "file_count": {count}, "total_bytes": {total}}}\n'.encode("utf-8"))
        return {"file_count": count, "total_bytes": total}

DATASET_DIR = "data"
# The corpus stages' entries (pipeline/corpus/): the final dataset, what they dropped, their marker.
CORPUS_DIR = "corpus"
CORPUS_DROPPED_DIR = "corpus_dropped"
CORPUS_STATE_DIR = "_corpus"
# The index statistics' per-split sample (pipeline/writing/index_sample.py).
INDEX_STATE_DIR = "_index"


TEXT_BYTES_KEY = b"warcplex.text_bytes"  # a dataset file's metadata: the UTF-8 bytes of its `text` column
PARTITION_COLUMN = "language"  # the hive directory of every dataset, and a column inside each of its files
# Its type inside the files: Parquet strings, with Arrow's schema saying "dictionary", the type pyarrow (and so
# pandas.read_parquet) gives a hive directory's value, so that reading the directory merges the two.
PARTITION_TYPE = pa.dictionary(pa.int32(), pa.string())


def with_partition_column(schema: pa.Schema) -> pa.Schema:
    """``schema`` with the ``language`` column added last (when it has none): a file read on its own, by a reader
    that does not parse hive directories (Hugging Face ``datasets``, ``pq.read_table`` of one file), keeps it."""
    if PARTITION_COLUMN in schema.names:
        return schema
    return schema.append(pa.field(PARTITION_COLUMN, PARTITION_TYPE))


class SplitWriter:
    """Writes one split's rows as ``<dataset>/language=<code>/part-<split_id>.parquet``, committed at the end; each
    file also holds its language as the column ``language`` (:func:`with_partition_column`) and, when it has a
    ``text`` column, that column's UTF-8 bytes in its metadata (:data:`TEXT_BYTES_KEY`: a reader counts them from
    the footer, without reading the text).

    ``dataset`` is the dataset's folder under the target (``""`` for the target itself).
    """

    def __init__(self, target: OutputTarget, split_id: str, schema: pa.Schema, compression: str,
                 dataset: str = DATASET_DIR) -> None:
        self.target = target
        self.dataset = dataset
        self.split_id = split_id
        self.schema = with_partition_column(schema)
        self.compression = None if compression == "none" else compression
        self.tmp_dir = target.path(f"_tmp/{split_id}")
        self._buffers: dict[str, list[dict]] = {}
        self._writers: dict[str, pq.ParquetWriter] = {}
        self._text_bytes: dict[str, int] = {}
        target.fs.delete_dir_contents(self.tmp_dir, missing_dir_ok=True)

    def _relative(self, language: str) -> str:
        partition = f"language={language}/part-{self.split_id}.parquet"
        return f"{self.dataset}/{partition}" if self.dataset else partition

    def add(self, language: str, row: dict) -> None:
        buffer = self._buffers.setdefault(language, [])
        buffer.append({**row, PARTITION_COLUMN: language})
        if len(buffer) >= ROW_GROUP_ROWS:
            self._flush(language)

    def _flush(self, language: str) -> None:
        rows = self._buffers.get(language)
        if not rows:
            return
        writer = self._writers.get(language)
        if writer is None:
            path = f"{self.tmp_dir}/{self._relative(language).replace('/', '__')}"
            self.target.fs.create_dir(self.tmp_dir, recursive=True)
            writer = pq.ParquetWriter(path, self.schema, filesystem=self.target.fs, compression=self.compression)
            self._writers[language] = writer
        table = pa.Table.from_pylist(rows, schema=self.schema)
        if "text" in self.schema.names:
            self._text_bytes[language] = (self._text_bytes.get(language, 0)
                                          + int(pc.sum(pc.binary_length(table.column("text"))).as_py() or 0))
        writer.write_table(table, row_group_size=ROW_GROUP_ROWS)
        rows.clear()

    def commit(self) -> list[str]:
        """Close every file and move it into the dataset; return the relative paths written."""
        written = []
        for language in sorted(self._buffers):
            self._flush(language)
        for language in sorted(self._writers):
            if language in self._text_bytes:
                self._writers[language].add_key_value_metadata(
                    {TEXT_BYTES_KEY: str(self._text_bytes[language]).encode()})
            self._writers[language].close()
            relative = self._relative(language)
            final = self.target.path(relative)
            self.target.fs.create_dir(final.rsplit("/", 1)[0], recursive=True)
            self.target.fs.move(f"{self.tmp_dir}/{relative.replace('/', '__')}", final)
            written.append(relative)
        if self._writers:
            self.target.fs.delete_dir(self.tmp_dir)
        return written
