#!/usr/bin/env python3
"""The perplexity filter's unit and rule study (issue 12, item 3) on tag-stripped all-text pages.

Every full-text page of a bench dev set (default ``../shared/bench/data``) goes through the
pipeline's own stages: the all-text extraction (``conservative``: resiliparse without main-content
heuristics), language ID, sentence splitting and KenLM scoring of every sentence. Each rule of
:func:`pipeline.perplexity_rule.rule_mask` then decides which sentences are kept, and the page is
scored against its truth with ROUGE-5 F1 and bag-of-words precision/recall (the bench scorer's tokens). Rows are
the best threshold of each rule on the fitting pages (not held out by
:func:`benchpages.is_heldout`), with the same threshold's figures on the held-out
pages, plus the corpus view: boilerplate tokens removed and main-content tokens kept (a token is
main when its sentence's word trigrams are mostly in the truth, as ``warcplex calibrate`` labels).
The scored pages are cached (``--cache``); the rules run on the cache.

usage: PYTHONPATH=scripts python scripts/studies/filter_study.py [--bench ../shared/bench] [--data data] [--cache build/filter_study.v2.pkl]
                                                                 [--grid 1000,2000,...] [--rules 0 1 ...]
"""

from __future__ import annotations

import argparse
import math
import multiprocessing
import pickle
import sys
from collections import Counter
from pathlib import Path

from pipeline.analysis.calibrate import score_tokens, sentence_labeller
from pipeline.config import load_settings
from pipeline.model_cache import kenlm_model
from pipeline.reading.decode import decode_html
from pipeline.model_registry import load_registry
from pipeline.steps.extractors import build_extractor
from pipeline.steps.langid import LanguageIdentifier
from pipeline.perplexity_rule import Unit, perplexity, rule_mask
from pipeline.steps.sentences import split

from benchpages import BENCH, is_heldout, manifest, page_bytes, page_path, truth_path  # scripts/: run with PYTHONPATH=scripts

ROOT = Path(__file__).resolve().parents[2]


class _Scorer:
    def __init__(self) -> None:
        settings = load_settings(None, [])
        self.extractor = build_extractor("conservative", settings)
        self.langid = LanguageIdentifier(settings.langid)
        self.registry = load_registry(settings.perplexity.registry)

    def __call__(self, item: tuple[str, str, str, str]) -> dict:
        page_id, dataset, html_path, truth_path = item
        truth = Path(truth_path).read_text(encoding="utf-8", errors="replace")
        text = self.extractor.extract(decode_html(page_bytes(html_path)))
        language = self.langid.identify(text or truth).code
        model = kenlm_model(self.registry[language].path) if language in self.registry else None
        lines = [[(s, *(perplexity(model, s) if model else (None, len(s.split())))) for s in para]
                 for para in split(text, language)]
        return {"id": page_id, "dataset": dataset, "language": language, "truth": truth, "lines": lines}


def build_cache(bench: Path, data: str, processes: int) -> list[dict]:
    items = [(row["id"], row["dataset"], str(page_path(bench, data, row)), str(truth_path(bench, data, row)))
             for row in manifest(bench, data) if row.get("truth_type") == "fulltext"]
    with multiprocessing.get_context("fork").Pool(processes) as pool:
        return list(pool.imap(_Scorer(), items, chunksize=8))


def prepare(pages: list[dict]) -> None:
    """Per page: its sentences as the rule's units, their bench tokens and main/boilerplate labels, the truth's n-grams."""
    for page in pages:
        truth = score_tokens(page["truth"])
        page["truth5"] = Counter(tuple(truth[i:i + 5]) for i in range(len(truth) - 4))
        page["truth1"] = Counter(truth)
        label = sentence_labeller(page["truth"])
        sentences = [(i, s, ppl, n) for i, sents in enumerate(page["lines"]) for s, ppl, n in sents]
        page["units"] = [Unit(ppl, n, i) for i, _, ppl, n in sentences]
        page["tokens"] = [score_tokens(s) for _, s, _, _ in sentences]
        page["main"] = [label(s) for _, s, _, _ in sentences]


def _f(overlap: int, n_pred: int, n_truth: int) -> tuple[float, float, float]:
    p = overlap / n_pred if n_pred else 0.0
    r = overlap / n_truth if n_truth else 0.0
    return p, r, (2 * p * r / (p + r) if p + r else 0.0)


def evaluate(pages: list[dict], rule: Rule, threshold: float) -> dict:
    """Mean ROUGE-5 F1 and bag-of-words P/R over ``pages`` (as the bench scorer), and the token effect."""
    sums = Counter()
    for page in pages:
        mask = rule_mask(page["units"], threshold, *rule)
        pred = [tok for keep, toks in zip(mask, page["tokens"]) if keep for tok in toks]
        n_t5, n_t1 = sum(page["truth5"].values()), sum(page["truth1"].values())
        if not pred and not n_t1:
            f5 = p1 = r1 = 1.0
        else:
            p5 = Counter(tuple(pred[i:i + 5]) for i in range(len(pred) - 4))
            f5 = _f(sum((p5 & page["truth5"]).values()), sum(p5.values()), n_t5)[2]
            p1, r1, _ = _f(sum((Counter(pred) & page["truth1"]).values()), len(pred), n_t1)
        sums["f5"] += f5
        sums["p1"] += p1
        sums["r1"] += r1
        for keep, toks, main in zip(mask, page["tokens"], page["main"]):
            sums["main" if main else "boiler"] += len(toks)
            sums["main_kept" if main else "boiler_removed"] += len(toks) * (keep if main else not keep)
    n = len(pages) or 1
    return {"rouge5_f1": sums["f5"] / n, "bow_p": sums["p1"] / n, "bow_r": sums["r1"] / n,
            "boilerplate_removed": sums["boiler_removed"] / max(sums["boiler"], 1),
            "main_kept": sums["main_kept"] / max(sums["main"], 1)}


Rule = tuple[str, str]  # unit, rule (rule_mask's arguments; window and short tokens at their defaults)
RULES: list[Rule] = [(unit, rule) for rule in ("fixed", "length", "window", "context") for unit in ("sentence", "line")]
GRID = "1000,2000,3000,4000,5500,7500,10000,20000"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--bench", default=str(BENCH))
    parser.add_argument("--data", default="data")
    parser.add_argument("--cache", default=str(ROOT / "build" / "filter_study.v2.pkl"))
    parser.add_argument("--processes", type=int, default=2)
    parser.add_argument("--grid", default=GRID, type=lambda v: [float(x) for x in v.split(",")],
                        help=f"thresholds tried per rule (default {GRID})")
    parser.add_argument("--rules", type=int, nargs="*", help="indexes into RULES (default: all)")
    parser.add_argument("--language", default="en", help="pages of this language (the models are per language)")
    args = parser.parse_args(argv)
    cache = Path(args.cache)
    if cache.exists():
        pages = pickle.loads(cache.read_bytes())
    else:
        if not (Path(args.bench) / args.data / "manifest.jsonl").exists():
            print(f"filter_study: error: {args.bench}/{args.data}/manifest.jsonl not found", file=sys.stderr)
            return 2
        pages = build_cache(Path(args.bench), args.data, args.processes)
        cache.parent.mkdir(parents=True, exist_ok=True)
        cache.write_bytes(pickle.dumps(pages))
    pages = [p for p in pages if p["language"] == args.language]
    prepare(pages)
    fit = [p for p in pages if not is_heldout(p["id"])]
    held = [p for p in pages if is_heldout(p["id"])]
    print(f"{args.data}, {args.language}: {len(fit)} fitting pages, {len(held)} held-out pages (all-text extraction)")
    print("| unit | rule | best threshold | ROUGE-5 F1 | BoW P | BoW R | boilerplate removed "
          "| main kept | held-out ROUGE-5 F1 |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|")
    none = evaluate(fit, ("sentence", "fixed"), math.inf)
    print(f"| - | no filter | - | {none['rouge5_f1']:.3f} | {none['bow_p']:.3f} | {none['bow_r']:.3f} "
          f"| 0 | 1 | {evaluate(held, ('sentence', 'fixed'), math.inf)['rouge5_f1']:.3f} |")
    for rule in [RULES[i] for i in args.rules] if args.rules else RULES:
        results = [(t, evaluate(fit, rule, t)) for t in args.grid]
        best_t, best = max(results, key=lambda r: r[1]["rouge5_f1"])
        heldout = evaluate(held, rule, best_t)
        print(f"| {rule[0]} | {rule[1]} | {best_t:g} | {best['rouge5_f1']:.3f} | {best['bow_p']:.3f} "
              f"| {best['bow_r']:.3f} | {best['boilerplate_removed']:.3f} | {best['main_kept']:.3f} "
              f"| {heldout['rouge5_f1']:.3f} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
