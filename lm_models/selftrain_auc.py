"""Does a self-trained model separate main text from boilerplate better than the registry's?

Trains a model with ``warcplex train-lm``'s code from a warcplex run over a bench WARC
(``warc/bench-dev.warc.gz`` or a ``make_warc.py`` build of ``data-ml``), leaving out every
held-out page (``is_heldout(bench_id)``, found through the WARC's index TSV), then scores the
held-out full-text bench pages of the language with three models:

* ``registry``: the shipped model of ``conf/models.yaml``;
* ``self``: the self-trained one;
* ``mix``: a per-token linear interpolation of the two, ``λ·P_self + (1-λ)·P_registry``
  (both share the tokenisation, so the mix is a proper language model).

Main lines are the truth's lines, boilerplate lines the page's all-text lines not in the truth
(``lm_models/webeval.py``). The table gives the ROC AUC of perplexity as a boilerplate score
(boilerplate above main; 0.5 = no separation) per bench set, and the median perplexities.

    PYTHONPATH=scripts python lm_models/selftrain_auc.py --run OUT --lang en --index ../shared/bench/warc/bench-dev.index.tsv
"""

from __future__ import annotations

import argparse
import csv
import math
import statistics
import sys
from collections import defaultdict
from pathlib import Path

from webeval import BENCH, bench_pages, page_lines, roc_auc  # lm_models/ is the script directory
from benchpages import is_heldout  # scripts/ (PYTHONPATH=scripts)

from pipeline.config import PROJECT_ROOT as ROOT
from pipeline.lm.train import TrainOptions, train_lm
from pipeline.model_cache import kenlm_model
from pipeline.model_registry import load_registry


def token_log10(model, norm: str) -> list[float]:
    """log10 P of every token of an already normalised line, ``</s>`` included."""
    return [score for score, _, _ in model.full_scores(norm, bos=True, eos=True)]


def mixed_perplexity(a: list[float], b: list[float], weight: float) -> float:
    """Perplexity of the per-token linear mix ``weight·10^a + (1-weight)·10^b``."""
    total = sum(math.log10(weight * 10 ** x + (1 - weight) * 10 ** y) for x, y in zip(a, b))
    return 10 ** (-total / len(a))


def heldout_record_ids(index: Path) -> set[str]:
    with index.open(encoding="utf-8") as fh:
        return {row["response_record_id"] for row in csv.DictReader(fh, delimiter="\t") if is_heldout(row["bench_id"])}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--run", required=True, help="output of `warcplex run` over the bench WARC")
    ap.add_argument("--index", required=True, type=Path, help="the WARC's index TSV (bench_id -> record id)")
    ap.add_argument("--lang", required=True)
    ap.add_argument("--bench", type=Path, default=BENCH)
    ap.add_argument("--work", type=Path, default=Path("selftrain_auc"), help="folder for the trained model")
    ap.add_argument("--order", type=int, default=4)
    ap.add_argument("--weights", type=float, nargs="+", default=[0.5], help="λ of the mix (self-trained share)")
    args = ap.parse_args()

    card = train_lm(args.run, args.work / args.lang, TrainOptions(language=args.lang, order=args.order),
                    exclude=frozenset(heldout_record_ids(args.index)))
    own = kenlm_model(str(args.work / args.lang / card["model"]))
    shipped = load_registry(str(ROOT / "conf" / "models.yaml")).get(args.lang)
    registry = kenlm_model(shipped.path) if shipped else None
    k = card["corpus"]
    print(f"self-trained {args.lang}: {k['pages_selected']} of {k['pages']} run pages "
          f"({k['pages_excluded']} held out excluded), {k['train_sentences']:,} sentences, "
          f"{k['train_tokens']:,} tokens, {card['bytes']:,} bytes")

    names = ["self"] + (["registry", *(f"mix λ={w:g}" for w in args.weights)] if registry else [])
    scores: dict[str, dict[str, dict[str, list[float]]]] = defaultdict(lambda: defaultdict(lambda: defaultdict(list)))
    pages: dict[str, int] = defaultdict(int)
    for page in bench_pages(args.lang, args.bench):
        if not is_heldout(page.page_id):
            continue
        group = page.html.parent.parent.parent.name  # data, data-wcxb, data-ml
        pages[group] += 1
        main, boiler = page_lines(page)
        for kind, lines in (("main", main), ("boilerplate", boiler)):
            for norm in lines:
                a = token_log10(own, norm)
                per = {"self": 10 ** (-sum(a) / len(a))}
                if registry:
                    b = token_log10(registry, norm)
                    per["registry"] = 10 ** (-sum(b) / len(b))
                    for w in args.weights:
                        per[f"mix λ={w:g}"] = mixed_perplexity(a, b, w)
                for name, value in per.items():
                    for g in (group, "all"):
                        scores[g][name][kind].append(value)
    print(f"\nheld-out full-text bench pages in {args.lang}: " + ", ".join(f"{g} {n}" for g, n in sorted(pages.items())))
    print("ROC AUC (boilerplate line above main line), median perplexity main / boilerplate\n")
    print(f"| set | lines main / boilerplate | " + " | ".join(names) + " |")
    print("|---|---|" + "---|" * len(names))
    for group in sorted(scores, key=lambda g: (g == "all", g)):
        s = scores[group]
        cells = [f"{roc_auc(s[n]['boilerplate'], s[n]['main']):.3f} ({statistics.median(s[n]['main']):,.0f} / "
                 f"{statistics.median(s[n]['boilerplate']):,.0f})" for n in names]
        print(f"| {group} | {len(s['self']['main']):,} / {len(s['self']['boilerplate']):,} | " + " | ".join(cells) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
