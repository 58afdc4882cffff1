"""The bench pages, their fixed held-out split and the bench's scorer, for the tools and studies that read them.

The bench (``../shared/bench``, beside the checkout; ``--bench`` elsewhere) holds three dev sets of pages with the
main text people marked: ``data`` (the 2006-2019 English benchmarks, and the snippet set), ``data-wcxb`` (modern
English pages of seven types) and ``data-ml`` (non-English pages). Each has a ``manifest.jsonl`` and, per dataset,
``pages/<id>.html.gz`` and ``truth/<id>.txt`` (full text) or ``truth/<id>.json`` (``with``/``without`` snippets).

:func:`is_heldout` is the one split of every set: the pages it holds out are never fitted or tuned on, and are the
pages figures are reported on. The package never reads the bench: this module lives with the tools
(``scripts/train_blocks.py``, ``calibrate_languages.py``, ``bench_quality.py``, ``bench_corpus.py``,
``scripts/studies/``, ``lm_models/webeval.py``, ``lm_models/selftrain_auc.py``) and the tests. The tools in
``scripts/`` import it by name (their own directory is on the path); the studies and the ``lm_models/`` tools run
with ``scripts/`` on the path, ``PYTHONPATH=scripts python scripts/studies/filter_study.py`` (the tests: pytest's
``pythonpath``).
"""

from __future__ import annotations

import functools
import gzip
import hashlib
import importlib.util
import json
import re
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BENCH = ROOT.parent / "shared" / "bench"
# The three dev sets: (name, folder under the bench, the manifest key pages are grouped by when weighted).
SETS = (("data", "data", "dataset"), ("wcxb", "data-wcxb", "page_type"), ("ml", "data-ml", "lang"))
HELDOUT_RULE = "int(md5(page_id).hexdigest(), 16) % 10 >= 7"


def is_heldout(page_id: str) -> bool:
    """The fixed held-out part of every bench dev set (about 30%, :data:`HELDOUT_RULE`): never fitted or tuned on."""
    return int(hashlib.md5(page_id.encode()).hexdigest(), 16) % 10 >= 7


@functools.lru_cache(maxsize=None)
def scorer(bench: Path = BENCH):
    """The bench's own ``score.py`` as a module (``tokenize``, ``score_pair``, ``score_snippets``): figures are only
    comparable when computed by it."""
    spec = importlib.util.spec_from_file_location("bench_score", Path(bench) / "score.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# WCXB's own metric (its evaluate.py): words are lower-cased ``\w+`` runs, compared as bags (multisets).
_WORD = re.compile(r"\w+")


def word_prf(pred: str, truth: str) -> tuple[float, float, float]:
    r"""WCXB's per-page word precision, recall and F1: the overlap of the two bags of lower-cased ``\w+`` tokens.
    Both empty: 1.0 each; one of them empty: 0.0 (recall 1.0 when the truth is empty), as the bench's scorer."""
    pred_words, truth_words = Counter(_WORD.findall(pred.lower())), Counter(_WORD.findall(truth.lower()))
    if not pred_words and not truth_words:
        return 1.0, 1.0, 1.0
    if not pred_words or not truth_words:
        return 0.0, 1.0 if not truth_words else 0.0, 0.0
    overlap = sum((pred_words & truth_words).values())
    precision, recall = overlap / sum(pred_words.values()), overlap / sum(truth_words.values())
    return precision, recall, 2 * precision * recall / (precision + recall) if overlap else 0.0


def manifest(bench: Path, folder: str) -> list[dict]:
    """The rows of a dev set's ``manifest.jsonl`` (``folder``: ``data``, ``data-wcxb`` or ``data-ml``)."""
    with open(Path(bench) / folder / "manifest.jsonl", encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


def page_path(bench: Path, folder: str, row: dict) -> Path:
    """The gzipped HTML of a manifest row's page."""
    return Path(bench) / folder / row["dataset"] / "pages" / f"{row['id']}.html.gz"


def truth_path(bench: Path, folder: str, row: dict) -> Path:
    """A manifest row's truth: ``.json`` snippets for the snippet set's pages, ``.txt`` full text otherwise."""
    suffix = "json" if row.get("truth_type") == "snippets" else "txt"
    return Path(bench) / folder / row["dataset"] / "truth" / f"{row['id']}.{suffix}"


def page_bytes(path: Path) -> bytes:
    """A page's HTML bytes as crawled (the bench stores them gzipped)."""
    return gzip.decompress(Path(path).read_bytes())


def dev_items(bench: Path) -> list[dict]:
    """Every full-text dev page of the three sets, with its set, weighting group and page type; and the pages of
    the snippet set (``snippets``: trafilatura's eval in bench data, truth as ``with``/``without`` snippets), which
    are never fitted on (``scripts/train_blocks.py`` judges its page types' decisions on their dev pages)."""
    items = []
    for name, folder, group in SETS:
        for m in manifest(bench, folder):
            kind = m.get("truth_type", "fulltext")
            if kind not in ("fulltext", "snippets"):
                continue
            items.append({"id": m["id"], "set": name if kind == "fulltext" else "snippets", "dataset": m["dataset"],
                          "group": m.get(group) or "und", "lang": m.get("lang") or "und",
                          "page_type": m.get("page_type") or "-", "url": m.get("url") or "http://x/",
                          "html": str(page_path(bench, folder, m)), "truth": str(truth_path(bench, folder, m))})
    return items


def damaged_truth(truth: str, html: str | None = None) -> bool:
    """A truth that splits the page's words: made by a tool that puts a space between adjacent inline elements, which
    a browser renders as one word. data-ml's europa pages write accented letters in their own ``<B>`` elements
    (``<B>Le Pr</B><B>ésident</B>``): their truth reads "Le Pr ésident", "d él égation", and in Greek spells words
    letter by letter ("Η Ε π ι τ ρ ο π ή" for "Η Επιτροπή"). Either over a fifth of the truth's tokens are single
    lower-case letters in runs of three or more, or (with the page's ``html``) at least 1% of its adjacent token
    pairs, and at least three different ones, join into a word of the page's text (two runs of letters, the second
    lower-case) that neither token is alone. No extractor that writes the page's words can match such a truth: the
    figures are given with and without these pages, and nothing is fitted to them."""
    tokens = truth.split()
    single = [len(t) == 1 and t.isalpha() and t.islower() for t in tokens]
    spelled = run = 0
    for flag in single + [False]:
        if flag:
            run += 1
            continue
        if run >= 3:
            spelled += run
        run = 0
    if spelled > 0.2 * max(len(tokens), 1):
        return True
    if html is None or len(tokens) < 2:
        return False
    import lxml.html

    try:
        words = set(lxml.html.fromstring(html).text_content().split())
    except Exception:  # noqa: BLE001  (no document to read)
        return False
    joined = [(a, b) for a, b in zip(tokens, tokens[1:])
              if a.isalpha() and b.isalpha() and b[0].islower() and a + b in words and a not in words and b not in words]
    return len(set(joined)) >= 3 and len(joined) >= 0.01 * (len(tokens) - 1)


def main(argv: list[str] | None = None) -> int:
    """``python scripts/benchpages.py ids FOLDER [--heldout]``: the ids of a dev set's pages on one side of the split
    (default the dev side), one a line, for ``warcplex calibrate --ids``."""
    import argparse

    parser = argparse.ArgumentParser(description=main.__doc__.split("\n")[0])
    parser.add_argument("command", choices=("ids",))
    parser.add_argument("folder", help="data, data-wcxb or data-ml")
    parser.add_argument("--heldout", action="store_true", help="the held-out side instead of the dev side")
    parser.add_argument("--bench", type=Path, default=BENCH)
    args = parser.parse_args(argv)
    if not (args.bench / args.folder / "manifest.jsonl").is_file():
        parser.exit(2, f"benchpages: error: {args.bench / args.folder}/manifest.jsonl not found (need ../shared/bench)\n")
    for row in manifest(args.bench, args.folder):
        if is_heldout(row["id"]) == args.heldout:
            print(row["id"])
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
