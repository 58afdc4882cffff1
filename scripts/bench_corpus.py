#!/usr/bin/env python3
"""What repeated-line removal (the corpus stage) does to extraction quality and boilerplate.

For each input set, one real ``warcplex run`` (local Spark, default cascade) with the corpus
stages on and document dedup off (so that "after" loses lines, never whole pages), then each
variant of the line thresholds on the same output (the per-split work resumes from its markers,
only the corpus stage runs again). "Before" is ``data/``, "after" is ``corpus/``.

- bench dev (``data/``, bench-dev.warc.gz) and the modern-web set (``data-wcxb/``, packed with the
  bench's make_warc.py into --work): ROUGE-5 F1 before/after with the bench's score.py, on all
  full-text pages and on the multi-page sites (pages whose real host has 2+ pages in the set;
  the bench's synthetic ``*.bench.invalid`` addresses are rewritten to one host per page, as
  they are not one site). Lines are labelled main when at least half of their word trigrams
  (all words, under 3 words) occur in the page's truth, else boilerplate; the script prints the
  share of boilerplate bytes removed and the share of removed bytes that were boilerplate.
- a multi-page-per-site sample without truth (the genuine CC WARC and the ClueWeb09 site):
  lines and bytes removed, and the most repeated removed lines to read.

usage: scripts/bench_corpus.py [--bench ../shared/bench] [--work out/bench-corpus] [--sets dev,wcxb,sites]
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path
from urllib.parse import urlsplit

from benchpages import BENCH, manifest, truth_path

ROOT = Path(__file__).resolve().parent.parent

# (label, --set overrides) of the repeated-line thresholds measured; the first is the default.
VARIANTS = [
    ("default (domain > 3, corpus > 20)", []),
]
BASE = ["index.enabled=false", "corpus.repeated_lines.enabled=true", "corpus.dedup.exact=false",
        "corpus.dedup.near=false", "corpus.quality.signals=false"]
WORD = re.compile(r"\w+")


def rewrite_synthetic_hosts(src: Path, index: Path, dst: Path, dst_index: Path) -> None:
    """Copy a bench WARC, giving every synthetic ``*.bench.invalid`` page a host of its own."""
    from warcio.archiveiterator import ArchiveIterator
    from warcio.warcwriter import WARCWriter

    rows = list(csv.DictReader(open(index), delimiter="\t"))
    with open(src, "rb") as fh, open(dst, "wb") as out:
        writer = WARCWriter(out, gzip=True)
        for record in ArchiveIterator(fh):
            uri = record.rec_headers.get_header("WARC-Target-URI") or ""
            host = urlsplit(uri).hostname or ""
            if host.endswith(".bench.invalid"):
                page = uri.rstrip("/").rsplit("/", 1)[-1]
                record.rec_headers.replace_header("WARC-Target-URI", f"http://{host.split('.')[0]}-{page}.invalid/")
            writer.write_record(record)
    with open(dst_index, "w", newline="") as fh:
        out = csv.DictWriter(fh, fieldnames=list(rows[0]), delimiter="\t")
        out.writeheader()
        out.writerows(rows)


def run_warcplex(warc: Path, out: Path, overrides: list[str], config: str) -> dict:
    cmd = [str(ROOT / ".venv" / "bin" / "warcplex"), "run", "--input", str(warc), "--output", str(out),
           "--config", config]
    for item in BASE + overrides:
        cmd += ["--set", item]
    print(f"[bench-corpus] {' '.join(cmd[1:])}", file=sys.stderr, flush=True)
    env = dict(os.environ, SPARK_LOCAL_IP=os.environ.get("SPARK_LOCAL_IP", "127.0.0.1"))
    subprocess.run(cmd, check=True, cwd=ROOT, env=env, stdout=subprocess.DEVNULL)
    return json.loads((out / "stats.json").read_text())


def texts(folder: Path) -> dict[str, tuple[str, str]]:
    """warc_record_id -> (url, text) of a Parquet dataset folder."""
    import pyarrow.dataset as ds

    if not folder.exists():
        return {}
    table = ds.dataset(folder).to_table(columns=["warc_record_id", "url", "text"])
    return {rid: (url, text) for rid, url, text in zip(*(table.column(c).to_pylist()
                                                          for c in ("warc_record_id", "url", "text")))}


def write_preds(docs: dict[str, tuple[str, str]], by_record: dict[str, str], preds: Path) -> None:
    preds.mkdir(parents=True, exist_ok=True)
    for old in preds.glob("*.txt"):
        old.unlink()
    for rid, (_, text) in docs.items():
        if rid in by_record:
            (preds / f"{by_record[rid]}.txt").write_text(text or "", encoding="utf-8")


def rouge(bench: Path, data: Path, preds: Path, ids: Path, out_json: Path) -> float:
    subprocess.run([sys.executable, str(bench / "score.py"), "--pred", str(preds), "--data", str(data),
                    "--ids", str(ids), "--out-json", str(out_json), "--quiet"], check=True)
    return json.loads(out_json.read_text())["fulltext"].get("ALL(pages)", {}).get("rouge5_f", float("nan"))


def is_main(line: str, truth_words: set, truth_trigrams: set) -> bool:
    words = WORD.findall(line.lower())
    if not words:
        return False
    if len(words) < 3:
        return all(w in truth_words for w in words)
    grams = [tuple(words[i:i + 3]) for i in range(len(words) - 2)]
    return sum(g in truth_trigrams for g in grams) * 2 >= len(grams)


def boilerplate_figures(before: dict, after: dict, by_record: dict, truth_dir: dict) -> dict:
    """Bytes of boilerplate and main lines before, and how many of each the stage removed."""
    totals = Counter()
    for rid, (_, text) in before.items():
        bench_id = by_record.get(rid)
        truth = truth_dir.get(bench_id)
        if truth is None:
            continue
        words = WORD.findall(truth.lower())
        truth_words, truth_trigrams = set(words), {tuple(words[i:i + 3]) for i in range(len(words) - 2)}
        kept = Counter((after.get(rid) or ("", ""))[1].split("\n"))
        for line in text.split("\n"):
            kind = "main" if is_main(line, truth_words, truth_trigrams) else "boilerplate"
            size = len(line.encode("utf-8"))
            totals[f"{kind}_bytes"] += size
            if kept[line] > 0:
                kept[line] -= 1
            else:
                totals[f"{kind}_removed"] += size
    return totals


def truth_texts(data: Path) -> dict[str, str]:
    found = {}
    for row in manifest(data.parent, data.name):
        path = truth_path(data.parent, data.name, row)
        if row.get("truth_type", "fulltext") == "fulltext" and path.exists():
            found[row["id"]] = path.read_text(encoding="utf-8", errors="replace")
    return found


def multi_page_ids(data: Path) -> list[str]:
    hosts: dict[str, list[str]] = {}
    for row in manifest(data.parent, data.name):
        host = urlsplit(row.get("url") or "").hostname or ""
        if host and not host.endswith(".invalid") and row.get("truth_type", "fulltext") == "fulltext":
            hosts.setdefault(host.removeprefix("www."), []).append(row["id"])
    return sorted(i for ids in hosts.values() if len(ids) > 1 for i in ids)


def bench_set(name: str, data: Path, warc: Path, index: Path, args) -> None:
    work = args.work / name
    work.mkdir(parents=True, exist_ok=True)
    rewritten, rewritten_index = work / "input.warc.gz", work / "input.index.tsv"
    if not rewritten.exists():
        rewrite_synthetic_hosts(warc, index, rewritten, rewritten_index)
    by_record = {r["response_record_id"]: r["bench_id"] for r in csv.DictReader(open(rewritten_index), delimiter="\t")}
    truth = truth_texts(data)
    all_ids, multi = work / "fulltext.ids", work / "multi.ids"
    all_ids.write_text("\n".join(sorted(truth)) + "\n")
    multi_list = [i for i in multi_page_ids(data) if i in truth]
    multi.write_text("\n".join(multi_list) + "\n")
    out = work / "out"
    print(f"\n== {name}: {len(truth)} full-text pages, {len(multi_list)} on multi-page sites ==")
    print(f"{'variant':36s} {'lines rm':>8s} {'bytes rm':>8s} {'R5 all':>14s} {'R5 multi-page':>14s} "
          f"{'boilerpl. rm':>12s} {'rm = boilerpl.':>14s} {'s/page':>7s}")
    before_scores = None
    for label, overrides in VARIANTS:
        stats = run_warcplex(rewritten, out, overrides, args.config)
        stage = stats.get("corpus", {}).get("stages", {}).get("repeated_lines", {})
        before, after = texts(out / "data"), texts(out / "corpus")
        if before_scores is None:
            write_preds(before, by_record, work / "preds-before")
            before_scores = (rouge(args.bench, data, work / "preds-before", all_ids, work / "before.json"),
                             rouge(args.bench, data, work / "preds-before", multi, work / "before-multi.json"))
        write_preds(after, by_record, work / "preds-after")
        after_scores = (rouge(args.bench, data, work / "preds-after", all_ids, work / "after.json"),
                        rouge(args.bench, data, work / "preds-after", multi, work / "after-multi.json"))
        b = boilerplate_figures(before, after, by_record, truth)
        removed_bp = b["boilerplate_removed"] / b["boilerplate_bytes"] if b["boilerplate_bytes"] else 0
        removed = b["boilerplate_removed"] + b["main_removed"]
        precision = b["boilerplate_removed"] / removed if removed else float("nan")
        seconds = stage.get("wall_seconds", 0) / max(1, stage.get("documents_in", 1))
        share = stage.get("line_bytes_removed", 0) / max(1, stage.get("bytes_in", 1))
        print(f"{label:36s} {stage.get('lines_removed', 0):8d} {100 * share:7.2f}% "
              f"{before_scores[0]:6.3f}->{after_scores[0]:.3f} {before_scores[1]:6.3f}->{after_scores[1]:.3f} "
              f"{100 * removed_bp:11.1f}% {100 * precision:13.1f}% {seconds:7.4f}", flush=True)


def sites(args) -> None:
    """The multi-page-per-site sample without truth: what is removed, to read."""
    import pyarrow.dataset as ds

    warcs = [args.bench / "warc" / "cc-genuine" / "CC-MAIN-2020-34.sample-from-resiliparse-tests.warc.gz",
             args.bench / "warc" / "other-real" / "clueweb09-ja.quirk.from-resiliparse-tests.warc.gz"]
    out = args.work / "sites" / "out"
    print("\n== multi-page sites without truth (CC-MAIN-2020-34 sample, ClueWeb09 site) ==")
    for label, overrides in VARIANTS:
        cmd = [str(ROOT / ".venv" / "bin" / "warcplex"), "run", "--input", *map(str, warcs), "--output", str(out),
               "--config", args.config]
        for item in BASE + overrides:
            cmd += ["--set", item]
        subprocess.run(cmd, check=True, cwd=ROOT, stdout=subprocess.DEVNULL)
        stage = json.loads((out / "stats.json").read_text())["corpus"]["stages"]["repeated_lines"]
        print(f"{label:36s} documents {stage['documents_in']}, lines removed {stage['lines_removed']}, "
              f"bytes {stage['bytes_in']} -> {stage['bytes_out']} "
              f"({100 * (1 - stage['bytes_out'] / max(1, stage['bytes_in'])):.1f}% removed)")
        if label == VARIANTS[0][0] and (out / "corpus_dropped" / "lines").exists():
            lines = ds.dataset(out / "corpus_dropped" / "lines").to_table().to_pylist()
            common = Counter((r["registered_domain"], r["line"][:70]) for r in lines).most_common(8)
            for (domain, line), count in common:
                print(f"    {count:3d}x {domain}: {line!r}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--bench", type=Path, default=BENCH)
    parser.add_argument("--work", type=Path, default=ROOT / "out" / "bench-corpus")
    parser.add_argument("--config", default="conf/local.yaml")
    parser.add_argument("--sets", default="dev,wcxb,sites")
    args = parser.parse_args()
    if not (args.bench / "score.py").exists():
        sys.exit(f"bench_corpus: {args.bench} has no score.py (need ../shared/bench)")
    wanted = args.sets.split(",")
    if "dev" in wanted:
        bench_set("dev", args.bench / "data", args.bench / "warc" / "bench-dev.warc.gz",
                  args.bench / "warc" / "bench-dev.index.tsv", args)
    if "wcxb" in wanted:
        warc = args.work / "bench-wcxb.warc.gz"
        if not warc.exists():
            args.work.mkdir(parents=True, exist_ok=True)
            subprocess.run([sys.executable, str(args.bench / "make_warc.py"), "--data", "data-wcxb",
                            "--out", str(warc.resolve())], check=True, cwd=args.bench, stdout=subprocess.DEVNULL)
        bench_set("wcxb", args.bench / "data-wcxb", warc, warc.with_name("bench-wcxb.index.tsv"), args)
    if "sites" in wanted:
        sites(args)


if __name__ == "__main__":
    main()
