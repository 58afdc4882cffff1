"""Before and after a change, from two ``make bench-quality`` work folders: ROUGE-5 F1 of the default run on the
held-out pages per set, dataset, page type and language, with the standard error of each group's mean, and the
peers' figures beside them.

Each group's line: its pages, the mean before and after, the difference, the standard error of the mean before
(the per-page standard deviation over the square root of the pages) and of the paired difference, and the peers'
means. A line ends with ``<<`` when the mean fell by more than its standard error. Pages whose truth splits the
page's words (:func:`benchpages.damaged_truth`) are counted apart: each set's ``ALL`` line is also given without
them.

    PYTHONPATH=scripts python scripts/studies/quality_diff.py BEFORE_WORK AFTER_WORK [--bench ../shared/bench] [--without-damaged]

(``BEFORE_WORK`` and ``AFTER_WORK``: ``scripts/bench_quality.py --work`` folders, each with
``<set>/preds1.heldout.csv``; the peers are read from ``BEFORE_WORK``, ``<set>/peer<n>.heldout.csv``.)
"""

from __future__ import annotations

import argparse
import csv
import gzip
import math
from collections import defaultdict
from pathlib import Path

from benchpages import BENCH, damaged_truth, manifest  # scripts/: run with PYTHONPATH=scripts

from pipeline.reading.decode import decode_html

PEERS = {"peer1": "trafilatura", "peer2": "readability", "peer3": "jusText", "peer4": "resiliparse"}
SETS = ("data", "data-wcxb", "data-ml")


def scores(path: Path) -> dict[str, float]:
    with path.open(encoding="utf-8") as fh:
        return {row["id"]: float(row["rouge5_f"]) for row in csv.DictReader(fh) if row["rouge5_f"]}


def damaged(bench: Path, folder: str, row: dict) -> bool:
    base = bench / folder / row["dataset"]
    truth, page = base / "truth" / f"{row['id']}.txt", base / "pages" / f"{row['id']}.html.gz"
    return truth.exists() and damaged_truth(truth.read_text(encoding="utf-8", errors="replace"),
                                            decode_html(gzip.decompress(page.read_bytes())) if page.exists() else None)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("before", type=Path)
    parser.add_argument("after", type=Path)
    parser.add_argument("--bench", type=Path, default=BENCH)
    parser.add_argument("--without-damaged", action="store_true",
                        help="leave the pages with damaged truths out of every group but the first ALL line")
    args = parser.parse_args()
    for folder in SETS:
        if not (args.before / folder / "preds1.heldout.csv").exists():
            continue
        rows = {row["id"]: row for row in manifest(args.bench, folder)}
        before = scores(args.before / folder / "preds1.heldout.csv")
        after = scores(args.after / folder / "preds1.heldout.csv")
        peers = {label: scores(args.before / folder / f"{name}.heldout.csv") for name, label in PEERS.items()
                 if (args.before / folder / f"{name}.heldout.csv").exists()}
        ids = [i for i in before if i in after]
        bad = {i for i in ids if damaged(args.bench, folder, rows[i])}
        groups: dict[tuple[str, str], list[str]] = defaultdict(list)
        for i in ids:
            row = rows[i]
            groups[("ALL", "")].append(i)
            if bad and i not in bad:
                groups[("ALL", "without damaged truths")].append(i)
            if args.without_damaged and i in bad:
                continue
            groups[("dataset", row["dataset"])].append(i)
            if row.get("page_type"):
                groups[("type", row["page_type"])].append(i)
            if folder == "data-ml":
                groups[("language", row.get("lang") or "-")].append(i)
        print(f"\n== {folder}, held-out pages: ROUGE-5 F1 of the default run ({len(bad)} damaged truths)")
        print(f"{'group':30s} {'pages':>5s} {'before':>7s} {'after':>7s} {'diff':>7s} {'SE':>6s} {'SE diff':>7s}  "
              + " ".join(f"{label[:11]:>11s}" for label in peers))
        for key in sorted(groups, key=lambda k: (k[0] != "ALL", k[0], -len(groups[k]), k[1])):
            members = groups[key]
            n = len(members)
            if n < 5 and key[0] == "language":
                continue
            mean_before = sum(before[i] for i in members) / n
            mean_after = sum(after[i] for i in members) / n
            sd = math.sqrt(sum((before[i] - mean_before) ** 2 for i in members) / max(n - 1, 1))
            diffs = [after[i] - before[i] for i in members]
            mean_diff = sum(diffs) / n
            sd_diff = math.sqrt(sum((d - mean_diff) ** 2 for d in diffs) / max(n - 1, 1))
            se = sd / math.sqrt(n)
            flag = " <<" if mean_after - mean_before < -se else ""
            print(f"{(key[0] + ' ' + key[1]).strip()[:30]:30s} {n:5d} {mean_before:7.3f} {mean_after:7.3f} "
                  f"{mean_after - mean_before:+7.3f} {se:6.3f} {sd_diff / math.sqrt(n):7.3f}  "
                  + " ".join(f"{sum(p.get(i, 0.0) for i in members) / n:11.3f}" for p in peers.values()) + flag)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
