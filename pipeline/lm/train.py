"""Train a KenLM model from the cleaned text of a finished warcplex run (``warcplex train-lm``).

The corpus is the run's own Parquet output for one language (``data/language=xx/``), reduced
to the text the run is most sure of and cleaned of repeated lines:

1. **Pages**: kept by the cascade's primary stage (``extract.cascade[0]`` of the run, or a WET
   record's text) with no ``fallback_reason``, a language-ID score of at least
   ``min_language_score``, and at least ``min_words`` LM tokens of kept text.
2. **Lines**: every line (paragraph) of those pages is counted over the whole selection by its
   normalised form; a line seen more than once (menus, footers, cookie notices, share buttons)
   is dropped everywhere, so repeated boilerplate cannot enter the model.
3. **Sentences**: the remaining lines are split with the pipeline's splitter (sentencex) and
   normalised with :func:`pipeline.lm_text.normalize_for_lm`, exactly as the filter
   scores them (CJK become one token per character); sentences of 3-200 tokens with at least
   half alphabetic tokens are kept, as in ``lm_models/corpora.py``.

One sentence in ten (by the md5 of its normalised text) is held out: the model never sees
it, and its per-sentence perplexities give the held-out figures and the percentile
thresholds of the registry entry. The model is built with KenLM's ``lmplz`` and
``build_binary``, the tools ``make models`` builds (``lm_models/build_tools.sh``).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import os
import shutil
import subprocess
import tempfile
import time
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Iterable, Iterator

import yaml

from pipeline.config import PROJECT_ROOT, resolve_path
from pipeline.model_cache import file_sha256, kenlm_model
from pipeline.reading.reader import default_extractors
from pipeline.model_registry import load_registry
from pipeline.lm_text import NORMALIZATION_VERSION, lm_tokens
from pipeline.perplexity_rule import perplexity
from pipeline.steps.sentences import split
from pipeline.user_errors import print_error

PERCENTILES = (10, 25, 50, 60, 70, 75, 80, 90, 95, 98, 99)
MIN_SENTENCE_TOKENS, MAX_SENTENCE_TOKENS = 3, 200


class TrainError(ValueError):
    """Input that cannot give a model (no such run or language, too little text, no KenLM tools)."""


@dataclass(frozen=True)
class TrainOptions:
    """What ``warcplex train-lm`` selects and how it builds the model."""

    language: str
    order: int = 4
    """n-gram order passed to lmplz."""
    prune: tuple[int, ...] = (0,)
    """lmplz --prune: n-grams of order k with count <= prune[k-1] are dropped (the last value repeats)."""
    min_words: int = 50
    """A page needs at least this many LM tokens of kept text to be a source."""
    min_language_score: float = 0.5
    """A page needs at least this language-ID confidence to be a source."""
    threshold_percentile: int = 95
    """The registry entry's threshold: this percentile of the held-out sentences' perplexity."""
    min_sentences: int = 200
    """Fewer training sentences than this: refuse (the model would be noise)."""
    memory: str = "1G"
    """lmplz -S (its sort memory)."""


@dataclass
class CorpusCounts:
    """What the selection kept and dropped, for the card."""

    pages: int = 0
    pages_selected: int = 0
    pages_excluded: int = 0
    pages_not_primary: int = 0
    pages_fallback: int = 0
    pages_low_language_score: int = 0
    pages_short: int = 0
    lines: int = 0
    lines_repeated_dropped: int = 0
    sentences_out_of_range: int = 0
    train_sentences: int = 0
    train_tokens: int = 0
    heldout_sentences: int = 0
    primary_stages: list[str] = field(default_factory=list)


def kenlm_tools() -> tuple[Path, Path]:
    """``lmplz`` and ``build_binary``: from $KENLM_BIN, lm_models/tools/bin (``make -C lm_models tools``), or PATH."""
    dirs = [Path(os.environ["KENLM_BIN"])] if os.environ.get("KENLM_BIN") else []
    dirs.append(PROJECT_ROOT / "lm_models" / "tools" / "bin")
    for d in dirs:
        if (d / "lmplz").is_file() and (d / "build_binary").is_file():
            return d / "lmplz", d / "build_binary"
    lmplz, build = shutil.which("lmplz"), shutil.which("build_binary")
    if lmplz and build:
        return Path(lmplz), Path(build)
    raise TrainError("KenLM's lmplz and build_binary were not found in $KENLM_BIN, lm_models/tools/bin or PATH; "
                     "build them with `make -C lm_models tools`")


def run_config(output: str) -> dict:
    """The config of the finished run in ``output`` (its stats.json)."""
    stats = Path(output) / "stats.json"
    if not stats.is_file():
        raise TrainError(f"{output}: no stats.json (not the output of a finished `warcplex run`)")
    return json.loads(stats.read_text(encoding="utf-8"))["run"]["config"]


def primary_stages(config: dict) -> set[str]:
    """The extractors whose text counts as primary: the run's first cascade stage, and those readers name for their
    pages (WET text)."""
    cascade = config.get("extract", {}).get("cascade") or []
    return {*cascade[:1], *default_extractors()}


def read_pages(output: str, language: str) -> Iterator[dict]:
    """The page rows of ``language`` in a local run output."""
    import pyarrow.parquet as pq

    part = Path(output) / "data" / f"language={language}"
    files = sorted(part.glob("*.parquet"))
    if not files:
        raise TrainError(f"{output}: no pages in language {language!r} (no {part}/*.parquet)")
    columns = ["warc_record_id", "text", "extractor", "fallback_reason", "language_score"]
    for path in files:
        for batch in pq.ParquetFile(path).iter_batches(columns=columns):
            yield from batch.to_pylist()


def select_pages(rows: Iterable[dict], primary: set[str], options: TrainOptions, counts: CorpusCounts,
                 exclude: frozenset[str] = frozenset()) -> list[str]:
    """The texts of the high-confidence pages (module docstring, step 1), but none whose record id is in ``exclude``."""
    texts = []
    for row in rows:
        counts.pages += 1
        if row["warc_record_id"] in exclude:
            counts.pages_excluded += 1
        elif row["extractor"] not in primary:
            counts.pages_not_primary += 1
        elif row["fallback_reason"]:
            counts.pages_fallback += 1
        elif (row["language_score"] or 0.0) < options.min_language_score:
            counts.pages_low_language_score += 1
        elif len(lm_tokens(row["text"] or "")) < options.min_words:
            counts.pages_short += 1
        else:
            texts.append(row["text"])
    counts.pages_selected = len(texts)
    return texts


def _line_key(line: str) -> bytes:
    return hashlib.blake2b(" ".join(lm_tokens(line)).encode("utf-8"), digest_size=8).digest()


def unique_lines(texts: list[str], counts: CorpusCounts) -> list[str]:
    """The lines of ``texts`` whose normalised form occurs exactly once in all of them (step 2)."""
    seen = Counter(_line_key(line) for text in texts for line in text.split("\n") if line.strip())
    kept = []
    for text in texts:
        for line in text.split("\n"):
            if not line.strip():
                continue
            counts.lines += 1
            if seen[_line_key(line)] > 1:
                counts.lines_repeated_dropped += 1
            else:
                kept.append(line)
    return kept


def is_heldout_sentence(normalised: str) -> bool:
    """One sentence in ten, by the md5 of its normalised text, is held out."""
    return int(hashlib.md5(normalised.encode("utf-8")).hexdigest(), 16) % 10 == 0


def corpus_sentences(lines: list[str], language: str, counts: CorpusCounts) -> tuple[list[str], list[str]]:
    """(training lines for lmplz, held-out raw sentences) from the unique lines (step 3)."""
    train, heldout = [], []
    for paragraph in split("\n".join(lines), language):
        for sentence in paragraph:
            tokens = lm_tokens(sentence)
            alphabetic = sum(1 for t in tokens if t.isalpha())
            if not MIN_SENTENCE_TOKENS <= len(tokens) <= MAX_SENTENCE_TOKENS or alphabetic * 2 < len(tokens):
                counts.sentences_out_of_range += 1
                continue
            normalised = " ".join(tokens)
            if is_heldout_sentence(normalised):
                heldout.append(sentence)
            else:
                train.append(normalised)
                counts.train_tokens += len(tokens)
    counts.train_sentences, counts.heldout_sentences = len(train), len(heldout)
    return train, heldout


def build_model(train: list[str], model: Path, options: TrainOptions) -> dict[int, int]:
    """lmplz + build_binary (trie, 8-bit quantised, like ``make models``): the n-gram counts."""
    lmplz, build_binary = kenlm_tools()
    prune = list(options.prune)[:options.order]
    prune += [prune[-1]] * (options.order - len(prune))
    with tempfile.TemporaryDirectory(prefix="warcplex-train-lm-") as tmp:
        text, arpa = Path(tmp) / "train.txt", Path(tmp) / "model.arpa"
        text.write_text("\n".join(train) + "\n", encoding="utf-8")
        # --discount_fallback: a small corpus may lack the counts-of-counts Kneser-Ney needs.
        steps = [[str(lmplz), "-o", str(options.order), "--prune", *map(str, prune), "-S", options.memory,
                  "-T", tmp + "/", "--discount_fallback", "--text", str(text), "--arpa", str(arpa)],
                 [str(build_binary), "-q", "8", "-b", "8", "-T", tmp + "/", "trie", str(arpa), str(model)]]
        for command in steps:
            done = subprocess.run(command, capture_output=True, text=True)
            if done.returncode:
                tail = (done.stderr or done.stdout).strip().splitlines()[-3:]
                raise TrainError(f"{Path(command[0]).name} failed: {' / '.join(tail)}")
        return arpa_counts(arpa)


def arpa_counts(arpa: Path) -> dict[int, int]:
    """The ``ngram k=N`` header of an ARPA file."""
    counts = {}
    with arpa.open(encoding="utf-8") as fh:
        for line in fh:
            if line.startswith("ngram "):
                n, c = line[6:].strip().split("=")
                counts[int(n)] = int(c)
            elif line.startswith("\\1-grams:"):
                break
    return counts


def percentile(ordered: list[float], q: float) -> float:
    """Linear-interpolated ``q`` quantile (0..1) of an ascending list (NaN when empty)."""
    if not ordered:
        return math.nan
    k = (len(ordered) - 1) * q
    lo, hi = math.floor(k), math.ceil(k)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (k - lo)


def heldout_figures(model_path: Path, heldout: list[str], threshold_percentile: int) -> dict:
    """Per-sentence perplexities of the held-out sentences under the new model, as the filter computes
    them: OOV rate, percentiles and the threshold (``threshold_percentile``)."""
    model = kenlm_model(str(model_path))
    scores = sorted(perplexity(model, s)[0] for s in heldout)
    oov = sum(1 for s in heldout for t in lm_tokens(s) if t not in model)
    tokens = sum(len(lm_tokens(s)) for s in heldout)
    return {"sentences": len(scores), "oov_rate": round(oov / max(1, tokens), 5),
            "percentiles": {p: round(percentile(scores, p / 100), 1) for p in PERCENTILES},
            "threshold": round(percentile(scores, threshold_percentile / 100), 1)}


def model_name(language: str, order: int) -> str:
    """The binary's file name; distinct from the shipped models' (Spark ships files by name)."""
    return f"{language}.selftrained.{order}gram.bin"


def write_registry(out: Path, entry: dict, language: str, base: str | None) -> Path:
    """``out/models.yaml``: the base registry's entries (absolute paths) with this language's replaced."""
    models = {}
    if base:
        for lang, e in load_registry(base).items():
            models[lang] = {"path": str(resolve_path(e.path)), "threshold": e.threshold,
                            "percentiles": {int(k): v for k, v in e.percentiles.items()}}
    models[language] = entry
    path = out / "models.yaml"
    header = (f"# Written by `warcplex train-lm` ({language} self-trained, see README.md next to it). Use it with\n"
              f"#   --set perplexity.registry={path}\n")
    path.write_text(header + yaml.safe_dump({"models": models}, sort_keys=True, allow_unicode=True), encoding="utf-8")
    return path


def train_lm(output: str, out: Path, options: TrainOptions, base_registry: str | None = "conf/models.yaml",
             exclude: frozenset[str] = frozenset()) -> dict:
    """Train ``options.language``'s model from the run in ``output`` into ``out``; return its card.

    Pages whose WARC record id is in ``exclude`` are not used (e.g. held-out benchmark pages)."""
    started = time.time()
    config = run_config(output)
    counts = CorpusCounts(primary_stages=sorted(primary_stages(config)))
    texts = select_pages(read_pages(output, options.language), set(counts.primary_stages), options, counts,
                         exclude)
    train, heldout = corpus_sentences(unique_lines(texts, counts), options.language, counts)
    if counts.train_sentences < options.min_sentences:
        raise TrainError(f"{output}: {counts.train_sentences} training sentences in {options.language!r} from "
                         f"{counts.pages_selected} of {counts.pages} pages; at least {options.min_sentences} "
                         "are needed (--min-sentences)")
    if not heldout:
        raise TrainError(f"{output}: no held-out sentence in {options.language!r}")
    out.mkdir(parents=True, exist_ok=True)
    model = out / model_name(options.language, options.order)
    ngrams = build_model(train, model, options)
    held = heldout_figures(model, heldout, options.threshold_percentile)
    threshold = held["threshold"]
    entry = {"path": model.name, "threshold": threshold, "percentiles": held["percentiles"],
             "self_trained": {"from": str(Path(output).resolve()), "sha256": file_sha256(model),
                              "method": f"{options.threshold_percentile}th percentile of the perplexity of the "
                                        "model's own held-out sentences (uncalibrated)"}}
    registry = write_registry(out, entry, options.language, base_registry)
    card = {"language": options.language, "model": model.name, "bytes": model.stat().st_size,
            "sha256": entry["self_trained"]["sha256"], "order": options.order, "ngram_counts": ngrams,
            "normalization_version": NORMALIZATION_VERSION, "source_run": str(Path(output).resolve()),
            "options": asdict(options), "corpus": asdict(counts), "heldout": held, "threshold": threshold,
            "registry": str(registry), "seconds": round(time.time() - started, 1)}
    (out / "card.json").write_text(json.dumps(card, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    (out / "README.md").write_text(render_card(card), encoding="utf-8")
    return card


def render_card(c: dict) -> str:
    """The model card (README.md next to the model)."""
    k, o = c["corpus"], c["options"]
    pct = " | ".join(f"{v:,}" for v in c["heldout"]["percentiles"].values())
    heads = " | ".join(f"p{p}" for p in c["heldout"]["percentiles"])
    return f"""# Self-trained KenLM model (`{c['language']}`)

`{c['model']}`: {c['order']}-gram, modified Kneser-Ney (lmplz `--discount_fallback`), trie binary with
8-bit probabilities and backoffs, {c['bytes']:,} bytes, sha256 `{c['sha256']}`.
Trained by `warcplex train-lm` from the run in `{c['source_run']}` (normalisation version
{c['normalization_version']}); n-grams {', '.join(f'{n}: {v:,}' for n, v in c['ngram_counts'].items())}.

## Corpus

| | |
|---|---|
| pages in the language | {k['pages']:,} |
| pages excluded by record id (`--exclude-ids`) | {k['pages_excluded']:,} |
| pages not from the primary stage ({', '.join(k['primary_stages'])}) | {k['pages_not_primary']:,} |
| pages with a fallback reason | {k['pages_fallback']:,} |
| pages with language score < {o['min_language_score']} | {k['pages_low_language_score']:,} |
| pages with < {o['min_words']} kept tokens | {k['pages_short']:,} |
| **pages used** | **{k['pages_selected']:,}** |
| lines of those pages | {k['lines']:,} |
| lines seen more than once, dropped | {k['lines_repeated_dropped']:,} |
| sentences outside 3-200 tokens or under half alphabetic | {k['sentences_out_of_range']:,} |
| training sentences / tokens | {k['train_sentences']:,} / {k['train_tokens']:,} |
| held-out sentences (md5 % 10 == 0) | {k['heldout_sentences']:,} |

## Held-out perplexity and threshold

Per-sentence perplexity of the held-out sentences (the filter's formula); OOV rate
{c['heldout']['oov_rate']:.2%}.

| {heads} |
|{'---|' * len(c['heldout']['percentiles'])}
| {pct} |

Registry threshold: the {o['threshold_percentile']}th percentile, **{c['threshold']:,}** (`{c['registry']}`).
Score a run with it: `--set perplexity.registry={c['registry']}`.

## Limits

The text is the run's own output: whatever the extractor kept and the language ID named
`{c['language']}`, including main-content boilerplate that is not repeated verbatim (dates,
bylines, unique calls to action). The held-out sentences come from the same pages, so the
threshold fits this corpus, not the web in general; it is uncalibrated (`warcplex calibrate`).
A small corpus gives a model with a small vocabulary: new words score as unknown.
"""


def add_parser(commands) -> None:
    parser = commands.add_parser("train-lm", help="train a KenLM model from the cleaned text of a finished run",
                                 description=__doc__.split("\n\n")[0])
    d = TrainOptions
    parser.add_argument("--from", dest="source", required=True, metavar="OUTPUT",
                        help="the output directory of a finished `warcplex run` (local)")
    parser.add_argument("--language", required=True, help="language code, e.g. en (its data/language=xx/)")
    parser.add_argument("--out", help="folder for the model, models.yaml and the card (default: OUTPUT.lm/xx, next to the output)")
    parser.add_argument("--order", type=int, default=d.order, help=f"n-gram order (default {d.order})")
    parser.add_argument("--prune", type=int, nargs="+", default=list(d.prune),
                        help="lmplz --prune per order (default: none)")
    parser.add_argument("--min-words", type=int, default=d.min_words,
                        help=f"LM tokens a source page needs (default {d.min_words})")
    parser.add_argument("--min-language-score", type=float, default=d.min_language_score,
                        help=f"language-ID confidence a source page needs (default {d.min_language_score})")
    parser.add_argument("--threshold-percentile", type=int, default=d.threshold_percentile,
                        help=f"held-out percentile used as the threshold (default {d.threshold_percentile})")
    parser.add_argument("--min-sentences", type=int, default=d.min_sentences,
                        help=f"refuse with fewer training sentences (default {d.min_sentences})")
    parser.add_argument("--memory", default=d.memory, help=f"lmplz -S (default {d.memory})")
    parser.add_argument("--exclude-ids", metavar="FILE",
                        help="file of WARC record ids (one a line) whose pages are not used, e.g. held-out pages")
    parser.add_argument("--registry", default="conf/models.yaml",
                        help="registry whose other languages the written models.yaml keeps ('' for none)")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    options = TrainOptions(language=args.language, order=args.order, prune=tuple(args.prune),
                           min_words=args.min_words, min_language_score=args.min_language_score,
                           threshold_percentile=args.threshold_percentile, min_sentences=args.min_sentences,
                           memory=args.memory)
    out = Path(args.out) if args.out else Path(args.source.rstrip("/") + ".lm") / args.language
    if args.source.startswith("s3://") or not 2 <= args.order <= 6 or not 1 <= args.threshold_percentile <= 99:
        return print_error("train-lm needs a local --from OUTPUT, --order 2..6 and --threshold-percentile 1..99")
    try:
        exclude = frozenset(Path(args.exclude_ids).read_text(encoding="utf-8").split()) if args.exclude_ids \
            else frozenset()
    except OSError as exc:
        return print_error(f"--exclude-ids {args.exclude_ids}: {exc.strerror}")
    try:
        card = train_lm(args.source, out, options, args.registry or None, exclude)
    except TrainError as exc:
        return print_error(str(exc))
    k = card["corpus"]
    print(f"train-lm[{card['language']}]: {k['pages_selected']} of {k['pages']} pages, "
          f"{k['lines_repeated_dropped']} of {k['lines']} lines dropped as repeated, "
          f"{k['train_sentences']} training sentences ({k['train_tokens']} tokens), "
          f"{k['heldout_sentences']} held out")
    print(f"  model {out / card['model']} ({card['bytes']:,} bytes), held-out perplexity median "
          f"{card['heldout']['percentiles'][50]:,}, threshold (p{options.threshold_percentile}) {card['threshold']:,}")
    print(f"  registry {card['registry']}: score a run with --set perplexity.registry={card['registry']}")
    return 0
