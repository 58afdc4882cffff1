#!/usr/bin/env python3
"""The default pipeline's quality decisions measured in process on the bench dev sets (issue 13).

Every full-text page of ``data``, ``data-wcxb`` and ``data-ml`` goes once through the default
pipeline (:class:`~pipeline.steps.loop.StepLoop`: the cascade, language ID, sentences, the
perplexity filter), and its scored sentences (with the block stage's line probabilities), the
extracted text, and trafilatura's and resiliparse's texts of the same page are cached (``--cache``).
The reports then re-decide on the cache:

- ``filter``: the perplexity filter at each ``perplexity.protect_min_prob`` of ``--grid`` and
  ``perplexity.protect_factor`` of ``--factors``
  (:func:`pipeline.perplexity_rule.kept_mask`, the filter's own rule), per set and group: ROUGE-5
  F1 of the written text (:func:`pipeline.document.cut_dropped`, the bench scorer) and the share of
  boilerplate tokens the filter removed and of main tokens it kept (bag of words against the truth,
  as ``bench_quality.py``'s ``filter_effect``);
- ``cascade``: the default pipeline's text (before the filter) against trafilatura's and resiliparse's
  on the pages with cheap evidence of a product or shop page (:func:`page_kind`), in bins of
  trafilatura's and resiliparse's word count over the block stage's (where a cascade rule that
  prefers another stage on such pages could gain), and with trafilatura's missing lines appended; and
  resiliparse's text against trafilatura's on the pages whose block output was short (``blocks_short``);
- ``whitespace``: per set and dataset, the pages whose written text has exactly the truth's characters
  but for white space, and the ROUGE-5 F1 they score all the same (a truth that splits words where the
  HTML closes an inline element, ``cl</I><I>és``, which a browser shows as one word);
- ``glued``: per set, the words the written text runs together (:func:`glued_words`: ``amyxzhangPosted``,
  where the truth has "amyxzhang" and "Posted"), with examples.

Dev pages only (not :func:`benchpages.is_heldout`) unless ``--heldout``: choose on
dev pages, then report the held-out ones once.

usage: PYTHONPATH=scripts python scripts/studies/quality_study.py [--report filter|cascade|whitespace|glued] [--grid 2,0.9,0.8,...] [--regions 0,1]
                                                                 [--factors inf,3,...] [--heldout]
"""

from __future__ import annotations

import argparse
import gzip
import pickle
import re
import sys
from collections import Counter, defaultdict
from dataclasses import replace
from multiprocessing import Pool
from pathlib import Path

import numpy as np

from pipeline.config import load_settings
from pipeline.document import Page, Sentence, cut_dropped

from benchpages import BENCH, SETS, dev_items, is_heldout, scorer  # scripts/: run with PYTHONPATH=scripts

ROOT = Path(__file__).resolve().parents[2]
# schema.org types declared in JSON-LD ("@type": "Product") or microdata (itemtype=".../Product").
_SCHEMA_TYPE = re.compile(r'"@type"\s*:\s*\[?\s*"(?:https?://schema\.org/)?([A-Za-z]+)"|'
                          r'itemtype\s*=\s*["\']?https?://schema\.org/([A-Za-z]+)', re.I)
_OG_TYPE = re.compile(r'property\s*=\s*["\']og:type["\']\s+content\s*=\s*["\']([^"\']+)', re.I)
_PRICE = re.compile(r"(?:[$\u00a3\u20ac]\s?\d{1,5}(?:[.,]\d{2})?)|(?:\d{1,5}[.,]\d{2}\s?(?:\u20ac|EUR|USD|GBP))")
_CART = re.compile(r"add[ -]to[ -](?:cart|basket|bag)|buy[ -]now", re.I)


def page_kind(html: str) -> dict[str, object]:
    """Cheap evidence of a page's type from its HTML (regular expressions, no parse): the schema.org types
    it declares (JSON-LD or microdata), its ``og:type``, the number of price-like amounts and whether
    it has an add-to-cart control."""
    types = {(a or b).lower() for a, b in _SCHEMA_TYPE.findall(html)}
    og = _OG_TYPE.search(html)
    return {"schema": types, "og": og.group(1).lower() if og else "", "prices": len(_PRICE.findall(html)),
            "cart": _CART.search(html) is not None}


_LOOP = None


def collect(item: dict) -> dict:
    """One page through the default pipeline, with the texts and evidence the reports re-decide on."""
    global _LOOP
    from pipeline.steps.extractors import TrafilaturaExtractor
    from pipeline.steps.loop import StepLoop

    if _LOOP is None:
        _LOOP = StepLoop(load_settings(None, []))
    loop = _LOOP
    cascade = next(s for s in loop.steps if s.name == "cascade")
    cascade.extractors[0].regions = True  # the block stage's region evidence, for --regions 1
    html = gzip.decompress(Path(item["html"]).read_bytes())
    doc = loop.process(Page(f"<urn:{item['id']}>", item["url"], "", html, None))
    try:
        trafilatura = TrafilaturaExtractor(cascade.settings).extract(doc.html) if doc.html else ""
    except Exception:
        trafilatura = ""
    return dict(item, truth=Path(item["truth"]).read_text(encoding="utf-8", errors="replace"),
                outcome=doc.outcome, extractor=doc.extractor, fallback_reason=doc.fallback_reason,
                language=doc.language_code, text=doc.text, sentences=doc.sentences,
                primary=doc.blocks.primary if doc.blocks is not None else "", trafilatura=trafilatura, kind=page_kind(doc.html) if doc.html else {})


def load(bench: Path, cache: Path, workers: int) -> list[dict]:
    if cache.exists():
        return pickle.loads(cache.read_bytes())
    with Pool(workers) as pool:
        pages = list(pool.imap(collect, dev_items(bench), chunksize=4))
    cache.parent.mkdir(parents=True, exist_ok=True)
    cache.write_bytes(pickle.dumps(pages, protocol=pickle.HIGHEST_PROTOCOL))
    return pages


def group_keys(p: dict) -> list[tuple[str, str]]:
    keys = [(p["set"], "ALL")]
    if p["page_type"] != "-":
        keys.append((p["set"], f"type:{p['page_type']}"))
    if p["set"] == "ml":
        keys.append((p["set"], f"lang:{p['lang']}"))
    return keys


def refiltered(p: dict, settings) -> list[Sentence]:
    """The page's sentences re-decided by the filter under ``settings`` (the page's own threshold)."""
    from pipeline.model_registry import load_registry
    from pipeline.perplexity_rule import kept_mask

    sentences = p["sentences"]
    registry = load_registry(settings.registry)
    if not sentences or all(s.perplexity is None for s in sentences) or p["language"] not in registry:
        return sentences
    limit = registry[p["language"]].threshold_for(settings)
    mask = kept_mask(sentences, limit, settings)
    return [replace(s, kept=k) for s, k in zip(sentences, mask)]


def report_filter(pages: list[dict], grid: list[float], regions: list[bool], factors: list[float],
                  bench: Path) -> None:
    score = scorer(bench)
    base = load_settings(None, []).perplexity
    configs = [("no filter", None)] + [(f">={g:g}{'+regions' if r else ''}x{f:g}", replace_settings(base, g, r, f))
                                       for g in grid for r in regions for f in factors]
    rows = defaultdict(lambda: defaultdict(list))
    effect = defaultdict(lambda: defaultdict(Counter))
    for p in pages:
        gold = Counter(score.tokenize(p["truth"]))
        bags = {}
        for label, settings in configs:
            if settings is None:
                text = p["text"]
            else:
                text = cut_dropped(p["text"], refiltered(p, settings))
            bag = Counter(score.tokenize(text))
            bags[label] = (sum((bag & gold).values()), sum((bag - (bag & gold)).values()))
            f = score.score_pair(text, p["truth"])["rouge5_f"]
            for key in group_keys(p):
                rows[key][label].append(f)
                if settings is not None:
                    effect[key][label].update(main=bags[label][0], boiler=bags[label][1],
                                              main0=bags["no filter"][0], boiler0=bags["no filter"][1])
    labels = [label for label, _ in configs]
    print(f"pages: {len(pages)}; ROUGE-5 F1 [boilerplate removed / main kept]")
    print(f"{'set':4s} {'group':22s} {'n':>4s} " + " ".join(f"{label:>24s}" for label in labels))
    for key, by in sorted(rows.items(), key=lambda kv: (kv[0][0], kv[0][1] != "ALL", kv[0][1])):
        if len(by["no filter"]) < 10:
            continue
        cells = []
        for label in labels:
            c = effect[key][label]
            tail = (f" [{1 - c['boiler'] / max(c['boiler0'], 1):.3f}/{c['main'] / max(c['main0'], 1):.3f}]"
                    if label != "no filter" else "")
            cells.append(f"{np.mean(by[label]):.3f}{tail}")
        print(f"{key[0]:4s} {key[1][:22]:22s} {len(by['no filter']):4d} " + " ".join(f"{c:>24s}" for c in cells))


KIND_SIGNALS = {"schema.org Product": lambda k: "product" in k["schema"],
                "og:type product": lambda k: "product" in k["og"],
                "add-to-cart": lambda k: k["cart"],
                "10+ prices": lambda k: k["prices"] >= 10,
                "schema.org ItemList": lambda k: "itemlist" in k["schema"],
                "any page": lambda k: True}
RATIO_BINS = (0, 0.5, 0.7, 1, 1.5, 2, 3, np.inf)


def report_cascade(pages: list[dict], bench: Path) -> None:
    from pipeline.steps.blocks.features import word_count

    score = scorer(bench)
    print("ROUGE-5 F1 of the default pipeline's text (before the filter) / trafilatura / resiliparse main content, "
          "pages the block stage answered, by another stage's words over the block stage's")
    for p in pages:
        p["f"] = {k: score.score_pair(p[k], p["truth"])["rouge5_f"] for k in ("text", "trafilatura", "primary")}
        p["w"] = {k: word_count(p[k]) if p[k].strip() else 0 for k in ("text", "trafilatura", "primary")}
    for name, *_ in SETS:
        short = [p for p in pages if p["set"] == name and (p["fallback_reason"] or "").startswith("blocks_short_")]
        if short:
            print(f"pages the block stage found short (blocks_short) / {name}: {len(short)}, resiliparse "
                  f"{np.mean([p['f']['primary'] for p in short]):.3f} / trafilatura "
                  f"{np.mean([p['f']['trafilatura'] for p in short]):.3f} / the pipeline's "
                  f"{np.mean([p['f']['text'] for p in short]):.3f}")
    for signal, test in KIND_SIGNALS.items():
        for name, *_ in SETS:
            chosen = [p for p in pages
                      if p["set"] == name and p["kind"] and p["extractor"] == "blocks" and test(p["kind"])]
            if not chosen:
                continue
            types = Counter(p["page_type"] for p in chosen if p["page_type"] != "-")
            print(f"{signal} / {name}: {len(chosen)} pages {dict(types.most_common(4)) if types else ''}")
            for other in ("trafilatura", "primary"):
                for lo, hi in zip(RATIO_BINS[:-1], RATIO_BINS[1:]):
                    b = [p for p in chosen if lo <= p["w"][other] / max(p["w"]["text"], 1) < hi]
                    if b:
                        print(f"  {other:11s} words / blocks' {lo:g}-{hi:g}: n={len(b):4d} "
                              + " / ".join(f"{np.mean([p['f'][k] for p in b]):.3f}"
                                           for k in ("text", "trafilatura", "primary")))
            merged = [score.score_pair(with_missing_lines(p["text"], p["trafilatura"], score.tokenize),
                                       p["truth"])["rouge5_f"] for p in chosen]
            print(f"  the text with trafilatura's missing lines of {MIN_MERGED_WORDS}+ words appended: "
                  f"{np.mean([p['f']['text'] for p in chosen]):.3f} -> {np.mean(merged):.3f}")


MIN_MERGED_WORDS = 12


def with_missing_lines(text: str, other: str, tokenize) -> str:
    """``text`` with the lines of ``other`` (``MIN_MERGED_WORDS`` words or more) it does not contain appended."""
    have = " ".join(tokenize(text))
    extra = [line for line in other.split("\n")
             if len(line.split()) >= MIN_MERGED_WORDS and " ".join(tokenize(line)) not in have]
    return "\n".join([text, *extra]) if extra else text


def report_whitespace(pages: list[dict], bench: Path) -> None:
    score = scorer(bench)
    groups = defaultdict(list)
    for p in pages:
        text = cut_dropped(p["text"], p["sentences"])
        same = "".join(text.split()) == "".join(p["truth"].split())
        f = score.score_pair(text, p["truth"])["rouge5_f"] if same else None
        for key in ((p["set"], "ALL"), (p["set"], p["dataset"])):
            groups[key].append(f)
    print("pages whose written text is the truth but for white space: count, their mean ROUGE-5 F1, "
          "and the ROUGE-5 F1 they cost the group's mean")
    for (name, group), fs in sorted(groups.items(), key=lambda kv: (kv[0][0], kv[0][1] != "ALL", kv[0][1])):
        hits = [f for f in fs if f is not None]
        if hits:
            print(f"{name:4s} {group:22s} {len(fs):5d} pages: {len(hits):4d} same but for white space, "
                  f"ROUGE-5 F1 {np.mean(hits):.3f}, costing {sum(1 - f for f in hits) / len(fs):.4f}")


# Where a glued word would split: a capital or a price after a small letter, a digit or sentence punctuation.
_GLUE_POINT = re.compile(r"(?<=[a-z0-9.!?%)])(?=[A-Z$])")


def glued_words(text: str, truth: str) -> list[str]:
    """The white-space words of ``text`` that ``truth`` does not have but has each part of, split at
    ``_GLUE_POINT`` (``amyxzhangPosted`` against a truth with "amyxzhang" and "Posted")."""
    have = set(truth.split())
    out = []
    for word in text.split():
        if word not in have:
            parts = [part for part in _GLUE_POINT.split(word) if part]
            if len(parts) > 1 and all(part in have for part in parts):
                out.append(word)
    return out


def report_glued(pages: list[dict]) -> None:
    counts, examples = defaultdict(Counter), defaultdict(list)
    for p in pages:
        if p["set"] == "snippets" or p["outcome"] != "kept":
            continue
        glued = glued_words(cut_dropped(p["text"], p["sentences"]), p["truth"])
        counts[p["set"]].update(pages=1, glued=len(glued), pages_with=bool(glued))
        examples[p["set"]].extend(glued[:1])
    print("words the written text runs together that the truth has apart (written pages, glued words, pages with any)")
    for name in sorted(counts):
        c = counts[name]
        print(f"{name:5s} {c['pages']:5d} pages: {c['glued']:5d} glued words on {c['pages_with']:4d} pages; "
              f"e.g. {', '.join(examples[name][:6])}")


def replace_settings(settings, protect: float, regions: bool, factor: float):
    return settings.model_copy(update={"protect_min_prob": protect, "protect_regions": regions,
                                       "protect_factor": factor})


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--report", choices=("filter", "cascade", "whitespace", "glued"), default="filter")
    parser.add_argument("--bench", type=Path, default=BENCH)
    parser.add_argument("--cache", type=Path, default=ROOT / "build" / "quality_study.pkl")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--grid", default="2,0.95,0.9,0.8,0.7,0.6", type=lambda v: [float(x) for x in v.split(",")])
    parser.add_argument("--regions", default="0,1", type=lambda v: [bool(int(x)) for x in v.split(",")],
                        help="perplexity.protect_regions values tried with each --grid value")
    parser.add_argument("--factors", default="inf,3", type=lambda v: [float(x) for x in v.split(",")],
                        help="perplexity.protect_factor values tried with each --grid value")
    parser.add_argument("--heldout", action="store_true", help="the held-out pages (report once, after choosing)")
    args = parser.parse_args()
    pages = [p for p in load(args.bench, args.cache, args.workers) if is_heldout(p["id"]) == args.heldout]
    if args.report == "filter":
        report_filter(pages, args.grid, args.regions, args.factors, args.bench)
    elif args.report == "cascade":
        report_cascade(pages, args.bench)
    elif args.report == "glued":
        report_glued(pages)
    else:
        report_whitespace(pages, args.bench)
    return 0


if __name__ == "__main__":
    sys.exit(main())
