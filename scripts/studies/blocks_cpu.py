#!/usr/bin/env python3
"""CPU seconds of the block stage by part, in process (no Spark): README's "Compiled block stage" table.

Runs :class:`~pipeline.steps.blocks.extractor.BlocksExtractor` over the first ``--pages`` HTML responses
of a WARC (decoded as the pipeline decodes them) after a warm-up on the next ``--warmup`` pages (model
loads), and charges ``time.process_time`` to the part each call belongs to by wrapping the names the
stage calls: the parse, resiliparse's main-content pass (with its depth guard), fastText page LID,
KenLM scoring of the blocks, the features, the two-stage inference, the page type's signals and the
structure rules; ``other`` is the rest of ``extract``. ``--profile`` prints cProfile's top functions by own time instead.

usage: python scripts/studies/blocks_cpu.py [--warc ../shared/bench/warc/bench-dev.warc.gz] [--pages 600] [--warmup 20] [--profile]
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import time
from collections import defaultdict
from pathlib import Path

from pipeline.config import load_settings
from pipeline.reading.decode import decode_html
from pipeline.reading.reader import read_pages
from pipeline.reading.shards import Split
from pipeline.stats import Stats
from pipeline.steps.blocks import model as block_model_module
from pipeline.steps.blocks import extractor as step
from pipeline.steps.extractors import PageTooDeep, ResiliparseExtractor

ROOT = Path(__file__).resolve().parents[2]
PARTS = (("parse", step, "parse_page"),
         ("resiliparse main content", ResiliparseExtractor, "plain_text"),
         ("resiliparse main content", ResiliparseExtractor, "check_depth"),
         ("page language (fastText)", step, "page_language"),
         ("KenLM scoring of the blocks", step, "block_perplexities"),
         ("features", step, "featurize"),
         ("tree inference (both stages)", block_model_module.BlockModel, "scores"),
         ("page type", step, "page_signals"),
         ("structure rules", step, "revise"))


def html_pages(path: str, limit: int) -> list[str]:
    """Decoded HTML of the first ``limit`` HTML responses of the WARC at ``path``."""
    settings = load_settings(None, [])
    pages: list[str] = []
    for page in read_pages(Split(path, 0, 1), settings.input, settings.s3, Stats()):
        if page.kind == "html":
            pages.append(decode_html(page.html, page.http_charset))
            if len(pages) >= limit:
                break
    return pages


def timed(cpu: dict[str, float], part: str, function):
    """``function`` charging its CPU seconds to ``cpu[part]`` (outermost call only)."""
    def wrapper(*args, **kwargs):
        start = time.process_time()
        try:
            return function(*args, **kwargs)
        finally:
            cpu[part] += time.process_time() - start
    return wrapper


def run(stage: step.BlocksExtractor, pages: list[str]) -> int:
    """Extract every page; returns the pages the stage finished (not too deep)."""
    done = 0
    for html in pages:
        try:
            stage.extract(html)
            done += 1
        except PageTooDeep:
            pass
    return done


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--warc", default=str(ROOT.parent / "shared" / "bench" / "warc" / "bench-dev.warc.gz"))
    parser.add_argument("--pages", type=int, default=600)
    parser.add_argument("--warmup", type=int, default=20)
    parser.add_argument("--profile", action="store_true", help="cProfile's top 30 functions by own time")
    args = parser.parse_args()
    pages = html_pages(args.warc, args.pages + args.warmup)
    measured, warmup = pages[:args.pages], pages[args.pages:]
    settings = load_settings(None, [])
    stage = step.BlocksExtractor(settings.extract, settings.langid)
    run(stage, warmup)
    if args.profile:
        profile = cProfile.Profile()
        profile.runcall(run, stage, measured)
        pstats.Stats(profile).sort_stats("tottime").print_stats(30)
        return
    cpu: dict[str, float] = defaultdict(float)
    for part, owner, name in PARTS:
        setattr(owner, name, timed(cpu, part, getattr(owner, name)))
    start = time.process_time()
    done = run(stage, measured)
    total = time.process_time() - start
    print(f"{done} of {len(measured)} pages ({args.warc}); CPU seconds by part:")
    for part in dict.fromkeys(p for p, _, _ in PARTS):
        print(f"  {part:32s} {cpu[part]:6.2f}")
    print(f"  {'other':32s} {total - sum(cpu.values()):6.2f}")
    print(f"  {'total':32s} {total:6.2f}  ({1000 * total / len(measured):.2f} ms a page)")


if __name__ == "__main__":
    main()
