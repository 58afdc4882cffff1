"""``warcplex sweep``: re-filter a finished run's scored sentences at other thresholds.

Nothing is re-extracted or re-scored: the run's sentence side output (``output.sentences``)
already holds every sentence with its perplexity. For each threshold the kept text of the
same pages is counted and indexed with tantivy, giving seed 002's Table 2 (index size
against threshold). The sentences kept at threshold T are those the run's rule keeps
(:func:`pipeline.perplexity_rule.kept_mask`: unscored ones, those shorter than
``perplexity.min_tokens``, and those whose unit passes T). The cascade's fallback decisions are the run's: a page keeps the
extraction the run chose.
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from pipeline.config import PerplexitySettings, S3Settings
from pipeline.analysis.index_stats import ScoredPage, index_size, load_scored_pages
from pipeline.perplexity_rule import judgement, kept_mask
from pipeline.writing.output import OutputTarget
from pipeline.spark.runner import dump_json
from pipeline.user_errors import print_error


def _row(label: str, pages: list[ScoredPage], masks: list[list[bool]] | None,
         raw_index_bytes: int | None) -> dict[str, Any]:
    texts = [page.text() for page in pages] if masks is None else \
        [_kept_text(page, mask) for page, mask in zip(pages, masks)]
    total = sum(len(page.sentences) for page in pages)
    kept = total if masks is None else sum(sum(mask) for mask in masks)
    stats = index_size(texts)
    return {
        "threshold": label,
        "pages_non_empty": sum(1 for t in texts if t),
        "sentences_kept": kept,
        "sentences_share": kept / total if total else None,
        **stats,
        "index_share": stats["index_bytes"] / raw_index_bytes if raw_index_bytes else 1.0,
    }


def _kept_text(page: ScoredPage, mask: list[bool]) -> str:
    kept = {id(s) for s, keep in zip(page.sentences, mask) if keep}
    return page.text(lambda s: id(s) in kept)


def sweep(pages: list[ScoredPage], thresholds: list[float], settings: PerplexitySettings) -> list[dict[str, Any]]:
    """One row per threshold under the rule of ``settings``, framed by the unfiltered text (``raw``)
    and the run's own decisions (``run``)."""
    raw = _row("raw", pages, None, None)
    rows = [raw]
    judged = [judgement(page.sentences, settings) for page in pages]  # once per page, for every threshold
    for threshold in thresholds:
        masks = [kept_mask(page.sentences, threshold, settings, judged=j) for page, j in zip(pages, judged)]
        rows.append(_row(f"{threshold:g}", pages, masks, raw["index_bytes"]))
    rows.append(_row("run", pages, [[s.kept for s in page.sentences] for page in pages], raw["index_bytes"]))
    return rows


def format_table(rows: list[dict[str, Any]]) -> str:
    """The sweep as a Markdown table (the form of seed 002's Table 2)."""
    header = ("| threshold | pages | sentences kept | text MB | tokens | vocabulary | postings | index MB | index % |\n"
              "|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    lines = [header]
    for r in rows:
        share = f"{100 * r['sentences_share']:.1f}%" if r["sentences_share"] is not None else "-"
        lines.append(f"| {r['threshold']} | {r['pages_non_empty']} | {r['sentences_kept']} ({share}) "
                     f"| {r['bytes_text'] / 1e6:.2f} | {r['tokens']} | {r['vocabulary']} | {r['postings']} "
                     f"| {r['index_bytes'] / 1e6:.2f} | {100 * r['index_share']:.1f}% |")
    return "\n".join(lines)


def parse_thresholds(text: str) -> list[float]:
    try:
        values = [float(v) for v in text.split(",") if v.strip()]
    except ValueError:
        raise ValueError(f"--thresholds {text!r}: expected comma-separated numbers, e.g. 500,1000,2000") from None
    if not values or any(v <= 0 for v in values):
        raise ValueError(f"--thresholds {text!r}: expected positive numbers, e.g. 500,1000,2000")
    return sorted(set(values))


def add_parser(commands) -> None:
    parser = commands.add_parser("sweep", help="re-filter a run's scored sentences at other thresholds and index each",
                                 description=__doc__.split("\n\n")[0])
    parser.add_argument("--output", required=True, help="output directory of a finished `warcplex run`")
    parser.add_argument("--thresholds", required=True, help="comma-separated perplexity thresholds, e.g. 500,1000,2000")
    parser.add_argument("--sentences", help="sentence side output (default: the run's output.sentences)")
    parser.add_argument("--languages", help="comma-separated languages to include (default: all)")
    parser.add_argument("--sample-pages", type=int, default=0, help="a deterministic sample of pages (default: all)")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    try:
        thresholds = parse_thresholds(args.thresholds)
        target = OutputTarget(args.output, S3Settings())
        raw_stats = target.read_bytes("stats.json")
        if raw_stats is None:
            raise ValueError(f"{args.output}/stats.json not found (is it the output of `warcplex run`?)")
        config = json.loads(raw_stats)["run"]["config"]
        s3 = S3Settings.model_validate(config["s3"])
        sentences = args.sentences or config["output"].get("sentences")
        if not sentences:
            raise ValueError("the run wrote no sentence scores: rerun with --sentences DIR "
                             "(or --set output.sentences=DIR), or pass --sentences")
        languages = [v.strip() for v in args.languages.split(",")] if args.languages else None
        pages = load_scored_pages(sentences, s3, args.sample_pages, languages)
        if not pages:
            raise ValueError(f"no scored pages under {sentences}")
    except ValueError as exc:
        return print_error(str(exc))
    rule = PerplexitySettings.model_validate(config["perplexity"])
    rows = sweep(pages, thresholds, rule)
    result = {"pages": len(pages), "sentences": sentences, "languages": languages, "engine": "tantivy",
              "min_tokens": rule.min_tokens, "unit": rule.unit, "rule": rule.rule,
              "window_tokens": rule.window_tokens, "rows": rows}
    target.write_bytes("sweep.json", dump_json(result).encode("utf-8"))
    print(f"{len(pages)} pages from {sentences}")
    print(format_table(rows))
    print(f"written: {args.output}/sweep.json (`warcplex report {args.output}` adds it to report.html)")
    return 0
