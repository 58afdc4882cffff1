#!/usr/bin/env python3
"""What planning a corpus build costs the Python driver at a snapshot's number of data/ files (a study: prints
figures, asserts nothing).

Makes an output of ``--splits`` splits in ``--languages`` languages (one small ``data/`` file a split and language,
named as a Common Crawl shard's are) whose last build read all but the last ``--new`` splits (its lists
``_corpus/inputs/<folder>.parquet`` and marker), then, in a fresh process with a local SparkSession, runs the
planning of the next build (:class:`~pipeline.corpus.builder.CorpusBuilder` with ``conf/nightly.yaml``) step by
step: the tasks' plan of each data/ folder (:mod:`~pipeline.corpus.input_plan`) and the fingerprint, the check
against the last build, the plan kept in the build's work folder, and the reading tasks' shares of the new files
and of all the files (a full build's). Prints the Python driver's peak RSS after each step (from after the
session's start), and the whole per data/ file.

usage: python scripts/studies/driver_files.py [--splits 4000] [--languages 50] [--new 80] [--work DIR]
"""

from __future__ import annotations

import argparse
import json
import resource
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def builder(root: Path, spark=None):
    from pipeline.config import load_settings
    from pipeline.corpus.builder import CorpusBuilder, enabled_stages
    from pipeline.writing.output import OutputTarget

    settings = load_settings(ROOT / "conf" / "nightly.yaml", [])
    built = CorpusBuilder.__new__(CorpusBuilder)  # its planning only: no stage runs
    built.spark, built.settings, built.compression = spark, settings, "zstd"
    built.target = OutputTarget(str(root), settings.s3)
    built.sample_ids, built.stages = None, enabled_stages(settings)
    return built


def make(root: Path, splits: int, languages: int, new: int) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    from pipeline.corpus.builder import MARKER
    from pipeline.corpus.input_plan import INPUTS_DIR
    from pipeline.writing.output import CORPUS_DIR

    (root / INPUTS_DIR).mkdir(parents=True)
    for language in range(languages):
        folder = root / "data" / f"language=l{language:02d}"
        folder.mkdir(parents=True)
        read_before: list[tuple[str, int]] = []
        for split in range(splits):
            name = f"part-CC-MAIN-20240301-{split:05d}.warc.gz-{split * 7919 % 99991:08x}-000of001.parquet"
            (folder / name).write_bytes(b"x" * (split % 7 + 1))
            if split < splits - new:
                read_before.append((f"data/language=l{language:02d}/{name}", split % 7 + 1))
        pq.write_table(pa.table({"path": [p for p, _ in read_before], "size": [n for _, n in read_before]}),
                       root / INPUTS_DIR / f"language=l{language:02d}.parquet")
    built = builder(root)
    built.target.write_bytes(MARKER, json.dumps({"basis": built.basis(), "generation": 3}).encode())
    (root / CORPUS_DIR).mkdir()


def measure(root: Path) -> None:
    import os

    from pyspark.sql import SparkSession

    from pipeline.corpus.builder import WORK_DIR
    from pipeline.corpus.input_plan import share_names

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    spark = (SparkSession.builder.master("local[2]").config("spark.ui.enabled", "false")
             .config("spark.ui.showConsoleProgress", "false").getOrCreate())
    spark.sparkContext.parallelize([1], 1).count()  # the session's and the workers' start-up, before measuring
    built = builder(root, spark)
    steps = [("start (session up)", peak_mb())]
    folders, fingerprint = built._plan()
    steps.append(("plan of each folder, fingerprint", peak_mb()))
    work = f"{WORK_DIR}/{fingerprint}"
    base, why = built._base(folders, work)
    steps.append(("check against the last build", peak_mb()))
    folders = built._keep_plan(folders, work)
    adding, full = share_names(f"{work}/plan", folders, True), share_names(f"{work}/plan", folders, False)
    steps.append(("tasks' shares (new, all)", peak_mb()))
    files, new = sum(folder.files for folder in folders), sum(folder.new for folder in folders)
    print(f"{files:,} data/ files in {len(folders)} folders, {new:,} new, {len(adding)} and {len(full)} task "
          f"shares; adds to the last build: {why is None}")
    for name, mb in steps:
        print(f"  {name:34s} peak RSS {mb:7.1f} MB")
    print(f"  {(steps[-1][1] - steps[0][1]) * 2**20 / files:.0f} bytes a data/ file")
    spark.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--splits", type=int, default=4000)
    parser.add_argument("--languages", type=int, default=50)
    parser.add_argument("--new", type=int, default=80, help="splits the last build did not read")
    parser.add_argument("--work", type=Path, help="where the made-up output goes (default: the system's temp)")
    parser.add_argument("--measure", type=Path, help=argparse.SUPPRESS)  # the fresh process's side
    args = parser.parse_args()
    if args.measure:
        measure(args.measure)
        return
    root = Path(tempfile.mkdtemp(dir=args.work))
    try:
        make(root, args.splits, args.languages, args.new)
        subprocess.run([sys.executable, __file__, "--measure", str(root)], check=True)
    finally:
        shutil.rmtree(root)


if __name__ == "__main__":
    main()
