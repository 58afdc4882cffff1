#!/usr/bin/env python3
"""Where the block stage loses main content, and its held-out ROUGE-5 F1 against resiliparse (in process).

Reads the parsed bench dev pages of scripts/train_blocks.py (``--cache``, built on first use), scores
their blocks with the shipped ``blocks_model.json`` and prints:

- ``losses`` (default; dev pages only, never the held-out ones): per set, group (dataset, page type,
  language) and block kind (heading, list item, table cell, spec cell of a product page, title-like
  line, short line, link-heavy, paragraph), the main blocks (labelled as train_blocks.py does), the
  share the classifier keeps, the share after the structure rules (:mod:`pipeline.steps.blocks.rules`),
  and the share of the group's main words lost (what the kind costs the page's recall);
- ``heldout``: ROUGE-5 F1 / BoW P / BoW R of the held-out pages per set, dataset, page type (the truth's and
  the predicted one) and language for the classifier alone (at the threshold of the page's predicted type), with the rules, with the rules and the cascade's fallback
  (:func:`pipeline.steps.blocks.step.shorter_than_primary`), and resiliparse's main-content text. The same
  functions as :class:`pipeline.steps.blocks.step.BlocksExtractor` (``featurize``, ``BlockModel.scores``,
  ``revise``, ``block_lines``) on cached parses: fast enough to iterate; ``bench_quality.py`` does the real runs;
- ``warc``: for the HTML responses of real WARC files (``--warc``, e.g. ../shared/bench/warc/cc-genuine/*.warc.gz),
  every block with its probability and decision (``+`` kept, ``r`` kept by a rule, ``-`` dropped), to read
  against the page (:class:`~pipeline.steps.blocks.step.BlocksExtractor` itself);
- ``evidence``: on the tuning third of the training pages (as train_blocks.py picks it), the block
  stage's ROUGE-5 F1 against resiliparse's (the cascade's next stage) in bins of the signals a
  fallback rule could use, and the classifier's ROUGE-5 F1 by threshold per set and page type;
- ``snippets``: the held-out pages (``--dev``: the others) of the snippet set (trafilatura eval, never fitted on) through the
  default pipeline in process (:class:`~pipeline.steps.loop.StepLoop`: the cascade and the filter),
  scored with the bench's snippet F; ``--model`` picks the block model;
- ``comments``: the blocks of comment regions (:attr:`~pipeline.steps.blocks.parse.Block.comment_region`) on the dev
  pages: how many train_blocks.py labels comments, per set and group; with ``--heldout``, the held-out pages'
  blocks told comments against those labels (precision, recall). A sample of the labels to read:
  ``scripts/studies/comment_labels.py``.

usage: PYTHONPATH=scripts python scripts/studies/blocks_losses.py [--report losses|heldout|warc|evidence|snippets] [--bench ../shared/bench] [--cache build/blocks_raw.pkl]
                                                                  [--warc FILE ...]
"""

from __future__ import annotations

import argparse
from collections import defaultdict
from multiprocessing import Pool
from pathlib import Path

import numpy as np

from pipeline.steps.blocks.features import CELLS, HEADINGS, LIST_ITEMS, word_count
from pipeline.steps.blocks.model import BlockModel
from pipeline.steps.blocks.rules import revise
from pipeline.steps.blocks.step import block_lines, shorter_than_primary

import train_blocks  # scripts/ (run with PYTHONPATH=scripts): the cached parses and labels of the fit
from benchpages import BENCH, is_heldout, manifest, page_bytes, page_path, scorer, truth_path

ROOT = Path(__file__).resolve().parents[2]


def _title_like(b) -> bool:
    words = b.text.split()
    return 1 < len(words) <= 12 and b.text[-1] not in ".!?:;," and sum(w[0].isupper() for w in words) >= 0.5 * len(words)


KINDS = (("heading", lambda b, p: b.tag in HEADINGS),
         ("list item", lambda b, p: b.tag in LIST_ITEMS),
         ("table cell", lambda b, p: b.tag in CELLS),
         ("spec cell (product)", lambda b, p: p["page_type"] == "product" and b.tag in CELLS | {"dt", "dd"}),
         ("title-like", lambda b, p: b.tag not in HEADINGS and _title_like(b)),
         ("short (<5 words)", lambda b, p: word_count(b.text) < 5),
         ("link-heavy (>0.5)", lambda b, p: b.link_chars > 0.5 * len(b.text)),
         ("paragraph (p)", lambda b, p: b.tag == "p"),
         ("all", lambda b, p: True))


def scored(pages: list[dict], model: BlockModel) -> list[dict]:
    """Each page with its predicted type, its blocks' probabilities, the classifier's keep mask and the rules' one
    (at the threshold and with the rules of the page's type: :meth:`BlockModel.decision`)."""
    for p in pages:
        p["predicted_type"] = None
        if p["X"] is None:
            p["prob"], p["kept"], p["revised"] = np.zeros(0), np.zeros(0, bool), np.zeros(0, bool)
            p["comment"] = np.zeros(0, bool)
            continue
        if model.page_types is not None:
            p["predicted_type"] = model.page_types.page_type(p["signals"])
        decision = model.decision(p["predicted_type"])
        p["prob"] = model.scores(p["X"], p["hashed"])
        p["comment"] = (model.comments.comments(p["blocks"], p["X"], p["signals"], p["predicted_type"])
                        if model.comments is not None
                        else np.zeros(len(p["blocks"]), bool))  # out of the text (extract.comments: separate)
        p["kept"] = (p["prob"] >= decision.threshold) & ~p["comment"]
        p["revised"] = revise(p["blocks"], p["prob"], decision.threshold, decision.rules) & ~p["comment"]
    return pages


def group_keys(p: dict) -> list[tuple[str, str]]:
    keys = [(p["set"], "ALL"), (p["set"], f"dataset:{p['dataset']}")]
    if p["page_type"] != "-":
        keys.append((p["set"], f"type:{p['page_type']}"))
    if p["set"] == "ml":
        keys.append((p["set"], f"lang:{p['lang']}"))
    if p.get("predicted_type"):
        keys.append((p["set"], f"predicted:{p['predicted_type']}"))
    return keys


def report_losses(pages: list[dict]) -> None:
    # (set, group, kind) -> [main blocks, kept, kept after rules, main words lost, lost after rules]
    cells = defaultdict(lambda: np.zeros(5))
    main_words = defaultdict(float)
    for p in pages:
        keys = group_keys(p)
        for b, y, k, r in zip(p["blocks"], p["y"], p["kept"], p["revised"]):
            if not y:
                continue
            words = word_count(b.text)
            for key in keys:
                main_words[key] += words
            for kind, test in KINDS:
                if test(b, p):
                    for key in keys:
                        cells[(*key, kind)] += (1, k, r, 0 if k else words, 0 if r else words)
    print("dev pages (not held out): main blocks by kind; recall = kept / main; lost = main words of the kind "
          "dropped / all main words of the group")
    print(f"{'set':4s} {'group':26s} {'kind':20s} {'main':>7s} {'recall':>7s} {'+rules':>7s} {'lost':>6s} {'+rules':>7s}")
    for (name, group, kind), (n, k, r, lost, lost_r) in sorted(cells.items(),
                                                              key=lambda kv: (kv[0][0], kv[0][1] != "ALL", kv[0][1])):
        if n < 20:
            continue
        total = max(main_words[(name, group)], 1.0)
        print(f"{name:4s} {group[:26]:26s} {kind:20s} {int(n):7d} {k / n:7.3f} {r / n:7.3f} {lost / total:6.3f} "
              f"{lost_r / total:7.3f}")


def report_heldout(pages: list[dict], model: BlockModel, bench: Path) -> None:
    score = scorer(bench).score_pair
    cells = defaultdict(lambda: defaultdict(list))
    for p in pages:
        if p["X"] is None:
            plain = revised = ""
        else:
            plain = block_lines([b for b, k in zip(p["blocks"], p["kept"]) if k])
            revised = block_lines([b for b, k in zip(p["blocks"], p["revised"]) if k])
        fallback = p["primary"] if shorter_than_primary(revised, p["primary"], model.fallback_min_share) else revised
        for key in group_keys(p):
            for system, text in (("blocks", plain), ("+rules", revised), ("+rules+fallback", fallback),
                                 ("resiliparse", p["primary"])):
                cells[key][system].append(score(text, p["truth"]))
    print(f"held-out pages ({len(pages)}): ROUGE-5 F1 / BoW P / BoW R")
    systems = ("blocks", "+rules", "+rules+fallback", "resiliparse")
    print(f"{'set':4s} {'group':26s} {'n':>4s}  " + "  ".join(f"{s:>19s}" for s in systems))
    for (name, group), by in sorted(cells.items(), key=lambda kv: (kv[0][0], kv[0][1] != "ALL", kv[0][1])):
        row = ["/".join(f"{np.mean([s[m] for s in by[k]]):.3f}" for m in ("rouge5_f", "rouge1_p", "rouge1_r"))
               for k in systems]
        print(f"{name:4s} {group[:26]:26s} {len(by['blocks']):4d}  " + "  ".join(f"{r:>19s}" for r in row))


def report_warc(paths: list[Path]) -> None:
    from fastwarc.warc import ArchiveIterator, WarcRecordType

    from pipeline.config import load_settings
    from pipeline.steps.blocks.model import block_model
    from pipeline.reading.decode import decode_html
    from pipeline.steps.blocks.step import BlocksExtractor

    settings = load_settings(None, [])
    stage, model = BlocksExtractor(settings.extract, settings.langid), block_model(settings.extract.blocks_model)
    for path in paths:
        for record in ArchiveIterator(open(path, "rb"), record_types=WarcRecordType.response):
            content_type = (record.http_headers.get("Content-Type") or "") if record.http_headers else ""
            if "html" not in content_type:
                continue
            html = decode_html(record.reader.read(), record.http_charset)
            page = stage.classify(html)
            blocks, probs = page.blocks, page.probs
            decision = model.decision(page.page_type)
            keep = revise(blocks, probs, decision.threshold, decision.rules)
            comments = page.comment_blocks if page.comment_blocks is not None else np.zeros(len(blocks), bool)
            print(f"\n=== {path.name} {record.headers.get('WARC-Target-URI')} ({len(blocks)} blocks, "
                  f"{int((keep & ~comments).sum())} kept, {int(comments.sum())} comments; page type "
                  f"{page.page_type}, threshold {decision.threshold})")
            for b, p, k, c in zip(blocks, probs, keep, comments):
                mark = "c" if c else "+" if p >= decision.threshold else ("r" if k else "-")
                print(f"{mark} {p:.2f} {b.tag:6s} {b.text[:110]}")


EVIDENCE_BINS = {"kept/resiliparse words": [0, 0.1, 0.3, 0.6, 1, 1.5, 2.5, 5, np.inf],
                 "share of blocks in [0.3, threshold)": [0, 0.05, 0.1, 0.2, 0.3, 1.01],
                 "mean probability of kept blocks": [0, 0.7, 0.8, 0.9, 1.01]}


def report_evidence(pages: list[dict], model: BlockModel, bench: Path) -> None:
    score = scorer(bench).score_pair
    signals, f_blocks, f_primary = defaultdict(list), [], []
    sweep = defaultdict(lambda: defaultdict(list))
    for p in pages:
        kept = [b for b, k in zip(p["blocks"], p["revised"]) if k]
        text = block_lines(kept)
        kept_words = word_count(text) if text.strip() else 0
        prob = p["prob"]
        signals["kept/resiliparse words"].append(kept_words / word_count(p["primary"]))
        signals["share of blocks in [0.3, threshold)"].append(
            float(((prob >= 0.3) & (prob < model.threshold)).mean()) if len(prob) else 0.0)
        signals["mean probability of kept blocks"].append(float(prob[p["kept"]].mean()) if p["kept"].any() else 0.0)
        f_blocks.append(score(text, p["truth"])["rouge5_f"])
        f_primary.append(score(p["primary"], p["truth"])["rouge5_f"])
        for t in train_blocks.THRESHOLDS:
            out = block_lines([b for b, q in zip(p["blocks"], prob) if q >= t])
            for key in (p["set"], f"type:{p['page_type']}") if p["page_type"] != "-" else (p["set"],):
                sweep[key][t].append(score(out, p["truth"])["rouge5_f"])
    f_blocks, f_primary = np.array(f_blocks), np.array(f_primary)
    print(f"tuning pages ({len(pages)}): ROUGE-5 F1 of the block stage (with rules) vs resiliparse, by signal bin")
    for name, edges in EVIDENCE_BINS.items():
        values = np.array(signals[name])
        for lo, hi in zip(edges[:-1], edges[1:]):
            m = (values >= lo) & (values < hi)
            if m.any():
                print(f"  {name} {lo}-{hi}: n={m.sum()} blocks {f_blocks[m].mean():.3f} resiliparse {f_primary[m].mean():.3f}")
    print("classifier ROUGE-5 F1 by threshold (no rules):")
    for key, by in sorted(sweep.items()):
        print(f"  {key:20s} " + " ".join(f"{t}:{np.mean(v):.3f}" for t, v in by.items()))


def report_comments(pages: list[dict], heldout: bool) -> None:
    """Comment labels per set and group; on held-out pages the detector's precision and recall against them."""
    counts = defaultdict(lambda: np.zeros(4))  # (set, group) -> pages with a region, region blocks, comments, words
    rows = []
    for p in pages:
        region = [i for i, b in enumerate(p["blocks"]) if b.comment_region and not b.excluded]
        if not region:
            continue
        for key in ((p["set"], "ALL"), (p["set"], p["group"])):
            counts[key] += (1, len(region), sum(p["comment_y"][i] for i in region),
                            sum(word_count(p["blocks"][i].text) for i in region if p["comment_y"][i]))
        rows += [(p, i) for i in region]
    print(f"{'held-out' if heldout else 'dev'} pages with a comment region; its blocks; those labelled comments "
          "(train_blocks.comment_label); their words")
    for (name, group), (n, blocks, comments, words) in sorted(counts.items()):
        if n >= 3:
            print(f"  {name:4s} {group[:24]:24s} {int(n):5d} {int(blocks):7d} {int(comments):7d} {int(words):8d}")
    if heldout:
        told = [(bool(p["comment"][i]), bool(p["comment_y"][i])) for p, i in rows]
        both = sum(c and y for c, y in told)
        print(f"told comments: {sum(c for c, _ in told)}, labelled: {sum(y for _, y in told)}, both: {both}; "
              f"precision {both / max(sum(c for c, _ in told), 1):.3f}, recall {both / max(sum(y for _, y in told), 1):.3f}")


def report_snippets(bench: Path, model_path: Path | None, heldout: bool) -> None:
    import json

    from pipeline.config import load_settings
    from pipeline.document import Page
    from pipeline.steps.loop import StepLoop

    score = scorer(bench).score_snippets
    overrides = [f"extract.blocks_model={model_path}"] if model_path else []
    loop = StepLoop(load_settings(None, overrides))
    results = []
    for m in manifest(bench, "data"):
        if m.get("truth_type") != "snippets" or is_heldout(m["id"]) != heldout:
            continue
        html = page_bytes(page_path(bench, "data", m))
        doc = loop.process(Page(f"<urn:{m['id']}>", m.get("url") or "http://x/", "", html, None))
        text = doc.text if doc.outcome == "kept" else ""
        results.append(score(text, json.loads(truth_path(bench, "data", m).read_text(encoding="utf-8"))))
    print(f"{'held-out' if heldout else 'dev'} snippet pages ({len(results)}), default pipeline in process: " + ", ".join(
        f"{k} {np.mean([r[k] for r in results]):.3f}" for k in ("snippet_f", "with_recall", "without_rate")))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--report", choices=("losses", "heldout", "warc", "evidence", "snippets", "comments"),
                        default="losses")
    parser.add_argument("--heldout", action="store_true", help="comments: the held-out pages (the detector's figures)")
    parser.add_argument("--warc", type=Path, nargs="*", default=[], help="WARC files of the warc report")
    parser.add_argument("--bench", type=Path, default=BENCH)
    parser.add_argument("--cache", type=Path, default=ROOT / "build" / "blocks_raw.pkl")
    parser.add_argument("--model", type=Path, help="blocks_model.json (default: the packaged one)")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--dev", action="store_true", help="snippets: the dev pages instead of the held-out ones")
    args = parser.parse_args()
    if args.report == "warc":
        return report_warc(args.warc)
    if args.report == "snippets":
        return report_snippets(args.bench, args.model, not args.dev)
    model = BlockModel.load(args.model)
    centres = {lang: pin.centre for lang, pin in model.language_models.items()}
    heldout = args.report == "heldout" or (args.report == "comments" and args.heldout)
    raw = [p for p in train_blocks.raw_pages(args.bench, args.cache, args.workers)
           if p["set"] != "snippets" and is_heldout(p["id"]) == heldout]
    if args.report == "evidence":
        raw = raw[::3]  # train_blocks.py's tuning pages
    with Pool(args.workers) as pool:
        pages = pool.starmap(train_blocks.featurised, [(p, centres, args.bench) for p in raw], chunksize=16)
    scored(pages, model)
    if args.report == "comments":
        report_comments(pages, heldout)
    elif args.report == "losses":
        report_losses(pages)
    elif args.report == "evidence":
        report_evidence(pages, model, args.bench)
    else:
        report_heldout(pages, model, args.bench)


if __name__ == "__main__":
    main()
