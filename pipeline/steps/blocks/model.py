"""The block classifier's weights: a logistic regression over the features, a gradient-boosted
tree ensemble combining the dense features with the regression's score, and a second ensemble
that revises each block's probability in the light of its neighbours'. The weights
(``blocks_model.json``) are fitted by ``scripts/train_blocks.py`` on the bench dev pages outside
their held-out split (``scripts/benchpages.py``); :func:`block_model` loads them once per worker. The KenLM files
of the perplexity feature are pinned there (:class:`LanguageModelPin`), never read from the registry.
"""

from __future__ import annotations

import json
import pkgutil
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from pipeline import model_cache
from pipeline import _native
from pipeline.steps.blocks.comments import CommentModel
from pipeline.steps.blocks.features import HASH_DIM, context_features, dense_names
from pipeline.steps.blocks.page_type import PageTypeModel, TypedDecision
from pipeline.steps.blocks.rules import RuleSettings
from pipeline.steps.blocks.tree_ensemble import TreeEnsemble

_trees = _native.compiled("trees")  # the compiled tree ensembles (pipeline/_native/trees.pyx)

MODEL_PATH = Path(__file__).resolve().parent / "blocks_model.json"


@dataclass(frozen=True)
class LanguageModelPin:
    """A KenLM file the block model was fitted with: its path, its sha256, and its typical log10
    block perplexity on the training pages (``centre``, subtracted from every block's)."""

    path: str
    sha256: str
    centre: float


_VERIFIED: dict[tuple[str, str], object] = {}  # (path, sha256) -> the verified model


def pinned_language_model(pin: LanguageModelPin):
    """The pinned KenLM model, loaded once per process; raises ValueError when the file is not
    the one the block model was fitted with (a registry change never silently changes blocks)."""
    key = (pin.path, pin.sha256)
    model = _VERIFIED.get(key)
    if model is None:
        if model_cache.file_sha256(model_cache.locate(pin.path)) != pin.sha256:
            raise ValueError(f"{pin.path}: sha256 differs from the file the block model was fitted with; "
                             "restore it or rerun scripts/train_blocks.py")
        # the path the registry's entry resolves to as well (one load per process)
        model = _VERIFIED[key] = model_cache.kenlm_model(model_cache.locate(pin.path))
    return model


def _sigmoid(raw: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-raw))


class BlockModel:
    """The fitted classifier in two stages. Stage one: a logistic regression over dense and hashed
    features, whose score joins the dense features of a tree ensemble. Stage two: a tree ensemble
    over each block's stage-one probability in the context of its neighbours and page
    (:func:`context_features`). With a page type model (``page_types``), a page of a known type is decided by
    its type's threshold and rules (:meth:`decision`); with a comment model (``comments``), the blocks of its
    comment regions are told comments or not (:class:`~pipeline.steps.blocks.comments.CommentModel`)."""

    def __init__(self, data: dict) -> None:
        # fitted with the structure heuristics' columns (train_blocks.py --seed-features) or without
        self.nodes = data.get("dense_names") == dense_names(nodes=True)
        if data.get("dense_names") != dense_names(self.nodes) or data.get("hash_dim") != HASH_DIM:
            raise ValueError("blocks model does not match the feature set; rerun scripts/train_blocks.py")
        self.dense = np.asarray(data["dense"], dtype=np.float32)
        self.hashed = np.asarray(data["hashed"], dtype=np.float32)
        self.threshold = float(data["threshold"])
        self.fallback_min_share = float(data.get("fallback_min_share", 0.0))  # 0: never (see shorter_than_primary)
        self.trees = TreeEnsemble(data["trees"])
        self.context_trees = TreeEnsemble(data["context_trees"]) if data.get("context_trees") else None
        self.language_models = {lang: LanguageModelPin(**pin) for lang, pin in data.get("language_models", {}).items()}
        self.rules = RuleSettings(**data.get("rules", {}))  # absent: no rule (see pipeline.steps.blocks.rules)
        self.page_types = PageTypeModel(data["page_types"]) if data.get("page_types") else None
        self.comments = CommentModel(data["comments"]) if data.get("comments") else None  # absent: no comments

    def decision(self, page_type: str | None) -> TypedDecision:
        """The threshold and rules a page of ``page_type`` is decided by: its type's where the page type model
        has one, else the global ones (``unknown`` pages, types without their own, no page type model)."""
        decisions = self.page_types.decisions if self.page_types is not None else {}
        return decisions.get(page_type) or TypedDecision(self.threshold, self.rules)

    @classmethod
    def load(cls, path: str | Path | None = None) -> "BlockModel":
        """The weights at ``path``; by default the packaged ``blocks_model.json`` (also from a zip)."""
        if path is None:
            raw = pkgutil.get_data(__package__, MODEL_PATH.name)
            return cls(json.loads(raw.decode("utf-8")))
        return cls(json.loads(Path(path).read_text(encoding="utf-8")))

    def linear(self, X: np.ndarray, hashed: list[list[int]]) -> np.ndarray:
        """The logistic regression's log-odds per block (float32: the dense part, then each row's hashed weights
        summed in float64 and added)."""
        out = np.ascontiguousarray(X, dtype=np.float32) @ self.dense
        _trees.add_hashed(out, hashed, self.hashed)
        return out

    def first_stage(self, X: np.ndarray, hashed: list[list[int]]) -> np.ndarray:
        """Stage-one probability that each block is main content."""
        return _sigmoid(self.trees.raw(np.hstack([X, self.linear(X, hashed)[:, None]]).astype(np.float64)))

    def scores(self, X: np.ndarray, hashed: list[list[int]]) -> np.ndarray:
        """Probability that each block is main content."""
        prob = self.first_stage(X, hashed)
        if self.context_trees is None:
            return prob
        return _sigmoid(self.context_trees.raw(context_features(prob, X)))


def block_model(path: str | None = None) -> BlockModel:
    """The block classifier's weights at ``path`` (None: the packaged ``blocks_model.json``), loaded once per process."""
    if path is None:
        return model_cache.cached("blocks", "blocks_model.json", lambda _: BlockModel.load(None), find=False)
    return model_cache.cached("blocks", path, BlockModel.load)
