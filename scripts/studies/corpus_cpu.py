#!/usr/bin/env python3
"""CPU seconds of the corpus stages alone, over a larger data/ made from a finished run's: the corpus side's loop.

A small run's corpus CPU is mostly Spark's cost per job and task; what a stage does per byte shows on more text.
This makes ``--copies`` copies of the ``data/`` of a finished ``warcplex run`` under ``--work`` (each copy's record
ids suffixed, and from the second copy on one word of its own appended to every text, so that no copy is an exact
duplicate of another: exact dedup drops what the run's own pages duplicate, about as in the run), then runs the
corpus stages on it ``--rounds`` times with the default settings (index statistics off), each in a fresh Spark
process, and prints the CPU of the whole process tree (``cputree.measure``: a cgroup, by role from ``/proc``) and
the median. To compare two versions, run it on each in alternating rounds and compare medians.

usage: PYTHONPATH=scripts python scripts/studies/corpus_cpu.py --from OUTPUT [--copies 8] [--rounds 3]
                                                               [--work build/corpus-cpu]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def make_data(source: Path, work: Path, copies: int) -> tuple[int, int]:
    """``copies`` copies of ``source``'s data/ under ``work``; (documents, Parquet bytes)."""
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    shutil.rmtree(work, ignore_errors=True)
    documents = size = 0
    for path in sorted((source / "data").glob("*/*.parquet")):
        table = pq.read_table(path)
        for k in range(copies):
            ids = pc.binary_join_element_wise(table["warc_record_id"], pa.scalar(f"-{k}"), "")
            word = f" variant{'abcdefghijklmnopqrstuvwxyz'[k % 26]}{'x' * (k // 26)}" if k else ""
            text = pc.binary_join_element_wise(table["text"], pa.scalar(word), "")
            copy = table.set_column(table.column_names.index("warc_record_id"), "warc_record_id", ids)
            copy = copy.set_column(copy.column_names.index("text"), "text", text)
            target = work / path.relative_to(source).with_name(f"{path.stem}-{k}.parquet")
            target.parent.mkdir(parents=True, exist_ok=True)
            pq.write_table(copy.replace_schema_metadata(None), target, compression="zstd")
            documents += copy.num_rows
            size += target.stat().st_size
    shutil.copy(source / "_warcplex.json", work / "_warcplex.json")
    return documents, size


def corpus_only(output: str) -> None:
    """The corpus stages over ``output``'s data/ (what an earlier round built is removed first)."""
    from pipeline.config import load_settings
    from pipeline.corpus.builder import run_corpus
    from pipeline.spark.session import spark_session

    for folder in ("corpus", "corpus_dropped", "_corpus", "_tmp"):
        shutil.rmtree(f"{output}/{folder}", ignore_errors=True)
    spark = spark_session(load_settings(ROOT / "conf" / "local.yaml", ["index.enabled=false"]))
    started = time.time()
    stats = run_corpus(spark, load_settings(ROOT / "conf" / "local.yaml", ["index.enabled=false"]), output)
    spark.stop()
    print(json.dumps({"wall": round(time.time() - started, 2), "documents_in": stats["documents_in"],
                      "documents_out": stats["documents_out"]}))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--from", dest="source", type=Path, help="a finished run's output (its data/)")
    parser.add_argument("--copies", type=int, default=8)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--work", type=Path, default=ROOT / "build" / "corpus-cpu")
    parser.add_argument("--corpus-only", help=argparse.SUPPRESS)  # one round, in its own process
    args = parser.parse_args()
    if args.corpus_only:
        corpus_only(args.corpus_only)
        return
    if args.source is None or not (args.source / "data").is_dir():
        parser.error("--from needs a finished run's output directory (with data/)")
    from cputree import measure

    documents, size = make_data(args.source, args.work, args.copies)
    print(f"data/: {documents:,} documents, {size / 1e6:.1f} MB of Parquet ({args.copies} copies)")
    env = dict(os.environ, PYSPARK_PYTHON=os.environ.get("PYSPARK_PYTHON", sys.executable),
               SPARK_LOCAL_IP=os.environ.get("SPARK_LOCAL_IP", "127.0.0.1"))
    totals = []
    for round_ in range(args.rounds):
        usage = measure([sys.executable, __file__, "--corpus-only", str(args.work)], env=env, cwd=str(ROOT),
                        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        if usage.returncode:
            sys.exit(f"round {round_ + 1}: the corpus stages exited {usage.returncode}")
        totals.append(usage.cpu_seconds)
        roles = ", ".join(f"{role} {cpu:.1f}" for role, cpu in sorted(usage.by_role.items()) if cpu >= 0.05)
        print(f"round {round_ + 1}: {usage.cpu_seconds:.1f} CPU-s ({roles})", flush=True)
    print(f"corpus stages, whole tree: median {statistics.median(totals):.1f} CPU-s of {args.rounds} rounds")


if __name__ == "__main__":
    main()
