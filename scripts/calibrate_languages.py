"""Per-language thresholds for the corpus objective on the multilingual bench, and their quality effect.

For every language of ``../shared/bench/data-ml`` (as fastText names the extracted text) that has
a registry model, the pages go through ``warcplex calibrate``'s own stages (the extraction,
LID, sentencex, KenLM: :func:`pipeline.analysis.calibrate.score_pages`). On the **dev** pages
(``is_heldout(page_id)`` false) the threshold is the corpus objective: the lowest threshold of
the calibration grid (the most boilerplate removed) that keeps at least ``1 - max_main_loss``
of the main-content tokens (default 2%). Languages with fewer than ``--min-pages`` dev pages
keep their registry threshold. Tokens are counted as the bench's scorer counts them (a character of
Chinese, Japanese or Thai is a token). The table gives, per language, model size and held-out web
perplexity (the model card), the threshold, the share of sentences it drops, and ROUGE-5 F1
without and with the filter on dev and on held-out pages (reported separately; held-out
pages are never used to choose anything). ``--write`` stores the calibrated thresholds in the
registry with a ``calibration`` record (and the rule it was chosen under), for the languages whose
entry is provisional or was calibrated by this script before (an entry ``warcplex calibrate`` set
on other pages, with another objective, is kept).

    python scripts/calibrate_languages.py [--data ../shared/bench/data-ml] [--write]
"""

from __future__ import annotations

import argparse
import json
import math
import multiprocessing
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

import yaml

from pipeline.analysis.calibrate import (PageSentences, candidate_thresholds, corpus_threshold, load_pages,
                                         mean_score, percentile, score_pages, sentences_dropped, token_effect, write_registry)
from pipeline.config import PROJECT_ROOT, load_settings, resolve_path
from pipeline.model_registry import load_registry

from benchpages import BENCH, is_heldout


def drop_provisional(registry: str, langs: list[str]) -> None:
    """A calibrated entry's threshold is no longer the provisional guess: remove its ``provisional`` block."""
    path = resolve_path(registry)
    text = path.read_text(encoding="utf-8")
    tree = yaml.safe_load(text)
    for lang in langs:
        tree["models"][lang].pop("provisional", None)
    header = "".join(line + "\n" for line in text.splitlines() if line.startswith("#"))
    path.write_text(header + yaml.safe_dump(tree, sort_keys=True, allow_unicode=True), encoding="utf-8")


def card_figures(lang: str) -> dict:
    """Size and held-out web figures of the shipped model (its card and webeval.json)."""
    folder = PROJECT_ROOT / "lm_models" / lang
    card = json.loads((folder / "card.json").read_text(encoding="utf-8"))
    web = folder / "webeval.json"
    heldout = json.loads(web.read_text(encoding="utf-8"))["heldout"] if web.exists() else {}
    return {"bytes": card["bytes"], "heldout_p50": (heldout.get("main_lines") or {}).get("p50"),
            "auc": heldout.get("auc_boilerplate_above_main"),
            "source": ", ".join(c["name"] for c in card["corpora"][:3]) + (", ..." if len(card["corpora"]) > 3 else "")}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", type=Path, default=BENCH / "data-ml")
    ap.add_argument("--config", default=str(PROJECT_ROOT / "conf" / "local.yaml"))
    ap.add_argument("--extractor", default=None, help="default: the first cascade stage")
    ap.add_argument("--max-main-loss", type=float, default=0.02)
    ap.add_argument("--min-pages", type=int, default=15, help="dev pages a language needs to be calibrated")
    ap.add_argument("--processes", type=int, default=multiprocessing.cpu_count())
    ap.add_argument("--out", type=Path, default=Path("calibration-languages.json"))
    ap.add_argument("--write", action="store_true", help="store the calibrated thresholds in the registry")
    args = ap.parse_args()

    settings = load_settings(args.config)
    extractor = args.extractor or settings.extract.cascade[0]
    registry = load_registry(settings.perplexity.registry)
    pages = score_pages(load_pages(args.data, None), settings, extractor, args.processes)
    by_lang: dict[str, dict[str, list[PageSentences]]] = defaultdict(lambda: {"dev": [], "heldout": []})
    for page in pages:
        if page.language in registry and page.language != "en":
            by_lang[page.language]["heldout" if is_heldout(page.page_id) else "dev"].append(page)

    grid = candidate_thresholds()
    rows, results = {}, {}
    for lang, split in sorted(by_lang.items()):
        dev, held = split["dev"], split["heldout"]
        calibrated = len(dev) >= args.min_pages
        threshold = corpus_threshold(dev, grid, args.max_main_loss) if calibrated else registry[lang].threshold
        row = {"dev_pages": len(dev), "heldout_pages": len(held), "calibrated": calibrated, "threshold": threshold,
               "shipped": registry[lang].threshold, **card_figures(lang)}
        for name, group in (("dev", dev), ("heldout", held)):
            if group:
                effect = token_effect(group, threshold)
                row[name] = {"sentences_dropped": round(sentences_dropped(group, threshold), 4),
                             "main_tokens_kept": round(effect["main_tokens_kept"], 4),
                             "boilerplate_tokens_removed": round(effect["boilerplate_tokens_removed"], 4),
                             "rouge5_unfiltered": round(mean_score(group, math.inf), 4),
                             "rouge5_filtered": round(mean_score(group, threshold), 4)}
        rows[lang] = row
        if calibrated:
            scored = [s.perplexity for p in dev for s in p.sentences if s.perplexity is not None]
            results[lang] = {"threshold": threshold, "pages": len(dev),
                             "rule": f"{settings.perplexity.unit}/{settings.perplexity.rule}",
                             "objective": f"boilerplate_removed at main_tokens_lost<={args.max_main_loss:g}",
                             "score": row["dev"]["rouge5_filtered"], "score_unfiltered": row["dev"]["rouge5_unfiltered"],
                             "sentences_dropped": row["dev"]["sentences_dropped"],
                             "percentiles": {p: round(percentile(scored, p), 1)
                                             for p in (10, 25, 50, 60, 70, 75, 80, 90, 95, 99)}}
    args.out.write_text(json.dumps({"extractor": extractor, "data": str(args.data), "languages": rows}, indent=1) + "\n",
                        encoding="utf-8")

    load = subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()
    print(f"{extractor} text of {len(pages)} pages of {args.data}; corpus objective: main tokens lost <= "
          f"{args.max_main_loss:.0%} on dev pages; machine load: {load}\n")
    print("| lang | model source | size | web held-out median ppl (AUC) | dev / held-out pages | threshold "
          "| shipped threshold | sentences dropped dev | boilerplate removed / main kept (dev) | ROUGE-5 dev: without → with "
          "| ROUGE-5 held-out: without → with |")
    print("|---|---|---:|---|---|---:|---:|---:|---|---|---|")
    for lang, r in rows.items():
        def effect(name: str, key: str) -> str:
            return f"{r[name][key]:.1%}" if name in r else "–"

        def rouge(name: str) -> str:
            return f"{r[name]['rouge5_unfiltered']:.3f} → {r[name]['rouge5_filtered']:.3f}" if name in r else "–"

        web = f"{r['heldout_p50']:,.0f} ({r['auc']})" if r["heldout_p50"] is not None else "not measured"
        print(f"| {lang} | {r['source']} | {r['bytes'] / 2**20:.1f} MiB | {web} | {r['dev_pages']} / {r['heldout_pages']} "
              f"| {r['threshold']:,.0f}{'' if r['calibrated'] else ' (registry)'} | {r['shipped']:,.0f} "
              f"| {effect('dev', 'sentences_dropped')} "
              f"| {effect('dev', 'boilerplate_tokens_removed')} / {effect('dev', 'main_tokens_kept')} "
              f"| {rouge('dev')} | {rouge('heldout')} |")
    if args.write and results:
        entries = yaml.safe_load(resolve_path(settings.perplexity.registry).read_text(encoding="utf-8"))["models"]
        # an entry `warcplex calibrate` set on other pages (another objective) is kept; this script's own are redone
        kept = sorted(lang for lang, r in results.items()
                      if entries[lang].get("calibration", {}).get("objective", r["objective"]) != r["objective"])
        results = {lang: r for lang, r in results.items() if lang not in kept}
        write_registry(settings.perplexity.registry, results, extractor)
        drop_provisional(settings.perplexity.registry, list(results))
        print(f"\ncalibrated thresholds written to {settings.perplexity.registry}: {', '.join(results)}; "
              f"kept (calibrated before, `warcplex calibrate`): {', '.join(kept) or 'none'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
