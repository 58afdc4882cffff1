#!/usr/bin/env python3
"""Fit the block classifier of warcplex/steps/blocks/ on the bench dev pages (deterministic).

Only ../shared/bench/data full-text dev pages are used. Pages split by a hash of their id:
70% train, 30% held out (never seen by the fit nor the threshold choice). A block is labelled
main when its lower-cased text occurs in the page's truth, or (4+ words) when at least half of
its word trigrams occur there. Stage one: a logistic regression over dense and hashed features, then a HistGradientBoosting
ensemble over the dense features plus the regression's out-of-fold score. Stage two: a smaller
ensemble over each block's stage-one probability (out of fold) among its neighbours and page.
Blocks are weighted by the square root of their word count (ROUGE counts words). The decision
threshold is the one with the best mean ROUGE-5 F1 on the training pages, and the held-out
ROUGE-5 F1 (the bench scorer's) is printed next to resiliparse's main-content text on the same
pages. Writes warcplex/steps/blocks/blocks_model.json and the held-out ids.

usage: scripts/train_blocks.py [--bench ../shared/bench] [--cache pages.pkl] [--trees 200] [--context-trees 100]
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import importlib.util
import json
import pickle
from collections import defaultdict
from multiprocessing import Pool
from pathlib import Path

import numpy as np

from warcplex import models
from warcplex.config import ExtractSettings
from warcplex.reading.decode import decode_html
from warcplex.registry import load_registry
from warcplex.steps.blocks.features import HASH_DIM, context_features, dense_names, featurize
from warcplex.steps.blocks.model import MODEL_PATH, BlockModel
from warcplex.steps.blocks.parse import parse_blocks
from warcplex.steps.extractors import ResiliparseExtractor

ROOT = Path(__file__).resolve().parent.parent

REGISTRY = "conf/models.yaml"
THRESHOLDS = [round(t, 2) for t in np.arange(0.2, 0.81, 0.05)]


def is_train(page_id: str) -> bool:
    return int(hashlib.md5(page_id.encode()).hexdigest(), 16) % 10 < 7


def label(text: str, truth_joined: str, truth_trigrams: set) -> int:
    tokens = text.lower().split()
    if f" {' '.join(tokens)} " in truth_joined:
        return 1
    if len(tokens) >= 4:
        grams = [tuple(tokens[i:i + 3]) for i in range(len(tokens) - 2)]
        return int(sum(g in truth_trigrams for g in grams) >= 0.5 * len(grams))
    return 0


def page_data(item: tuple[str, str, Path, Path]) -> dict | None:
    page_id, dataset, html_path, truth_path = item
    html = decode_html(gzip.decompress(html_path.read_bytes()))
    truth = truth_path.read_text(encoding="utf-8", errors="replace")
    blocks = parse_blocks(html)
    primary = ResiliparseExtractor(ExtractSettings(), main_content=True).plain_text(html)
    entry = load_registry(REGISTRY).get("en") if (ROOT / REGISTRY).exists() else None
    lm = models.kenlm_model(entry.path) if entry else None
    if not blocks:
        return dict(id=page_id, dataset=dataset, truth=truth, primary=primary, texts=[], X=None, hashed=[], y=[])
    X, hashed = featurize(blocks, primary, lm)
    tokens = truth.lower().split()
    joined = f" {' '.join(tokens)} "
    trigrams = {tuple(tokens[i:i + 3]) for i in range(len(tokens) - 2)}
    y = [label(b.text, joined, trigrams) for b in blocks]
    return dict(id=page_id, dataset=dataset, truth=truth, primary=primary, texts=[b.text for b in blocks],
                X=X, hashed=hashed, y=y)


def design(pages: list[dict]):
    from scipy import sparse

    rows = [p for p in pages if p["X"] is not None]
    dense = np.vstack([p["X"] for p in rows])
    indptr, indices = [0], []
    for p in rows:
        for h in p["hashed"]:
            indices.extend(h)
            indptr.append(len(indices))
    hashed = sparse.csr_matrix((np.ones(len(indices), dtype=np.float32), indices, indptr),
                               shape=(dense.shape[0], HASH_DIM))
    X = sparse.hstack([sparse.csr_matrix(dense), hashed]).tocsr()
    y = np.concatenate([p["y"] for p in rows])
    words = np.array([len(t.split()) for p in rows for t in p["texts"]], dtype=np.float64)
    return X, y, words


def page_texts(pages: list[dict], model: BlockModel, threshold: float) -> list[str]:
    out = []
    for p in pages:
        if p["X"] is None:
            out.append("")
            continue
        prob = model.scores(p["X"], p["hashed"])
        out.append("\n".join(t for t, q in zip(p["texts"], prob) if q >= threshold))
    return out


def export_trees(booster) -> dict:
    """sklearn HistGradientBoosting trees as padded node arrays (leaves point to themselves)."""
    trees = [predictors[0].nodes for predictors in booster._predictors]
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
    out["baseline"] = float(np.ravel(booster._baseline_prediction)[0])
    out["depth"] = int(max(int(t["depth"].max()) for t in trees))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--bench", type=Path, default=ROOT.parent / "shared" / "bench")
    parser.add_argument("--heldout-ids", type=Path, default=ROOT / "warcplex" / "steps" / "blocks" / "blocks_heldout_ids.txt")
    parser.add_argument("--model", type=Path, default=MODEL_PATH)
    parser.add_argument("--C", type=float, default=0.5, help="inverse L2 regularisation strength")
    parser.add_argument("--trees", type=int, default=200, help="boosting iterations of stage one")
    parser.add_argument("--context-trees", type=int, default=100, help="boosting iterations of stage two")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--cache", type=Path, help="pickle of the featurised pages (reused when present)")
    args = parser.parse_args()
    from sklearn.ensemble import HistGradientBoostingClassifier
    from sklearn.linear_model import LogisticRegression

    spec = importlib.util.spec_from_file_location("bench_score", args.bench / "score.py")
    bench_score = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench_score)

    data = args.bench / "data"
    items = []
    for line in open(data / "manifest.jsonl"):
        m = json.loads(line)
        if m.get("truth_type") == "fulltext":
            ds = data / m["dataset"]
            items.append((m["id"], m["dataset"], ds / "pages" / f"{m['id']}.html.gz", ds / "truth" / f"{m['id']}.txt"))
    if args.cache and args.cache.exists():
        pages = pickle.loads(args.cache.read_bytes())
    else:
        with Pool(args.workers) as pool:
            pages = list(pool.imap(page_data, items, chunksize=8))
        if args.cache:
            args.cache.write_bytes(pickle.dumps(pages))
    train = [p for p in pages if is_train(p["id"])]
    heldout = [p for p in pages if not is_train(p["id"])]
    fitted = [p for p in train if p["X"] is not None]
    X, y, words = design(fitted)
    print(f"train: {len(train)} pages, {X.shape[0]} blocks, {y.mean():.3f} main; held out: {len(heldout)} pages")
    n_dense = len(dense_names())
    page_of = np.concatenate([np.full(len(p["texts"]), i) for i, p in enumerate(fitted)])

    def fit_stage_one(rows: np.ndarray) -> dict:
        """Logistic regression, then trees over the dense features plus the regression's score
        out of fold (pages split in two), as at inference the regression has never seen the page."""
        def fit_linear(subset: np.ndarray) -> np.ndarray:
            clf = LogisticRegression(C=args.C, solver="liblinear", max_iter=1000, fit_intercept=False)
            clf.fit(X[subset], y[subset], sample_weight=np.sqrt(words[subset]))
            return clf.coef_[0].astype(np.float64)

        linear_oof = np.zeros(len(y))
        inner = (page_of // 2) % 2  # independent of the outer split by page_of % 2
        for fold in (0, 1):
            half = rows & (inner == fold)
            linear_oof[half] = X[half] @ fit_linear(rows & (inner != fold))
        coef = fit_linear(rows)
        dense = np.hstack([X[rows][:, :n_dense].toarray(), linear_oof[rows][:, None]])
        booster = HistGradientBoostingClassifier(max_iter=args.trees, max_depth=6, learning_rate=0.1,
                                                 early_stopping=False, random_state=0)
        booster.fit(dense, y[rows], sample_weight=np.sqrt(words[rows]))
        return {"dense": [round(float(v), 6) for v in coef[:n_dense]],
                "hashed": [round(float(v), 6) for v in coef[n_dense:]], "trees": export_trees(booster)}

    def stage_one(part: dict) -> BlockModel:
        return BlockModel({"threshold": 0.5, "hash_dim": HASH_DIM, "dense_names": dense_names(), **part})

    # Stage two learns from stage-one probabilities out of fold (pages split by index parity).
    first_oof = []
    fold_models = [stage_one(fit_stage_one(page_of % 2 != fold)) for fold in (0, 1)]
    for i, p in enumerate(fitted):
        first_oof.append(fold_models[i % 2].first_stage(p["X"], p["hashed"]))
    context = np.vstack([context_features(prob, p["X"]) for prob, p in zip(first_oof, fitted)])
    context_booster = HistGradientBoostingClassifier(max_iter=args.context_trees, max_depth=5, learning_rate=0.1,
                                                     early_stopping=False, random_state=0)
    context_booster.fit(context, y, sample_weight=np.sqrt(words))
    data = {
        "about": "warcplex/steps/blocks block classifier, fitted by scripts/train_blocks.py on bench dev pages "
                 "(md5(id) % 10 < 7)",
        "train_pages": len(train), "train_blocks": int(X.shape[0]), "threshold": 0.5,
        "hash_dim": HASH_DIM, "dense_names": dense_names(),
        **fit_stage_one(np.ones(len(y), dtype=bool)),
        "context_trees": export_trees(context_booster),
    }
    model = BlockModel(data)

    def mean_rouge(pages: list[dict], texts: list[str]) -> float:
        return float(np.mean([bench_score.score_pair(t, p["truth"])["rouge5_f"] for p, t in zip(pages, texts)]))

    by_threshold = {t: mean_rouge(train, page_texts(train, model, t)) for t in THRESHOLDS}
    threshold = data["threshold"] = model.threshold = max(by_threshold, key=by_threshold.get)
    print("train ROUGE-5 F1 by threshold:", " ".join(f"{t}:{v:.4f}" for t, v in by_threshold.items()))

    per_ds = defaultdict(lambda: defaultdict(list))
    for p, text in zip(heldout, page_texts(heldout, model, threshold)):
        per_ds[p["dataset"]]["blocks"].append(bench_score.score_pair(text, p["truth"]))
        per_ds[p["dataset"]]["resiliparse"].append(bench_score.score_pair(p["primary"], p["truth"]))
    print(f"\nheld-out ({len(heldout)} pages), threshold {threshold}: ROUGE-5 F1 / BoW P / BoW R")
    print(f"{'dataset':18s} {'n':>5s}  {'blocks':>22s}  {'resiliparse main_content':>24s}")
    everything = defaultdict(list)
    for ds in sorted(per_ds) + ["ALL(pages)"]:
        rows = per_ds[ds] if ds in per_ds else everything
        cells = []
        for system in ("blocks", "resiliparse"):
            scores = rows[system]
            if ds in per_ds:
                everything[system].extend(scores)
            cells.append(" / ".join(f"{np.mean([s[m] for s in scores]):.3f}" for m in ("rouge5_f", "rouge1_p", "rouge1_r")))
        print(f"{ds:18s} {len(rows['blocks']):5d}  {cells[0]:>22s}  {cells[1]:>24s}")

    args.model.write_text(json.dumps(data, separators=(",", ":")) + "\n")
    args.heldout_ids.parent.mkdir(parents=True, exist_ok=True)
    args.heldout_ids.write_text("".join(f"{p['id']}\n" for p in heldout))
    print(f"\nwrote {args.model} and {args.heldout_ids}")


if __name__ == "__main__":
    main()
