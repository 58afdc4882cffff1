#!/usr/bin/env python3
"""The datatrove peer of `make bench`: a FineWeb-style pipeline on one or more local WARC files.

Runs in its own virtualenv (build/datatrove-venv, made by `make bench`; it never imports
warcplex): WarcReader -> Trafilatura -> LanguageFilter (fastText lid.176, English) -> a KenLM
sentence filter -> ParquetWriter, through datatrove's LocalPipelineExecutor, one task per WARC
file. Nothing is downloaded: the LID model is the local lid.176.ftz warcplex ships (datatrove's
own LID step would fetch lid.176.bin) and the KenLM model is warcplex's English binary
(datatrove's perplexity helpers would fetch cc_net models from a hub).

    build/datatrove-venv/bin/python scripts/bench_datatrove.py --input DIR_OF_WARCS \
        --output DIR --lid lid.176.ftz --kenlm lm_models/en/en.3gram.trie.bin [--threshold 316228]

Prints one JSON line: documents read, kept, written, and the executor's per-step stats.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys

from datatrove.data import Document
from datatrove.executor import LocalPipelineExecutor
from datatrove.pipeline.extractors import Trafilatura
from datatrove.pipeline.filters import LanguageFilter
from datatrove.pipeline.filters.base_filter import BaseFilter
from datatrove.pipeline.readers import WarcReader
from datatrove.pipeline.writers import ParquetWriter
from datatrove.utils.lid import FT176LID

SENTENCE_END = re.compile(r"(?<=[.!?])\s+")


class LocalFT176LID(FT176LID):
    """datatrove's fastText lid.176 LID, loaded from a local file instead of its download URL."""

    def __init__(self, model_path: str, languages: list[str] | None = None) -> None:
        super().__init__(languages)
        self.model_path = model_path

    @property
    def model(self):
        if self._model is None:
            from fasttext.FastText import _FastText

            self._model = _FastText(self.model_path)
        return self._model


class KenLMSentenceFilter(BaseFilter):
    """Drops sentences whose KenLM perplexity exceeds ``threshold``; drops documents left empty."""

    name = "KenLM sentence filter"

    def __init__(self, model_path: str, threshold: float) -> None:
        super().__init__()
        self.model_path = model_path
        self.threshold = threshold
        self._model = None

    @property
    def model(self):
        if self._model is None:
            import kenlm

            self._model = kenlm.Model(self.model_path)
        return self._model

    def filter(self, doc: Document) -> bool:
        kept_lines = []
        for line in doc.text.split("\n"):
            kept = []
            for sentence in SENTENCE_END.split(line.strip()):
                tokens = sentence.lower().split()
                if not tokens:
                    continue
                if self.model.perplexity(" ".join(tokens)) <= self.threshold:
                    kept.append(sentence)
                self.stat_update("sentences")
            if kept:
                kept_lines.append(" ".join(kept))
        doc.text = "\n".join(kept_lines)
        return bool(doc.text)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--input", required=True, help="a folder of *.warc.gz files (one task each)")
    parser.add_argument("--output", required=True)
    parser.add_argument("--lid", required=True, help="local fastText lid.176 model (.ftz or .bin)")
    parser.add_argument("--kenlm", required=True, help="local KenLM binary (English)")
    parser.add_argument("--threshold", type=float, default=316228.0, help="sentence perplexity cut-off")
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--timeout", type=float, default=10.0,
                        help="Trafilatura's per-document wall-clock limit (datatrove's default, 1 s, drops most "
                             "pages on a loaded machine and restarts its extraction process each time)")
    args = parser.parse_args(argv)
    names = sorted(n for n in os.listdir(args.input) if n.endswith(".warc.gz")) if os.path.isdir(args.input) else []
    if not names:
        print(f"bench_datatrove: error: no *.warc.gz in {args.input}", file=sys.stderr)
        return 2
    language_filter = LanguageFilter(languages=["en"])
    language_filter.model = LocalFT176LID(args.lid, ["en"])
    executor = LocalPipelineExecutor(
        pipeline=[
            WarcReader(args.input, glob_pattern="*.warc.gz"),
            Trafilatura(favour_precision=True, timeout=args.timeout),
            language_filter,
            KenLMSentenceFilter(args.kenlm, args.threshold),
            ParquetWriter(os.path.join(args.output, "data")),
        ],
        tasks=len(names),
        workers=min(len(names), args.workers),
        logging_dir=os.path.join(args.output, "logs"),
        skip_completed=False,
    )
    stats = executor.run()
    print(json.dumps({"stats": json.loads(stats.to_json())}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
