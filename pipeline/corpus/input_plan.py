"""The data/ files a corpus build reads, listed and planned by the tasks, a language folder each.

A snapshot makes millions of ``data/`` files (one a split and language), so the driver lists only ``data/``'s
folders (one a language). A task a folder lists its files, compares them with the list of that folder the last build
read (``_corpus/inputs/<folder>.parquet``), and writes the folder's plan, ``<plan>/<folder>.parquet``: each file's
path and size, and its share of a full build's and of an adding build's reading tasks
(:func:`~pipeline.corpus.folders.share_numbers`; none of the latter when the last build read it). It returns one row
(:class:`FolderPlan`): the hash of the folder's list, whether a file the last build read is gone or changed, and its
numbers of files and shares. The driver holds a row a folder, never a row a file; a reading task takes its share's
paths from the plan (:func:`~pipeline.corpus.folders.share_paths`), and the plan of a build that keeps its keys
becomes the list the next build compares with.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass

import pyarrow as pa
import pyarrow.parquet as pq
from pyarrow import fs as pafs
from pyspark.sql import SparkSession

from pipeline.config import S3Settings
from pipeline.corpus.folders import (FILE_COST, PLAN_ROW_GROUP, PLAN_SCHEMA, Planned, plan_share,
                                     share_numbers)
from pipeline.writing.output import CORPUS_STATE_DIR, DATASET_DIR, OutputTarget

INPUTS_DIR = f"{CORPUS_STATE_DIR}/inputs"  # the last build's lists, one a data/ folder (a plan, as it read them)
INPUTS_JSON = f"{CORPUS_STATE_DIR}/inputs.json"  # the same, as one list, as versions before 2026-12 kept it


@dataclass(frozen=True)
class FolderPlan:
    """What the driver knows of one data/ folder (``language=<code>``): its plan's summary."""

    folder: str
    digest: str  # sha256 of the folder's files and sizes, in path order
    files: int
    new: int  # files the last build did not read (all of them when there is no last build's list of the folder)
    changed: bool  # a file the last build read is gone or has another size
    shares: int  # reading tasks of a full build
    new_shares: int  # reading tasks of a build that adds the new files
    size: int | None = None  # bytes of the files (None: a plan made by a version before 2026-12)
    new_size: int | None = None  # bytes of the new files

    def weights(self, adding: bool) -> list[float] | None:
        """Each share's bytes, about (:func:`~pipeline.corpus.folders.share_numbers`' measure: a file counts
        ``FILE_COST`` more), for a full or an adding build; None when the plan does not say its bytes."""
        shares, files, size = (self.new_shares, self.new, self.new_size) if adding else \
            (self.shares, self.files, self.size)
        if size is None:
            return None
        return [(size + files * FILE_COST) / shares] * shares if shares else []


def data_folders(target: OutputTarget) -> list[str]:
    """The folders of ``data/`` (``language=<code>``), listed on the driver: data/'s own entries only."""
    selector = pafs.FileSelector(target.path(DATASET_DIR), allow_not_found=True)
    return sorted(info.base_name for info in target.fs.get_file_info(selector)
                  if info.type == pafs.FileType.Directory)


def _plan_folder(uri: str, s3: S3Settings, folder: str, plan: str) -> FolderPlan:
    """A task's side of :func:`plan_inputs`: list ``data/<folder>``, compare it with the last build's list of it and
    write its plan."""
    target = OutputTarget(uri, s3)
    files = sorted((path, size) for path, size in target.walk_files(f"{DATASET_DIR}/{folder}")
                   if path.endswith(".parquet"))
    earlier: dict[str, int] | None = None
    if target.exists(f"{INPUTS_DIR}/{folder}.parquet"):
        with target.fs.open_input_file(target.path(f"{INPUTS_DIR}/{folder}.parquet")) as handle:
            listed = pq.read_table(handle, columns=["path", "size"])
        earlier = dict(zip(listed.column("path").to_pylist(), listed.column("size").to_pylist()))
    sizes = dict(files)
    changed = earlier is not None and any(sizes.get(path) != size for path, size in earlier.items())
    new = [earlier is None or path not in earlier for path, _ in files]
    all_sizes = [size for _, size in files]
    new_sizes = [size for size, is_new in zip(all_sizes, new) if is_new]
    numbers, new_numbers = share_numbers(all_sizes), share_numbers(new_sizes)
    numbered = iter(new_numbers)
    table = pa.table({"path": [path for path, _ in files], "size": all_sizes, "share": numbers,
                      "new_share": [next(numbered) if is_new else None for is_new in new]}, schema=PLAN_SCHEMA)
    with target.atomic_stream(f"{plan}/{folder}.parquet") as out:
        pq.write_table(table, out, row_group_size=PLAN_ROW_GROUP, compression="zstd")
    digest = hashlib.sha256()
    for path, size in files:
        digest.update(f"{path}\t{size}\n".encode("utf-8"))
    return FolderPlan(folder, digest.hexdigest(), len(files), len(new_numbers), changed,
                      numbers[-1] + 1 if numbers else 0, new_numbers[-1] + 1 if new_numbers else 0,
                      sum(all_sizes), sum(new_sizes))


def plan_inputs(spark: SparkSession, target: OutputTarget, s3: S3Settings, plan: str) -> list[FolderPlan]:
    """Every data/ folder planned by a task (:func:`_plan_folder`; a task a folder, or a few a task where there are
    more folders than the cluster's cores) into the folder ``plan`` of the output."""
    folders = data_folders(target)
    if not folders:
        return []
    uri = target.uri
    tasks = min(len(folders), spark.sparkContext.defaultParallelism)
    return spark.sparkContext.parallelize(folders, tasks).map(
        lambda folder: _plan_folder(uri, s3, folder, plan)).collect()


def save_summary(target: OutputTarget, plan: str, folders: list[FolderPlan]) -> None:
    target.write_json(f"{plan}/_DONE.json", [asdict(folder) for folder in folders])


def load_summary(target: OutputTarget, plan: str) -> list[FolderPlan] | None:
    saved = target.read_bytes(f"{plan}/_DONE.json")
    return None if saved is None else [FolderPlan(**row) for row in json.loads(saved)]


def share_names(plan: str, folders: list[FolderPlan], adding: bool) -> Planned:
    """The shares of a full build (``adding`` False) or of one that adds the new files, with their bytes where the
    plans say them (:func:`~pipeline.corpus.folders.spread` puts a few small ones in one reading task)."""
    names = [plan_share(f"{plan}/{folder.folder}.parquet", adding, number)
             for folder in folders for number in range(folder.new_shares if adding else folder.shares)]
    weights = [folder.weights(adding) for folder in folders]
    if any(w is None for w in weights):
        return Planned(names)
    return Planned(names, [weight for folder_weights in weights for weight in folder_weights])


def earlier_folders(target: OutputTarget) -> set[str] | None:
    """The data/ folders the last build's lists name (None: it kept none)."""
    selector = pafs.FileSelector(target.path(INPUTS_DIR), allow_not_found=True)
    names = {info.base_name[:-len(".parquet")] for info in target.fs.get_file_info(selector)
             if info.is_file and info.base_name.endswith(".parquet")}
    return names or None


def migrate_json_list(target: OutputTarget) -> None:
    """An earlier version's one list of every data/ file read (``_corpus/inputs.json``), as a list a folder: read
    on the driver once (the only time the driver holds such a list), then removed."""
    data = target.read_bytes(INPUTS_JSON)
    if data is None:
        return
    by_folder: dict[str, list[tuple[str, int]]] = {}
    for path, size in json.loads(data)["files"]:
        by_folder.setdefault(path.split("/")[1], []).append((path, size))
    del data
    for folder, files in sorted(by_folder.items()):
        table = pa.table({"path": [path for path, _ in files], "size": [size for _, size in files]})
        with target.atomic_stream(f"{INPUTS_DIR}/{folder}.parquet") as out:
            pq.write_table(table, out, compression="zstd")
    target.fs.delete_file(target.path(INPUTS_JSON))
