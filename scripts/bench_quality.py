#!/usr/bin/env python3
"""Extraction quality benchmark: warcplex (real Spark runs) against the peers on the bench WARC.

Runs ``warcplex run`` in local Spark with Parquet output on ../shared/bench/warc/bench-dev.warc.gz
for each warcplex configuration, turns the output into predictions with the bench's
parquet_to_preds.py, runs trafilatura, resiliparse and readability-lxml directly (plain Python,
same WARC, same decoding) and scores everything with the bench's score.py. Prints, per system,
ROUGE-5 F1, bag-of-words precision/recall/F1, the snippet F of the multilingual set and pages per
CPU second (warcplex: pages / summed task CPU seconds; peers: pages / CPU seconds of one process),
then ROUGE-5 F1 per dataset; once on every dev page and once on the held-out pages only (the 30%
the block classifier was not fitted on, listed in warcplex/steps/blocks/blocks_heldout_ids.txt).

usage: scripts/bench_quality.py [--bench ../shared/bench] [--work out/bench-quality] [--runs 3,4,peers]
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# (label, --set overrides) of the warcplex runs; the default configuration is conf/local.yaml.
WARCPLEX_RUNS = [
    ("warcplex primary [resiliparse] +filter", ["extract.cascade=[resiliparse]"]),
    ("warcplex primary [resiliparse] no filter", ["extract.cascade=[resiliparse]", "perplexity.enabled=false"]),
    ("warcplex default cascade +filter", []),
    ("warcplex default cascade no filter", ["perplexity.enabled=false"]),
]


def peer_extractors() -> dict:
    """The peers with their libraries' own defaults (as in the bench README)."""
    import html_text
    import trafilatura
    from readability import Document
    from resiliparse.extract.html2text import extract_plain_text

    return {
        "trafilatura (default)": lambda html: trafilatura.extract(html) or "",
        "resiliparse main_content": lambda html: extract_plain_text(html, main_content=True),
        "readability-lxml + html-text": lambda html: html_text.extract_text(
            Document(html).summary(html_partial=True), guess_layout=True),
    }


def bench_pages(warc: Path, index: Path):
    """Yield (bench_id, decoded html) for every response record of the bench WARC."""
    from fastwarc.warc import ArchiveIterator, WarcRecordType

    from warcplex.reading.decode import decode_html

    by_record = {r["response_record_id"]: r["bench_id"] for r in csv.DictReader(open(index), delimiter="\t")}
    with open(warc, "rb") as fh:
        for record in ArchiveIterator(fh, record_types=WarcRecordType.response, parse_http=True):
            bench_id = by_record.get(record.record_id)
            if bench_id is None:
                continue
            charset = None
            ctype = record.http_headers.get("Content-Type") or ""
            if "charset=" in ctype:
                charset = ctype.split("charset=", 1)[1].split(";")[0].strip() or None
            yield bench_id, decode_html(record.reader.read(), charset)


def run_peer(name: str, extract, pages: list[tuple[str, str]], preds: Path) -> float:
    """Write one prediction per page; return pages per CPU second."""
    preds.mkdir(parents=True, exist_ok=True)
    cpu = 0.0
    for bench_id, html in pages:
        start = time.process_time()
        try:
            text = extract(html)
        except Exception:  # a peer failing on a page scores it as empty, like missing output
            text = ""
        cpu += time.process_time() - start
        (preds / f"{bench_id}.txt").write_text(text, encoding="utf-8")
    return len(pages) / cpu if cpu else float("nan")


def run_warcplex(label: str, overrides: list[str], args, out: Path) -> float:
    """One real `warcplex run` (local Spark, Parquet); return pages per task-CPU second."""
    cmd = [str(ROOT / ".venv" / "bin" / "warcplex"), "run", "--input", str(args.warc), "--output", str(out),
           "--config", args.config, "--no-resume", "--set", "index.enabled=false"]
    for item in overrides + args.set:
        cmd += ["--set", item]
    env = dict(os.environ, SPARK_LOCAL_IP=os.environ.get("SPARK_LOCAL_IP", "127.0.0.1"))
    print(f"[bench] {label}: {' '.join(cmd[1:])}", file=sys.stderr, flush=True)
    subprocess.run(cmd, check=True, cwd=ROOT, env=env, stdout=subprocess.DEVNULL)
    stats = json.loads((out / "stats.json").read_text())
    return stats["run"]["pages_per_cpu_second"] or float("nan")


def score(preds: Path, args, out_json: Path, ids: Path | None = None) -> dict:
    cmd = [sys.executable, str(args.bench / "score.py"), "--pred", str(preds), "--data", str(args.bench / "data"),
           "--out-json", str(out_json), "--quiet"]
    if ids:
        cmd += ["--ids", str(ids)]
    subprocess.run(cmd, check=True)
    return json.loads(out_json.read_text())


def score_both(preds: Path, args, name: str) -> tuple[dict, dict | None]:
    """Scores on every dev page and, with --heldout-ids, on the pages the block classifier never saw."""
    held = score(preds, args, args.work / f"{name}.heldout.json", args.heldout_ids) if args.heldout_ids else None
    return score(preds, args, args.work / f"{name}.json"), held


def print_table(results: list[tuple[str, dict, float]], title: str) -> None:
    print(f"\n== {title} ==")
    width = max(len(label) for label, _, _ in results)
    print(f"\n{'system':{width}s}  {'ROUGE-5 F1':>10s} {'BoW P':>7s} {'BoW R':>7s} {'BoW F1':>7s} "
          f"{'snippet F':>9s} {'pages/s':>8s}")
    for label, agg, speed in results:
        full = agg["fulltext"].get("ALL(pages)", {})
        snippets = [v["snippet_f"] for v in agg["snippets"].values()]
        snip = f"{sum(snippets) / len(snippets):9.3f}" if snippets else f"{'-':>9s}"
        print(f"{label:{width}s}  {full.get('rouge5_f', float('nan')):10.3f} {full.get('rouge1_p', float('nan')):7.3f} "
              f"{full.get('rouge1_r', float('nan')):7.3f} {full.get('rouge1_f', float('nan')):7.3f} {snip} {speed:8.1f}")
    datasets = sorted(k for k in results[0][1]["fulltext"] if not k.startswith("ALL"))
    counts = {d: results[0][1]["fulltext"][d]["n"] for d in datasets}
    print(f"\nROUGE-5 F1 per dataset (pages)\n{'system':{width}s}  "
          + " ".join(f"{d[:14]:>14s}" for d in datasets))
    print(f"{'':{width}s}  " + " ".join(f"{'(' + str(counts[d]) + ')':>14s}" for d in datasets))
    for label, agg, _ in results:
        print(f"{label:{width}s}  " + " ".join(f"{agg['fulltext'][d]['rouge5_f']:14.3f}" for d in datasets))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--bench", type=Path, default=ROOT.parent / "shared" / "bench")
    parser.add_argument("--warc", type=Path, help="default: <bench>/warc/bench-dev.warc.gz")
    parser.add_argument("--work", type=Path, default=ROOT / "out" / "bench-quality")
    parser.add_argument("--config", default="conf/local.yaml")
    parser.add_argument("--set", action="append", default=[], help="extra override for every warcplex run")
    parser.add_argument("--heldout-ids", type=Path, default=ROOT / "warcplex" / "steps" / "blocks" / "blocks_heldout_ids.txt",
                        help="also score only these ids: the pages the block classifier was not fitted on")
    parser.add_argument("--runs", help="comma-separated subset of runs by number (1-based) or `peers`")
    args = parser.parse_args()
    if not (args.bench / "score.py").exists():
        sys.exit(f"bench_quality: {args.bench} has no score.py (need ../shared/bench)")
    args.warc = args.warc or args.bench / "warc" / "bench-dev.warc.gz"
    index = args.bench / "warc" / "bench-dev.index.tsv"
    wanted = set(args.runs.split(",")) if args.runs else None
    results = []
    for number, (label, overrides) in enumerate(WARCPLEX_RUNS, 1):
        if wanted and str(number) not in wanted:
            continue
        out = args.work / f"run{number}"
        speed = run_warcplex(label, overrides, args, out)
        preds = args.work / f"preds{number}"
        parquet = args.work / f"parquet{number}"  # only the language=*/ page folders, not the side files
        shutil.rmtree(parquet, ignore_errors=True)
        parquet.mkdir(parents=True)
        pages_root = out / "data" if (out / "data").is_dir() else out
        for folder in pages_root.resolve().glob("language=*"):
            (parquet / folder.name).symlink_to(folder)
        subprocess.run([sys.executable, str(args.bench / "parquet_to_preds.py"), str(parquet), "--index", str(index),
                        "--out", str(preds)], check=True, stdout=subprocess.DEVNULL)
        results.append((label, *score_both(preds, args, f"scores{number}"), speed))
    if not wanted or "peers" in wanted:
        pages = list(bench_pages(args.warc, index))
        for number, (label, extract) in enumerate(peer_extractors().items(), 1):
            print(f"[bench] {label} on {len(pages)} pages", file=sys.stderr, flush=True)
            preds = args.work / f"peer{number}"
            speed = run_peer(label, extract, pages, preds)
            results.append((label, *score_both(preds, args, f"peer{number}"), speed))
    print_table([(label, full, speed) for label, full, _, speed in results], "all dev pages")
    if args.heldout_ids:
        print_table([(label, held, speed) for label, _, held, speed in results],
                    f"held-out pages only ({args.heldout_ids.name}: never seen by the block classifier's fit)")


if __name__ == "__main__":
    main()
