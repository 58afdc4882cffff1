"""Block features for the ``blocks`` stage: each block's KenLM perplexity under the page's own language model
(:func:`page_language`, :func:`block_perplexities`), and its row of the dense matrix and hashed tokens
(:func:`featurize`), computed by the compiled module (``pipeline/_native/features.pxi``) into the columns that
:mod:`pipeline._native.columns` declares, once, for it, the classifier and ``scripts/train_blocks.py``: link density,
length and its rank within the page, character statistics, punctuation, tag kind and path, hashed class/id tokens,
position, repeated sibling structures, whether resiliparse's main-content pass kept it, the same features of its
neighbours; whether it lies in a comment region or in one of the main-content candidates of the structure heuristics
of seeds 003 and 004 (:func:`node_features`); the second stage's context features (:func:`context_features`).
"""

from __future__ import annotations

import math

import numpy as np

from pipeline import _native, model_cache
from pipeline._native import columns as _columns
from pipeline._native.columns import CONTEXT_BASE as _CONTEXT_BASE
from pipeline._native.columns import dense_names
from pipeline._native.parsed import NO_NODE, Block, Nodes
from pipeline.document import UNKNOWN_LANGUAGE
from pipeline.perplexity_rule import perplexities

_html = _native.compiled("html")  # the compiled block stage (pipeline/_native/html.pyx)

__all__ = ["NODES", "dense_names", "featurize", "node_features", "context_features", "block_perplexities",
           "page_language", "word_count", "HASH_DIM", "HEADINGS", "LIST_ITEMS", "CELLS", "CODE", "ENDS_SENTENCE"]

HASH_DIM = _html.HASH_DIM
HEADINGS, LIST_ITEMS, CELLS, CODE = _html.HEADINGS, _html.LIST_ITEMS, _html.CELLS, _html.CODE
ENDS_SENTENCE = _html.ENDS_SENTENCE
NODES = list(_columns.NODES)  # where the block lies (the last columns of a model fitted with them)
IN_PRIMARY = dense_names().index("in_primary")
CONTEXT_BASE = slice(*_CONTEXT_BASE)  # the dense columns the second stage copies (the BASE features, the position)
word_count = _html.word_count  # words of a text: white-space separated, plus one per two unspaced-script characters

# A block's perplexity is estimated from its first characters (long blocks cost, and do not gain).
LM_CHARS = 200


def block_perplexities(blocks: list[Block], lm) -> np.ndarray:
    """log10 KenLM perplexity of each block's first ``LM_CHARS`` characters; NaN for blocks of
    fewer than three words, and for every block when there is no model (``lm`` None)."""
    out = np.full(len(blocks), np.nan)
    if lm is not None:
        scored = [i for i, block in enumerate(blocks) if word_count(block.text) >= 3]
        for i, (ppl, _) in zip(scored, perplexities(lm, [blocks[i].text[:LM_CHARS] for i in scored])):
            out[i] = math.log10(max(ppl, 1.0))
    return out


def _inside(elements: np.ndarray, node: tuple[int, int]) -> np.ndarray:
    return (elements >= node[0]) & (elements <= node[1]) if node != NO_NODE else np.zeros(len(elements), dtype=bool)


def node_features(blocks: list[Block], nodes: Nodes | None) -> np.ndarray:
    """The ``NODES`` columns: per block, whether it lies in a comment region (:attr:`Block.comment_region`) and in
    each of the page's main-content candidates (``nodes``, from the same parse: its element is the candidate or
    inside it); without ``nodes``, in none."""
    out = np.zeros((len(blocks), len(NODES)), dtype=np.float32)
    if not blocks:
        return out
    out[:, 0] = np.fromiter((b.comment_region for b in blocks), dtype=bool, count=len(blocks))
    if nodes is None:
        return out
    elements = np.fromiter((b.element for b in blocks), dtype=np.int64, count=len(blocks))
    for j, node in enumerate((nodes.most_children, nodes.leaf_parent, nodes.middle, nodes.article), 1):
        out[:, j] = _inside(elements, node)
    if nodes.list_items:  # one depth's elements: disjoint, in document order
        starts = np.fromiter((first for first, _ in nodes.list_items), dtype=np.int64, count=len(nodes.list_items))
        ends = np.fromiter((last for _, last in nodes.list_items), dtype=np.int64, count=len(nodes.list_items))
        at = np.searchsorted(starts, elements, side="right") - 1
        out[:, 5] = (at >= 0) & (elements <= ends[np.maximum(at, 0)])
    return out


def featurize(blocks: list[Block], primary_text: str, log_ppl: np.ndarray | None = None,
              ppl_centre: float = 0.0, nodes: Nodes | None = None) -> tuple[np.ndarray, list[list[int]]]:
    """Dense feature matrix (``dense_names()`` columns) and hashed sparse indices per block.

    ``log_ppl`` is :func:`block_perplexities` under the page's language model (None: no model);
    ``ppl_centre`` is that model's typical log10 block perplexity, subtracted so that models of
    different languages share one scale; ``nodes``: the page's main-content candidates (its parse's
    ``Markup.nodes``), given only to a model fitted with them: their columns (:func:`node_features`) come last.
    """
    n = len(blocks)
    ppl = np.full(n, np.nan) if log_ppl is None else np.asarray(log_ppl, dtype=np.float64) - ppl_centre
    X = np.empty((n, len(dense_names(nodes is not None))), dtype=np.float32)
    if n:
        _html.page_rows(blocks, primary_text, ppl.tolist(), log_ppl is not None, X)
        if nodes is not None:
            X[:, -len(NODES):] = node_features(blocks, nodes)  # the columns after page_rows' own
    return X, _html.hashed_tokens(blocks, X[:, IN_PRIMARY].tolist())


# fastText gets this much text of the page's longer blocks to name its language.
LID_CHARS = 1000


def page_language(blocks: list[Block], lid_path: str) -> str:
    """fastText LID code of the page's text (blocks of 4+ words first, navigation words say little)."""
    long_blocks, joined = [], -1  # the length of " ".join(long_blocks)
    for b in blocks:
        if joined >= LID_CHARS:
            break  # the rest would be cut off
        if word_count(b.text) >= 4:
            long_blocks.append(b.text)
            joined += len(b.text) + 1
    sample = " ".join(" ".join(long_blocks or [b.text for b in blocks])[:LID_CHARS].split())
    if not sample:
        return UNKNOWN_LANGUAGE
    labels, _ = model_cache.fasttext_model(lid_path).predict(sample, k=1)
    return labels[0].replace("__label__", "") if labels else UNKNOWN_LANGUAGE


def context_features(prob: np.ndarray, X: np.ndarray) -> np.ndarray:
    """Second-stage features (:func:`pipeline._native.columns.context_names`): each block's first-stage probability,
    its neighbours' (3 each side), window means (7 and 21 blocks), page-level summaries, the running maxima from either
    end, the kept words before it, and its own base features and position."""
    return _html.context_rows(np.ascontiguousarray(prob, dtype=np.float64),
                              np.ascontiguousarray(X, dtype=np.float32))
