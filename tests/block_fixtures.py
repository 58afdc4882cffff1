"""The block stage's frozen output on the real pages of tests/data: per page its blocks (every field), the structure
heuristics' candidates, the dense feature matrix, the hashed features and each block's probability under the shipped
model. tests/test_block_fixtures.py compares a fresh run with them; a change of the parse, the features or the model
that is meant rewrites them:

    .venv/bin/python tests/block_fixtures.py

and the commit says why they changed (the figures it prints: pages, blocks, and how many changed).
"""

from __future__ import annotations

import gzip
import json
import sys
from dataclasses import astuple
from pathlib import Path

import numpy as np

DATA = Path(__file__).resolve().parent / "data"
FIXTURES = DATA / "block-features"
WARCS = sorted((DATA / "cc-genuine").glob("*.warc.gz")) + sorted((DATA / "other-real").glob("*.warc.gz"))


def warc_pages(path: Path) -> list[str]:
    """Decoded HTML of the response pages of a WARC, as the pipeline reads them."""
    from pipeline.config import load_settings
    from pipeline.reading.decode import decode_html
    from pipeline.reading.reader import read_pages
    from pipeline.reading.shards import Split
    from pipeline.stats import Stats

    settings = load_settings(None, [])
    return [decode_html(page.html, page.http_charset)
            for page in read_pages(Split(str(path), 0, 1), settings.input, settings.s3, Stats()) if page.kind == "html"]


def page_record(stage, html: str) -> dict:
    """What the fixtures hold of one page: its blocks and candidates (JSON) and its matrices (arrays)."""
    from pipeline.steps.blocks.parse import parse_page
    from pipeline.steps.extractors import PageTooDeep

    try:
        features = stage.page_features(html)
        blocks, X, hashed = features.blocks, features.X, features.hashed
        probs = stage.classify(html).probs
    except PageTooDeep:
        return {"too_deep": True}
    _, markup = parse_page(html, nodes=True)
    return {"blocks": [list(astuple(b)) for b in blocks], "nodes": list(astuple(markup.nodes)),
            "X": X, "hashed": hashed, "probs": np.asarray(probs, dtype=np.float64)}


def current() -> dict[str, dict]:
    """Each real page's record (key: the WARC's name and the page's number in it) as the code computes it now."""
    from pipeline.config import load_settings
    from pipeline.steps.blocks.step import BlocksExtractor

    settings = load_settings(None, [])
    stage = BlocksExtractor(settings.extract, settings.langid)
    return {f"{path.name}#{i}": page_record(stage, html)
            for path in WARCS for i, html in enumerate(warc_pages(path))}


def _json(value):
    """Tuples as lists, all the way down (what a JSON round trip gives)."""
    return json.loads(json.dumps(value))


def load() -> dict[str, dict]:
    """The frozen records, as :func:`current` makes them (after a JSON round trip of their blocks and candidates)."""
    meta = json.loads(gzip.decompress((FIXTURES / "pages.json.gz").read_bytes()).decode("utf-8"))
    arrays = np.load(FIXTURES / "features.npz")
    out = {}
    for key, page in meta.items():
        if page.get("too_deep"):
            out[key] = page
            continue
        lengths = arrays[f"{key}/hashed_lengths"]
        flat = arrays[f"{key}/hashed"].tolist()
        hashed, start = [], 0
        for length in lengths.tolist():
            hashed.append(flat[start:start + length])
            start += length
        out[key] = {**page, "X": arrays[f"{key}/X"], "hashed": hashed, "probs": arrays[f"{key}/probs"]}
    return out


def write(records: dict[str, dict]) -> None:
    FIXTURES.mkdir(parents=True, exist_ok=True)
    meta, arrays = {}, {}
    for key, page in records.items():
        if page.get("too_deep"):
            meta[key] = page
            continue
        meta[key] = {"blocks": _json(page["blocks"]), "nodes": _json(page["nodes"])}
        arrays[f"{key}/X"] = page["X"]
        arrays[f"{key}/hashed"] = np.fromiter((i for row in page["hashed"] for i in row), dtype=np.int32)
        arrays[f"{key}/hashed_lengths"] = np.array([len(row) for row in page["hashed"]], dtype=np.int32)
        arrays[f"{key}/probs"] = page["probs"]
    text = json.dumps(meta, ensure_ascii=False, sort_keys=True) + "\n"
    (FIXTURES / "pages.json.gz").write_bytes(gzip.compress(text.encode("utf-8"), compresslevel=9, mtime=0))
    np.savez_compressed(FIXTURES / "features.npz", **arrays)


def main() -> int:
    records = current()
    before = load() if (FIXTURES / "pages.json.gz").exists() else {}
    changed = sum(1 for key, page in records.items() if key not in before or not same(page, before[key]))
    write(records)
    blocks = sum(len(page.get("blocks", ())) for page in records.values())
    print(f"{FIXTURES}: {len(records)} pages, {blocks} blocks; {changed} pages changed", file=sys.stderr)
    return 0


def same(got: dict, want: dict) -> bool:
    if got.get("too_deep") or want.get("too_deep"):
        return bool(got.get("too_deep")) == bool(want.get("too_deep"))
    return (_json(got["blocks"]) == want["blocks"] and _json(got["nodes"]) == want["nodes"]
            and np.array_equal(got["X"], want["X"], equal_nan=True) and got["hashed"] == want["hashed"]
            and np.array_equal(got["probs"], want["probs"]))


if __name__ == "__main__":
    sys.exit(main())
