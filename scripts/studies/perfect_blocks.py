#!/usr/bin/env python3
"""What a perfect block classifier would score: the bound the block stage's parse and labels set.

Every full-text held-out page (``--dev``: the dev side) of the chosen sets is parsed as the block stage parses it
(:func:`pipeline.steps.blocks.parse.parse_blocks`); the blocks that ``scripts/train_blocks.py`` labels main
(:func:`train_blocks.main_labels`: the block's tokens in the truth) are kept, written as the stage writes kept blocks
(:func:`pipeline.steps.blocks.extractor.block_lines`, without the filter), and scored against the truth. Prints per
set and page type: WCXB's word F1 (:func:`benchpages.word_prf`) and the bench's ROUGE-5 F1. The gap between these and
the shipped stage's figures (``page_scores.py``) is what a better classifier could still win; what they miss is lost
to the parse itself (text the blocks split or join otherwise than the truth) or to the labels.

usage: PYTHONPATH=scripts python scripts/studies/perfect_blocks.py [--sets data-wcxb,data,data-ml] [--dev]
"""

from __future__ import annotations

import argparse
import gzip
from collections import defaultdict
from multiprocessing import Pool

from benchpages import BENCH, is_heldout, manifest, page_path, scorer, truth_path, word_prf
from train_blocks import main_labels  # scripts/: run with PYTHONPATH=scripts

from pipeline.document import visible
from pipeline.reading.decode import decode_html
from pipeline.steps.blocks.extractor import block_lines
from pipeline.steps.blocks.parse import parse_blocks


def perfect_text(job: tuple[str, dict]) -> tuple[str, str, float, float]:
    """(set, page type, word F1, ROUGE-5 F1) of one page's blocks labelled main."""
    folder, row = job
    bench = scorer(BENCH)
    html = decode_html(gzip.decompress(page_path(BENCH, folder, row).read_bytes()))
    truth = truth_path(BENCH, folder, row).read_text(encoding="utf-8", errors="replace")
    blocks = parse_blocks(html)
    kept = [b for b, main in zip(blocks, main_labels(blocks, truth, BENCH)) if main and visible(b.written)]
    text = block_lines(kept)
    return folder, str(row.get("page_type") or row["dataset"]), word_prf(text, truth)[2], \
        bench.score_pair(text, truth)["rouge5_f"]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sets", default="data-wcxb")
    parser.add_argument("--dev", action="store_true", help="the dev side of the split instead of the held-out one")
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args()
    jobs = [(folder, row) for folder in args.sets.split(",") for row in manifest(BENCH, folder)
            if row.get("truth_type", "fulltext") == "fulltext" and is_heldout(row["id"]) != args.dev]
    with Pool(args.workers) as pool:
        scored = pool.map(perfect_text, jobs, chunksize=8)
    groups = defaultdict(list)
    for folder, kind, f1, rouge in scored:
        groups[(folder, "ALL")].append((f1, rouge))
        groups[(folder, kind)].append((f1, rouge))
    print(f"perfect block classifier, {'dev' if args.dev else 'held-out'} pages: word F1, ROUGE-5 F1")
    for (folder, kind), values in sorted(groups.items()):
        n = len(values)
        print(f"  {folder:10s} {kind:16s} {n:5d}  {sum(v[0] for v in values) / n:.4f}  {sum(v[1] for v in values) / n:.4f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
