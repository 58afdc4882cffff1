"""A sample of the comment labels of scripts/train_blocks.py, to read: how well do they agree with a reader?

Draws a seeded sample of the training side of the bench dev pages (never the held-out side) whose parse has
comment regions, labels their blocks as the fit does (:func:`train_blocks.label` against the truth, then
:func:`train_blocks.comment_label`), and prints ``--per-label`` region blocks of each label (at most two of a label from one page) (comment, not a comment),
each with its page, dataset, words and text, for a person to judge. The verdicts are the reader's: docs/research/block-labels.md
gives the last reading's count.

    PYTHONPATH=scripts python scripts/studies/comment_labels.py [--bench ../shared/bench] [--per-label 40] [--seed 0]
"""

from __future__ import annotations

import argparse
import gzip
import random
from pathlib import Path

from benchpages import BENCH, dev_items, is_heldout, scorer  # scripts/: run with PYTHONPATH=scripts
from train_blocks import comment_label, label

from pipeline.reading.decode import decode_html
from pipeline.steps.blocks.comments import region_blocks, repeats
from pipeline.steps.blocks.features import word_count
from pipeline.steps.blocks.parse import parse_page


PER_PAGE = 2  # blocks of each label drawn from one page


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--bench", type=Path, default=BENCH)
    parser.add_argument("--per-label", type=int, default=40)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    rng = random.Random(args.seed)
    items = [item for item in dev_items(args.bench) if not is_heldout(item["id"]) and item["set"] != "snippets"]
    rng.shuffle(items)
    tokenize = scorer(args.bench).tokenize
    found: dict[int, list[tuple]] = {0: [], 1: []}
    for item in items:
        if all(len(v) >= args.per_label * 2 for v in found.values()):
            break
        html = decode_html(gzip.decompress(Path(item["html"]).read_bytes()))
        blocks, _ = parse_page(html)
        chosen = region_blocks(blocks)
        if not len(chosen):
            continue
        truth = Path(item["truth"]).read_text(encoding="utf-8", errors="replace")
        tokens = tokenize(truth)
        joined, trigrams = f" {' '.join(tokens)} ", {tuple(tokens[i:i + 3]) for i in range(len(tokens) - 2)}
        recurring = dict(zip(chosen.tolist(), repeats(blocks, chosen).tolist()))
        page: dict[int, list[tuple]] = {0: [], 1: []}
        for i in chosen.tolist():
            b = blocks[i]
            main_label = label(tokenize(b.text), joined, trigrams)
            page[comment_label(b, main_label, recurring[i])].append(
                (item["id"], f"{item['set']} {item['group']}", main_label, b.text))
        for value, labelled in page.items():  # at most PER_PAGE of each label a page: many pages, not one long thread
            found[value] += rng.sample(labelled, min(PER_PAGE, len(labelled)))
    for value, name in ((1, "labelled a comment"), (0, "in a comment region, not labelled a comment")):
        sample = rng.sample(found[value], min(args.per_label, len(found[value])))
        print(f"\n== {name}: {len(sample)} of {len(found[value])} blocks ==")
        for n, (page_id, group, main_label, text) in enumerate(sample, 1):
            flat = " ".join(text.split())
            print(f"{n:3d} {page_id} ({group}; truth keeps it: {bool(main_label)}; {word_count(text)} words): "
                  f"{flat[:220]}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
