#!/usr/bin/env python3
"""Fit the block classifier of pipeline/steps/blocks/ on the bench dev pages (deterministic).

The full-text dev pages of the three bench sets are used: ../shared/bench/data (2006-2019
English benchmarks), data-wcxb (modern English pages of seven types) and data-ml (non-English
pages). Every set splits by a hash of the page id (:func:`benchpages.is_heldout`): 70%
train, 30% held out (never seen by the fit, the threshold or the fallback rule). Each set weighs
the same, and inside a set each dataset, page type or language weighs the square root of its
page count; a page's blocks share its weight by the square root of their word counts (ROUGE is a
mean over pages). A block is labelled main when its tokens (the bench scorer's: CJK characters
one each) occur in the page's truth, or (4+ tokens) when at least half of its token trigrams do.
A block's perplexity comes from the pinned KenLM model of the page's language (fastText LID on
its blocks; the registry conf/models.yaml's models of the languages ``--lm-languages`` names, by
default those the shipped model pins), centred on that model's median training block; other pages
have none.
Stage one: a logistic regression over dense and hashed features, then a HistGradientBoosting
ensemble over the dense features plus the regression's out-of-fold score. Stage two: a smaller
ensemble over each block's stage-one probability (out of fold) among its neighbours and page.
The decision threshold, the structure rules and the cascade's fallback share
(:func:`pipeline.steps.blocks.extractor.shorter_than_primary`) are the ones with the best weighted mean ROUGE-5 F1
on a third of the training pages, or (``--tune-folds``) on every training page's out-of-fold probabilities
(each fold scored by a classifier fitted as the shipped one on the others: the shipped classifier is surer of
its own training pages than of new ones), optionally under ``--max-set-loss``. The held-out
ROUGE-5 F1 (the bench scorer's) is printed per set and group next to resiliparse's main-content
text, with the recall of main blocks by kind. Writes pipeline/steps/blocks/blocks_model.json and the held-out ids.
``--page-types`` (with ``--tune-folds``) also fits the page type model (seed 004,
pipeline/steps/blocks/page_type.py: WCXB's seven types, and ``unknown`` for the older English pages) and each
type's threshold and rules (:func:`fit_page_types`), judged as well on the dev pages of the snippet set.

usage: scripts/train_blocks.py [--bench ../shared/bench] [--cache build/blocks_raw.pkl] [--trees 120]
                               [--lm-languages en,de,...|all] [--seed 0] [--drop name,...]
                               [--without lm,primary] [--tune-folds 5] [--rules-only] [--page-types] [--comments]
                               [--seed-features] [--ablate GROUPS] [--comment-designs]

The shipped model: its classifier, threshold and rules from a refit; its page types from
``--rules-only --tune-folds 5 --page-types`` on that model; its comment detector from
``--rules-only --tune-folds 5 --comments`` on that one.
"""

from __future__ import annotations

import argparse
import copy
import gzip
import hashlib
import json
import pickle
import re
from collections import defaultdict
from dataclasses import replace
from multiprocessing import Pool
from pathlib import Path

import numpy as np

from pipeline import _native, model_cache
from pipeline._native.columns import dense_names  # the feature columns' one table (the runtime reads it too)
from pipeline.config import ExtractSettings, PerplexitySettings, resolve_path
from pipeline.reading.decode import page_html
from pipeline.model_registry import load_registry
from pipeline.steps.blocks.features import (CELLS, ENDS_SENTENCE, HASH_DIM, HEADINGS, LIST_ITEMS, block_perplexities,
                                            context_features, featurize, page_language, word_count)
from pipeline.steps.blocks.comments import (CommentModel, comment_features, feature_names, holds_posts,
                                            region_blocks, repeats)
from pipeline.steps.blocks.model import MODEL_PATH, BlockModel
from pipeline.steps.blocks.page_type import PAGE_TYPES, UNKNOWN, PageTypeModel, page_signals, signal_names
from pipeline.steps.blocks.parse import names_comments, parse_page
from pipeline.steps.blocks.rules import RuleSettings, in_form, revise
from pipeline.steps.blocks.extractor import block_lines, shorter_than_primary
from pipeline.steps.extractors import ResiliparseExtractor

from benchpages import BENCH, dev_items, is_heldout, scorer

ROOT = Path(__file__).resolve().parent.parent
THRESHOLDS = [round(t, 2) for t in np.arange(0.25, 0.71, 0.05)]


def lm_pins() -> dict[str, dict]:
    """Every KenLM model of the default registry (the filter's), as the block model pins it: the path
    (project-relative) and sha256 of the file."""
    out = {}
    for lang, entry in sorted(load_registry(PerplexitySettings().registry).items()):
        path = resolve_path(entry.path)
        if path.exists():
            out[lang] = {"path": path.relative_to(ROOT).as_posix(), "sha256": model_cache.file_sha256(path)}
    return out


def label(tokens: list[str], truth_joined: str, truth_trigrams: set) -> int:
    """Main when the block's tokens (the bench scorer's: CJK characters one each) occur in the truth,
    or (4+ tokens) when at least half of its token trigrams occur there."""
    if f" {' '.join(tokens)} " in truth_joined:
        return 1
    if len(tokens) >= 4:
        grams = [tuple(tokens[i:i + 3]) for i in range(len(tokens) - 2)]
        return int(sum(g in truth_trigrams for g in grams) >= 0.5 * len(grams))
    return 0


def main_labels(blocks: list, truth: str, bench: Path) -> list[int]:
    """Each block's :func:`label` against ``truth`` (the bench scorer's tokens)."""
    tokens = scorer(bench).tokenize(truth)
    joined = f" {' '.join(tokens)} "
    trigrams = {tuple(tokens[i:i + 3]) for i in range(len(tokens) - 2)}
    return [label(scorer(bench).tokenize(b.text), joined, trigrams) for b in blocks]


def raw_page(item: dict) -> dict:
    """The expensive part, cached: blocks, resiliparse text, page language, block perplexities
    (under every pinnable model: ``--lm-languages`` chooses among them without reparsing)."""
    html = page_html(gzip.decompress(Path(item["html"]).read_bytes()))
    truth = Path(item["truth"]).read_text(encoding="utf-8", errors="replace")
    blocks, markup = parse_page(html, nodes=True)  # the cache keeps the structure heuristics' candidates
    page = dict(item, truth=truth, blocks=blocks, markup=markup,
                primary=ResiliparseExtractor(ExtractSettings(), main_content=True).plain_text(html),
                page_lang=page_language(blocks, model_cache.default_lid_model_path()) if blocks else "und", log_ppl=None)
    if blocks and page["page_lang"] in PINS:
        page["log_ppl"] = block_perplexities(blocks, model_cache.kenlm_model(PINS[page["page_lang"]]["path"]))
    return page


PINS = lm_pins()
DROP: list[str] = []  # --drop (set before the pool forks)
SEED_FEATURES = False  # --seed-features: the block features end with features.NODES (set before the pool forks)


def featurised(page: dict, centres: dict[str, float], bench: Path, without_primary: bool = False) -> dict:
    """The page's features and labels; a block perplexity only under a model of ``centres`` (the pinned
    ones); ``without_primary``: as if resiliparse's main-content text were empty (an ablation)."""
    blocks = page["blocks"]
    out = dict(page, texts=[b.text for b in blocks], X=None, hashed=[], y=[], signals=None)
    if not blocks:
        return out
    lang = page["page_lang"]
    log_ppl = page["log_ppl"] if lang in centres else None
    out["X"], out["hashed"] = featurize(blocks, "" if without_primary else page["primary"], log_ppl,
                                        centres.get(lang, 0.0), page["markup"].nodes if SEED_FEATURES else None)
    if DROP:  # --drop: these columns are zero (no weight, no split; the fit still moves like another seed's: README)
        out["X"][:, [dense_names(SEED_FEATURES).index(name) for name in DROP]] = 0.0
    html = page_html(gzip.decompress(Path(page["html"]).read_bytes()))
    out["signals"] = page_signals(blocks, out["X"], page["primary"], page["markup"], html)
    if page["set"] == "snippets":  # no block labels: the set is never fitted on
        return out
    out["y"] = main_labels(blocks, page["truth"], bench)
    regions = region_blocks(blocks)
    recurring = dict(zip(regions.tolist(), repeats(blocks, regions).tolist()))
    out["comment_y"] = [comment_label(b, y, recurring.get(i, 0)) for i, (b, y) in enumerate(zip(blocks, out["y"]))]
    return out


# A comment (:func:`comment_label`) has at least this many words, at most this share of link text, and a text that
# fewer than this many other blocks of the page's comment regions have; it ends a sentence or has at least
# COMMENT_PROSE_WORDS words; and, under COMMENT_UI_WORDS words, it does not itself name comments or replies (the
# region's own prompts: "Leave a Reply", "You must log in to comment.", "Zaloguj się i komentuj").
COMMENT_MIN_WORDS = 4
COMMENT_MAX_LINKS = 0.5
COMMENT_MAX_REPEATS = 2
COMMENT_PROSE_WORDS = 12
COMMENT_UI_WORDS = 30


def comment_label(block, main: int, repeated: int) -> int:
    """A reader comment: a block of a comment region (:attr:`Block.comment_region`, outside the parts never kept)
    whose text the truth leaves out (not ``main``), of at least ``COMMENT_MIN_WORDS`` words, mostly not link text,
    whose text ``repeated`` times among the other region blocks is less than ``COMMENT_MAX_REPEATS``, not a heading,
    not in a form (:func:`~pipeline.steps.blocks.rules.in_form`), written as prose (it ends a sentence, or is
    long), and not one of the region's prompts (a short text naming comments, :func:`parse.names_comments` of its
    words): a region's buttons, counts, headings, "Reply" lines and its comment form's notes are boilerplate. A
    forum's posts and answers, and reviews the truth keeps, are main content."""
    if not block.comment_region or block.excluded or main or block.tag in HEADINGS or in_form(block):
        return 0
    words = word_count(block.text)
    text = block.text.rstrip()
    if words < COMMENT_MIN_WORDS or block.link_chars > COMMENT_MAX_LINKS * len(block.text):
        return 0
    if repeated >= COMMENT_MAX_REPEATS or not (text.endswith(tuple(ENDS_SENTENCE)) or words >= COMMENT_PROSE_WORDS):
        return 0
    return int(words >= COMMENT_UI_WORDS or not names_comments(tuple(t for t in _WORD_SPLIT.split(text.lower()) if t)))


_WORD_SPLIT = re.compile(r"\W+")


def page_weights(pages: list[dict]) -> np.ndarray:
    """Each set weighs the same in total; inside a set, each group (dataset, page type, language)
    weighs the square root of its page count, so no era, page type or language dominates."""
    groups = defaultdict(list)
    for i, p in enumerate(pages):
        groups[(p["set"], p["group"])].append(i)
    per_set = defaultdict(float)
    for (name, _), members in groups.items():
        per_set[name] += np.sqrt(len(members))
    weights = np.zeros(len(pages))
    for (name, _), members in groups.items():
        weights[members] = np.sqrt(len(members)) / per_set[name] / len(members) / len(per_set)
    return weights * len(pages)


def raw_pages(bench: Path, cache: Path | None, workers: int) -> list[dict]:
    """Every dev page's :func:`raw_page`, from ``cache`` when it was made by this block parser (the compiled
    module's ``VERSION``, bumped whenever what it computes changes), else parsed and cached again."""
    items = dev_items(bench)
    key = hashlib.md5(" ".join(item["id"] for item in items).encode()).hexdigest()  # the pages it holds
    if cache and cache.exists():
        cached = pickle.loads(cache.read_bytes())
        if isinstance(cached, dict) and cached.get("parser") == _native.VERSION and cached.get("pages_key") == key:
            return cached["pages"]
        print(f"{cache}: made by another block parser or of other pages, parsing again", flush=True)
    with Pool(workers) as pool:
        pages = list(pool.imap(raw_page, items, chunksize=8))
    if cache:
        cache.parent.mkdir(parents=True, exist_ok=True)
        cache.write_bytes(pickle.dumps({"parser": _native.VERSION, "pages_key": key, "pages": pages},
                                       protocol=pickle.HIGHEST_PROTOCOL))
    return pages


def design(pages: list[dict], page_weight: np.ndarray):
    """Sparse design matrix, labels and block weights: the square root of a block's words as a share
    of its page's, times the page's weight (ROUGE is a mean over pages)."""
    from scipy import sparse

    dense = np.vstack([p["X"] for p in pages])
    indptr, indices = [0], []
    for p in pages:
        for h in p["hashed"]:
            indices.extend(h)
            indptr.append(len(indices))
    hashed = sparse.csr_matrix((np.ones(len(indices), dtype=np.float32), indices, indptr),
                               shape=(dense.shape[0], HASH_DIM))
    X = sparse.hstack([sparse.csr_matrix(dense), hashed]).tocsr()
    y = np.concatenate([p["y"] for p in pages])
    weights = []
    for p, w in zip(pages, page_weight):
        root = np.sqrt([word_count(t) for t in p["texts"]])
        weights.append(w * root / root.sum())
    weights = np.concatenate(weights)
    return X, y, weights / weights.mean()


def page_texts(pages: list[dict], model: BlockModel, threshold: float | None,
               rules: RuleSettings = RuleSettings()) -> list[str]:
    """Each page's text: the blocks the classifier keeps at ``threshold``, revised by ``rules``; with ``threshold``
    None, by the decision of the page's type (``predicted_type``, :meth:`BlockModel.decision`)."""
    out = []
    for p in pages:
        if p["X"] is None:
            out.append("")
            continue
        if "prob" not in p:
            p["prob"] = model.scores(p["X"], p["hashed"])
        if threshold is None:
            decision = model.decision(p.get("predicted_type"))
            keep = revise(p["blocks"], p["prob"], decision.threshold, decision.rules)
        else:
            keep = revise(p["blocks"], p["prob"], threshold, rules)
        if (model.comments is not None and p.get("comment_prob") is not None
                and not holds_posts(p.get("predicted_type"), p.get("signals"))):  # extract.comments: separate
            keep &= ~(p["comment_prob"] >= model.comments.threshold)
        out.append(block_lines([b for b, k in zip(p["blocks"], keep) if k]))
    return out


# The comment detector's trees (pipeline/steps/blocks/comments.py), its folds (out-of-fold probabilities of the
# training pages, on which its threshold is chosen) and its candidate thresholds (above 1: no comments).
COMMENT_TREES = 60
COMMENT_FOLDS = 2
COMMENT_THRESHOLDS = [2.0, 0.9, 0.8, 0.7, 0.6, 0.5, 0.4, 0.3]


def fit_comment_trees(pages: list[dict], weight_of: dict[str, float], seed: int) -> dict:
    """The comment detector's JSON (without its threshold), fitted on the comment-region blocks of ``pages``
    (:func:`comment_label`), each page weighing as in the block fit and its region blocks sharing that by the
    square root of their words."""
    from sklearn.ensemble import HistGradientBoostingClassifier

    rows, labels, weights = [], [], []
    for p in pages:
        chosen = p.get("regions")
        if chosen is None or not len(chosen):
            continue
        rows.append(comment_features(p["blocks"], p["X"], chosen, p["signals"]))
        labels.append(np.asarray(p["comment_y"])[chosen])
        root = np.sqrt([word_count(p["texts"][i]) for i in chosen])
        weights.append(weight_of[p["id"]] * root / root.sum())
    y = np.concatenate(labels)
    w = np.concatenate(weights)
    booster = HistGradientBoostingClassifier(max_iter=COMMENT_TREES, max_depth=5, learning_rate=0.1,
                                             early_stopping=False, random_state=seed)
    booster.fit(np.vstack(rows), y, sample_weight=w / w.mean())
    print(f"comment detector: {len(y)} region blocks of {len(rows)} pages, {y.mean():.3f} comments", flush=True)
    return {"feature_names": feature_names(), "trees": export_trees(booster)}


def mark_regions(pages: list[dict]) -> None:
    """Set each page's ``regions``: its blocks that may be comments (:func:`region_blocks`), None without blocks."""
    for p in pages:
        p["regions"] = region_blocks(p["blocks"]) if p["X"] is not None else None


def comment_probs(pages: list[dict], data: dict) -> None:
    """Set each page's ``regions`` and ``comment_prob`` (per block; 0 outside comment regions) from the detector
    ``data``."""
    detector = CommentModel({**data, "threshold": 0.5})
    mark_regions(pages)
    for p in pages:
        chosen = p["regions"]
        if chosen is None:
            continue
        p["comment_prob"] = np.zeros(len(p["blocks"]))
        if len(chosen):
            p["comment_prob"][chosen] = detector.probabilities(p["blocks"], p["X"], chosen, p["signals"])


def fit_comments(args, train: list[dict], heldout: list[dict], weight_of: dict[str, float]) -> dict:
    """The comment detector fitted on every training page; each training page's ``comment_prob`` out of fold
    (``COMMENT_FOLDS``), each held-out page's from the detector (the threshold is chosen later, on the tuning
    pages: :func:`tune_comments`)."""
    mark_regions(train)
    for k in range(COMMENT_FOLDS):
        fold = [p for p in train if tune_fold("comments" + p["id"], COMMENT_FOLDS) == k]
        comment_probs(fold, fit_comment_trees([p for p in train if tune_fold("comments" + p["id"], COMMENT_FOLDS) != k],
                                              weight_of, args.seed))
    data = fit_comment_trees(train, weight_of, args.seed)
    comment_probs(heldout, data)
    return data


def tune_comments(args, data: dict, model: BlockModel, tuning: list[dict], choose) -> None:
    """The comment detector's threshold: the best weighted mean ROUGE-5 F1 of the tuning pages' texts with the
    comments out (extract.comments: separate), among the values that lower no set's by more than
    ``--max-set-loss`` (0.0005 when not given) against no comments; sets it in ``data`` and ``model``."""
    off = page_texts_with(tuning, model, data, 2.0)
    by_value = {t: page_texts_with(tuning, model, data, t) for t in COMMENT_THRESHOLDS}
    threshold = choose("comments threshold", by_value, off)
    data["comments"]["threshold"] = threshold
    model.comments = CommentModel(data["comments"])
    labelled = [(p["comment_prob"][i] >= threshold, p["comment_y"][i]) for p in tuning if p.get("regions") is not None
                for i in p["regions"]]
    found = sum(c and y for c, y in labelled)
    print(f"comments at {threshold} (training pages out of fold): precision {found / max(sum(c for c, _ in labelled), 1):.3f}"
          f", recall {found / max(sum(y for _, y in labelled), 1):.3f} of {sum(y for _, y in labelled)} labelled comments")


def page_texts_with(pages: list[dict], model: BlockModel, comments: dict, threshold: float) -> list[str]:
    """:func:`page_texts` by each page's decision (its type's, or the global one) with the comment detector
    ``comments`` at ``threshold``."""
    model.comments = CommentModel({**comments["comments"], "threshold": threshold})
    return page_texts(pages, model, None)


# The structure rules' candidate values (pipeline/steps/blocks/rules.py; above 1: the rule is off).
# The headings rule is not tried: at 0.3 it gained +0.0001 on the tuning pages and nothing on the
# snippet set's dev pages, and kept boilerplate headings (held-out snippet F -0.006; README).
RULE_GRID = {"row_share": [2.0, 0.75, 0.5, 0.34], "region_share": [2.0, 0.8, 0.7, 0.6, 0.5],
             "region_min_prob": [0.0, 0.05, 0.1, 0.2, 0.3], "heading_min_prob": [2.0],
             "gap_min_prob": [2.0, 0.4, 0.3, 0.2, 0.1], "section_min_prob": [2.0, 0.5, 0.4, 0.3, 0.2, 0.1]}


def tune_fold(page_id: str, folds: int) -> int:
    """The tuning fold of a training page (a hash of its id, independent of :func:`is_heldout`'s)."""
    return int(hashlib.md5(("tune" + page_id).encode()).hexdigest(), 16) % folds


def out_of_fold(args, train: list[dict], weight_of: dict[str, float], centres: dict[str, float], folds: int) -> None:
    """Set each training page's ``prob`` to the probabilities of a classifier fitted, as the shipped one is, on the
    other ``folds - 1`` folds. The shipped classifier is surer of its own training pages than of new ones, so a
    threshold chosen on its probabilities of them is too high for the pages it will clean."""
    for k in range(folds):
        rest = [p for p in train if tune_fold(p["id"], folds) != k]
        print(f"tuning fold {k + 1} of {folds}: fitted on {len(rest)} pages", flush=True)
        model = BlockModel({**fit(args, rest, weight_of, centres), "threshold": 0.5})
        for p in train:
            if tune_fold(p["id"], folds) == k and p["X"] is not None:
                p["prob"] = model.scores(p["X"], p["hashed"])


def half_split(train: list[dict]) -> tuple[list[dict], list[dict]]:
    """The studies' split of the training pages (:func:`tune_fold`): the half fitted on, and the half scored (those
    with blocks)."""
    return ([p for p in train if tune_fold(p["id"], 2) == 1],
            [p for p in train if tune_fold(p["id"], 2) == 0 and p["X"] is not None])


def study_groups(scored: list[dict], fields: tuple[tuple[str, str], ...], min_pages: int = 1) -> list[tuple]:
    """The rows of a study's table: (label, test of a page): weighted, each set, and each value of each
    (field, set) in ``fields`` with at least ``min_pages`` scored pages."""
    keys = [("weighted", lambda p: True)]
    keys += [(name, lambda p, name=name: p["set"] == name) for name in ("data", "wcxb", "ml")]
    for field, prefix in fields:
        values = sorted({p[field] for p in scored if p["set"] == prefix})
        keys += [(f"{prefix} {v}", lambda p, field=field, prefix=prefix, v=v: p["set"] == prefix and p[field] == v)
                 for v in values if sum(p["set"] == prefix and p[field] == v for p in scored) >= min_pages]
    return keys


def ablate(args, train: list[dict], weight_of: dict[str, float], centres: dict[str, float], bench_score) -> None:
    """``--ablate``: what each named group of dense features buys. The training pages split in two
    (:func:`tune_fold`); for each configuration (every feature of ``--ablate`` in; each group zeroed in turn;
    all zeroed) the two stages are fitted on one half at ``--seed`` and the other half's pages are scored: ROUGE-5
    F1 of the classifier alone (no rules, no page types, no comments) at 0.5 and at the configuration's best
    threshold, weighted as the fit weighs them, per set, WCXB page type, dataset and language. Nothing is written."""
    names = [name for name in args.ablate.split(";") if name]
    groups = {"all in": []} | {f"without {name}": name.split(",") for name in names}
    groups["all zeroed"] = [column for name in names for column in name.split(",")]
    fitted, scored = half_split(train)
    original = {p["id"]: p["X"] for p in train if p["X"] is not None}
    results = {}
    for label, columns in groups.items():
        index = [dense_names(SEED_FEATURES).index(c) for c in columns]
        for p in train:
            if p["X"] is not None:
                p["X"] = original[p["id"]].copy()
                p["X"][:, index] = 0.0
        print(f"ablation '{label}': fitted on {len(fitted)} pages, scored on {len(scored)}", flush=True)
        model = BlockModel({**fit(args, fitted, weight_of, centres), "threshold": 0.5})
        probs = [model.scores(p["X"], p["hashed"]) for p in scored]
        by_threshold = {}
        for t in THRESHOLDS:
            texts = [block_lines([b for b, q in zip(p["blocks"], prob) if q >= t]) for p, prob in zip(scored, probs)]
            by_threshold[t] = [bench_score.score_pair(text, p["truth"])["rouge5_f"] for p, text in zip(scored, texts)]
        weights = np.array([weight_of[p["id"]] for p in scored])
        best = max(THRESHOLDS, key=lambda t: np.average(by_threshold[t], weights=weights))
        results[label] = (best, by_threshold[0.5], by_threshold[best])
    for p in train:
        if p["X"] is not None:
            p["X"] = original[p["id"]]
    keys = study_groups(scored, (("dataset", "data"), ("page_type", "wcxb"), ("lang", "ml"), ("dataset", "ml")), 10)
    print(f"\nablation at seed {args.seed}: ROUGE-5 F1 on the other half of the training pages ({len(scored)}), "
          "classifier alone; 'weighted' as fitted, the rest plain means; at 0.5 / at the best threshold")
    print(f"{'group':24s} {'pages':>5s}  " + "  ".join(f"{label[:22]:>22s}" for label in results))
    print(f"{'best threshold':24s} {'':5s}  " + "  ".join(f"{r[0]:>22}" for r in results.values()))
    for key, test in keys:
        chosen = [i for i, p in enumerate(scored) if test(p)]
        cells = []
        for _, at_half, at_best in results.values():
            if key == "weighted":
                w = weights[chosen]
                cells.append(f"{np.average(np.array(at_half)[chosen], weights=w):.4f} / "
                             f"{np.average(np.array(at_best)[chosen], weights=w):.4f}")
            else:
                cells.append(f"{np.mean(np.array(at_half)[chosen]):.4f} / {np.mean(np.array(at_best)[chosen]):.4f}")
        print(f"{key[:24]:24s} {len(chosen):5d}  " + "  ".join(f"{c:>22s}" for c in cells))


def compare_comment_designs(args, train: list[dict], weight_of: dict[str, float], centres: dict[str, float],
                            bench_score) -> None:
    """``--comment-designs``: the comment detector after a classifier of main content (the shipped design) against a
    three-way split by two models: a classifier of content (main and comment blocks, :func:`comment_label`) and the
    same detector after it. Fitted on one half of the training pages (:func:`tune_fold`), scored on the other:
    ROUGE-5 F1 of the text with the comments out (extract.comments: separate), the classifier at 0.5, per set,
    dataset and page type, at each detector threshold; and the detector's precision and recall there. Writes nothing."""
    fitted, scored = half_split(train)
    mark_regions(train)
    detector = fit_comment_trees(fitted, weight_of, args.seed)
    comment_probs(scored, detector)
    results = {}
    for design in ("main, then comments", "content, then comments"):
        if design.startswith("content"):
            saved = {p["id"]: p["y"] for p in fitted}
            for p in fitted:
                p["y"] = [max(y, c) for y, c in zip(p["y"], p.get("comment_y") or p["y"])]
        model = BlockModel({**fit(args, fitted, weight_of, centres), "threshold": 0.5})
        if design.startswith("content"):
            for p in fitted:
                p["y"] = saved[p["id"]]
        probs = [model.scores(p["X"], p["hashed"]) for p in scored]
        for t in (2.0, 0.9, 0.8, 0.7, 0.6, 0.5):
            texts = []
            for p, prob in zip(scored, probs):
                keep = (prob >= 0.5) & ~(p["comment_prob"] >= t)
                texts.append(block_lines([b for b, k in zip(p["blocks"], keep) if k]))
            results[(design, t)] = [bench_score.score_pair(text, p["truth"])["rouge5_f"] for p, text in zip(scored, texts)]
    weights = np.array([weight_of[p["id"]] for p in scored])
    keys = study_groups(scored, (("dataset", "data"), ("page_type", "wcxb"), ("dataset", "ml")))
    print(f"\ncomment designs at seed {args.seed}: ROUGE-5 F1 of the text with comments out, on the other half of the "
          f"training pages ({len(scored)}); classifier at 0.5; columns: design / detector threshold (2.0: none)")
    labels = list(results)
    print(f"{'group':24s} {'pages':>5s} " + " ".join(f"{d.split(',')[0][:7]}/{t:<4}" for d, t in labels))
    for key, test in keys:
        chosen = [i for i, p in enumerate(scored) if test(p)]
        if not chosen:
            continue
        cells = [np.average(np.array(results[k])[chosen], weights=weights[chosen] if key == "weighted" else None)
                 for k in labels]
        print(f"{key[:24]:24s} {len(chosen):5d} " + " ".join(f"{c:12.4f}" for c in cells))
    for t in (0.9, 0.8, 0.7, 0.6, 0.5):
        told = [(p["comment_prob"][i] >= t, p["comment_y"][i]) for p in scored for i in p["regions"]]
        both = sum(c and y for c, y in told)
        print(f"detector at {t}: precision {both / max(sum(c for c, _ in told), 1):.3f}, "
              f"recall {both / max(sum(y for _, y in told), 1):.3f} of {sum(y for _, y in told)} labelled comments")


def tune_rules(tuning: list[dict], model: BlockModel, threshold: float, choose, reference: list[str]) -> RuleSettings:
    """The structure rules' parameters, one at a time in ``RULE_GRID`` order (two passes), each chosen by
    ``choose`` (:func:`chooser`, against the ``reference`` texts) among its values' texts of the tuning pages
    given the others."""
    best = RuleSettings()
    for _ in range(2):
        for name, values in RULE_GRID.items():
            by_value = {v: page_texts(tuning, model, threshold, replace(best, **{name: v})) for v in values}
            best = replace(best, **{name: choose(f"rules {name}", by_value, reference)})
    return best


def chooser(tuning: list[dict], mean_rouge, set_rouge, max_set_loss: float | None):
    """``choose(label, texts_by_value, reference_texts)``: the value whose texts have the best weighted mean
    ROUGE-5 F1 among those that leave no set more than ``max_set_loss`` below the reference texts' mean on it
    (None: among all; issue 13: no set may lose; a value none passes leaves the first), printing each value's
    figures."""
    def choose(label: str, by_value: dict, reference: list[str]):
        floor = ({} if max_set_loss is None else
                 {name: value - max_set_loss for name, value in set_rouge(tuning, reference).items()})
        scored = {v: (mean_rouge(tuning, texts), set_rouge(tuning, texts)) for v, texts in by_value.items()}
        allowed = [v for v, (_, sets) in scored.items() if all(sets[name] >= floor[name] for name in floor)]
        best = max(allowed or list(scored)[:1], key=lambda v: scored[v][0])
        print(f"  {label}: " + " ".join(f"{v}:{m:.4f}{'' if v in allowed else '(a set loses)'}"
                                        for v, (m, _) in scored.items()) + f" -> {best}", flush=True)
        return best
    return choose


def export_trees(booster, output: int = 0) -> dict:
    """sklearn HistGradientBoosting trees as padded node arrays (leaves point to themselves); ``output``: the
    class whose trees (a multiclass model has one tree per class and iteration)."""
    trees = [predictors[output].nodes for predictors in booster._predictors]
    width = max(len(t) for t in trees)
    arrays = {k: np.zeros((len(trees), width)) for k in ("feature", "threshold", "left", "right", "value")}
    for i, nodes in enumerate(trees):
        index = np.arange(len(nodes))
        leaf = nodes["is_leaf"].astype(bool)
        arrays["feature"][i, :len(nodes)] = np.where(leaf, 0, nodes["feature_idx"])
        arrays["threshold"][i, :len(nodes)] = np.where(leaf, 0.0, nodes["num_threshold"])
        arrays["left"][i, :len(nodes)] = np.where(leaf, index, nodes["left"])
        arrays["right"][i, :len(nodes)] = np.where(leaf, index, nodes["right"])
        arrays["value"][i, :len(nodes)] = np.where(leaf, nodes["value"], 0.0)
    out = {k: [[round(float(v), 6) if k in ("threshold", "value") else int(v) for v in row] for row in arr]
           for k, arr in arrays.items()}
    out["baseline"] = float(np.ravel(booster._baseline_prediction)[output])
    out["depth"] = int(max(int(t["depth"].max()) for t in trees))
    return out


def fit(args, train: list[dict], weight_of: dict[str, float], centres: dict[str, float]) -> dict:
    """The two stages fitted on the training pages: the model JSON without threshold, rules and fallback share."""
    from sklearn.ensemble import HistGradientBoostingClassifier
    from sklearn.linear_model import LogisticRegression

    fitted = [p for p in train if p["X"] is not None]
    X, y, weights = design(fitted, np.array([weight_of[p["id"]] for p in fitted]))
    print(f"train: {len(train)} pages, {X.shape[0]} blocks, {y.mean():.3f} main", flush=True)
    n_dense = len(dense_names(SEED_FEATURES))
    page_of = np.concatenate([np.full(len(p["texts"]), i) for i, p in enumerate(fitted)])
    # At most --max-blocks blocks of a page are fitted on (a seeded sample, weights scaled up to the page's):
    # long pages cost fitting time in proportion, and add little the page's first blocks do not show.
    rng = np.random.default_rng(args.seed)
    use = np.zeros(len(y), dtype=bool)
    start = 0
    for p in fitted:
        n = len(p["texts"])
        chosen = rng.choice(n, args.max_blocks, replace=False) if n > args.max_blocks else np.arange(n)
        use[start + chosen] = True
        weights[start:start + n] *= n / len(chosen)
        start += n
    print(f"fitting on {use.sum()} sampled blocks", flush=True)

    def fit_stage_one(rows: np.ndarray) -> dict:
        """Logistic regression, then trees over the dense features plus the regression's score
        out of fold (pages split in two), as at inference the regression has never seen the page."""
        def fit_linear(subset: np.ndarray) -> np.ndarray:
            clf = LogisticRegression(C=args.C, solver="liblinear", max_iter=1000, fit_intercept=False)
            clf.fit(X[subset], y[subset], sample_weight=weights[subset])
            return clf.coef_[0].astype(np.float64)

        linear_oof = np.zeros(len(y))
        inner = (page_of // 2) % 2  # independent of the outer split by page_of % 2
        for fold in (0, 1):
            half = rows & (inner == fold)
            linear_oof[half] = X[half] @ fit_linear(rows & (inner != fold))
        print("  linear fits done", flush=True)
        coef = fit_linear(rows)
        dense = np.hstack([X[rows][:, :n_dense].toarray(), linear_oof[rows][:, None]])
        booster = HistGradientBoostingClassifier(max_iter=args.trees, max_depth=6, learning_rate=0.1,
                                                 early_stopping=False, random_state=args.seed)
        booster.fit(dense, y[rows], sample_weight=weights[rows])
        return {"dense": [round(float(v), 6) for v in coef[:n_dense]],
                "hashed": [round(float(v), 6) for v in coef[n_dense:]], "trees": export_trees(booster)}

    def stage_one(part: dict) -> BlockModel:
        return BlockModel({"threshold": 0.5, "hash_dim": HASH_DIM, "dense_names": dense_names(SEED_FEATURES), **part})

    # Stage two learns from stage-one probabilities out of fold (pages split by index parity).
    first_oof = []
    fold_models = [stage_one(fit_stage_one(use & (page_of % 2 != fold))) for fold in (0, 1)]
    print("stage one out of fold done", flush=True)
    for i, p in enumerate(fitted):
        first_oof.append(fold_models[i % 2].first_stage(p["X"], p["hashed"]))
    context = np.vstack([context_features(prob, p["X"]) for prob, p in zip(first_oof, fitted)])
    context_booster = HistGradientBoostingClassifier(max_iter=args.context_trees, max_depth=5, learning_rate=0.1,
                                                     early_stopping=False, random_state=args.seed)
    context_booster.fit(context[use], y[use], sample_weight=weights[use])
    print("stage two done", flush=True)
    return {
        "about": "pipeline/steps/blocks block classifier, fitted by scripts/train_blocks.py on the dev pages of "
                 "bench data, data-wcxb and data-ml (md5(id) % 10 < 7)",
        "train_pages": len(train), "train_blocks": int(use.sum()), "threshold": 0.5,
        "hash_dim": HASH_DIM, "dense_names": dense_names(SEED_FEATURES),
        "language_models": {lang: {**PINS[lang], "centre": centre} for lang, centre in centres.items()},
        **fit_stage_one(use),
        "context_trees": export_trees(context_booster),
    }


def lm_centres(raw: list[dict], languages: list[str]) -> dict[str, float]:
    """The models to pin, each with its centre: the median log10 perplexity of its language's training
    blocks. A language without scored training blocks is not pinned (its pages get no perplexity)."""
    centres = {}
    for lang in languages:
        values = [p["log_ppl"] for p in raw if p["page_lang"] == lang and p["log_ppl"] is not None and not is_heldout(p["id"])]
        values = np.concatenate(values) if values else np.array([np.nan])
        if np.isfinite(values).any():
            centres[lang] = round(float(np.nanmedian(values)), 4)
        else:
            print(f"{lang}: no training page scored by its model, not pinned", flush=True)
    return centres


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--bench", type=Path, default=BENCH)
    parser.add_argument("--heldout-ids", type=Path, default=MODEL_PATH.parent / "blocks_heldout_ids.txt")
    parser.add_argument("--model", type=Path, default=MODEL_PATH)
    parser.add_argument("--C", type=float, default=0.5, help="inverse L2 regularisation strength")
    parser.add_argument("--trees", type=int, default=120, help="boosting iterations of stage one")
    parser.add_argument("--context-trees", type=int, default=60, help="boosting iterations of stage two")
    parser.add_argument("--max-blocks", type=int, default=60, help="blocks fitted on per page (a seeded sample)")
    parser.add_argument("--seed", type=int, default=0,
                        help="of the block sample and the ensembles' binning (another seed: how much a refit varies)")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--cache", type=Path, help="pickle of the parsed pages and block perplexities (reused when present)")
    parser.add_argument("--lm-languages", type=lambda s: sorted(PINS) if s == "all" else s.split(","),
                        help="comma-separated languages whose registry model is pinned, or `all` "
                             "(default: the languages the shipped model pins)")
    parser.add_argument("--without", type=lambda s: set(s.split(",")), default=set(),
                        help="ablation, as the stage would compute without them: lm (no model pinned, so no "
                             "block perplexity) and/or primary (resiliparse's main-content text taken as empty in "
                             "the features; the fallback share is still tuned on it); --drop zeroes columns instead")
    parser.add_argument("--tune-folds", type=int, default=0,
                        help="choose the threshold, rules and fallback share on every training page's out-of-fold "
                             "probabilities, from classifiers fitted as the shipped one on the other folds (5: the "
                             "README's study); 0 (as the shipped model): on a third of the training pages, scored by "
                             "the classifier fitted on them")
    parser.add_argument("--max-set-loss", type=float,
                        help="choose a threshold or rule value only when no set's weighted mean ROUGE-5 F1 on the "
                             "tuning pages falls more than this below the reference's (--rules-only: the model's own "
                             "texts; a refit: its best threshold's); default: the best weighted mean, whatever a set loses")
    parser.add_argument("--rules-only", action="store_true",
                        help="keep the classifier of --model; tune its structure rules and fallback share (and, "
                             "with --tune-folds, its threshold)")
    parser.add_argument("--page-types", action="store_true",
                        help="fit the page type model and each type's threshold and rules on out-of-fold "
                             "probabilities (needs --tune-folds); with --rules-only the model's classifier and global "
                             "decision stay as they are")
    parser.add_argument("--ablate", default="",
                        help="semicolon-separated groups of comma-separated dense features: fit on half the training "
                             "pages with all of them, each group zeroed, and all zeroed; score the other half "
                             "(:func:`ablate`); writes nothing")
    parser.add_argument("--comment-designs", action="store_true",
                        help="compare the comment detector after a classifier of main content with one after a "
                             "classifier of content (main and comments), on half the training pages; writes nothing")
    parser.add_argument("--seed-features", action="store_true",
                        help="the classifier also reads features.NODES: whether a block lies in a comment region and in "
                             "each main-content candidate of the structure heuristics of seeds 003 and 004 (what "
                             "--ablate measures them with; the shipped model does without)")
    parser.add_argument("--comments", action="store_true",
                        help="fit the comment detector (pipeline/steps/blocks/comments.py) and its threshold on "
                             "out-of-fold probabilities (needs --tune-folds); with --rules-only and without "
                             "--page-types, the model's classifier, decisions and page types stay as they are")
    parser.add_argument("--drop", default="", help="comma-separated dense features set to zero before the fit "
                        "(an ablation: compare with a refit of the same code at the same seed)")
    args = parser.parse_args()
    if args.comments and not args.tune_folds:
        parser.error("--comments needs --tune-folds (its threshold is chosen on out-of-fold probabilities)")
    if args.page_types and not args.tune_folds:
        parser.error("--page-types needs --tune-folds: each type's decision is chosen on out-of-fold probabilities")
    if args.without - {"lm", "primary"}:
        parser.error(f"--without: lm and/or primary, not {','.join(sorted(args.without - {'lm', 'primary'}))}")
    DROP.extend(name for name in args.drop.split(",") if name)
    global SEED_FEATURES
    SEED_FEATURES = args.seed_features
    ablated = {column for group in args.ablate.split(";") for column in group.split(",") if column}
    unknown_features = sorted((set(DROP) | ablated) - set(dense_names(SEED_FEATURES)))
    if unknown_features:
        parser.error(f"--drop/--ablate: no dense feature {','.join(unknown_features)}")
    bench_score = scorer(args.bench)

    if args.lm_languages is None:
        # read from the JSON, not loaded: a shipped model of an older feature set still names its languages
        args.lm_languages = sorted(json.loads(MODEL_PATH.read_text(encoding="utf-8"))["language_models"])
    unknown = sorted(set(args.lm_languages) - set(PINS))
    if unknown:
        parser.error(f"--lm-languages: no registry model for {','.join(unknown)}")
    raw = raw_pages(args.bench, args.cache, args.workers)
    if any(p["blocks"] and p["page_lang"] in PINS and p["log_ppl"] is None for p in raw):
        parser.error(f"{args.cache}: made with other language models; delete it")
    if args.rules_only:  # the shipped classifier; only its threshold's rules and fallback share are tuned
        data = json.loads(args.model.read_text())
        centres = {lang: pin["centre"] for lang, pin in data["language_models"].items()}
    else:
        centres = {} if "lm" in args.without else lm_centres(raw, args.lm_languages)
    print("log10 perplexity centre per pinned model:", centres, flush=True)
    with Pool(args.workers) as pool:
        pages = pool.starmap(featurised, [(p, centres, args.bench, "primary" in args.without) for p in raw],
                             chunksize=16)
    del raw
    snippets = [p for p in pages if p["set"] == "snippets" and not is_heldout(p["id"])]  # dev pages only
    pages = [p for p in pages if p["set"] != "snippets"]
    train = [p for p in pages if not is_heldout(p["id"])]
    heldout = [p for p in pages if is_heldout(p["id"])]
    weight_of = dict(zip((p["id"] for p in train), page_weights(train)))
    if args.ablate:
        return ablate(args, train, weight_of, centres, bench_score)
    if args.comment_designs:
        return compare_comment_designs(args, train, weight_of, centres, bench_score)
    if not args.rules_only:
        data = fit(args, train, weight_of, centres)
    model = BlockModel(data)

    scores: dict[tuple[str, str], float] = {}  # (page id, text) -> ROUGE-5 F1: the tuning grids repeat texts

    def rouge(page: dict, text: str) -> float:
        """The page's score: ROUGE-5 F1, or on a page of the snippet set its snippet F."""
        key = (page["id"], text)
        if key not in scores:
            scores[key] = (bench_score.score_snippets(text, json.loads(page["truth"]))["snippet_f"]
                           if page["set"] == "snippets" else bench_score.score_pair(text, page["truth"])["rouge5_f"])
        return scores[key]

    def mean_rouge(chosen: list[dict], texts: list[str]) -> float:
        w = np.array([weight_of[p["id"]] for p in chosen])
        return float(np.average([rouge(p, t) for p, t in zip(chosen, texts)], weights=w))

    def set_rouge(chosen: list[dict], texts: list[str]) -> dict[str, float]:
        """The weighted mean ROUGE-5 F1 of each set's pages."""
        by_set = defaultdict(list)
        for p, t in zip(chosen, texts):
            by_set[p["set"]].append((rouge(p, t), weight_of[p["id"]]))
        return {name: float(np.average([r for r, _ in v], weights=[w for _, w in v])) for name, v in by_set.items()}

    if args.tune_folds:  # the threshold, the rules and the fallback rule are chosen as new pages would score
        out_of_fold(args, train, weight_of, centres, args.tune_folds)
        tuning = train
    else:  # on a third of the training pages, with the probabilities of the classifier fitted on them
        tuning = train[::3]
    # The comment detector (--comments) is fitted, and its threshold chosen, only on out-of-fold probabilities
    # (--tune-folds): the classifier drops the comments of its own training pages, so there every comment the detector
    # finds looks like a loss. Otherwise --rules-only keeps the model's, and a refit has none.
    kept_comments = model.comments if args.rules_only and not args.comments else None
    model.comments = None  # the decisions are chosen without comments, then the comment threshold given them
    detector = fit_comments(args, train, heldout, weight_of) if args.comments else None
    if args.rules_only and (args.page_types or args.comments):  # the model's global decision stays
        share = model.fallback_min_share
    else:
        share = tune_global(args, data, model, tuning, mean_rouge, set_rouge, rouge, weight_of)
    if args.page_types:
        data["page_types"] = fit_page_types(args, train, snippets, model, rouge)
        model.page_types = PageTypeModel(data["page_types"])
    for p in (heldout if args.page_types else train + heldout) if model.page_types is not None else ():
        p["predicted_type"] = model.page_types.page_type(p["signals"]) if p["signals"] is not None else None
    if detector is not None:  # on the pages of the types that may have comments (comments.holds_posts)
        data["comments"] = detector
        max_loss = 0.0005 if args.max_set_loss is None else args.max_set_loss
        tune_comments(args, data, model, tuning, chooser(tuning, mean_rouge, set_rouge, max_loss))
    elif kept_comments is not None:
        model.comments = kept_comments
        comment_probs(train + heldout, data["comments"])
    else:
        data.pop("comments", None)
    report_heldout(heldout, page_texts(heldout, model, None), share, bench_score)
    args.model.write_text(json.dumps(data, separators=(",", ":")) + "\n")
    args.heldout_ids.parent.mkdir(parents=True, exist_ok=True)
    args.heldout_ids.write_text("".join(f"{p['id']}\n" for p in heldout))
    print(f"\nwrote {args.model} and {args.heldout_ids}")


def tune_global(args, data: dict, model: BlockModel, tuning: list[dict], mean_rouge, set_rouge, rouge,
                weight_of: dict[str, float]) -> float:
    """Choose the global threshold (a refit, or --rules-only with --tune-folds), the structure rules and the
    cascade's fallback share on the ``tuning`` pages; set them in ``data`` and ``model``; return the share."""
    choose = chooser(tuning, mean_rouge, set_rouge, args.max_set_loss)
    # What no set may lose against: --rules-only, the model's own texts; a refit, its best threshold's.
    reference = page_texts(tuning, model, model.threshold, model.rules) if args.rules_only else None
    if not args.rules_only or args.tune_folds:
        by_threshold = {t: page_texts(tuning, model, t) for t in THRESHOLDS}
        if reference is None:
            reference = by_threshold[max(THRESHOLDS, key=lambda t: mean_rouge(tuning, by_threshold[t]))]
        data["threshold"] = model.threshold = choose("threshold", by_threshold, reference)
    threshold = model.threshold
    rules = model.rules = tune_rules(tuning, model, threshold, choose, reference or page_texts(tuning, model, threshold))
    data["rules"] = rules.to_dict()
    tuned_texts = page_texts(tuning, model, threshold, rules)
    by_rule = {}
    for share in FALLBACK_SHARES:
        texts = [p["primary"] if shorter_than_primary(t, p["primary"], share) else t for p, t in zip(tuning, tuned_texts)]
        by_rule[share] = mean_rouge(tuning, texts)
    share = data["fallback_min_share"] = model.fallback_min_share = max(by_rule, key=by_rule.get)
    print("train ROUGE-5 F1 by fallback share:", " ".join(f"{k}:{v:.4f}" for k, v in by_rule.items()))
    report_tuning(tuning, [p["primary"] if shorter_than_primary(t, p["primary"], share) else t
                           for p, t in zip(tuning, tuned_texts)], rouge, weight_of)
    return share


# The page type model (pipeline/steps/blocks/page_type.py): its boosting iterations, its folds (out-of-fold types
# of the pages it is fitted on), and the training pages a type needs to get a decision of its own.
TYPE_TREES = 100
# A page is of a type only when the model gives it at least this probability (more likely than not); other pages
# are unknown and keep the global decision (a page the model is unsure of gets no type's decision).
TYPE_MIN_PROBABILITY = 0.5
# A type's decision may lower no set's mean score by more than this against the global decision (issue 13: no set
# loses); a set's mean over all its tuning pages, of which the type's pages are a part.
TYPE_MAX_SET_LOSS = 0.0005
TYPE_FOLDS = 5
MIN_TYPE_PAGES = 30


def type_label(page: dict) -> str | None:
    """What a training page teaches the page type model: a WCXB page its type; a page of the older English
    benchmarks (data, 2006-2015 markup) ``unknown``; a data-ml page nothing (no types)."""
    return {"wcxb": page["page_type"], "data": UNKNOWN}.get(page["set"])


def fit_type_trees(pages: list[dict], seed: int) -> dict:
    """The page type model's JSON (without decisions), fitted on ``pages``' signals and :func:`type_label`."""
    from sklearn.ensemble import HistGradientBoostingClassifier

    booster = HistGradientBoostingClassifier(max_iter=TYPE_TREES, max_depth=4, learning_rate=0.08, random_state=seed)
    booster.fit(np.vstack([p["signals"] for p in pages]), [type_label(p) for p in pages])
    classes = [str(c) for c in booster.classes_]
    return {"classes": classes, "signal_names": signal_names(), "min_probability": TYPE_MIN_PROBABILITY,
            "trees": [export_trees(booster, k) for k in range(len(classes))]}


def fit_page_types(args, train: list[dict], snippets: list[dict], model: BlockModel, rouge) -> dict:
    """The page type model and each type's decision (pipeline/steps/blocks/page_type.py).

    Every training page first gets the type a new page would get (``predicted_type``: out of fold for the pages the
    model is fitted on), and so does every dev page of the snippet set. Each type with at least ``MIN_TYPE_PAGES``
    training pages then gets the threshold, then the structure rules, that give the best sum of each set's mean
    score (each set weighs the same, as in the fit: data, data-ml and WCXB ROUGE-5 F1 on their training pages'
    out-of-fold block probabilities from --tune-folds, and the snippet set's snippet F on its dev pages, which no
    classifier was fitted on) among the values that lower no set's mean by more than ``TYPE_MAX_SET_LOSS`` against
    the global decision; a type's decision only changes its own pages, so that sum is the best for the type's pages
    when each counts one over its set's page count."""
    labelled = [p for p in train if type_label(p) and p["signals"] is not None]
    fold_of = {p["id"]: int(hashlib.md5(("type" + p["id"]).encode()).hexdigest(), 16) % TYPE_FOLDS for p in labelled}
    for k in range(TYPE_FOLDS):
        fold_model = PageTypeModel(fit_type_trees([p for p in labelled if fold_of[p["id"]] != k], args.seed))
        for p in labelled:
            if fold_of[p["id"]] == k:
                p["predicted_type"] = fold_model.page_type(p["signals"])
    data = fit_type_trees(labelled, args.seed)
    full = PageTypeModel(data)
    tuning = train + snippets
    for p in tuning:
        if p["id"] not in fold_of:
            p["predicted_type"] = full.page_type(p["signals"]) if p["signals"] is not None else None
    wcxb = [p for p in labelled if p["set"] == "wcxb"]
    print(f"\npage types: out-of-fold accuracy {np.mean([p['predicted_type'] == type_label(p) for p in labelled]):.3f} "
          f"({len(labelled)} pages); WCXB {np.mean([p['predicted_type'] == p['page_type'] for p in wcxb]):.3f}")
    set_size = defaultdict(int)
    for p in tuning:
        set_size[p["set"]] += p["X"] is not None
    for name in sorted(set_size):
        counts = defaultdict(int)
        for p in tuning:
            if p["set"] == name:
                counts[p["predicted_type"]] += 1
        print(f"  {name}: " + ", ".join(f"{t} {n}" for t, n in sorted(counts.items(), key=lambda kv: -kv[1])))

    def set_means(pages: list[dict], texts: list[str]) -> dict[str, float]:
        """Each set's share of the objective: its pages' scores over its page count."""
        by_set = defaultdict(float)
        for p, t in zip(pages, texts):
            by_set[p["set"]] += rouge(p, t) / set_size[p["set"]]
        return dict(by_set)

    def objective(pages: list[dict], texts: list[str]) -> float:
        return sum(set_means(pages, texts).values())

    decisions = {}
    for page_type in PAGE_TYPES:
        pages = [p for p in tuning if p.get("predicted_type") == page_type and p["X"] is not None]
        if sum(p["set"] != "snippets" for p in pages) < MIN_TYPE_PAGES:
            print(f"{page_type}: {len(pages)} tuning pages, the global decision holds")
            continue
        print(f"{page_type}: {len(pages)} tuning pages")
        choose = chooser(pages, objective, set_means, TYPE_MAX_SET_LOSS)
        reference = page_texts(pages, model, model.threshold, model.rules)  # the global decision's
        by_threshold = {t: page_texts(pages, model, t, model.rules) for t in THRESHOLDS}
        threshold = choose("threshold", by_threshold, reference)
        rules = tune_rules(pages, model, threshold, choose, reference)
        before, after = set_means(pages, reference), set_means(pages, page_texts(pages, model, threshold, rules))
        print(f"  {page_type}: threshold {threshold}, rules {rules.to_dict()}; each set's mean "
              + ", ".join(f"{name} {before.get(name, 0):+.4f} -> {after.get(name, 0):+.4f}" for name in sorted(before)))
        if sum(after.values()) > sum(before.values()):  # the objective's
            decisions[page_type] = {"threshold": threshold, "rules": rules.to_dict()}
    data["decisions"] = decisions
    typed = copy.copy(model)
    typed.page_types = PageTypeModel(data)
    scored = [p for p in tuning if p["X"] is not None]
    before, after = page_texts(scored, model, model.threshold, model.rules), page_texts(scored, typed, None)

    def plain(chosen: list[int], texts: list[str]) -> float:
        return float(np.mean([rouge(scored[i], texts[i]) for i in chosen]))

    print("tuning pages (training pages out of fold; the snippet set's dev pages: snippet F), plain means with the "
          "global decision -> with the types' decisions:")
    for name in sorted(set_size):
        chosen = [i for i, p in enumerate(scored) if p["set"] == name]
        groups = sorted({scored[i]["group"] for i in chosen}) if name == "wcxb" else []
        print(f"  {name}: {plain(chosen, before):.4f} -> {plain(chosen, after):.4f}" + "".join(
            f"; {g} {plain([i for i in chosen if scored[i]['group'] == g], before):.4f} -> "
            f"{plain([i for i in chosen if scored[i]['group'] == g], after):.4f}" for g in groups))
    return data


FALLBACK_SHARES = [0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6]
KINDS = (("heading", lambda b: b.tag in HEADINGS), ("list item", lambda b: b.tag in LIST_ITEMS),
         ("table cell", lambda b: b.tag in CELLS), ("short (<5 words)", lambda b: word_count(b.text) < 5),
         ("linked (>0.5)", lambda b: b.link_chars > 0.5 * len(b.text)), ("all", lambda b: True))


def report_tuning(tuning: list[dict], texts: list[str], rouge, weight_of: dict[str, float]) -> None:
    """The tuning pages' ROUGE-5 F1 of the chosen model (threshold, rules, fallback): the weighted mean
    it was chosen by, each set's weighted mean, and each group's plain mean (what to compare refits by)."""
    scored = [(p, rouge(p, t), weight_of[p["id"]]) for p, t in zip(tuning, texts)]
    print(f"\ntuning pages ({len(tuning)}), ROUGE-5 F1 (weighted as chosen; groups: plain means)")
    print(f"  weighted {np.average([r for _, r, _ in scored], weights=[w for _, _, w in scored]):.4f}")
    for name in sorted({p["set"] for p in tuning}):
        rows = [(p, r, w) for p, r, w in scored if p["set"] == name]
        groups = defaultdict(list)
        for p, r, _ in rows:
            groups[p["group"]].append(r)
        print(f"  {name:5s} weighted {np.average([r for _, r, _ in rows], weights=[w for _, _, w in rows]):.4f} "
              f"({len(rows)}): " + ", ".join(f"{g} {np.mean(v):.3f} ({len(v)})" for g, v in sorted(groups.items())))


def report_heldout(heldout: list[dict], texts: list[str], share: float, bench_score) -> None:
    """Held-out ROUGE-5 F1 / BoW P / BoW R per set and group, and block recall by kind."""
    cells = defaultdict(lambda: defaultdict(list))
    for p, text in zip(heldout, texts):
        fallback = p["primary"] if shorter_than_primary(text, p["primary"], share) else text
        groups = [(p["set"], "ALL"), (p["set"], p["group"])]
        if p["set"] == "ml":
            groups.append(("ml", f"dataset:{p['dataset']}"))
        for key in groups:
            for system, out in (("blocks", text), ("blocks+fallback", fallback), ("resiliparse", p["primary"])):
                cells[key][system].append(bench_score.score_pair(out, p["truth"]))
    print(f"\nheld-out ({len(heldout)} pages), fallback below {share} of resiliparse's words: "
          "ROUGE-5 F1 / BoW P / BoW R")
    print(f"{'set':5s} {'group':24s} {'n':>5s}  {'blocks':>19s}  {'blocks+fallback':>19s}  {'resiliparse':>19s}")
    for (name, group), systems in sorted(cells.items(), key=lambda kv: (kv[0][0], kv[0][1] != "ALL", kv[0][1])):
        row = [" / ".join(f"{np.mean([s[m] for s in systems[k]]):.3f}" for m in ("rouge5_f", "rouge1_p", "rouge1_r"))
               for k in ("blocks", "blocks+fallback", "resiliparse")]
        print(f"{name:5s} {group[:24]:24s} {len(systems['blocks']):5d}  {row[0]:>19s}  {row[1]:>19s}  {row[2]:>19s}")
    kept_lines = [set(t.replace("\t", "\n").split("\n")) for t in texts]
    print("\nheld-out recall of main blocks (kept / labelled main) by set and kind:")
    for name in sorted({p["set"] for p in heldout}):
        parts = []
        for kind, test in KINDS:
            main = kept = 0
            for p, lines in zip(heldout, kept_lines):
                if p["set"] != name:
                    continue
                for b, y in zip(p["blocks"], p["y"]):
                    if y and test(b):
                        main += 1
                        kept += b.text in lines
            parts.append(f"{kind} {kept / max(main, 1):.3f} ({main})")
        print(f"  {name:5s} " + ", ".join(parts))


if __name__ == "__main__":
    main()
