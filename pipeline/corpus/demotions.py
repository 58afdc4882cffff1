"""Documents of earlier builds whose exact duplicate a later build found first: their rows, rewritten in place.

An incremental build (``corpus.incremental``) adds its documents to the corpus without reading the earlier ones,
except where :class:`~pipeline.corpus.stages.ExactDedup` finds that a new document comes before the keeper of its
text (an earlier WARC-Date). Then every earlier document of that text is ``demoted``: the keeper leaves
``corpus/`` (or, if a later stage had dropped it, its row in ``corpus_dropped/documents/`` changes reason) and
becomes an ``exact_duplicate`` of the new one, and the duplicates it kept point at the new one. Those rows stay in
the files of the build that first read them (``part-g<build>-*`` of their language), so a document is always found
by its build and language; a task rewrites each such (build, language) pair's files under the build's work folder,
and the commit moves them over the old ones.
"""

from __future__ import annotations

from typing import Any, Iterator

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from pyarrow import fs as pafs

from pipeline.config import S3Settings
from pipeline.writing.output import CORPUS_DIR, CORPUS_DROPPED_DIR, PARTITION_TYPE, filesystem_for

DROPPED_DOCUMENTS = f"{CORPUS_DROPPED_DIR}/documents"
REWRITTEN = "path string, action string, reason string, documents long, bytes long"
"""What a rewrite task reports: each file it wrote or emptied (``action`` ``write``/``delete``, the other columns
empty), and the documents it took from a stage: ``action`` ``moved``, ``reason`` the reason the earlier build had
dropped them for (empty: they were in ``corpus/``), their count and text bytes."""
_REPORT_SCHEMA = pa.schema([("path", pa.string()), ("action", pa.string()), ("reason", pa.string()),
                            ("documents", pa.int64()), ("bytes", pa.int64())])

_DROPPED_SCHEMA = pa.schema([
    pa.field("warc_record_id", pa.string()), pa.field("url", pa.string()),
    pa.field("warc_date", pa.timestamp("us", tz="UTC")), pa.field("language", PARTITION_TYPE),
    pa.field("registered_domain", pa.string()), pa.field("reason", pa.string()),
    pa.field("duplicate_of", pa.string()), pa.field("text_bytes", pa.int64())])


def build_prefix(generation: int) -> str:
    """The file name prefix of a build's files: ``part-g<build>``."""
    return f"part-g{generation:05d}"


def _files_of(fs: pafs.FileSystem, folder: str, prefix: str) -> list[str]:
    selector = pafs.FileSelector(folder, allow_not_found=True)
    return sorted(info.path for info in fs.get_file_info(selector)
                  if info.is_file and info.base_name.startswith(prefix + "-") and info.base_name.endswith(".parquet"))


def _read(fs: pafs.FileSystem, path: str) -> pa.Table:
    with fs.open_input_file(path) as handle:
        return pq.read_table(handle)


def _write(fs: pafs.FileSystem, path: str, table: pa.Table, compression: str | None) -> None:
    fs.create_dir(path.rsplit("/", 1)[0], recursive=True)
    pq.write_table(table.sort_by("warc_record_id"), path, filesystem=fs, compression=compression or "none")


def rewrite(demoted, uri: str, s3: S3Settings, work: str, compression: str | None) -> list[dict[str, Any]]:
    """Rewrite, from the tasks, the earlier builds' files that hold the ``demoted`` documents (a DataFrame of
    ``warc_record_id``, ``duplicate_of``, ``generation``, ``language``) into ``work``; return the tasks' reports
    (:data:`REWRITTEN`). Only ids and file names reach the driver."""
    from pyspark.sql import functions as F

    groups = (demoted.groupBy("generation", "language")
              .agg(F.collect_list(F.struct("warc_record_id", "duplicate_of")).alias("pairs")))
    return [row.asDict() for row in groups.mapInArrow(
        lambda batches: _rewrite_task(batches, uri, s3, work, compression), REWRITTEN).collect()]


def _rewrite_task(batches, uri: str, s3: S3Settings, work: str, compression: str | None) -> Iterator[pa.RecordBatch]:
    fs, root = filesystem_for(uri, s3)
    for batch in batches:
        for group in batch.to_pylist():
            keepers = {pair["warc_record_id"]: pair["duplicate_of"] for pair in group["pairs"]}
            rows = _rewrite_group(fs, root, work, compression, group["generation"], group["language"], keepers)
            yield pa.RecordBatch.from_pylist(rows, schema=_REPORT_SCHEMA)


def _rewrite_group(fs: pafs.FileSystem, root: str, work: str, compression: str | None, generation: int,
                   language: str, keeper: dict[str, str]) -> list[dict[str, Any]]:
    """Rewrite build ``generation``'s files of ``language``: ``keeper`` maps each demoted id to its new keeper."""
    prefix = build_prefix(generation)
    ids = pa.array(sorted(keeper), pa.string())
    report: list[dict[str, Any]] = []

    def relative(path: str) -> str:
        return path[len(root) + 1:]

    def output(relative_path: str, table: pa.Table) -> None:
        if table.num_rows:
            _write(fs, f"{root}/{work}/{relative_path}", table, compression)
            report.append({"path": relative_path, "action": "write", "reason": "", "documents": 0, "bytes": 0})
        else:
            report.append({"path": relative_path, "action": "delete", "reason": "", "documents": 0, "bytes": 0})

    # corpus/: the demoted keepers leave it and become exact_duplicate rows
    moved: list[pa.Table] = []
    for path in _files_of(fs, f"{root}/{CORPUS_DIR}/language={language}", prefix):
        table = _read(fs, path)
        hit = pc.is_in(table.column("warc_record_id"), value_set=ids)
        if not pc.any(hit).as_py():
            continue
        leaving = table.filter(hit)
        text_bytes = pc.binary_length(leaving.column("text")).cast(pa.int64())
        moved.append(pa.table({
            "warc_record_id": leaving.column("warc_record_id"), "url": leaving.column("url"),
            "warc_date": leaving.column("warc_date").cast(pa.timestamp("us", tz="UTC")),
            "language": pa.array([language] * leaving.num_rows, pa.string()).dictionary_encode()
            .cast(PARTITION_TYPE),
            "registered_domain": leaving.column("registered_domain"),
            "reason": pa.array(["exact_duplicate"] * leaving.num_rows, pa.string()),
            "duplicate_of": pa.array([keeper[i] for i in leaving.column("warc_record_id").to_pylist()], pa.string()),
            "text_bytes": text_bytes}, schema=_DROPPED_SCHEMA))
        report.append({"path": "", "action": "moved", "reason": "", "documents": leaving.num_rows,
                       "bytes": int(pc.sum(text_bytes).as_py() or 0)})
        output(relative(path), table.filter(pc.invert(hit)))

    # corpus_dropped/documents/: every row of a demoted text points at the new keeper, as exact_duplicate
    dropped_folder = f"{root}/{DROPPED_DOCUMENTS}/language={language}"
    files = _files_of(fs, dropped_folder, prefix)
    for number, path in enumerate(files or [f"{dropped_folder}/{prefix}-00000.parquet"]):
        table = _read(fs, path) if files else _DROPPED_SCHEMA.empty_table()
        hit = pc.is_in(table.column("warc_record_id"), value_set=ids)
        changed = table.filter(hit)
        for reason in set(changed.column("reason").to_pylist()) - {"exact_duplicate"}:
            mine = changed.filter(pc.equal(changed.column("reason"), reason))
            report.append({"path": "", "action": "moved", "reason": reason, "documents": mine.num_rows,
                           "bytes": int(pc.sum(mine.column("text_bytes")).as_py() or 0)})
        if changed.num_rows:
            changed = changed.set_column(changed.schema.get_field_index("reason"), "reason",
                                         pa.array(["exact_duplicate"] * changed.num_rows, pa.string()))
            changed = changed.set_column(
                changed.schema.get_field_index("duplicate_of"), "duplicate_of",
                pa.array([keeper[i] for i in changed.column("warc_record_id").to_pylist()], pa.string()))
        parts = [table.filter(pc.invert(hit)), changed] + (moved if number == 0 else [])
        if not any(part.num_rows for part in parts) and not files:
            continue
        if any(part.num_rows for part in parts[1:]) or not files:
            schema = table.schema
            output(relative(path), pa.concat_tables([part.select(schema.names).cast(schema) for part in parts]))
    return report
