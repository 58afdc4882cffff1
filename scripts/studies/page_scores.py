#!/usr/bin/env python3
"""The default pipeline's text scored page by page, in process (no Spark): the quick loop for block-stage work.

Every full-text page of the chosen dev sets goes once through the default pipeline
(:class:`~pipeline.steps.loop.StepLoop`, the text as written: :attr:`Document.clean_text`), and trafilatura's
text of the same page is cached under ``--work`` (it does not change between runs). Prints, per set, page type and
language: WCXB's word F1 (:func:`benchpages.word_prf`) with its precision and recall, and ROUGE-5 F1 (the bench's
scorer), for warcplex and trafilatura, and on the snippet set's pages the share of `with` snippets found and of
`without` snippets kept, by language; ``--save NAME`` keeps warcplex's per-page scores and ``--against NAME``
prints the pages that moved most since (under ``--work``, per sets and side). Dev side of the split unless ``--heldout`` (choose on the dev side,
report the held-out side once). ``bench_quality.py`` gives the figures of record (real Spark runs).

usage: PYTHONPATH=scripts python scripts/studies/page_scores.py [--sets data-wcxb] [--heldout] [--types forum,...]
                                                                [--save NAME] [--against NAME] [--workers 2]
                                                                [--set KEY=VALUE ...]
"""

from __future__ import annotations

import argparse
import gzip
import json
import sys
from collections import defaultdict
from multiprocessing import Pool
from pathlib import Path

from benchpages import BENCH, is_heldout, manifest, scorer, word_prf  # scripts/: run with PYTHONPATH=scripts

ROOT = Path(__file__).resolve().parents[2]
_LOOP = None
_OVERRIDES: list[str] = []  # --set, in each worker (Pool's initializer)


def _overrides(values: list[str]) -> None:
    _OVERRIDES[:] = values


def warcplex_text(job: tuple[str, str, str]) -> tuple[str, str, str | None, str]:
    """(id, written text, page type, comments) of one page through the default pipeline."""
    global _LOOP
    from pipeline.config import load_settings
    from pipeline.document import Page
    from pipeline.steps.blocks.extractor import written_reading
    from pipeline.steps.loop import StepLoop

    page_id, html_path, url = job
    if _LOOP is None:
        _LOOP = StepLoop(load_settings(ROOT / "conf" / "local.yaml", _OVERRIDES))
    doc = _LOOP.process(Page(f"<urn:{page_id}>", url, "", gzip.decompress(Path(html_path).read_bytes()), None))
    written = written_reading(doc)  # the row's comments are the block stage's when its text is written
    return (page_id, doc.clean_text if doc.outcome == "kept" else "", doc.blocks.page_type if doc.blocks else None,
            (written.comments or "") if written is not None else "")


def trafilatura_text(job: tuple[str, str, str]) -> tuple[str, str]:
    import trafilatura

    from pipeline.reading.decode import decode_html

    page_id, html_path, _ = job
    try:
        return page_id, trafilatura.extract(decode_html(gzip.decompress(Path(html_path).read_bytes()))) or ""
    except Exception:  # noqa: BLE001  (a peer failing on a page scores it empty)
        return page_id, ""


def mean(values) -> float:
    values = list(values)
    return sum(values) / len(values) if values else float("nan")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--bench", type=Path, default=BENCH)
    parser.add_argument("--work", type=Path, default=ROOT / "build" / "page-scores")
    parser.add_argument("--sets", default="data-wcxb")
    parser.add_argument("--types", help="only these page types (comma-separated)")
    parser.add_argument("--heldout", action="store_true")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--save")
    parser.add_argument("--against")
    parser.add_argument("--show", type=int, default=15, help="pages listed with --against")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                        help="a setting for warcplex's pipeline, as `warcplex run --set` takes it (repeatable)")
    args = parser.parse_args()
    score_pair, score_snippets = scorer(args.bench).score_pair, scorer(args.bench).score_snippets
    args.work.mkdir(parents=True, exist_ok=True)
    side = "heldout" if args.heldout else "dev"
    scores: dict[str, dict] = {}
    snippets: dict[str, list] = defaultdict(list)  # language -> per page: ours with, without; trafilatura's
    for folder in args.sets.split(","):
        rows = [m for m in manifest(args.bench, folder) if m.get("truth_type", "fulltext") in ("fulltext", "snippets")
                and is_heldout(m["id"]) == args.heldout
                and (not args.types or m.get("page_type") in args.types.split(","))]
        jobs = [(m["id"], str(args.bench / folder / m["dataset"] / "pages" / f"{m['id']}.html.gz"),
                 m.get("url") or "http://x/") for m in rows]
        cache = args.work / f"trafilatura.{folder}.{side}.json"
        peer = json.loads(cache.read_text()) if cache.exists() else {}
        with Pool(args.workers, initializer=_overrides, initargs=(args.set,)) as pool:
            missing = [j for j in jobs if j[0] not in peer]
            peer.update(dict(pool.imap_unordered(trafilatura_text, missing, chunksize=8)))
            cache.write_text(json.dumps(peer))
            ours = {i: (t, pt, c) for i, t, pt, c in pool.imap_unordered(warcplex_text, jobs, chunksize=4)}
        for m in rows:
            text, told, comments = ours[m["id"]]
            if m.get("truth_type") == "snippets":  # `with` found, `without` kept
                wanted = json.loads((args.bench / folder / m["dataset"] / "truth" / f"{m['id']}.json").read_text())
                snippets[m.get("lang") or "-"].append(
                    [score_snippets(t, wanted)[k] for t in (text, peer[m["id"]]) for k in ("with_recall", "without_rate")])
                continue
            truth = (args.bench / folder / m["dataset"] / "truth" / f"{m['id']}.txt").read_text(
                encoding="utf-8", errors="replace")
            scores[m["id"]] = {"set": folder, "type": m.get("page_type") or m["dataset"], "lang": m.get("lang"),
                               "told": told, "comment_words": len(comments.split()), "url": m.get("url"),
                               "comments_in_truth": score_pair(comments, truth)["rouge5_p"] if comments.strip() else None,
                               "ours": [*word_prf(text, truth), score_pair(text, truth)["rouge5_f"]],
                               "peer": [*word_prf(peer[m["id"]], truth), score_pair(peer[m["id"]], truth)["rouge5_f"]]}
    groups = defaultdict(list)
    for page_id, s in scores.items():
        groups[(s["set"], "ALL")].append(s)
        groups[(s["set"], s["type"])].append(s)
        if s["lang"] not in (None, "en"):
            groups[(s["set"], f"lang:{s['lang']}")].append(s)
    print(f"{'set':10s} {'group':16s} {'pages':>5s}  {'wordF1':>7s} {'P':>6s} {'R':>6s} {'R5':>6s}   "
          f"{'traf F1':>7s} {'P':>6s} {'R':>6s} {'R5':>6s}")
    for (folder, group), members in sorted(groups.items(), key=lambda kv: (kv[0][0], kv[0][1] != "ALL", kv[0][1])):
        ours = [mean(s["ours"][k] for s in members) for k in (2, 0, 1, 3)]
        peer = [mean(s["peer"][k] for s in members) for k in (2, 0, 1, 3)]
        print(f"{folder:10s} {group[:16]:16s} {len(members):5d}  {ours[0]:7.3f} {ours[1]:6.3f} {ours[2]:6.3f} "
              f"{ours[3]:6.3f}   {peer[0]:7.3f} {peer[1]:6.3f} {peer[2]:6.3f} {peer[3]:6.3f}")
    if snippets:
        print("\nsnippet pages by language: `with` found / `without` kept, warcplex then trafilatura")
        for lang, pages in sorted(snippets.items(), key=lambda kv: -len(kv[1])) + [("ALL", sum(snippets.values(), []))]:
            cells = [mean(p[k] for p in pages) for k in range(4)]
            print(f"  {lang:6s} {len(pages):4d}  {cells[0]:.3f} / {cells[1]:.3f}    {cells[2]:.3f} / {cells[3]:.3f}")
    saved = f"{args.sets.replace(',', '+')}.{side}.json"
    if args.save:
        (args.work / f"{args.save}.{saved}").write_text(json.dumps(scores))
    if args.against:
        before = json.loads((args.work / f"{args.against}.{saved}").read_text())
        moved = sorted((s["ours"][2] - before[i]["ours"][2], i) for i, s in scores.items() if i in before)
        for delta, i in moved[:args.show] + moved[-args.show:]:
            if abs(delta) > 1e-9:
                s = scores[i]
                print(f"{delta:+.3f} {i} {s['type']} told={s['told']} now={s['ours'][2]:.3f} "
                      f"comments={s['comment_words']} {s['url']}")
    written = [s for s in scores.values() if s["comments_in_truth"] is not None]
    if written:  # the comments written apart: how much of them the truth has as main text (a thread's posts)
        print(f"\npages with comments written apart: {len(written)}; their comment text in the truth (ROUGE-5 precision of "
              "the comments against it), by page type:")
        by_type = defaultdict(list)
        for s in written:
            by_type[s["type"]].append(s)
        for page_type, members in sorted(by_type.items()):
            print(f"  {page_type:14s} {len(members):4d} pages, {sum(s['comment_words'] for s in members):7d} words, "
                  f"mean share in truth {mean(s['comments_in_truth'] for s in members):.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
