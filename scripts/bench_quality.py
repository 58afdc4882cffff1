#!/usr/bin/env python3
r"""Extraction quality benchmark: warcplex (real Spark runs) against the peers on the three bench dev sets.

For each dev set (``data``: the 2006-2019 English benchmarks and the snippet set; ``data-wcxb``:
modern English pages of seven types; ``data-ml``: non-English pages) the set is packed into a WARC
under ``--work`` with the bench's make_warc.py (only the held-out pages with ``--heldout-only``),
``warcplex run`` processes it in local Spark with Parquet output for each warcplex configuration,
the bench's parquet_to_preds.py turns the output into predictions, the peers (trafilatura,
readability-lxml, jusText, resiliparse) run on the same WARC records in plain Python, and the
bench's score.py scores every page. Prints per set: ROUGE-5 F1, WCXB's word F1 with its precision and
recall (lower-cased ``\w+`` words as bags, per page: :func:`benchpages.word_prf`), the scorer's bag-of-words
F1, the snippet F of the multilingual snippet set with the share of `with` snippets found and of `without`
snippets wrongly kept, and pages per CPU second; then ROUGE-5 F1 and word F1 per dataset, per page type (the
set's, and the one warcplex's default run wrote) and per language; once on every page and once on the held-out pages only (the
block classifier's fixed split, :func:`benchpages.is_heldout`, never fitted on).
Runs come in pairs with and without the perplexity filter (the default cascade, and the
``conf/all-text.yaml`` preset: all visible text cleaned by the filter alone); for each pair the
filter's effect is printed by language: the share of boilerplate tokens it removed and of main
tokens it kept (:func:`filter_effect`).

usage: scripts/bench_quality.py [--bench ../shared/bench] [--work build/bench-quality] [--sets data,data-wcxb]
                                [--runs 1,2,peers] [--heldout-only]
"""

from __future__ import annotations

import argparse
import csv
import gzip
import json
import os
import shutil
import subprocess
import sys
import time
from collections import defaultdict
from pathlib import Path

from benchpages import BENCH, damaged_truth, is_heldout, manifest, scorer, word_prf


ROOT = Path(__file__).resolve().parent.parent

# (label, --set overrides) of the warcplex runs; the default configuration is conf/local.yaml.
WARCPLEX_RUNS = [
    ("warcplex default cascade +filter", []),
    ("warcplex primary [blocks] +filter", ["extract.cascade=[blocks]"]),
    ("warcplex default cascade, no filter", ["perplexity.enabled=false"]),
    ("warcplex all-text preset +filter", ["config=conf/all-text.yaml"]),
    ("warcplex all-text preset, no filter", ["config=conf/all-text.yaml", "perplexity.enabled=false"]),
]
# (with the filter, without it): runs whose difference is the filter's effect (filter_effect)
FILTER_PAIRS = [("warcplex default cascade +filter", "warcplex default cascade, no filter"),
                ("warcplex all-text preset +filter", "warcplex all-text preset, no filter")]
SETS = ("data", "data-wcxb", "data-ml")
METRICS = ("rouge5_f", "word_f", "word_p", "word_r", "rouge1_f")
# The breakdowns (by dataset, page type, language): ROUGE-5 F1, then WCXB's word F1 (benchpages.word_prf).
BREAKDOWN = (("rouge5_f", "ROUGE-5 F1"), ("word_f", "word F1 (WCXB)"))
# jusText stoplists by language code (English elsewhere in the README's peer table); pages of
# other languages use jusText's language-independent mode (no stoplist, stop-word limits 0).
JUSTEXT_LANGUAGES = {"en": "English", "de": "German", "fr": "French", "es": "Spanish", "it": "Italian",
                     "pt": "Portuguese", "nl": "Dutch", "pl": "Polish", "ru": "Russian", "el": "Greek",
                     "cs": "Czech", "da": "Danish", "fi": "Finnish", "hu": "Hungarian", "sv": "Swedish",
                     "ro": "Romanian", "sk": "Slovak", "sl": "Slovenian", "bg": "Bulgarian", "hr": "Croatian",
                     "lt": "Lithuanian", "lv": "Latvian", "et": "Estonian", "tr": "Turkish", "id": "Indonesian",
                     "no": "Norwegian_Bokmal", "ga": "Irish", "mt": "Maltese", "be": "Belarusian", "uk": "Ukrainian"}


def justext_text(html: str, lang: str) -> str:
    import justext

    name = JUSTEXT_LANGUAGES.get(lang)
    if name in justext.get_stoplists():
        paragraphs = justext.justext(html, justext.get_stoplist(name))
    else:
        paragraphs = justext.justext(html, frozenset(), stopwords_low=0, stopwords_high=0)
    return "\n".join(p.text for p in paragraphs if not p.is_boilerplate)


def peer_extractors() -> dict:
    """The peers with their libraries' own defaults (as in the bench README); each gets (html, lang)."""
    import logging

    import html_text
    import trafilatura
    from readability import Document
    from resiliparse.extract.html2text import extract_plain_text

    logging.getLogger("readability").setLevel(logging.CRITICAL)  # a page it fails on scores empty, quietly
    return {
        "trafilatura (default)": lambda html, lang: trafilatura.extract(html) or "",
        "readability-lxml + html-text": lambda html, lang: html_text.extract_text(
            Document(html).summary(html_partial=True), guess_layout=True),
        "jusText": justext_text,
        "resiliparse main_content": lambda html, lang: extract_plain_text(html, main_content=True),
    }


def rows_by_id(bench: Path, name: str) -> dict[str, dict]:
    return {m["id"]: m for m in manifest(bench, name)}


def build_warc(bench: Path, name: str, work: Path, heldout_only: bool) -> tuple[Path, Path]:
    """The set's WARC and index (built once under ``work`` with the bench's make_warc.py)."""
    if name == "data" and not heldout_only:
        return bench / "warc" / "bench-dev.warc.gz", bench / "warc" / "bench-dev.index.tsv"
    warc = work / "warc" / f"{name}{'-heldout' if heldout_only else ''}.warc.gz"
    index = warc.parent / warc.name.replace(".warc.gz", ".index.tsv")  # where make_warc.py writes it
    if warc.exists() and index.exists():
        return warc, index
    source = bench / name
    if heldout_only:  # a data folder of the held-out pages only: their manifest rows, the datasets linked
        source = work / "warc" / f"{name}-heldout"
        shutil.rmtree(source, ignore_errors=True)
        source.mkdir(parents=True)
        rows = [m for m in manifest(bench, name) if is_heldout(m["id"])]
        (source / "manifest.jsonl").write_text("".join(json.dumps(m) + "\n" for m in rows))
        for dataset in {m["dataset"] for m in rows}:
            (source / dataset).symlink_to((bench / name / dataset).resolve())
    warc.parent.mkdir(parents=True, exist_ok=True)
    print(f"[bench] packing {source} into {warc}", file=sys.stderr, flush=True)
    subprocess.run([sys.executable, str(bench / "make_warc.py"), "--data", str(source), "--out", str(warc)],
                   check=True, stdout=subprocess.DEVNULL)
    return warc, index


def bench_pages(warc: Path, index: Path):
    """Yield (bench_id, decoded html) for every response record of a bench WARC."""
    from fastwarc.warc import ArchiveIterator, WarcRecordType

    from pipeline.reading.decode import decode_html

    by_record = {r["response_record_id"]: r["bench_id"] for r in csv.DictReader(open(index), delimiter="\t")}
    with open(warc, "rb") as fh:
        for record in ArchiveIterator(fh, record_types=WarcRecordType.response, parse_http=True):
            bench_id = by_record.get(record.record_id)
            if bench_id is None:
                continue
            charset = None
            ctype = record.http_headers.get("Content-Type") or ""
            if "charset=" in ctype:
                charset = ctype.split("charset=", 1)[1].split(";")[0].strip() or None
            yield bench_id, decode_html(record.reader.read(), charset)


def run_peer(extract, pages: list[tuple[str, str]], lang_of: dict, preds: Path) -> float:
    """Write one prediction per page; return pages per CPU second."""
    preds.mkdir(parents=True, exist_ok=True)
    cpu = 0.0
    for bench_id, html in pages:
        start = time.process_time()
        try:
            text = extract(html, lang_of.get(bench_id) or "en")
        except Exception:  # a peer failing on a page scores it as empty, like missing output
            text = ""
        cpu += time.process_time() - start
        (preds / f"{bench_id}.txt").write_text(text, encoding="utf-8")
    return len(pages) / cpu if cpu else float("nan")


def run_warcplex(label: str, overrides: list[str], args, warc: Path, index: Path, out: Path, preds: Path) -> float:
    """One real `warcplex run` (local Spark, Parquet) turned into predictions; return pages per task-CPU second."""
    config = next((o.split("=", 1)[1] for o in overrides if o.startswith("config=")), args.config)
    cmd = [str(ROOT / ".venv" / "bin" / "warcplex"), "run", "--input", str(warc), "--output", str(out),
           "--config", config, "--no-resume", "--overwrite", "--set", "index.enabled=false",
           "--set", "corpus.enabled=false"]  # the page output is what is scored; a fresh run each time
    for item in [o for o in overrides if not o.startswith("config=")] + args.set:
        cmd += ["--set", item]
    env = dict(os.environ, SPARK_LOCAL_IP=os.environ.get("SPARK_LOCAL_IP", "127.0.0.1"))
    print(f"[bench] {label}: {' '.join(cmd[1:])}", file=sys.stderr, flush=True)
    subprocess.run(cmd, check=True, cwd=ROOT, env=env, stdout=subprocess.DEVNULL)
    stats = json.loads((out / "stats.json").read_text())
    parquet = out.parent / f"{out.name}-parquet"  # only the language=*/ page folders, not the side files
    shutil.rmtree(parquet, ignore_errors=True)
    parquet.mkdir(parents=True)
    pages_root = out / "data" if (out / "data").is_dir() else out
    for folder in pages_root.resolve().glob("language=*"):
        # not named key=value: the files carry their own `language` column, which a hive partition of the same
        # name would clash with in parquet_to_preds.py ("Unable to merge: Field language has incompatible types")
        (parquet / folder.name.replace("=", "-")).symlink_to(folder)
    shutil.rmtree(preds, ignore_errors=True)
    subprocess.run([sys.executable, str(args.bench / "parquet_to_preds.py"), str(parquet), "--index", str(index),
                    "--out", str(preds)], check=True, stdout=subprocess.DEVNULL)
    return stats["run"]["pages_per_cpu_second"] or float("nan")


def told_types(out: Path, index: Path) -> dict[str, str]:
    """The page type warcplex wrote for each bench page of a run's output (``page_type``; pages it did not type:
    absent)."""
    import pyarrow.dataset as ds

    bench_of = {r["response_record_id"]: r["bench_id"] for r in csv.DictReader(open(index), delimiter="\t")}
    pages_root = out / "data" if (out / "data").is_dir() else out
    table = ds.dataset(pages_root, format="parquet").to_table(columns=["warc_record_id", "page_type"])
    return {bench_of[r]: t for r, t in zip(table.column("warc_record_id").to_pylist(),
                                           table.column("page_type").to_pylist()) if t and r in bench_of}


def score(preds: Path, args, name: str, ids: set[str], per_page: Path) -> list[dict]:
    """Per-page scores (the bench's score.py) of the pages in ``ids``."""
    id_file = per_page.with_suffix(".ids")
    id_file.write_text("".join(f"{i}\n" for i in sorted(ids)))
    subprocess.run([sys.executable, str(args.bench / "score.py"), "--pred", str(preds), "--data",
                    str(args.bench / name), "--ids", str(id_file), "--per-page", str(per_page), "--quiet"], check=True)
    rows = list(csv.DictReader(open(per_page)))
    meta = rows_by_id(args.bench, name)
    for row in rows:  # WCXB's word metric beside the bench scorer's (full-text truth only)
        truth = args.bench / name / meta[row["id"]]["dataset"] / "truth" / f"{row['id']}.txt"
        if row["rouge5_f"] and truth.exists():
            pred = preds / f"{row['id']}.txt"
            row["word_p"], row["word_r"], row["word_f"] = word_prf(
                pred.read_text(encoding="utf-8", errors="replace") if pred.exists() else "",
                truth.read_text(encoding="utf-8", errors="replace"))
    return rows


def filter_effect(with_filter: Path, without: Path, truth: Path, ids: set[str], meta: dict[str, dict],
                  tokenize) -> dict[str, tuple[float, float, int]]:
    """Per language (and ``all``): the share of boilerplate tokens the filter removed and of main tokens it
    kept, comparing a run's predictions with and without the filter on pages with full-text truth (a
    token is main while the truth still has an unmatched copy of it, boilerplate otherwise), and pages."""
    from collections import Counter

    sums: dict[str, Counter] = defaultdict(Counter)
    for page in ids:
        row = meta[page]
        truth_file = truth / row["dataset"] / "truth" / f"{page}.txt"
        if row.get("truth_type") != "fulltext" or not truth_file.exists():
            continue
        gold = Counter(tokenize(truth_file.read_text(encoding="utf-8", errors="replace")))
        counts = []
        for preds in (with_filter, without):
            path = preds / f"{page}.txt"
            bag = Counter(tokenize(path.read_text(encoding="utf-8", errors="replace"))) if path.exists() else Counter()
            main = bag & gold
            counts.append((sum(main.values()), sum((bag - main).values())))
        (main_with, boiler_with), (main_without, boiler_without) = counts
        for key in (row.get("lang") or "-", "all"):
            sums[key].update(main_with=main_with, main_without=main_without, boiler_with=boiler_with,
                             boiler_without=boiler_without, pages=1)
    return {key: (1 - c["boiler_with"] / c["boiler_without"] if c["boiler_without"] else 0.0,
                  c["main_with"] / c["main_without"] if c["main_without"] else 1.0, c["pages"])
            for key, c in sums.items()}


def print_filter_effects(systems: list[tuple[str, Path, float]], args, name: str, ids: set[str],
                         meta: dict[str, dict]) -> None:
    """The filter's effect for each run pair of FILTER_PAIRS that ran: boilerplate removed, main kept, by language."""
    preds = {label: folder for label, folder, _ in systems}
    for with_label, without_label in FILTER_PAIRS:
        if with_label not in preds or without_label not in preds:
            continue
        effect = filter_effect(preds[with_label], preds[without_label], args.bench / name, ids, meta, scorer(args.bench).tokenize)
        order = ["all"] + sorted((k for k in effect if k != "all"), key=lambda k: -effect[k][2])[:15]
        print(f"\nthe filter in '{with_label}': boilerplate tokens removed / main tokens kept (pages)")
        print("  ".join(f"{k}: {effect[k][0]:.3f} / {effect[k][1]:.3f} ({effect[k][2]})" for k in order))


def mean(values: list[float]) -> float:
    return sum(values) / len(values) if values else float("nan")


def print_set(name: str, results: list[tuple[str, list[dict], float]], meta: dict[str, dict], title: str) -> None:
    """Headline metrics, then ROUGE-5 F1 by dataset, by page type and by language."""
    print(f"\n== {name}: {title} ==")
    width = max(len(label) for label, _, _ in results)
    print(f"\n{'system':{width}s}  {'ROUGE-5 F1':>10s} {'word F1':>7s} {'word P':>7s} {'word R':>7s} {'BoW F1':>7s} "
          f"{'snippet F':>9s} {'with':>6s} {'without':>7s} {'pages/s':>8s}")
    for label, rows, speed in results:
        full = [r for r in rows if r["rouge5_f"]]
        snippets = [r for r in rows if r["snippet_f"]]
        cells = " ".join(f"{mean([float(r[m]) for r in full]):{10 if m == 'rouge5_f' else 7}.3f}" for m in METRICS)
        snip = (f"{mean([float(r['snippet_f']) for r in snippets]):9.3f} "
                f"{mean([float(r['with_recall']) for r in snippets]):6.3f} "
                f"{mean([float(r['without_rate']) for r in snippets]):7.3f}") if snippets else f"{'-':>9s} {'-':>6s} {'-':>7s}"
        print(f"{label:{width}s}  {cells} {snip} {speed:8.1f}")
    if any(r["snippet_f"] for r in results[0][1]):
        print("(with: the share of a page's `with` snippets found; without: of its `without` snippets wrongly kept)")
    damaged = {i for i, m in meta.items() if m.get("damaged")}
    if damaged & {r["id"] for r in results[0][1]}:
        kept = [[float(r["rouge5_f"]) for r in rows if r["rouge5_f"] and r["id"] not in damaged] for _, rows, _ in results]
        print(f"\nROUGE-5 F1 without the {len(results[0][1]) - len(kept[0])} pages whose truth spells words letter by "
              "letter or splits the page's words (benchpages.damaged_truth): " + ", ".join(f"{label} {mean(k):.3f}"
                                                            for (label, _, _), k in zip(results, kept)))
    told = [(m["page_type"], m["told_type"]) for m in (meta[r["id"]] for r in results[0][1])
            if m.get("page_type") and m.get("told_type")]
    if told:
        print(f"\npage types warcplex told: {sum(a == b for a, b in told) / len(told):.3f} of {len(told)} pages as "
              "the set's page type")
    for key, heading in (("dataset", "dataset"), ("page_type", "page type"),
                         ("told_type", "page type warcplex told (the default run's page_type)"), ("lang", "language")):
        for metric, metric_name in BREAKDOWN:
            groups = defaultdict(lambda: defaultdict(list))
            for label, rows, _ in results:
                for r in rows:
                    if r["rouge5_f"]:
                        groups[meta[r["id"]].get(key) or "-"][label].append(float(r[metric]))
            n_pages = sum(len(v[results[0][0]]) for v in groups.values())
            if len(groups) < 2 or "-" in groups and len(groups["-"][results[0][0]]) > n_pages // 2:
                break  # a set without this breakdown
            order = sorted(groups, key=lambda g: -len(groups[g][results[0][0]]))[:16]
            print(f"\n{metric_name} per {heading} (pages)\n{'system':{width}s}  " + " ".join(f"{g[:10]:>10s}" for g in order))
            print(f"{'':{width}s}  " + " ".join(f"{'(' + str(len(groups[g][results[0][0]])) + ')':>10s}" for g in order))
            for label, _, _ in results:
                print(f"{label:{width}s}  " + " ".join(f"{mean(groups[g][label]):10.3f}" for g in order))
    snippets = defaultdict(lambda: defaultdict(list))  # the snippet set by language: with found / without kept
    for label, rows, _ in results:
        for r in rows:
            if r["snippet_f"]:
                snippets[meta[r["id"]].get("lang") or "-"][label].append((float(r["with_recall"]), float(r["without_rate"])))
    if snippets:
        order = sorted(snippets, key=lambda g: -len(snippets[g][results[0][0]]))[:12]
        print(f"\nsnippets per language: `with` found / `without` kept (pages)\n{'system':{width}s}  "
              + " ".join(f"{g[:11]:>11s}" for g in order))
        print(f"{'':{width}s}  " + " ".join(f"{'(' + str(len(snippets[g][results[0][0]])) + ')':>11s}" for g in order))
        for label, _, _ in results:
            print(f"{label:{width}s}  " + " ".join(
                f"{mean([w for w, _ in snippets[g][label]]):5.3f}/{mean([o for _, o in snippets[g][label]]):5.3f}"
                for g in order))

def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--bench", type=Path, default=BENCH)
    parser.add_argument("--work", type=Path, default=ROOT / "build" / "bench-quality")
    parser.add_argument("--config", default="conf/local.yaml")
    parser.add_argument("--sets", default=",".join(SETS), help="comma-separated dev sets (folders of the bench)")
    parser.add_argument("--set", action="append", default=[], help="extra override for every warcplex run")
    parser.add_argument("--runs", help="comma-separated subset of runs by number (1-based) or `peers`")
    parser.add_argument("--heldout-only", action="store_true",
                        help="pack and run only the held-out pages (about 30%% of each set; the same figures)")
    args = parser.parse_args()
    if not (args.bench / "score.py").exists():
        sys.exit(f"bench_quality: {args.bench} has no score.py (need ../shared/bench)")
    from pipeline.reading.decode import decode_html

    wanted = set(args.runs.split(",")) if args.runs else None
    for name in args.sets.split(","):
        meta = rows_by_id(args.bench, name)
        for row in meta.values():  # benchpages.damaged_truth: figures with and without such pages
            truth = args.bench / name / row["dataset"] / "truth" / f"{row['id']}.txt"
            page = args.bench / name / row["dataset"] / "pages" / f"{row['id']}.html.gz"  # (decode_html: the pipeline's)
            row["damaged"] = truth.exists() and damaged_truth(
                truth.read_text(encoding="utf-8", errors="replace"),
                decode_html(gzip.decompress(page.read_bytes())) if page.exists() else None)
        work = args.work / name
        work.mkdir(parents=True, exist_ok=True)
        warc, index = build_warc(args.bench, name, args.work, args.heldout_only)
        systems = []  # (label, predictions folder, speed)
        for number, (label, overrides) in enumerate(WARCPLEX_RUNS, 1):
            if wanted and str(number) not in wanted:
                continue
            preds = work / f"preds{number}"
            systems.append((label, preds, run_warcplex(label, overrides, args, warc, index, work / f"run{number}", preds)))
            if number == 1:  # the default's page types: a breakdown of every system's scores
                for bench_id, page_type in told_types(work / f"run{number}", index).items():
                    meta[bench_id]["told_type"] = page_type
        if not wanted or "peers" in wanted:
            pages = list(bench_pages(warc, index))
            lang_of = {i: m.get("lang") for i, m in meta.items()}
            for number, (label, extract) in enumerate(peer_extractors().items(), 1):
                print(f"[bench] {name}: {label} on {len(pages)} pages", file=sys.stderr, flush=True)
                preds = work / f"peer{number}"
                systems.append((label, preds, run_peer(extract, pages, lang_of, preds)))
        heldout = {i for i in meta if is_heldout(i)}
        scopes = [("held-out pages (never seen by the block classifier's fit)", heldout, "heldout")]
        if not args.heldout_only:
            scopes.insert(0, ("all dev pages", set(meta), "all"))
        for title, ids, tag in scopes:
            results = [(label, score(preds, args, name, ids, work / f"{preds.name}.{tag}.csv"), speed)
                       for label, preds, speed in systems]
            print_set(name, results, meta, title)
            print_filter_effects(systems, args, name, ids, meta)


if __name__ == "__main__":
    main()
