"""``warcplex calibrate``: per-language perplexity thresholds from pages with ground-truth main text.

Input is a folder in the layout docs/thresholds.md describes (that of ``../shared/bench/data``):
``<dataset>/pages/<id>.html.gz``, ``<dataset>/truth/<id>.txt`` (full-text truth) or ``<id>.json``
(``with``/``without`` snippets), and ``manifest.jsonl``. Each page goes through the pipeline's own stages: the extraction stage
being calibrated (by default the first of the configured cascade), language ID, sentence
splitting and KenLM scoring. A sentence is labelled *main* when most of its word trigrams occur
in the truth (or it overlaps a ``with`` snippet), *boilerplate* otherwise (or when it overlaps a
``without`` snippet). Per language, the threshold maximises the mean ROUGE-5 F1 of the filtered
page against full-text truth (the snippet F of ``../shared/bench/score.py`` where a language has
only snippet pages); the lowest threshold within ``--tolerance`` of the best wins. With
``--objective corpus`` (for corpus builders) it is the threshold that removes the most boilerplate
tokens while losing at most ``--max-main-loss`` (default 2%) of the main-content tokens; both
objectives' thresholds and their effects are reported either way. With
``--target-precision`` it is the highest threshold whose kept sentences reach that share of
main sentences. Percentiles of the sentence perplexities
(cc_net-style thresholds) are written too. ``--write`` stores both in the model registry; a
PNG shows the two distributions, the objective curve and the chosen threshold.
"""

from __future__ import annotations

import argparse
import gzip
import json
import math
import multiprocessing
import re
from collections import Counter, defaultdict
from dataclasses import dataclass
from functools import cached_property
from typing import Iterator
from pathlib import Path
import yaml

from pipeline.config import ConfigError, PerplexitySettings, Settings, load_settings, resolve_path
from pipeline.document import Sentence, page_text
from pipeline.lm.train import percentile as quantile
from pipeline.model_cache import kenlm_model
from pipeline.reading.decode import page_html
from pipeline.model_registry import load_registry
from pipeline.steps.extractors import build_extractor
from pipeline.steps.langid import LanguageIdentifier
from pipeline.perplexity_rule import Judgement, judgement, kept_mask, perplexity
from pipeline.steps.sentences import split
from pipeline.user_errors import print_error

PERCENTILES = (10, 25, 50, 60, 70, 75, 80, 90, 95, 99)
ROUGE_N = 5
EXTRACTORS = ("blocks", "resiliparse", "trafilatura", "readability", "conservative")


@dataclass
class PageSentences:
    page_id: str
    language: str
    truth: str | dict  # full text, or {"with": [...], "without": [...]} snippets
    # perplexity None: unscored (no model, or shorter than perplexity.min_tokens, which the filter keeps)
    sentences: list[Sentence]
    labels: list[bool | None]  # per sentence: is it main content (None: unlabelled)
    rule: PerplexitySettings  # the filter's rule (unit, rule, window) the thresholds are calibrated for

    @property
    def snippets(self) -> bool:
        return isinstance(self.truth, dict)

    def kept(self, threshold: float) -> list[bool]:
        """Per sentence: does the filter keep it at ``threshold``."""
        return kept_mask(self.sentences, threshold, self.rule, judged=self.judged)

    @cached_property
    def judged(self) -> Judgement:
        """The page judged once under the rule, for every threshold calibration tries."""
        return judgement(self.sentences, self.rule)

    def text(self, threshold: float) -> str:
        """The page as the filter leaves it at ``threshold`` (paragraphs on lines, as the pipeline writes)."""
        kept = {id(s) for s, keep in zip(self.sentences, self.kept(threshold)) if keep}
        return page_text(self.sentences, lambda s: id(s) in kept)

    def labelled(self, threshold: float) -> Iterator[tuple[Sentence, bool | None, bool]]:
        """(sentence, main label, kept at ``threshold``) of every sentence."""
        return zip(self.sentences, self.labels, self.kept(threshold))


# Scripts written without spaces (CJK, kana, Thai, full-width forms): each character is a token, as
# the bench's scorer counts them, so ROUGE and token shares on zh/ja/th text count characters.
_UNSPACED = re.compile("([\u0e00-\u0e7f\u3000-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uff00-\uffef])")


def score_tokens(text: str) -> list[str]:
    """Lower-cased white-space tokens, every character of an unspaced script a token of its own."""
    return _UNSPACED.sub(r" \1 ", text.lower()).split()


def _shingles(tokens: list[str], n: int) -> set[tuple[str, ...]]:
    return {tuple(tokens[i:i + n]) for i in range(len(tokens) - n + 1)}


def is_main_sentence(sentence: str, truth_shingles: dict[int, set], truth_tokens: set[str]) -> bool:
    """A sentence is main content when at least half of its word trigrams (or shorter n-grams) are in the truth."""
    tokens = score_tokens(sentence)
    if not tokens:
        return False
    n = min(3, len(tokens))
    grams = _shingles(tokens, n)
    if n == 1:
        return tokens[0] in truth_tokens
    return sum(g in truth_shingles[n] for g in grams) / len(grams) >= 0.5


def _ws(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip()


def snippet_label(sentence: str, snippets: dict) -> bool | None:
    """Main when the sentence overlaps a ``with`` snippet, boilerplate for a ``without`` one, else unknown."""
    s = _ws(sentence)

    def overlaps(items: list[str]) -> bool:
        return any(t and (t in s or (len(s.split()) >= 3 and s in t)) for t in map(_ws, items))

    if overlaps(snippets.get("with", [])):
        return True
    if overlaps(snippets.get("without", [])):
        return False
    return None


def rouge_n_f1(pred: list[str], truth: list[str], n: int = ROUGE_N) -> float:
    """ROUGE-N F1 with clipped n-gram counts, as ../shared/bench/score.py computes it."""
    if not pred and not truth:
        return 1.0
    if not pred or not truth:
        return 0.0
    p = Counter(tuple(pred[i:i + n]) for i in range(len(pred) - n + 1))
    t = Counter(tuple(truth[i:i + n]) for i in range(len(truth) - n + 1))
    overlap = sum((p & t).values())
    n_p, n_t = sum(p.values()), sum(t.values())
    if not n_p or not n_t or not overlap:
        return 0.0
    precision, recall = overlap / n_p, overlap / n_t
    return 2 * precision * recall / (precision + recall)


def snippet_f(pred: str, snippets: dict) -> float:
    """The snippet F of ../shared/bench/score.py: ``with`` recall against ``without`` exclusion."""
    p = _ws(pred)
    found = [_ws(s) in p for s in snippets.get("with", []) if _ws(s)]
    leaked = [_ws(s) in p for s in snippets.get("without", []) if _ws(s)]
    recall = sum(found) / len(found) if found else 1.0
    keep = 1 - (sum(leaked) / len(leaked) if leaked else 0.0)
    return 2 * recall * keep / (recall + keep) if recall + keep else 0.0


def page_score(page: PageSentences, threshold: float) -> float:
    """ROUGE-5 F1 (full-text truth) or snippet F of the page filtered at ``threshold``."""
    text = page.text(threshold)
    if page.snippets:
        return snippet_f(text, page.truth)
    return rouge_n_f1(score_tokens(text), score_tokens(page.truth))


class _Worker:
    """Extracts, splits and scores one page with the pipeline's stages (runs in a multiprocessing pool)."""

    def __init__(self, settings: Settings, extractor: str) -> None:

        self.registry = settings.perplexity.registry
        self.rule = settings.perplexity
        self.min_tokens = settings.perplexity.min_tokens
        self.extractor = build_extractor(extractor, settings)
        self.langid = LanguageIdentifier(settings.langid)

    def __call__(self, item: tuple[str, str, str]) -> PageSentences:
        page_id, html_path, truth_path = item
        raw_truth = Path(truth_path).read_text(encoding="utf-8", errors="replace")
        truth: str | dict = json.loads(raw_truth) if truth_path.endswith(".json") else raw_truth
        html = page_html(gzip.decompress(Path(html_path).read_bytes()))
        try:
            text = self.extractor.text(html)
        except Exception:  # the stage fails on this page: it contributes an empty extraction
            text = ""
        language = self.langid.identify(text or (truth if isinstance(truth, str) else " ".join(truth["with"]))).code
        models = load_registry(self.registry)
        model = kenlm_model(models[language].path) if language in models else None
        label = sentence_labeller(truth)
        sentences = []
        for paragraph, para in enumerate(split(text, language)):
            for sentence in para:
                ppl = n_words = None
                if model is not None:
                    ppl, n_words = perplexity(model, sentence)
                    if n_words < self.min_tokens:  # the filter keeps these unscored
                        ppl = None
                sentences.append(Sentence(sentence, paragraph, ppl, n_tokens=n_words))
        return PageSentences(page_id, language, truth, sentences, [label(s.text) for s in sentences], self.rule)


def sentence_labeller(truth: str | dict):
    """A function labelling a piece of the page main (True), boilerplate (False) or unknown (None)."""
    if isinstance(truth, dict):
        return lambda sentence: snippet_label(sentence, truth)
    truth_tokens = score_tokens(truth)
    shingles = {n: _shingles(truth_tokens, n) for n in (2, 3)}
    vocabulary = set(truth_tokens)
    return lambda sentence: is_main_sentence(sentence, shingles, vocabulary)


def load_pages(data: Path, ids: set[str] | None) -> list[tuple[str, str, str]]:
    """(id, html path, truth path) of every page with full-text or snippet truth in a bench-style folder."""
    items = []
    for line in (data / "manifest.jsonl").read_text(encoding="utf-8").splitlines():
        row = json.loads(line)
        kind = row.get("truth_type")
        if kind not in ("fulltext", "snippets") or (ids is not None and row["id"] not in ids):
            continue
        folder = data / row["dataset"]
        html = folder / "pages" / f"{row['id']}.html.gz"
        truth = folder / "truth" / f"{row['id']}{'.json' if kind == 'snippets' else '.txt'}"
        if html.exists() and truth.exists():
            items.append((row["id"], str(html), str(truth)))
    return items


def score_pages(items: list[tuple[str, str, str]], settings: Settings, extractor: str,
                processes: int) -> list[PageSentences]:
    worker = _Worker(settings, extractor)
    if processes <= 1:
        return list(map(worker, items))
    with multiprocessing.get_context("fork").Pool(processes) as pool:
        return list(pool.imap(worker, items, chunksize=16))


def candidate_thresholds() -> list[float]:
    """Log-spaced thresholds from 10 to 10^6, 8 per decade."""
    return [round(10 ** (1 + k / 8), 1) for k in range(41)]


def mean_score(pages: list[PageSentences], threshold: float) -> float:
    return sum(page_score(p, threshold) for p in pages) / len(pages) if pages else 0.0


def score_curve(pages: list[PageSentences], grid: list[float]) -> list[float]:
    """Mean page score at each threshold of ``grid``; a page is rescored only where the threshold
    changes which of its sentences are kept."""
    totals = [0.0] * len(grid)
    for page in pages:
        last_kept: list[bool] | None = None
        last_score = 0.0
        for i, threshold in enumerate(grid):
            kept = page.kept(threshold)
            if kept != last_kept:
                last_kept, last_score = kept, page_score(page, threshold)
            totals[i] += last_score
    return [total / len(pages) for total in totals] if pages else totals


def main_precision(pages: list[PageSentences], threshold: float) -> float:
    kept = [main for p in pages for s, main, keep in p.labelled(threshold)
            if s.perplexity is not None and keep and main is not None]
    return sum(kept) / len(kept) if kept else 1.0


def token_effect(pages: list[PageSentences], threshold: float) -> dict[str, float]:
    """Shares of boilerplate tokens removed and main-content tokens kept at ``threshold``."""
    main_all = main_kept = boiler_all = boiler_removed = 0
    for page in pages:
        for sentence, main, kept in page.labelled(threshold):
            if main is None:
                continue
            n = len(score_tokens(sentence.text))
            if main:
                main_all += n
                main_kept += n * kept
            else:
                boiler_all += n
                boiler_removed += n * (not kept)
    return {"main_tokens_kept": main_kept / main_all if main_all else 1.0,
            "boilerplate_tokens_removed": boiler_removed / boiler_all if boiler_all else 0.0,
            "main_tokens": main_all, "boilerplate_tokens": boiler_all}


def sentences_dropped(pages: list[PageSentences], threshold: float) -> float:
    scored = [keep for p in pages for s, _, keep in p.labelled(threshold) if s.perplexity is not None]
    return sum(not keep for keep in scored) / len(scored) if scored else 0.0


def percentile(values: list[float], p: float) -> float:
    """The ``p``-th percentile (0..100) of unsorted ``values`` (:func:`pipeline.lm.train.percentile`)."""
    return quantile(sorted(values), p / 100)


def corpus_threshold(pages: list[PageSentences], grid: list[float], max_main_loss: float) -> float:
    """The corpus objective: the lowest threshold of ``grid`` (the most boilerplate removed) that keeps
    at least ``1 - max_main_loss`` of the main-content tokens; the highest of ``grid`` when none does."""
    for threshold in grid:
        if token_effect(pages, threshold)["main_tokens_kept"] >= 1 - max_main_loss - 1e-12:
            return threshold
    return grid[-1]


def calibrate_language(pages: list[PageSentences], target_precision: float | None, tolerance: float = 0.0,
                       objective: str = "quality", max_main_loss: float = 0.02) -> dict:
    """Choose the threshold for one language's pages and describe both classes.

    ``quality``: ROUGE-5 F1 where the pages have full-text truth, the snippet F where they have
    snippets; the lowest threshold (the one that drops most) whose score is within ``tolerance``
    of the best, to four decimals, wins. ``corpus``: :func:`corpus_threshold`. Both thresholds
    are reported (``objectives``) with their score and token effect.
    """
    grid = candidate_thresholds()
    curve = [(t, round(f, 4)) for t, f in zip(grid, score_curve(pages, grid))]
    metric = "snippet_f" if pages[0].snippets else "rouge5_f1"
    best = max(f for _, f in curve)
    quality_t = next(t for t, f in curve if f >= best - tolerance - 1e-9)
    corpus_t = corpus_threshold(pages, grid, max_main_loss)
    quality_name = metric if not tolerance else f"{metric} within {tolerance:g} of the best"
    corpus_name = f"boilerplate_removed at main_tokens_lost<={max_main_loss:g}"
    objectives = {name: {"objective": label, "threshold": t, "score": dict(curve)[t],
                         "token_effect": token_effect(pages, t)}
                  for name, label, t in (("quality", quality_name, quality_t), ("corpus", corpus_name, corpus_t))}
    if target_precision is None:
        best_t = corpus_t if objective == "corpus" else quality_t
        best_f = dict(curve)[best_t]
        objective = objectives[objective]["objective"]
    else:
        ok = [t for t in grid if main_precision(pages, t) >= target_precision]
        best_t = max(ok) if ok else grid[0]
        best_f = dict(curve)[best_t]
        objective = f"main_precision>={target_precision}"
    scored = [s.perplexity for p in pages for s in p.sentences if s.perplexity is not None]
    main = [s.perplexity for p in pages for s, m in zip(p.sentences, p.labels) if s.perplexity is not None and m]
    boiler = [s.perplexity for p in pages for s, m in zip(p.sentences, p.labels)
              if s.perplexity is not None and m is False]
    return {
        "objective": objective,
        "metric": metric,
        "threshold": best_t,
        "score": round(best_f, 4),
        "score_unfiltered": round(mean_score(pages, math.inf), 4),
        "sentences_dropped": round(sentences_dropped(pages, best_t), 4),
        "pages": len(pages),
        "sentences_main": len(main),
        "sentences_boilerplate": len(boiler),
        "median_perplexity_main": round(percentile(main, 50), 1) if main else None,
        "median_perplexity_boilerplate": round(percentile(boiler, 50), 1) if boiler else None,
        "percentiles": {p: round(percentile(scored, p), 1) for p in PERCENTILES} if scored else {},
        "token_effect": token_effect(pages, best_t),
        "objectives": objectives,
        "rule": f"{pages[0].rule.unit}/{pages[0].rule.rule}",
        "curve": [[t, f] for t, f in curve],
        "log10_main": [round(math.log10(v), 3) for v in main],
        "log10_boilerplate": [round(math.log10(v), 3) for v in boiler],
    }


def plot(results: dict[str, dict], path: Path, extractor: str) -> None:
    """Per language: histograms of log10 perplexity, main vs boilerplate, the objective curve and the threshold."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    langs = sorted(results)
    fig, axes = plt.subplots(len(langs), 1, figsize=(8, 3.4 * len(langs)), squeeze=False)
    for ax, lang in zip(axes[:, 0], langs):
        r = results[lang]
        bins = [x / 10 for x in range(0, 61)]
        ax.hist(r["log10_main"], bins=bins, alpha=0.6, label=f"main ({r['sentences_main']})", color="tab:green")
        ax.hist(r["log10_boilerplate"], bins=bins, alpha=0.6,
                label=f"boilerplate ({r['sentences_boilerplate']})", color="tab:red")
        ax.axvline(math.log10(r["threshold"]), color="black", linestyle="--", label=f"threshold {r['threshold']:g}")
        ax.set_xlabel("log10 sentence perplexity")
        ax.set_ylabel("sentences")
        curve = ax.twinx()
        curve.plot([math.log10(t) for t, _ in r["curve"]], [f for _, f in r["curve"]], color="tab:blue")
        curve.set_ylabel(r["metric"], color="tab:blue")
        ax.set_title(f"{lang} ({extractor} text, {r['pages']} pages): {r['metric']} {r['score_unfiltered']} "
                     f"unfiltered -> {r['score']},\n{100 * r['sentences_dropped']:.1f}% of sentences dropped",
                     fontsize="medium")
        ax.legend(loc="upper left", fontsize="small")
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)


def write_registry(registry: str, results: dict[str, dict], extractor: str) -> None:
    """Store calibrated thresholds and percentiles in the model registry YAML (comments are kept)."""
    path = resolve_path(registry)
    text = path.read_text(encoding="utf-8")
    tree = yaml.safe_load(text) or {}
    for lang, r in results.items():
        entry = tree.setdefault("models", {}).get(lang)
        if entry is None:
            continue
        entry["threshold"] = r["threshold"]
        entry["percentiles"] = {int(p): v for p, v in r["percentiles"].items()}
        entry["calibration"] = {"objective": r["objective"], "extractor": extractor, "pages": r["pages"],
                                "score": r["score"], "score_unfiltered": r["score_unfiltered"],
                                "sentences_dropped": r["sentences_dropped"]}
        if r.get("rule"):  # the rule the threshold was judged under (calibrate_language reports it)
            entry["calibration"]["rule"] = r["rule"]
    header = "".join(line + "\n" for line in text.splitlines() if line.startswith("#"))
    path.write_text(header + yaml.safe_dump(tree, sort_keys=True, allow_unicode=True), encoding="utf-8")


def add_parser(commands) -> None:
    parser = commands.add_parser("calibrate", help="choose per-language perplexity thresholds on pages with truth",
                                 description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", required=True, help="folder of pages with truth: manifest.jsonl (id, dataset, truth_type), "
                        "<dataset>/pages/<id>.html.gz, <dataset>/truth/<id>.txt or .json (docs/thresholds.md)")
    parser.add_argument("--ids", help="file with one page id per line (default: every page with truth)")
    parser.add_argument("--config", help="YAML preset (its registry, cascade and filter settings are used)")
    parser.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE")
    parser.add_argument("--registry", help="model registry to read and write (default: perplexity.registry)")
    parser.add_argument("--extractor", choices=EXTRACTORS,
                        help="the extraction whose text is filtered (default: the first cascade stage); "
                             "`conservative` is all visible text, no main-content extraction")
    parser.add_argument("--objective", choices=("quality", "corpus"), default="quality",
                        help="quality: the best ROUGE-5 F1 (snippet F); corpus: the most boilerplate removed "
                             "for at most --max-main-loss of the main-content tokens")
    parser.add_argument("--max-main-loss", type=float, default=0.02,
                        help="the corpus objective's budget: share of main-content tokens it may drop (default 0.02)")
    parser.add_argument("--target-precision", type=float,
                        help="pick the highest threshold whose kept sentences are at least this share main")
    parser.add_argument("--tolerance", type=float, default=0.0,
                        help="take the lowest threshold whose score is within this of the best (default 0: "
                             "only thresholds that cost nothing); trades quality for a smaller corpus")
    parser.add_argument("--min-pages", type=int, default=20, help="languages with fewer pages keep their threshold")
    parser.add_argument("--out", default="calibration", help="folder for calibration.json and calibration.png")
    parser.add_argument("--write", action="store_true", help="write thresholds and percentiles into the registry")
    parser.add_argument("--processes", type=int, default=multiprocessing.cpu_count())
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    data = Path(args.data)
    if not (data / "manifest.jsonl").exists():
        return print_error(f"{data}/manifest.jsonl not found "
                           f"(the layout: docs/thresholds.md, \"Calibrating on your own pages\")")
    if not 0 <= args.max_main_loss < 1:
        return print_error(f"--max-main-loss {args.max_main_loss:g}: expected a share in [0, 1)")
    overrides = list(args.overrides) + ([f"perplexity.registry={args.registry}"] if args.registry else [])
    try:
        settings = load_settings(args.config, overrides)
    except ConfigError as exc:
        return print_error(str(exc))
    extractor = args.extractor or settings.extract.cascade[0]
    ids = set(Path(args.ids).read_text().split()) if args.ids else None
    pages = score_pages(load_pages(data, ids), settings, extractor, args.processes)
    by_language: dict[str, list[PageSentences]] = defaultdict(list)
    for page in pages:
        by_language[page.language].append(page)
    models = load_registry(settings.perplexity.registry)
    results = {}
    for lang, language_pages in sorted(by_language.items()):
        if lang not in models:
            continue
        fulltext = [p for p in language_pages if not p.snippets]
        # Full-text truth measures the whole page; snippets only where a language has too few of those.
        chosen = fulltext if len(fulltext) >= args.min_pages else [p for p in language_pages if p.snippets]
        if len(chosen) >= args.min_pages:
            results[lang] = calibrate_language(chosen, args.target_precision, args.tolerance,
                                               args.objective, args.max_main_loss)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "calibration.json").write_text(json.dumps({"extractor": extractor, "languages": results}, indent=1)
                                          + "\n", encoding="utf-8")
    if results:
        plot(results, out / "calibration.png", extractor)
    print(f"calibrating on {extractor} text of {len(pages)} pages")
    for lang, r in results.items():
        effect = r["token_effect"]
        print(f"{lang}: {r['pages']} pages, threshold {r['threshold']:g} ({100 * r['sentences_dropped']:.1f}% of "
              f"sentences dropped), {r['metric']} {r['score_unfiltered']} -> {r['score']}; main tokens kept "
              f"{effect['main_tokens_kept']:.3f}, boilerplate tokens removed {effect['boilerplate_tokens_removed']:.3f}; "
              f"median ppl main {r['median_perplexity_main']} vs boilerplate {r['median_perplexity_boilerplate']}")
        for name, o in r["objectives"].items():
            e = o["token_effect"]
            print(f"  {name} objective ({o['objective']}): threshold {o['threshold']:g}, {r['metric']} {o['score']}, "
                  f"boilerplate tokens removed {e['boilerplate_tokens_removed']:.3f}, "
                  f"main tokens lost {1 - e['main_tokens_kept']:.3f}")
    skipped = {lang: len(ps) for lang, ps in by_language.items() if lang not in results}
    if skipped:
        print(f"not calibrated (no model or < {args.min_pages} pages): {dict(sorted(skipped.items()))}")
    if args.write and results:
        write_registry(settings.perplexity.registry, results, extractor)
        print(f"thresholds written to {settings.perplexity.registry}")
    print(f"distributions: {out / 'calibration.json'}, plot: {out / 'calibration.png'}")
    return 0
