#!/usr/bin/env python3
"""Measure HTML charset decoding on every page of ../shared/bench (data, data-wcxb, data-ml).

    PYTHONPATH=scripts python scripts/studies/check_decoding.py [--bench DIR] [--show ID ...]

For each page the *strict decodes* are the payload decoded without a single error in UTF-8,
in its ``<meta>`` charset and in each candidate detector's guess (BOM stripped, NULs dropped
as the decoder does). It prints, per policy:

- ``utf8 kept``: pages that decode as strict UTF-8 whose text is exactly that decode;
- ``= strict``: pages with any strict decode whose text equals one of them;
- ``no strict``: pages with no strict decode, and how many of those the policy read as UTF-8;
- ``truth recall``: on pages that are not strict UTF-8, the share of the truth's non-ASCII
  words found in the decoded text (the truth files are UTF-8 text people checked);
- ``ms/page``: the detector's CPU time per page (64 KiB sample).

Policies: ``old`` (warcplex before this change: resiliparse detection first), ``warcplex``
(pipeline/reading/decode.py: BOM, UTF-16 sniff, UTF-8 first with stray-byte tolerance, declared,
detected) with each detector plugged in, and each detector alone (its guess, invalid bytes
replaced). The detectors: resiliparse (uchardet), charset-normalizer, chardet, cchardet.
"""

from __future__ import annotations

import argparse
import re
import sys
import time
from collections import defaultdict
from pathlib import Path

from pipeline.reading import decode as charset

from benchpages import BENCH, SETS, manifest, page_bytes, page_path, truth_path  # scripts/: run with PYTHONPATH=scripts

SAMPLE = charset.DETECT_BYTES


def _sample(html: bytes) -> bytes:
    return html if len(html) <= SAMPLE else html[:SAMPLE // 2] + html[-SAMPLE // 2:]


def detectors() -> dict[str, callable]:
    from resiliparse.parse.encoding import detect_encoding
    found = {"resiliparse": lambda b: detect_encoding(b, max_len=SAMPLE)}
    try:
        import charset_normalizer
        found["charset-normalizer"] = lambda b: (charset_normalizer.from_bytes(_sample(b)).best() or
                                                 type("N", (), {"encoding": None})).encoding
    except ImportError:
        pass
    try:
        import chardet
        found["chardet"] = lambda b: chardet.detect(_sample(b))["encoding"]
    except ImportError:
        pass
    try:
        import cchardet
        found["cchardet"] = lambda b: cchardet.detect(_sample(b))["encoding"]
    except ImportError:
        pass
    return found


def old_decode(html: bytes) -> str:
    """decode_html as it was before this rule (for the comparison)."""
    from resiliparse.parse.encoding import bytes_to_str, detect_encoding
    return bytes_to_str(html, detect_encoding(html, max_len=65536), fallback_encodings=["utf-8", "cp1252"])


def finish(text: str) -> str:
    return text.removeprefix("\ufeff").replace("\x00", "")


def pages(bench: Path):
    """(set folder, page id, HTML bytes, truth path) of every page of the three dev sets there are."""
    for _, folder, _ in SETS:
        if (bench / folder / "manifest.jsonl").exists():
            for row in manifest(bench, folder):
                yield folder, row["id"], page_bytes(page_path(bench, folder, row)), truth_path(bench, folder, row)


_WORD = re.compile(r"\w+")


def non_ascii_words(text: str) -> set[str]:
    return {w for w in _WORD.findall(text) if not w.isascii()}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--bench", type=Path, default=BENCH)
    parser.add_argument("--show", nargs="*", default=[], help="page ids whose text to print before/after")
    args = parser.parse_args(argv)
    if not (args.bench / "data").is_dir():
        print(f"check_decoding: error: {args.bench}/data not found", file=sys.stderr)
        return 2
    dets = detectors()
    policies: dict[str, callable] = {"old": old_decode}
    for det in dets:
        policies[f"warcplex+{det}"] = det
        policies[f"{det} alone"] = det
    stats: dict[str, dict[str, float]] = defaultdict(lambda: defaultdict(float))
    det_time: dict[str, float] = defaultdict(float)
    no_strict_pages: list[str] = []
    total = utf8_pages = 0
    shown: dict[str, dict[str, str]] = {}
    for set_name, page_id, html, truth_file in pages(args.bench):
        total += 1
        current = {}
        for det, fn in dets.items():
            start = time.process_time()
            current[det] = fn(html)
            det_time[det] += time.process_time() - start
        utf8 = charset.strict(html, "utf-8")
        labels = [charset.normalize_label(charset.meta_charset(html))]
        labels += [charset.normalize_label(g) for g in current.values()]
        stricts = {finish(utf8)} if utf8 is not None else set()
        for label in dict.fromkeys(l for l in labels if l and not l.startswith(("utf-16", "utf-32"))):
            decoded = charset.strict(html, label)
            if decoded is not None:
                stricts.add(finish(decoded))
        utf8_pages += utf8 is not None
        if not stricts:
            no_strict_pages.append(f"{set_name}/{page_id}")
        truth_words = None
        if utf8 is None and truth_file.suffix == ".txt" and truth_file.exists():  # full-text truth
            truth_words = non_ascii_words(truth_file.read_text(encoding="utf-8", errors="replace"))
        for name, how in policies.items():
            if name == "old":
                text = old_decode(html)
            elif name.endswith(" alone"):
                label = charset.normalize_label(current[how]) or "utf-8"
                text = finish(html.decode(label if not label.startswith(("utf-16", "utf-32")) else "utf-8",
                                          "replace"))
            else:
                original = charset.detected_encoding
                charset.detected_encoding = lambda _html, g=current[how]: charset.normalize_label(g) or "cp1252"
                try:
                    text = charset.decode_html(html)
                finally:
                    charset.detected_encoding = original
            s = stats[name]
            if utf8 is not None:
                s["utf8_kept"] += text == finish(utf8)
            if stricts:
                s["eq_strict"] += text in stricts
            else:
                s["no_strict_utf8"] += charset.mostly_utf8(html) is not None and text == finish(
                    html.decode("utf-8", "replace"))
            if truth_words:
                found = non_ascii_words(text)
                s["truth_words"] += len(truth_words)
                s["truth_found"] += len(truth_words & found)
            if page_id in args.show:
                shown.setdefault(page_id, {})[name] = text
    with_strict = total - len(no_strict_pages)
    print(f"{total} pages: {utf8_pages} strict UTF-8, {with_strict} with some strict decode, "
          f"{len(no_strict_pages)} with none")
    print(f"{'policy':32} {'utf8 kept':>13} {'= strict':>13} {'no strict->utf8':>16} {'truth recall':>13} {'ms/page':>8}")
    for name, s in stats.items():
        det = policies[name] if name != "old" else "resiliparse"
        recall = s["truth_found"] / s["truth_words"] if s["truth_words"] else float("nan")
        print(f"{name:32} {int(s['utf8_kept']):>6}/{utf8_pages:<6} {int(s['eq_strict']):>6}/{with_strict:<6} "
              f"{int(s['no_strict_utf8']):>7}/{len(no_strict_pages):<8} {recall:>13.4f} "
              f"{1000 * det_time[det] / total:>8.2f}")
    print("pages with no strict decode:", " ".join(no_strict_pages))
    for page_id, texts in shown.items():
        for name in ("old", "warcplex+resiliparse"):
            text = texts.get(name, "")
            hits = [m.start() for m in re.finditer("Ã|\ufffd", text)][:3]
            print(f"--- {page_id} [{name}] mojibake/U+FFFD at {hits}")
            for hit in hits:
                print("   ", repr(text[max(0, hit - 60):hit + 60]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
