#!/usr/bin/env python3
"""Throughput benchmark: the physical floor, warcplex in local Spark, and a peer-style pipeline.

    python scripts/bench.py [--warc ../shared/bench/warc/bench-dev.warc.gz] [--peer-sample 500]

Prints pages/s and MB/s (compressed WARC bytes) on the same input for:
  1. the floor: FastWARC decompress+parse only; then plus resiliparse extraction in plain
     Python, on 1 core and on all cores (multiprocessing over gzip-member byte ranges);
  2. warcplex, full pipeline (extraction cascade, LID, sentences, KenLM filter, Parquet),
     local Spark on all cores with the default config; wall time includes Spark start-up;
     plus peak RSS per Python worker; 2b the same with only the primary resiliparse path;
  3. a peer-style pipeline like datatrove's FineWeb recipe: trafilatura extraction, fastText
     LID, KenLM scoring of every sentence, on a sample of pages on one core, extrapolated to
     the whole file and to all cores assuming perfect scaling (generous to the peer).
A benchmark, not a test: it asserts nothing and only prints figures.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import sys
import tempfile
import time
from multiprocessing import Pool
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")

from fastwarc.warc import ArchiveIterator, WarcRecordType  # noqa: E402  (after SPARK_LOCAL_IP)

from warcplex.config import InputSettings, load_settings  # noqa: E402
from warcplex.reading.warc import plan_splits  # noqa: E402

DEFAULT_WARC = ROOT.parent / "shared" / "bench" / "warc" / "bench-dev.warc.gz"
CORES = os.cpu_count() or 1


def html_payloads(path: str, start: int = 0, end: int | None = None):
    """(payload, http charset) of every HTML response in ``[start, end)`` of a gzipped WARC."""
    with open(path, "rb") as fh:
        fh.seek(start)
        for record in ArchiveIterator(fh, record_types=WarcRecordType.response, parse_http=True):
            pos = record.stream_pos + (start if record.stream_pos < start else 0)
            if end is not None and pos >= end:
                return
            content_type = (record.http_content_type or "").lower()
            if "html" in content_type:
                yield record.reader.read(), record.http_charset


def parse_only(path: str, start: int = 0, end: int | None = None) -> int:
    return sum(1 for _ in html_payloads(path, start, end))


def parse_and_extract(path: str, start: int = 0, end: int | None = None) -> int:
    from resiliparse.extract.html2text import extract_plain_text
    from resiliparse.parse.encoding import bytes_to_str, detect_encoding
    from resiliparse.parse.html import HTMLTree

    pages = 0
    for payload, charset in html_payloads(path, start, end):
        html = bytes_to_str(payload, detect_encoding(payload), fallback_encodings=[charset or "utf-8", "cp1252"])
        extract_plain_text(HTMLTree.parse(html), preserve_formatting=True, main_content=True)
        pages += 1
    return pages


def _range_task(args: tuple[str, str, int, int | None]) -> int:
    fn, path, start, end = args
    return {"parse": parse_only, "extract": parse_and_extract}[fn](path, start, end)


def all_cores(fn: str, path: str) -> int:
    splits = plan_splits(path, InputSettings(min_split_bytes=1 << 20), CORES)
    with Pool(CORES) as pool:
        return sum(pool.map(_range_task, [(fn, path, s.start, s.end) for s in splits]))


SENTENCE_END = re.compile(r"(?<=[.!?。！？])\s+")


def peer_pipeline(path: str, sample: int) -> tuple[int, int]:
    """trafilatura -> fastText LID -> KenLM per sentence on the first ``sample`` pages."""
    import trafilatura

    from warcplex import models
    from warcplex.registry import load_registry
    from warcplex.steps.normalize import lm_tokens

    lid = models.fasttext_model(models.default_lid_model_path())
    registry = load_registry("conf/models.yaml")
    lm = models.kenlm_model(registry["en"].path)
    pages = sentences = 0
    for payload, _ in html_payloads(path):
        if pages >= sample:
            break
        pages += 1
        text = trafilatura.extract(payload, include_comments=False) or ""
        if not text:
            continue
        lid.predict(" ".join(text[:2000].split()), k=1)
        for line in text.split("\n"):
            for sentence in SENTENCE_END.split(line.strip()):
                if sentence:
                    lm.score(" ".join(lm_tokens(sentence)), bos=True, eos=True)
                    sentences += 1
    return pages, sentences


def warcplex_run(path: str, overrides: tuple[str, ...] = ()) -> tuple[int, float, dict]:
    from warcplex.cli import main as cli_main

    with tempfile.TemporaryDirectory(prefix="warcplex-bench-") as tmp:
        out = os.path.join(tmp, "out")
        started = time.perf_counter()
        status = cli_main(["run", "--input", path, "--output", out, *(a for o in overrides for a in ("--set", o))])
        wall = time.perf_counter() - started
        if status != 0:
            raise SystemExit(f"bench: warcplex run failed with status {status}")
        with open(os.path.join(out, "stats.json"), encoding="utf-8") as fh:
            stats = json.load(fh)
    return stats["records"]["html"], wall, stats


def cpu_seconds() -> float:
    """CPU seconds of this process and its reaped children (the multiprocessing workers)."""
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def timed(fn, *args):
    started, cpu = time.perf_counter(), cpu_seconds()
    result = fn(*args)
    return result, time.perf_counter() - started, cpu_seconds() - cpu


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--warc", default=str(DEFAULT_WARC))
    parser.add_argument("--peer-sample", type=int, default=500, help="pages the peer pipeline runs on")
    args = parser.parse_args(argv)
    if not os.path.exists(args.warc):
        print(f"bench: error: {args.warc} not found", file=sys.stderr)
        return 2
    os.chdir(ROOT)
    load_settings()  # fail early on a broken default config
    mb = os.path.getsize(args.warc) / 1e6

    def row(name: str, pages: int, seconds: float, cpu: float, note: str = "") -> tuple[float, float]:
        print(f"  {name:<46} {pages:>5} pages {seconds:6.1f} s {pages / seconds:7.1f} pages/s "
              f"{mb * pages / total_pages / seconds:6.2f} MB/s {pages / cpu:7.1f} pages/CPU-s {note}", flush=True)
        return pages / seconds, pages / cpu

    print(f"bench: {args.warc} ({mb:.1f} MB compressed), {CORES} cores")
    total_pages, seconds, cpu = timed(parse_only, args.warc)
    row("1a floor: FastWARC parse, 1 core", total_pages, seconds, cpu)
    pages, seconds, cpu = timed(all_cores, "parse", args.warc)
    row(f"1b floor: FastWARC parse, {CORES} cores", pages, seconds, cpu)
    pages, seconds, cpu = timed(parse_and_extract, args.warc)
    row("1c floor: parse + resiliparse, 1 core", pages, seconds, cpu)
    pages, seconds, cpu = timed(all_cores, "extract", args.warc)
    floor = row(f"1d floor: parse + resiliparse, {CORES} cores", pages, seconds, cpu)

    # Repeated lines and near dedup are off by default; on here so that every corpus stage's cost is printed.
    pages, wall, stats = warcplex_run(args.warc, ("corpus.dedup.near=true", "corpus.repeated_lines.enabled=true"))
    corpus_wall = stats.get("corpus", {}).get("wall_seconds", 0.0)
    warcplex = row(f"2  warcplex full pipeline, local[*], {CORES} cores", pages, wall - corpus_wall,
                   stats["cpu"]["total"], f"(wall incl. Spark start, excl. the corpus stages; CPU = Python workers; "
                   f"{stats['run']['splits']} splits)")
    rss = stats.get("rss", {}).get("max_mb", {})
    pages, wall, primary_stats = warcplex_run(args.warc, ("extract.cascade=[resiliparse,conservative]",
                                                          "corpus.enabled=false"))
    primary = row(f"2b warcplex primary path [resiliparse], {CORES} cores", pages, wall,
                  primary_stats["cpu"]["total"], "(--set extract.cascade=[resiliparse,conservative])")

    (peer_pages, sentences), seconds, cpu = timed(peer_pipeline, args.warc, args.peer_sample)
    scale = total_pages / peer_pages
    peer = row(f"3  peer: trafilatura+fastText+KenLM, {CORES} cores*", total_pages, seconds * scale / CORES,
               cpu * scale, f"(*extrapolated from {peer_pages} pages on 1 core in {seconds:.1f} s, "
               f"perfect scaling; {sentences} sentences scored)")

    print()
    for label, (a, b), target in (("2/1 (warcplex / floor parse+resiliparse, all cores)", (warcplex, floor), 0.5),
                                  ("2/3 (warcplex / peer-style pipeline, all cores)", (warcplex, peer), 5),
                                  ("2b/1 (primary path / floor)", (primary, floor), 0.5),
                                  ("2b/3 (primary path / peer-style pipeline)", (primary, peer), 5)):
        print(f"  ratio {label}: {a[0] / b[0]:.2f}x wall, {a[1] / b[1]:.2f}x per CPU-second  (target >= {target})")
    print(f"  load average during the run: {os.getloadavg()[0]:.1f} on {CORES} cores (shared machines skew wall time)")
    if rss:
        print(f"  peak RSS per Python worker (MiB, ru_maxrss incl. mmapped model pages touched): "
              + ", ".join(f"{pid}={mb_:.0f}" for pid, mb_ in sorted(rss.items())) + "  (target < 1024 + models)")
    cpu = stats.get("cpu", {})
    print("  warcplex CPU seconds by stage: "
          + ", ".join(f"{k} {v:.1f}" for k, v in sorted(cpu.items(), key=lambda kv: -kv[1])))
    corpus = stats.get("corpus", {})
    if corpus.get("stages"):
        print(f"  corpus stages after run 2 (Spark wall time, local[*], {corpus['documents_in']} documents; "
              f"{corpus['wall_seconds']:.1f} s in all incl. the input read and the final write):")
        for name in corpus["order"]:
            stage = corpus["stages"][name]
            print(f"    {name:<15} {stage['wall_seconds']:6.1f} s  {1000 * stage['wall_seconds'] / max(1, stage['documents_in']):6.2f} ms/page")
    return 0


if __name__ == "__main__":
    sys.exit(main())
