"""Measure a KenLM model on modern web pages: the bench truth texts it never saw.

For one language this reads the full-text pages of ``../shared/bench`` (``data/``,
``data-wcxb/`` and ``data-ml/``) in that language and splits them with the bench's one
rule (``scripts/benchpages.py``): a page is *held out* when ``md5(page_id) % 10 >= 7``. On each page,

* **main lines** are the non-empty lines of the human truth;
* **boilerplate lines** are the lines of the page's all-text (resiliparse
  ``extract_plain_text(main_content=False)``) whose normalised tokens do not occur in
  the normalised truth.

It reports, on held-out pages, the per-line perplexity of main and boilerplate lines and
the ROC AUC of perplexity as a boilerplate score (1.0: every boilerplate line scores
above every main line; 0.5: no separation). On the other (dev) pages it computes the
per-sentence perplexity percentiles of the truth, from which ``train.py registry``
takes the provisional threshold.

    PYTHONPATH=scripts python lm_models/webeval.py en [--model PATH] [--write]

``--write`` stores the figures in ``<lang>/webeval.json`` next to the model, with the
binary's sha256 and the share of held-out lines above the registry's threshold for this
language (``conf/models.yaml``), for the model card, lm_models/README.md and the registry.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent

from train import percentile, registry_entries  # the cards' percentile rule; conf/models.yaml (lm_models/ is the script directory)
from pipeline.model_cache import file_sha256
from pipeline.lm_text import normalize_for_lm
from pipeline.perplexity_rule import perplexity_of

from benchpages import BENCH, HELDOUT_RULE, SETS, is_heldout, manifest, page_bytes, page_path, truth_path  # scripts/

PERCENTILES = (50, 75, 90, 95, 99)
# the registry's `percentiles` keys (the ones `warcplex calibrate` writes)
REGISTRY_PERCENTILES = (10, 25, 50, 60, 70, 75, 80, 90, 95, 99)


@dataclass(frozen=True)
class Page:
    """One full-text bench page: its id, HTML path and truth path."""

    page_id: str
    html: Path
    truth: Path


def bench_pages(lang: str, bench: Path = BENCH) -> Iterator[Page]:
    """Every real (not synthetic) full-text page of ``lang`` in the bench sets."""
    for _, folder, _ in SETS:
        if not (bench / folder / "manifest.jsonl").exists():
            continue
        for row in manifest(bench, folder):
            if (row.get("lang") != lang or row.get("truth_type") != "fulltext"
                    or row.get("synthetic")):
                continue
            yield Page(row["id"], page_path(bench, folder, row), truth_path(bench, folder, row))


def all_text(html_bytes: bytes) -> str:
    """The page's visible text, tags stripped (resiliparse, no main-content detection)."""
    from resiliparse.extract.html2text import extract_plain_text
    from resiliparse.parse.encoding import bytes_to_str, detect_encoding
    from resiliparse.parse.html import HTMLTree

    tree = HTMLTree.parse(bytes_to_str(html_bytes, detect_encoding(html_bytes)))
    return extract_plain_text(tree, main_content=False)


def page_lines(page: Page) -> tuple[list[str], list[str]]:
    """(main lines, boilerplate lines) of one page, each already normalised."""
    truth = page.truth.read_text(encoding="utf-8", errors="replace")
    main = [n for n in (normalize_for_lm(ln) for ln in truth.splitlines()) if n]
    haystack = " " + " ".join(main) + " "
    html = page_bytes(page.html)
    boiler = []
    for ln in all_text(html).splitlines():
        n = normalize_for_lm(ln)
        if n and f" {n} " not in haystack:
            boiler.append(n)
    return main, boiler


def line_perplexity(model, norm: str) -> float:
    """The scorer's formula on an already normalised line."""
    return perplexity_of(model.score(norm, bos=True, eos=True), norm.count(" ") + 1)


def roc_auc(positive: list[float], negative: list[float]) -> float:
    """P(a positive scores above a negative), ties counted half (Mann-Whitney U)."""
    if not positive or not negative:
        return float("nan")
    scored = sorted([(v, 1) for v in positive] + [(v, 0) for v in negative])
    rank_sum, i = 0.0, 0
    while i < len(scored):
        j = i
        while j < len(scored) and scored[j][0] == scored[i][0]:
            j += 1
        avg_rank = (i + j + 1) / 2  # ranks are 1-based
        rank_sum += avg_rank * sum(1 for k in range(i, j) if scored[k][1])
        i = j
    n_pos, n_neg = len(positive), len(negative)
    return (rank_sum - n_pos * (n_pos + 1) / 2) / (n_pos * n_neg)


def _percentiles(values: list[float], qs: tuple[int, ...]) -> dict:
    """{"p50": ...} of ``values``; None when there are none (a language without pages)."""
    values = sorted(values)
    return {f"p{q}": round(percentile(values, q / 100), 1) if values else None for q in qs}


def _summary(values: list[float]) -> dict:
    return {"lines": len(values), **_percentiles(values, PERCENTILES)}


def evaluate(model, lang: str, bench: Path = BENCH, threshold: float | None = None) -> dict:
    """Held-out separation and dev truth-sentence percentiles of ``model`` on ``lang``;
    with ``threshold``, also the share of held-out lines it would drop."""
    from pipeline.steps.sentences import sentence_splitter

    segment = sentence_splitter(lang)
    held_main: list[float] = []
    held_boiler: list[float] = []
    dev_sentences: list[float] = []
    pages = {"heldout": 0, "dev": 0}
    oov = tokens = 0
    for page in bench_pages(lang, bench):
        if not is_heldout(page.page_id):
            pages["dev"] += 1
            truth = page.truth.read_text(encoding="utf-8", errors="replace")
            for ln in truth.splitlines():
                for sent in segment(ln):
                    n = normalize_for_lm(sent)
                    if n:
                        dev_sentences.append(line_perplexity(model, n))
            continue
        pages["heldout"] += 1
        main, boiler = page_lines(page)
        for n in main:
            held_main.append(line_perplexity(model, n))
            toks = n.split()
            tokens += len(toks)
            oov += sum(1 for t in toks if t not in model)
        held_boiler.extend(line_perplexity(model, n) for n in boiler)
    result = {
        "language": lang,
        "bench": "../shared/bench full-text pages (data/, data-wcxb/, data-ml/), not synthetic",
        "heldout_rule": HELDOUT_RULE,
        "pages": pages,
        "heldout": {
            "main_lines": _summary(held_main),
            "boilerplate_lines": _summary(held_boiler),
            "main_oov_rate": round(oov / tokens, 4) if tokens else None,
            "auc_boilerplate_above_main": (round(roc_auc(held_boiler, held_main), 4)
                                           if held_main and held_boiler else None),
        },
        "dev_truth_sentences": {
            "sentences": len(dev_sentences),
            **_percentiles(dev_sentences, REGISTRY_PERCENTILES),
        },
    }
    if threshold is not None and held_main:
        result["heldout"]["above_threshold"] = {
            "threshold": threshold,
            "main_lines": round(sum(v > threshold for v in held_main) / len(held_main), 4),
            "boilerplate_lines": (round(sum(v > threshold for v in held_boiler) / len(held_boiler), 4)
                                  if held_boiler else None)}
    return result


def main() -> None:
    import kenlm

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("lang")
    ap.add_argument("--model", type=Path, help="binary to measure (default: the card's)")
    ap.add_argument("--bench", type=Path, default=BENCH)
    ap.add_argument("--write", action="store_true",
                    help="store <lang>/webeval.json, with the share of lines above the registry's threshold")
    ap.add_argument("--threshold", type=float,
                    help="also report the share of held-out lines above it (not stored)")
    args = ap.parse_args()
    if not args.bench.is_dir():
        raise SystemExit(f"webeval: no bench directory at {args.bench}")
    card = json.loads((HERE / args.lang / "card.json").read_text(encoding="utf-8"))
    path = args.model or REPO / card["path"]
    model = kenlm.Model(str(path))
    registered = registry_entries().get(args.lang, {}).get("threshold") if args.write else None
    result = evaluate(model, args.lang, args.bench, registered)
    result["model_sha256"] = file_sha256(path)
    text = json.dumps(result, indent=2, ensure_ascii=False)
    if args.write:
        (HERE / args.lang / "webeval.json").write_text(text + "\n", encoding="utf-8")
    if args.threshold is not None:
        result = evaluate(model, args.lang, args.bench, args.threshold)
        result["model_sha256"] = file_sha256(path)
        text = json.dumps(result, indent=2, ensure_ascii=False)
    print(text)


if __name__ == "__main__":
    main()
