"""Parquet folders of an output, read and written by the Spark tasks themselves with pyarrow.

The corpus stages never read or write through Spark's own file systems (an ``s3://`` output would need the
hadoop-aws jar) nor through the driver: the driver lists the files (names and sizes only) and hands each task its
share; the tasks open them with pyarrow (:func:`~pipeline.writing.output.filesystem_for`: a local path or S3, with
the credentials of the executor's environment) and Spark only moves rows between tasks (the shuffles of the
stages). So the data of a stage goes from the object store to the executors and back, on any deployment.

A folder is written one file per task and partition value: ``<folder>/language=<code>/<name>-<task>.parquet`` (or
``<folder>/<name>-<task>.parquet``; ``part`` unless the caller names it), the task being the Spark partition's
index, so a retried task rewrites the same file with the same rows. The partition column stays inside each file
too (a file read on its own keeps its language); a file without it takes it from its path.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.pandas.types import from_arrow_schema, to_arrow_schema
from pyspark.sql.types import StructType

from pipeline.config import S3Settings
from pipeline.writing.output import PARTITION_TYPE, TEXT_BYTES_KEY, OutputTarget, filesystem_for

# A task's share of a folder to read: files up to this many bytes (Spark's spark.sql.files.maxPartitionBytes),
# each file counting for 4 MB more (spark.sql.files.openCostInBytes), as Spark plans a file scan.
TASK_BYTES = 128 << 20
FILE_COST = 4 << 20
# what each written file reports
WRITTEN = pa.schema([("path", pa.string()), ("rows", pa.int64()), ("bytes", pa.int64()), ("tally", pa.string())])


def share_numbers(sizes: list[float], task_bytes: int = TASK_BYTES, file_cost: int = FILE_COST) -> list[int]:
    """The share of a reading task each file goes to, for files of ``sizes`` in their order (each counting
    ``file_cost`` more): consecutive shares of about ``task_bytes``."""
    numbers: list[int] = []
    load = 0.0
    for size in sizes:
        if not numbers or load + size + file_cost > task_bytes:
            numbers.append(numbers[-1] + 1 if numbers else 0)
            load = 0
        else:
            numbers.append(numbers[-1])
        load += size + file_cost
    return numbers


def task_shares(files: list[tuple[str, int]], task_bytes: int = TASK_BYTES) -> list[list[str]]:
    """``files`` (relative path, size; in their order) cut into consecutive shares (:func:`share_numbers`)."""
    shares: list[list[str]] = []
    for (path, _), number in zip(files, share_numbers([size for _, size in files], task_bytes)):
        if number == len(shares):
            shares.append([])
        shares[-1].append(path)
    return shares


# A data/ folder's plan (pipeline/corpus/input_plan.py): its files in path order, and each one's share of a full
# build's and of an adding build's reading tasks (new_share null: the last build read the file).
PLAN_SCHEMA = pa.schema([("path", pa.string()), ("size", pa.int64()), ("share", pa.int32()), ("new_share", pa.int32())])
PLAN_ROW_GROUP = 4096  # a reading task's share is in one or two of a plan's row groups


def plan_share(plan: str, adding: bool, number: int) -> str:
    """A share a plan holds (the plan's path relative to the output), as :func:`read_folder` takes it."""
    return json.dumps({"plan": plan, "column": "new_share" if adding else "share", "number": number})


def share_paths(fs, root: str, share: str) -> list[str]:
    """The paths of a share: a JSON list of them (:func:`task_shares`), or a share of a plan (:func:`plan_share`),
    read from the plan's row groups that hold it."""
    value = json.loads(share)
    if isinstance(value, list):
        return value
    with fs.open_input_file(f"{root}/{value['plan']}") as handle:
        rows = pq.read_table(handle, columns=["path"], filters=[(value["column"], "==", value["number"])])
    return rows.column("path").to_pylist()


class Planned(list):
    """Shares of the files of plans (:func:`plan_share` strings), which :func:`read_folder` and :func:`count_folder`
    take instead of a list of files: no file's path passes through the driver. ``weights``: each share's bytes, as
    :func:`share_numbers` counts them (None: not known, a task a share)."""

    def __init__(self, shares: list[str] = (), weights: list[float] | None = None) -> None:
        super().__init__(shares)
        self.weights = weights


def spread(weights: list[float], slots: int) -> list[list[int]]:
    """Shares of ``weights`` bytes (in their order) as the reading tasks take them: consecutive ones together up to
    :data:`TASK_BYTES` a task (:func:`share_numbers`), or, where that makes fewer tasks than ``slots`` (the cluster's
    cores), dealt over ``slots`` tasks by their bytes. So a small folder's share is not a task of its own: on a few MB
    a task costs more than its reading (a few hundredths of a CPU-second of JVM and Python)."""
    if not weights:
        return []
    numbers = share_numbers(weights, file_cost=0)
    tasks = min(len(weights), slots)
    if numbers[-1] + 1 < tasks:
        total = float(sum(weights))
        if total <= 0:
            weights, total = [1.0] * len(weights), float(len(weights))
        load, numbers = 0.0, []
        for weight in weights:  # a share goes to the task its middle byte falls in
            numbers.append(min(tasks - 1, int((load + weight / 2) * tasks / total)))
            load += weight
    groups: dict[int, list[int]] = {}
    for share, number in enumerate(numbers):
        groups.setdefault(number, []).append(share)
    return list(groups.values())


def _by_task(spark: SparkSession, files: list[tuple[str, int]] | Planned) -> list[list[str]]:
    """The shares of ``files``, a list a reading task."""
    if isinstance(files, Planned):
        if files.weights is None:
            return [[share] for share in files]
        return [[files[number] for number in group]
                for group in spread(files.weights, spark.sparkContext.defaultParallelism)]
    return [[json.dumps(share)] for share in task_shares(sorted(files))]


def partition_value(relative: str, column: str) -> str | None:
    prefix = f"{column}="
    return next((part[len(prefix):] for part in relative.split("/") if part.startswith(prefix)), None)


def _read_shares(batches, uri: str, s3: S3Settings, schema: pa.Schema, partition: str | None, extend=None,
                 only: tuple[str, pa.Array] | None = None):
    """A task's side of :func:`read_folder`: the record batches of the files of its shares (each passed through
    ``extend``, when given); with ``only`` (a column and values), the rows whose column holds one of the values,
    reading the other columns of a row group only where it has such a row."""
    fs, root = filesystem_for(uri, s3)
    for batch in batches:
        for share in batch.column(0).to_pylist():
            for relative in share_paths(fs, root, share):
                with fs.open_input_file(f"{root}/{relative}") as handle:
                    parquet = pq.ParquetFile(handle)
                    # the partition column is inside the files we write; from the path for files without it
                    in_file = partition is not None and partition in parquet.schema_arrow.names
                    stored = [field.name for field in schema if field.name != partition or in_file]
                    if only is None:
                        reads = parquet.iter_batches(batch_size=4096, columns=stored)
                    else:
                        reads = _rows_with(parquet, stored, *only)
                    for read in reads:
                        columns = [_as(read.column(name), schema.field(name).type) for name in stored]
                        if partition is not None and not in_file:
                            value = partition_value(relative, partition)
                            columns.insert(schema.get_field_index(partition),
                                           pa.array([value] * read.num_rows, pa.string()))
                        read_batch = pa.RecordBatch.from_arrays(columns, schema=schema)
                        yield read_batch if extend is None else extend(read_batch)


def _rows_with(parquet: pq.ParquetFile, columns: list[str], column: str, values: pa.Array):
    """The rows of ``parquet`` (its ``columns``) whose ``column`` is among ``values``, a row group at a time: the
    group's ``column`` first, the others only where it holds one of the values."""
    for group in range(parquet.num_row_groups):
        found = pc.is_in(parquet.read_row_group(group, columns=[column]).column(column), value_set=values)
        if pc.any(found).as_py():
            yield from parquet.read_row_group(group, columns=columns).filter(found).to_batches()


def _as(column: pa.Array, wanted: pa.DataType) -> pa.Array:
    """A column read from a file as the type Spark expects (a dictionary-encoded partition column as strings)."""
    if pa.types.is_dictionary(column.type):
        column = column.dictionary_decode()
    return column if column.type == wanted else column.cast(wanted)


def _for_file(table: pa.Table, partition: str | None) -> pa.Table:
    """Rows as our files hold them: the partition column kept inside with the type pyarrow gives a hive directory's
    value (:data:`~pipeline.writing.output.PARTITION_TYPE`), timestamps in UTC microseconds."""
    fields = [pa.field(f.name, PARTITION_TYPE if f.name == partition else
                       pa.timestamp("us", tz="UTC") if pa.types.is_timestamp(f.type) else f.type)
              for f in table.schema]
    return table.cast(pa.schema(fields))


def read_folder(spark: SparkSession, uri: str, s3: S3Settings, files: list[tuple[str, int]] | Planned,
                schema: StructType, partition: str | None = None, extend=None, extended: StructType | None = None,
                only: tuple[str, list[str]] | None = None) -> DataFrame:
    """The rows of the Parquet ``files`` (paths relative to the output ``uri``, with sizes; or the shares of plans,
    :class:`Planned`) as a DataFrame of ``schema``, read by the tasks; ``partition``: the hive partition column
    taken from the paths (the last of ``schema``). ``extend`` (a function of an Arrow record batch, run in the
    reading task) makes each batch one of the ``extended`` schema, the DataFrame's. ``only`` (a column and values):
    only the rows whose column holds one of the values, the tasks reading the other columns only of the row groups
    that have such rows."""
    tasks = _by_task(spark, files)
    if not tasks:
        return spark.createDataFrame([], extended or schema)
    # timestamps as Spark's Arrow batches carry them: in the session's time zone (the same instants)
    arrow_schema = to_arrow_schema(schema, timezone=spark.conf.get("spark.sql.session.timeZone") or "UTC")
    names = spark.sparkContext.parallelize(tasks, len(tasks)).flatMap(lambda shares: [(share,) for share in shares])
    wanted = None if only is None else (only[0], pa.array(sorted(only[1]), pa.string()))
    return (spark.createDataFrame(names, "share string")
            .mapInArrow(lambda batches: _read_shares(batches, uri, s3, arrow_schema, partition, extend, wanted),
                        extended or schema))


def count_folder(spark: SparkSession, uri: str, s3: S3Settings, files: list[tuple[str, int]] | Planned,
                 measure: str) -> tuple[int, int]:
    """(rows, UTF-8 bytes of the column ``measure``) of the Parquet ``files``, counted by the tasks from each file's
    footer where it says them (a data/ file's ``text``: :data:`~pipeline.writing.output.TEXT_BYTES_KEY`), else by
    reading only that column; nothing but the two numbers of each task reaches the driver."""
    tasks = _by_task(spark, files)
    if not tasks:
        return 0, 0

    def count(share: str):
        fs, root = filesystem_for(uri, s3)
        rows = size = 0
        for relative in share_paths(fs, root, share):
            with fs.open_input_file(f"{root}/{relative}") as handle:
                parquet = pq.ParquetFile(handle)
                written = (parquet.metadata.metadata or {}).get(TEXT_BYTES_KEY) if measure == "text" else None
                if written is not None:  # the footer says (SplitWriter): the text is not read
                    rows += parquet.metadata.num_rows
                    size += int(written)
                    continue
                column = parquet.read(columns=[measure]).column(measure)
            rows += len(column)
            size += int(pc.sum(pc.binary_length(column)).as_py() or 0)
        yield rows, size

    counted = spark.sparkContext.parallelize(tasks, len(tasks)).flatMap(
        lambda shares: [counts for share in shares for counts in count(share)]).collect()
    return sum(rows for rows, _ in counted), sum(size for _, size in counted)


def _write_task(batches, uri: str, s3: S3Settings, folder: str, partition: str | None, compression: str | None,
                measure: str | None, name: str, tally: Tally | None = None):
    """A task's side of :func:`write_folder`: its rows into one file per partition value; one row per file."""
    from pyspark import TaskContext

    task = TaskContext.get().partitionId()
    fs, root = filesystem_for(uri, s3)
    writers: dict[str | None, Any] = {}
    counts: dict[str | None, list[int]] = {}
    tallies: dict[str | None, dict[str, Any]] = {}

    def relative(value: str | None) -> str:
        return f"{folder}/{partition}={value}/{name}-{task:05d}.parquet" if partition else \
            f"{folder}/{name}-{task:05d}.parquet"

    def write(value: str | None, table: pa.Table) -> None:
        if value not in writers:
            path = f"{root}/{relative(value)}"
            fs.create_dir(path.rsplit("/", 1)[0], recursive=True)
            writers[value] = pq.ParquetWriter(path, table.schema, filesystem=fs, compression=compression or "none")
            counts[value] = [0, 0]
        writers[value].write_table(table)
        if tally is not None:
            tally.add(tallies.setdefault(value, {"by": {}, "marked": []}), table)
        counts[value][0] += table.num_rows
        if measure is not None:
            counts[value][1] += int(pc.sum(pc.binary_length(table.column(measure))).as_py() or 0)

    try:
        for batch in batches:
            if not batch.num_rows:
                continue
            table = pa.Table.from_batches([batch])
            values = table.column(partition) if partition is not None else None
            table = _for_file(table, partition)
            if values is None:
                write(None, table)
                continue
            for value in pc.unique(values).to_pylist():
                write(value, table.filter(pc.equal(values, value)) if value is not None
                      else table.filter(pc.is_null(values)))
    finally:
        for writer in writers.values():
            writer.close()
    if writers:
        yield pa.RecordBatch.from_pylist(
            [{"path": relative(value), "rows": n, "bytes": b,
              "tally": json.dumps(tallies[value], sort_keys=True) if tally is not None else None}
             for value, (n, b) in counts.items()], schema=WRITTEN)


@dataclass(frozen=True)
class Tally:
    """What the writing tasks count of their rows besides rows and bytes: the rows and the sum of ``size`` by the
    value of ``by``, and which of their ``key`` values are among ``marked``."""

    by: str
    size: str
    key: str
    marked: frozenset[str] = frozenset()

    def add(self, into: dict[str, Any], table: pa.Table) -> None:
        """Count ``table`` into ``into`` (``by``: value -> [rows, size]; ``marked``: the marked keys seen)."""
        grouped = table.group_by(self.by).aggregate([(self.by, "count"), (self.size, "sum")]).to_pylist()
        for row in grouped:
            count = into["by"].setdefault(row[self.by], [0, 0])
            count[0] += row[f"{self.by}_count"]
            count[1] += row[f"{self.size}_sum"] or 0
        if self.marked:
            keys = table.column(self.key)
            into["marked"] += keys.filter(pc.is_in(keys, value_set=self._marked)).to_pylist()

    @cached_property
    def _marked(self) -> pa.Array:
        """``marked`` as the value set of :func:`pyarrow.compute.is_in` (made once a task)."""
        return pa.array(sorted(self.marked), pa.string())

    @staticmethod
    def merged(written: list[dict[str, Any]]) -> dict[str, Any]:
        """The tallies of the files ``written`` (rows of :func:`write_folder`) added up."""
        total: dict[str, Any] = {"by": {}, "marked": []}
        for row in written:
            tally = json.loads(row["tally"])
            for value, (rows, size) in tally["by"].items():
                count = total["by"].setdefault(value, [0, 0])
                count[0] += rows
                count[1] += size
            total["marked"] += tally["marked"]
        total["marked"] = sorted(set(total["marked"]))
        return total


def write_folder(frame: DataFrame, target: OutputTarget, s3: S3Settings, folder: str, compression: str,
                 partition: str | None = None, measure: str | None = None, name: str = "part",
                 tally: Tally | None = None) -> list[dict[str, Any]]:
    """Write ``frame`` as the Parquet folder ``folder`` of the output ``target`` from the tasks (what was there is
    removed first), files ``<name>-<task>.parquet``; return one dict per file written: ``path`` (relative to the
    output), ``rows`` and ``bytes`` (the UTF-8 bytes of the column ``measure``), and with a ``tally`` its counts
    (JSON, :meth:`Tally.merged` adds them up). ``compression``: a Parquet codec or ``none``."""
    target.fs.delete_dir_contents(target.path(folder), missing_dir_ok=True)
    codec = None if compression in ("none", "uncompressed") else compression
    uri = target.uri
    written = frame.mapInArrow(lambda batches: _write_task(batches, uri, s3, folder, partition, codec, measure, name,
                                                           tally), from_arrow_schema(WRITTEN)).collect()
    return sorted((row.asDict() for row in written), key=lambda row: row["path"])
