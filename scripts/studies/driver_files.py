#!/usr/bin/env python3
"""What planning a corpus build costs the Python driver at a snapshot's number of data/ files (a study: prints
figures, asserts nothing).

Makes an output of ``--splits`` splits in ``--languages`` languages (one small ``data/`` file a split and language,
named as a Common Crawl shard's are) whose last build read all but the last ``--new`` splits (its
``_corpus/inputs.json`` and marker), then, in a fresh process and without Spark, runs the driver's side of the
next build (:class:`~pipeline.corpus.builder.CorpusBuilder` with ``conf/nightly.yaml``) step by step: the listing
of data/, the fingerprint, the check against the files the last build read, the new files, the tasks' shares of
them and of all the files (a full build's), and the list the build saves for the next one. Prints the peak RSS
after each step, and the whole per data/ file.

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


def builder(root: Path):
    from pipeline.config import load_settings
    from pipeline.corpus.builder import CorpusBuilder, enabled_stages
    from pipeline.writing.output import OutputTarget

    settings = load_settings(ROOT / "conf" / "nightly.yaml", [])
    built = CorpusBuilder.__new__(CorpusBuilder)  # its driver side only: no SparkSession
    built.settings, built.target, built.compression = settings, OutputTarget(str(root), settings.s3), "zstd"
    built.sample_ids, built.stages = None, enabled_stages(settings)
    return built


def make(root: Path, splits: int, languages: int, new: int) -> None:
    from pipeline.corpus.builder import INPUTS, MARKER
    from pipeline.writing.output import CORPUS_DIR

    read_before = []
    for language in range(languages):
        folder = root / "data" / f"language=l{language:02d}"
        folder.mkdir(parents=True)
        for split in range(splits):
            name = f"part-CC-MAIN-20240301-{split:05d}.warc.gz-{split * 7919 % 99991:08x}-000of001.parquet"
            (folder / name).write_bytes(b"x" * (split % 7 + 1))
            if split < splits - new:
                read_before.append((f"data/language=l{language:02d}/{name}", split % 7 + 1))
    built = builder(root)
    built.target.write_json(INPUTS, {"generation": 3, "files": sorted(read_before)})
    built.target.write_bytes(MARKER, json.dumps({"basis": built.basis()}).encode())
    (root / CORPUS_DIR).mkdir()


def measure(root: Path) -> None:
    import pyarrow as pa

    from pipeline.corpus.builder import INPUTS
    from pipeline.corpus.folders import task_shares

    pa.array(["warm"])  # Arrow's one-time start-up (about 60 MB), which every driver has paid already
    built = builder(root)
    steps = [("start", peak_mb())]
    files = built._data_files()
    steps.append(("list data/", peak_mb()))
    fingerprint = built.fingerprint(files)
    steps.append(("fingerprint", peak_mb()))
    base, why = built._base(files, f"_tmp/corpus/{fingerprint}")
    steps.append(("check against the last build", peak_mb()))
    earlier = {path for path, _ in base["files"]}
    new_files = [(path, size) for path, size in files if path not in earlier]
    steps.append(("new files", peak_mb()))
    shares = [json.dumps(share) for share in task_shares(sorted(new_files))]
    full = [json.dumps(share) for share in task_shares(sorted(files))]
    steps.append(("tasks' shares (new, all)", peak_mb()))
    built.target.write_json(INPUTS, {"generation": 4, "files": files})
    steps.append(("save the list", peak_mb()))
    print(f"{len(files):,} data/ files, {len(new_files):,} new, {len(shares)} and {len(full)} task shares; "
          f"adds to the last build: {why is None}")
    for name, mb in steps:
        print(f"  {name:32s} peak RSS {mb:7.1f} MB")
    print(f"  {(steps[-1][1] - steps[0][1]) * 2**20 / len(files):.0f} bytes a data/ file")


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
