"""``warcplex calibrate``: per-language perplexity thresholds from pages with ground-truth main text.

Input is a folder in the layout of ``../shared/bench/data``: ``<dataset>/pages/<id>.html.gz``,
``<dataset>/truth/<id>.txt`` and ``manifest.jsonl``. Each page is extracted and split with
the pipeline's own stages; each sentence is scored with its language's model and labelled
*main* when most of its word trigrams occur in the truth, else *boilerplate*. The threshold
chosen per language maximises the mean ROUGE-5 F1 of the filtered page against the truth
(or, with ``--target-precision``, is the highest threshold whose kept sentences reach that
share of main sentences). Percentiles of the sentence perplexities (cc_net-style thresholds)
are written too. ``--write`` stores both in the model registry; a PNG shows the two
distributions and the chosen threshold.
"""

from __future__ import annotations

import argparse
import gzip
import json
import math
import multiprocessing
import sys
from collections import Counter, defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable

import yaml

from pipeline.config import ExtractSettings, LangIdSettings, resolve_path
from pipeline.models import kenlm_model, load_registry
from pipeline.stages import (LanguageIdentifier, ResiliparseExtractor, SentenceSplitter, decode_html, perplexity)

PERCENTILES = (10, 25, 50, 60, 70, 75, 80, 90, 95, 99)
ROUGE_N = 5


@dataclass
class PageSentences:
    page_id: str
    language: str
    truth: str
    sentences: list[tuple[str, float | None, bool]]  # text, perplexity (None: unscored), is_main


def _tokens(text: str) -> list[str]:
    return text.lower().split()


def _shingles(tokens: list[str], n: int) -> set[tuple[str, ...]]:
    return {tuple(tokens[i:i + n]) for i in range(len(tokens) - n + 1)}


def is_main_sentence(sentence: str, truth_shingles: dict[int, set], truth_tokens: set[str]) -> bool:
    """A sentence is main content when at least half of its word trigrams (or shorter n-grams) are in the truth."""
    tokens = _tokens(sentence)
    if not tokens:
        return False
    n = min(3, len(tokens))
    grams = _shingles(tokens, n)
    if n == 1:
        return tokens[0] in truth_tokens
    return sum(g in truth_shingles[n] for g in grams) / len(grams) >= 0.5


def rouge_n_f1(pred: list[str], truth: list[str], n: int = ROUGE_N) -> float:
    """ROUGE-N F1 with clipped n-gram counts, as ../shared/bench/score.py computes it."""
    if not pred and not truth:
        return 1.0
    if not pred or not truth:
        return 0.0
    p = Counter(tuple(pred[i:i + n]) for i in range(len(pred) - n + 1))
    t = Counter(tuple(truth[i:i + n]) for i in range(len(truth) - n + 1))
    overlap = sum((p & t).values())
    n_p, n_t = sum(p.values()), sum(t.values())
    if not n_p or not n_t or not overlap:
        return 0.0
    precision, recall = overlap / n_p, overlap / n_t
    return 2 * precision * recall / (precision + recall)


class _Worker:
    """Extracts, splits and scores one page (runs in a multiprocessing pool)."""

    def __init__(self, registry: str, main_content: bool) -> None:
        self.registry = registry
        self.extractor = ResiliparseExtractor(ExtractSettings(main_content=main_content))
        self.langid = LanguageIdentifier(LangIdSettings())
        self.splitter = SentenceSplitter()

    def __call__(self, item: tuple[str, str, str]) -> PageSentences | None:
        page_id, html_path, truth_path = item
        truth = Path(truth_path).read_text(encoding="utf-8", errors="replace")
        if not truth.strip():
            return None
        html = decode_html(gzip.decompress(Path(html_path).read_bytes()))
        text = self.extractor.extract(html)
        language = self.langid.identify(text or truth).code
        truth_tokens = _tokens(truth)
        shingles = {n: _shingles(truth_tokens, n) for n in (2, 3)}
        models = load_registry(self.registry)
        model = kenlm_model(models[language]["path"]) if language in models else None
        sentences = []
        for para in self.splitter.split(text, language):
            for sentence in para:
                ppl = perplexity(model, sentence)[0] if model is not None else None
                sentences.append((sentence, ppl, is_main_sentence(sentence, shingles, set(truth_tokens))))
        return PageSentences(page_id, language, truth, sentences)


def load_pages(data: Path, ids: set[str] | None) -> list[tuple[str, str, str]]:
    """(id, html path, truth path) of every full-text truth page in a bench-style data folder."""
    items = []
    for line in (data / "manifest.jsonl").read_text(encoding="utf-8").splitlines():
        row = json.loads(line)
        if row.get("truth_type") != "fulltext" or (ids is not None and row["id"] not in ids):
            continue
        folder = data / row["dataset"]
        html, truth = folder / "pages" / f"{row['id']}.html.gz", folder / "truth" / f"{row['id']}.txt"
        if html.exists() and truth.exists():
            items.append((row["id"], str(html), str(truth)))
    return items


def score_pages(items: list[tuple[str, str, str]], registry: str, main_content: bool,
                processes: int) -> list[PageSentences]:
    worker = _Worker(registry, main_content)
    if processes <= 1:
        results: Iterable = map(worker, items)
        return [r for r in results if r is not None]
    with multiprocessing.get_context("fork").Pool(processes) as pool:
        return [r for r in pool.imap(worker, items, chunksize=16) if r is not None]


def candidate_thresholds() -> list[float]:
    """Log-spaced thresholds from 10 to 10^6 (8 per decade) and infinity (no filtering)."""
    return [round(10 ** (1 + k / 8), 1) for k in range(41)] + [math.inf]


def mean_rouge(pages: list[PageSentences], threshold: float) -> float:
    total = 0.0
    for page in pages:
        kept = [s for s, ppl, _ in page.sentences if ppl is None or ppl <= threshold]
        total += rouge_n_f1(_tokens(" ".join(kept)), _tokens(page.truth))
    return total / len(pages) if pages else 0.0


def main_precision(pages: list[PageSentences], threshold: float) -> float:
    kept = [main for p in pages for _, ppl, main in p.sentences if ppl is not None and ppl <= threshold]
    return sum(kept) / len(kept) if kept else 1.0


def token_effect(pages: list[PageSentences], threshold: float) -> dict[str, float]:
    """Shares of boilerplate tokens removed and main-content tokens kept at ``threshold``."""
    main_all = main_kept = boiler_all = boiler_removed = 0
    for page in pages:
        for sentence, ppl, main in page.sentences:
            n = len(_tokens(sentence))
            kept = ppl is None or ppl <= threshold
            if main:
                main_all += n
                main_kept += n * kept
            else:
                boiler_all += n
                boiler_removed += n * (not kept)
    return {"main_tokens_kept": main_kept / main_all if main_all else 1.0,
            "boilerplate_tokens_removed": boiler_removed / boiler_all if boiler_all else 0.0}


def percentile(values: list[float], p: float) -> float:
    ordered = sorted(values)
    if not ordered:
        return math.nan
    k = (len(ordered) - 1) * p / 100
    lo, hi = math.floor(k), math.ceil(k)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (k - lo)


def calibrate_language(pages: list[PageSentences], target_precision: float | None) -> dict:
    """Choose the threshold for one language's pages and describe both classes."""
    grid = candidate_thresholds()
    curve = [(t, mean_rouge(pages, t)) for t in grid]
    baseline = curve[-1][1]
    if target_precision is None:
        best_t, best_f = max(curve, key=lambda tf: (tf[1], tf[0]))
        objective = "rouge5_f1"
    else:
        ok = [t for t in grid if main_precision(pages, t) >= target_precision]
        best_t = max(ok) if ok else grid[0]
        best_f = dict(curve)[best_t]
        objective = f"main_precision>={target_precision}"
    scored = [ppl for p in pages for _, ppl, _ in p.sentences if ppl is not None]
    main = [ppl for p in pages for _, ppl, m in p.sentences if ppl is not None and m]
    boiler = [ppl for p in pages for _, ppl, m in p.sentences if ppl is not None and not m]
    return {
        "objective": objective,
        "threshold": None if math.isinf(best_t) else best_t,
        "rouge5_f1": round(best_f, 4),
        "rouge5_f1_unfiltered": round(baseline, 4),
        "pages": len(pages),
        "sentences_main": len(main),
        "sentences_boilerplate": len(boiler),
        "median_perplexity_main": round(percentile(main, 50), 1) if main else None,
        "median_perplexity_boilerplate": round(percentile(boiler, 50), 1) if boiler else None,
        "percentiles": {p: round(percentile(scored, p), 1) for p in PERCENTILES} if scored else {},
        "token_effect": token_effect(pages, best_t),
        "curve": [[None if math.isinf(t) else t, round(f, 4)] for t, f in curve],
        "log10_main": [round(math.log10(v), 3) for v in main],
        "log10_boilerplate": [round(math.log10(v), 3) for v in boiler],
    }


def plot(results: dict[str, dict], path: Path) -> None:
    """Histograms of log10 perplexity, main vs boilerplate, with the chosen threshold, per language."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    langs = sorted(results)
    fig, axes = plt.subplots(len(langs), 1, figsize=(8, 3.2 * len(langs)), squeeze=False)
    for ax, lang in zip(axes[:, 0], langs):
        r = results[lang]
        bins = [x / 10 for x in range(0, 61)]
        ax.hist(r["log10_main"], bins=bins, alpha=0.6, label=f"main ({r['sentences_main']})", color="tab:green")
        ax.hist(r["log10_boilerplate"], bins=bins, alpha=0.6,
                label=f"boilerplate ({r['sentences_boilerplate']})", color="tab:red")
        if r["threshold"]:
            ax.axvline(math.log10(r["threshold"]), color="black", linestyle="--",
                       label=f"threshold {r['threshold']:g}")
        ax.set_title(f"{lang}: {r['pages']} pages, ROUGE-5 F1 {r['rouge5_f1_unfiltered']} -> {r['rouge5_f1']}")
        ax.set_xlabel("log10 sentence perplexity")
        ax.set_ylabel("sentences")
        ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)


def write_registry(registry: str, results: dict[str, dict], mode: str) -> None:
    """Store calibrated thresholds and percentiles in the model registry YAML."""
    path = resolve_path(registry)
    tree = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    for lang, r in results.items():
        entry = tree.setdefault("models", {}).get(lang)
        if entry is None:
            continue
        if r["threshold"] is not None:
            entry["threshold"] = r["threshold"]
        entry["percentiles"] = {int(p): v for p, v in r["percentiles"].items()}
        entry["calibration"] = {"objective": r["objective"], "text": mode, "pages": r["pages"],
                                "rouge5_f1": r["rouge5_f1"], "rouge5_f1_unfiltered": r["rouge5_f1_unfiltered"]}
    header = ("# Per-language KenLM models. threshold: drop sentences whose perplexity is above it.\n"
              "# threshold and percentiles are written by `warcplex calibrate --write`.\n")
    path.write_text(header + yaml.safe_dump(tree, sort_keys=True, allow_unicode=True), encoding="utf-8")


def add_parser(commands) -> None:
    parser = commands.add_parser("calibrate", help="choose per-language perplexity thresholds on pages with truth",
                                 description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", required=True, help="folder in the layout of ../shared/bench/data")
    parser.add_argument("--ids", help="file with one page id per line (default: all full-text pages)")
    parser.add_argument("--registry", default="conf/models.yaml")
    parser.add_argument("--text", choices=["main", "all"], default="main",
                        help="score sentences of main-content extraction (the pipeline's default) or all text")
    parser.add_argument("--target-precision", type=float,
                        help="pick the highest threshold whose kept sentences are at least this share main")
    parser.add_argument("--min-pages", type=int, default=20, help="languages with fewer pages keep their threshold")
    parser.add_argument("--out", default="calibration", help="folder for calibration.json and calibration.png")
    parser.add_argument("--write", action="store_true", help="write thresholds and percentiles into the registry")
    parser.add_argument("--processes", type=int, default=multiprocessing.cpu_count())
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    data = Path(args.data)
    if not (data / "manifest.jsonl").exists():
        print(f"warcplex: error: {data}/manifest.jsonl not found (expected the layout of shared/bench/data)",
              file=sys.stderr)
        return 2
    ids = set(Path(args.ids).read_text().split()) if args.ids else None
    items = load_pages(data, ids)
    pages = score_pages(items, args.registry, args.text == "main", args.processes)
    by_language: dict[str, list[PageSentences]] = defaultdict(list)
    for page in pages:
        by_language[page.language].append(page)
    models = load_registry(args.registry)
    results = {lang: calibrate_language(ps, args.target_precision)
               for lang, ps in sorted(by_language.items()) if lang in models and len(ps) >= args.min_pages}
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "calibration.json").write_text(json.dumps(results, indent=1) + "\n", encoding="utf-8")
    if results:
        plot(results, out / "calibration.png")
    for lang, r in results.items():
        effect = r["token_effect"]
        print(f"{lang}: {r['pages']} pages, threshold {r['threshold']}, ROUGE-5 F1 {r['rouge5_f1_unfiltered']} -> "
              f"{r['rouge5_f1']}; main tokens kept {effect['main_tokens_kept']:.3f}, boilerplate tokens removed "
              f"{effect['boilerplate_tokens_removed']:.3f}; median ppl main {r['median_perplexity_main']} "
              f"vs boilerplate {r['median_perplexity_boilerplate']}")
    skipped = {lang: len(ps) for lang, ps in by_language.items() if lang not in results}
    if skipped:
        print(f"not calibrated (no model or < {args.min_pages} pages): {dict(sorted(skipped.items()))}")
    if args.write and results:
        write_registry(args.registry, results, args.text)
        print(f"thresholds written to {args.registry}")
    print(f"distributions: {out / 'calibration.json'}, plot: {out / 'calibration.png'}")
    return 0
