#!/usr/bin/env python3
"""SORE's quality and cost on ../shared/bench: data-ml (full-text truth) and the snippet set.

For every page: the pipeline's own steps (``StepLoop``, perplexity filter off) give the
text, once with the default cascade (block classifier first) and once all visible text
(``[conservative]``); its lines are SORE's segments, its title/description the core. Every
segment is embedded once (cached in ``--work``), then each threshold setting is applied to
the stored embeddings. data-ml pages :func:`benchpages.is_heldout` holds out are held out: thresholds are
chosen on the others (best mean ROUGE-5 F1, per extraction) and reported on the held-out pages
and on the 707 snippet pages (never tuned on). Prints ROUGE-5 F1, bag-of-words P/R, snippet F
(bench score.py), the share of lines removed with the reasons, and SORE's pages per CPU-second
(embedding and decisions; extraction excluded, and the first page's model load excluded).

usage: PYTHONPATH=scripts python scripts/studies/sore_quality.py [--bench ../shared/bench] [--work out/sore-quality] [--ml-every N] [--ml-max N]
                                                                 [--snippets-every N] [--shards N]
       (embed in parallel first: add --shard 0 and --shard 1 to two runs with --shards 2, then run without --shard)
"""

from __future__ import annotations

import argparse
import itertools
import json
import pickle
import sys
import time
from collections import Counter
from dataclasses import replace
from pathlib import Path

import numpy as np

from pipeline.config import Settings
from pipeline.reading.decode import decode_html
from pipeline.document import Page
from pipeline.steps.loop import StepLoop
from pipeline.steps.sore import SoreScorer, SoreSettings, page_metadata

from benchpages import BENCH, is_heldout, manifest, page_bytes, page_path, scorer, truth_path  # scripts/: run with PYTHONPATH=scripts

EXTRACTIONS = {"default cascade": None, "all text": ["conservative"]}
GRID = {
    "core_share": [0.1, 0.2],
    "outlier_distance": [0.0, 0.25, 0.35],
    "far_distance": [0.9, 0.95, 2.0],
    "max_removed_share": [0.5],
}


def bench_pages(bench: Path, kind: str, step: int, cap: int | None):
    """(id, kind, lang, html bytes, truth) of every ``step``-th page of data-ml (full-text truth)
    or of the trafilatura snippet pages, at most ``cap``."""
    folder = "data-ml" if kind == "data-ml" else "data"
    rows = [m for m in manifest(bench, folder) if kind == "data-ml" or m.get("truth_type") == "snippets"]
    for m in rows[::step][:cap]:
        html = page_bytes(page_path(bench, folder, m))
        text = truth_path(bench, folder, m).read_text(encoding="utf-8", errors="replace")
        yield m["id"], kind, m.get("lang", "?"), html, (text if kind == "data-ml" else json.loads(text))


def embed_all(bench: Path, work: Path, sample: tuple[str, int, int | None], shard: tuple[int, int]) -> dict:
    """Per extraction and page: lines, core vector and line vectors (cached on disk, per set and shard)."""
    kind, step, cap = sample
    cache = work / f"embeddings-{kind}-every{step}-max{cap}-{shard[0]}of{shard[1]}.pkl"
    if cache.exists():
        return pickle.load(open(cache, "rb"))
    scorer = SoreScorer(SoreSettings())
    scorer.outlier_groups()  # model load and phrase embedding, outside the timed part
    cleaners = {}
    for name, cascade in EXTRACTIONS.items():
        settings = Settings()
        settings.perplexity.enabled = False
        if cascade:
            settings.extract.cascade = cascade
        cleaners[name] = StepLoop(settings)
    data: dict = {"pages": {}, "cpu": Counter(), "segments": Counter()}
    for n, (page_id, kind, lang, html, truth) in enumerate(bench_pages(bench, kind, step, cap)):
        if n % shard[1] != shard[0]:
            continue
        entry = {"kind": kind, "lang": lang, "truth": truth, "held_out": is_heldout(page_id)}
        page = Page(page_id, "", "", html, None)
        for name, cleaner in cleaners.items():
            text = cleaner.process(page).text
            lines = [line for line in text.split("\n") if line.strip()]
            start = time.process_time()
            meta = page_metadata(decode_html(html))
            core_texts = " ".join(meta.texts)
            has_core = len(core_texts) >= scorer.settings.min_core_chars
            texts = ([core_texts] if has_core else []) + lines
            unique = list(dict.fromkeys(texts))
            row = {t: i for i, t in enumerate(unique)}
            vectors = scorer.embed(unique)[[row[t] for t in texts]] if texts else scorer.embed([])
            scorer.decide(vectors[0] if has_core else None, vectors[int(has_core):])
            data["cpu"][name] += time.process_time() - start
            data["segments"][name] += len(lines)
            entry[name] = {"lines": lines, "core": vectors[0] if has_core else None,
                           "vectors": vectors[int(has_core):].astype(np.float16)}
        data["pages"][page_id] = entry
        if n % 200 == 0:
            print(f"  embedded {n} pages", file=sys.stderr, flush=True)
    work.mkdir(parents=True, exist_ok=True)
    pickle.dump(data, open(cache, "wb"))
    return data


def rouge_bow(score, pred: str, truth_tokens: list[str]) -> dict:
    """ROUGE-5 F1 and bag-of-words P/R exactly as the bench's score_pair computes them."""
    pt = score.tokenize(pred)
    if not truth_tokens or not pt:
        both_empty = not truth_tokens and not pt
        return {"rouge5_f": float(both_empty), "rouge1_p": float(both_empty),
                "rouge1_r": float(both_empty or not truth_tokens)}
    out = {}
    for n, key in ((5, "rouge5"), (1, "rouge1")):
        pg, tg = score.ngrams(pt, n), score.ngrams(truth_tokens, n)
        p, r, f = score.prf(sum((pg & tg).values()), sum(pg.values()), sum(tg.values()))
        out[f"{key}_f"], out[f"{key}_p"], out[f"{key}_r"] = f, p, r
    return out


def apply(settings: SoreSettings | None, entry: dict) -> tuple[str, Counter, int]:
    """The page's text after SORE (None: unfiltered), the removal reasons and the line count."""
    lines = entry["lines"]
    if settings is None or not lines:
        return "\n".join(lines), Counter(), len(lines)
    if "geometry" not in entry:  # the similarities, once per page; each setting only judges them
        geometry = SoreScorer(SoreSettings()).measure(entry["core"], entry["vectors"].astype(np.float32))
        if geometry.segment_sim is not None:
            geometry = replace(geometry, segment_sim=geometry.segment_sim.astype(np.float16))
        entry["geometry"] = geometry
    decision = SoreScorer(settings).judge(entry["geometry"])
    reasons = Counter(d.reason.split(":")[0] if d.reason else "kept" for d in decision.segments)
    if decision.reverted:
        reasons["page_reverted"] += 1
    kept = [line for line, d in zip(lines, decision.segments) if d.kept]
    return "\n".join(kept), reasons, len(lines)


def evaluate(score, data: dict, extraction: str, settings: SoreSettings | None, subset) -> dict:
    full, snippets, reasons, lines = [], [], Counter(), 0
    for page_id, entry in data["pages"].items():
        if not subset(entry):
            continue
        text, why, n = apply(settings, entry[extraction])
        reasons += why
        lines += n
        if entry["kind"] == "data-ml":
            full.append(rouge_bow(score, text, entry.setdefault("truth_tokens", score.tokenize(entry["truth"]))))
        else:
            snippets.append(score.score_snippets(text, entry["truth"]))
    result = {"pages": len(full) + len(snippets), "lines": lines, "reasons": dict(reasons)}
    for key in ("rouge5_f", "rouge1_p", "rouge1_r"):
        if full:
            result[key] = float(np.mean([s[key] for s in full]))
    if snippets:
        result["snippet_f"] = float(np.mean([s["snippet_f"] for s in snippets]))
    return result


def tune(score, data: dict, extraction: str) -> SoreSettings:
    """The grid setting with the best mean ROUGE-5 F1 on the data-ml pages that are not held out."""
    subset = lambda e: e["kind"] == "data-ml" and not e["held_out"]  # noqa: E731
    best = None
    for values in itertools.product(*GRID.values()):
        settings = SoreSettings(**dict(zip(GRID, values)))
        f = evaluate(score, data, extraction, settings, subset)["rouge5_f"]
        if best is None or f > best[0] + 1e-9:
            best = (f, settings)
    print(f"  tuned on data-ml (not held out), {extraction}: ROUGE-5 F1 {best[0]:.4f} with "
          + ", ".join(f"{k}={getattr(best[1], k)}" for k in GRID))
    return best[1]


def fmt(result: dict, key: str) -> str:
    return f"{result[key]:.3f}" if key in result else "-"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bench", default=str(BENCH))
    ap.add_argument("--work", default="out/sore-quality")
    ap.add_argument("--ml-every", type=int, default=1, help="every n-th data-ml page (CPU is short: 2)")
    ap.add_argument("--ml-max", type=int, help="at most this many data-ml pages")
    ap.add_argument("--snippets-every", type=int, default=1, help="every n-th snippet page")
    ap.add_argument("--shards", type=int, default=1, help="embed in this many processes (run each with --shard)")
    ap.add_argument("--shard", type=int, help="only embed this shard (0-based) and stop")
    args = ap.parse_args(argv)
    bench = Path(args.bench)
    samples = [("data-ml", args.ml_every, args.ml_max), ("snippets", args.snippets_every, None)]
    if args.shard is not None:
        for sample in samples:
            embed_all(bench, Path(args.work), sample, (args.shard, args.shards))
        return 0
    data: dict = {"pages": {}, "cpu": Counter(), "segments": Counter()}
    for sample in samples:
        for k in range(args.shards):
            part = embed_all(bench, Path(args.work), sample, (k, args.shards))
            data["pages"].update(part["pages"])
            data["cpu"] += part["cpu"]
            data["segments"] += part["segments"]
    score = scorer(bench)
    n_pages = len(data["pages"])
    print(f"pages: {n_pages} ({sum(e['kind'] == 'data-ml' for e in data['pages'].values())} data-ml, "
          f"{sum(e['held_out'] for e in data['pages'].values() if e['kind'] == 'data-ml')} of them held out)")
    for extraction in EXTRACTIONS:
        cpu = data["cpu"][extraction]
        print(f"SORE on {extraction}: {data['segments'][extraction]} lines, {cpu:.1f} CPU s for metadata, "
              f"embedding and decisions: {n_pages / cpu:.1f} pages per CPU-second")
    # the values set from a look at a few real pages before any measurement (the shipped
    # defaults are the tuned ones for the default cascade)
    a_priori = SoreSettings(core_share=0.2, outlier_distance=0.35, far_distance=0.95)
    subsets = {"data-ml held out": lambda e: e["kind"] == "data-ml" and e["held_out"],
               "snippets": lambda e: e["kind"] == "snippets"}
    header = (f"{'extraction':<16} {'SORE':<28} {'set':<17} {'pages':>5} {'ROUGE-5 F1':>10} {'BoW P':>6} "
              f"{'BoW R':>6} {'snip F':>6} {'lines removed':>13}  reasons")
    rows = []
    for extraction in EXTRACTIONS:
        tuned = tune(score, data, extraction)
        variants = {"none": None, "a priori k0.2 o0.35 f0.95": a_priori,
                    f"tuned k{tuned.core_share} o{tuned.outlier_distance} f{tuned.far_distance}": tuned}
        for label, settings in variants.items():
            for set_name, subset in subsets.items():
                r = evaluate(score, data, extraction, settings, subset)
                removed = r["lines"] - r["reasons"].get("kept", r["lines"])
                reasons = ", ".join(f"{k} {v}" for k, v in sorted(r["reasons"].items()) if k != "kept")
                rows.append(f"{extraction:<16} {label:<28} {set_name:<17} {r['pages']:>5} {fmt(r, 'rouge5_f'):>10} "
                            f"{fmt(r, 'rouge1_p'):>6} {fmt(r, 'rouge1_r'):>6} {fmt(r, 'snippet_f'):>6} "
                            f"{100 * removed / max(1, r['lines']):>12.1f}%  {reasons}")
    print(header)
    print("\n".join(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
