"""Block features for the ``blocks`` stage: each block's KenLM perplexity under the page's own
language model (:func:`page_language`), centred and ranked within the page, link density, length
and its rank within the page, character statistics (the signals of pages with no model),
punctuation, tag kind and path, hashed class/id tokens, position, repeated sibling structures
(:func:`structure`: list items, grid cards, table rows, posts), whether resiliparse's
main-content pass kept it, whether it lies in a comment region or in one of the main-content candidates of the
structure heuristics of seeds 003 and 004 (:func:`node_features`), and the same features of its neighbours
(:func:`featurize`); the second stage's context features (:func:`context_features`).
"""

from __future__ import annotations

import math
import zlib
from typing import Callable

import numpy as np

from pipeline import _native, models
from pipeline.document import UNKNOWN_LANGUAGE
from pipeline.steps.blocks.parse import NO_NODE, UNSPACED, Block, Nodes
from pipeline.steps.perplexity import perplexities

HASH_DIM = 1 << 12

WORD_BINS = np.array([2, 3, 5, 8, 13, 21, 40, 80])
LINK_BINS = np.array([0.01, 0.3, 0.6, 0.9])
# log10 perplexity relative to the language model's typical block (``LanguageModelPin.centre``).
PPL_BINS = np.array([-0.7, -0.3, 0.0, 0.3, 0.7, 1.2])
BASE = ["log_words", "link_density", "in_primary", "ends_punct", "comma_rate", "digit_share", "title_share",
        "log_ppl", "no_ppl", "depth", "letter_share", "space_share", "heading", "list_item", "cell", "code"]
NEIGHBOUR = ["log_words", "link_density", "in_primary", "ends_punct"]
IN_PRIMARY = 1 + BASE.index("in_primary")  # its column in the dense features (after the bias)
# The page-level and structural features after the position (see :func:`featurize`).
PAGE = ["position", "ppl_vs_page", "ppl_rank", "page_in_primary", "log_page_blocks", "words_rank", "word_share",
        "log_siblings", "log_repeats", "repeat_word_share", "repeat_link_density", "page_repeat_share",
        "page_lm"]
# Where the block lies (:func:`node_features`): in a comment region, and in each main-content candidate of the
# structure heuristics (:class:`~pipeline.steps.blocks.parse.Nodes`; seed 003's three, seed 004's two). A model
# fitted with them (``scripts/train_blocks.py --seed-features``) lists them last in its dense features; the shipped
# one is not (docs/research/block-labels.md: they did not measure better).
NODES = ["comment_region", "mce_children", "mce_leaf_parent", "mce_middle", "article_node", "list_items"]
HEADINGS = frozenset("h1 h2 h3 h4 h5 h6".split())
LIST_ITEMS = frozenset("li dt dd".split())
CELLS = frozenset("td th".split())
CODE = frozenset("pre code".split())
_DIGITS = str.maketrans("", "", "0123456789")


def dense_names(nodes: bool = False) -> list[str]:
    """The dense features' names, in column order; with ``nodes``, :data:`NODES` last."""
    names = ["bias", *BASE, *PAGE]
    names += [f"words_bin{i}" for i in range(len(WORD_BINS) + 1)]
    names += [f"link_bin{i}" for i in range(len(LINK_BINS) + 1)]
    names += [f"ppl_bin{i}" for i in range(len(PPL_BINS) + 1)]
    names += [f"{side}{k}.{n}" for side in ("prev", "next") for k in (1, 2) for n in NEIGHBOUR]
    names += [f"win.{n}" for n in NEIGHBOUR]
    return names + NODES if nodes else names


_HASHES: dict[str, int] = {}


def _hash(token: str) -> int:
    value = _HASHES.get(token)
    if value is None:
        if len(_HASHES) > 200_000:
            _HASHES.clear()
        value = _HASHES[token] = zlib.crc32(token.encode("utf-8")) % HASH_DIM
    return value


# A block whose text ends in one of these ends a sentence (a feature).
ENDS_SENTENCE = ".!?:;\"'\u201d)\u3002\uff01\uff1f\u300d\u300f"


# A block's perplexity is estimated from its first characters (long blocks cost, and do not gain).
LM_CHARS = 300


def word_count(text: str, spaced: int | None = None) -> int:
    """Words of ``text``: white-space separated (``spaced``, when the caller has counted them),
    plus one per two characters of CJK, Thai, Lao, Burmese and Khmer, which are written without spaces."""
    if spaced is None:
        module = _native.compiled("html")
        if module is not None:
            return module.word_count(text)
    words = len(text.split()) if spaced is None else spaced
    if not text.isascii():
        unspaced = len(UNSPACED.findall(text))  # two such characters count as about one word
        if unspaced:
            words += unspaced // 2
    return max(words, 1)


def word_counter() -> Callable[[str], int]:
    """:func:`word_count` of a text, as the compiled function where it is built (a loop over a page's blocks
    then makes no Python call per block)."""
    module = _native.compiled("html")
    return word_count if module is None else module.word_count


def block_perplexities(blocks: list[Block], lm) -> np.ndarray:
    """log10 KenLM perplexity of each block's first ``LM_CHARS`` characters; NaN for blocks of
    fewer than three words, and for every block when there is no model (``lm`` None)."""
    out = np.full(len(blocks), np.nan)
    if lm is not None:
        count = word_counter()
        scored = [i for i, block in enumerate(blocks) if count(block.text) >= 3]
        for i, (ppl, _) in zip(scored, perplexities(lm, [blocks[i].text[:LM_CHARS] for i in scored])):
            out[i] = math.log10(max(ppl, 1.0))
    return out


def _base(block: Block, primary: str, log_ppl: float) -> list[float]:
    text = block.text
    n_chars = len(text)
    words = text.split()
    n_words = word_count(text, len(words))
    punct = text.count(",") + text.count(".")
    letters = sum(1 for c in text if c.isalpha())
    if not text.isascii():
        punct += text.count("\u3001") + text.count("\u3002") + text.count("\uff0c")
    scored = not math.isnan(log_ppl)
    tag = block.tag
    return [math.log1p(n_words), block.link_chars / n_chars, 1.0 if primary and text in primary else 0.0,
            1.0 if text[-1] in ENDS_SENTENCE else 0.0, min(1.0, punct / n_words),
            (n_chars - len(text.translate(_DIGITS))) / n_chars,
            sum(1 for w in words if w[0].isupper()) / n_words, log_ppl if scored else 0.0, 0.0 if scored else 1.0,
            min(block.depth, 30) / 30, letters / n_chars, (len(words) - 1) / n_chars,
            float(tag in HEADINGS), float(tag in LIST_ITEMS), float(tag in CELLS),
            float(tag in CODE or "pre" in block.ancestors)]


def _one_hot(values: np.ndarray, edges: np.ndarray, mask: np.ndarray | None = None) -> np.ndarray:
    out = np.zeros((len(values), len(edges) + 1), dtype=np.float32)
    out[np.arange(len(values)), np.digitize(values, edges)] = 1.0
    if mask is not None:
        out[~mask] = 0.0
    return out


def _rank(values: np.ndarray, mask: np.ndarray | None = None) -> np.ndarray:
    """Each value's percentile rank (0..1) among the page's values (those under ``mask``; 0.5 elsewhere)."""
    out = np.full(len(values), 0.5)
    chosen = np.arange(len(values)) if mask is None else np.flatnonzero(mask)
    if len(chosen) > 1:
        order = np.argsort(np.argsort(values[chosen], kind="stable"), kind="stable")
        out[chosen] = order / (len(chosen) - 1)
    return out


def _group_sizes(keys: list) -> tuple[np.ndarray, dict]:
    index: dict = {}
    ids = np.fromiter((index.setdefault(k, len(index)) for k in keys), dtype=np.intp, count=len(keys))
    return ids, index


def structure(blocks: list[Block], words: np.ndarray, links: np.ndarray) -> np.ndarray:
    """Repeated sibling structures (seed 004): per block, log1p of its siblings of the same tag under
    the same parent, log1p of the blocks with its signature (tag, enclosing tags, class/id tokens)
    on the page, that group's share of the page's words and its link density, and the page's share
    of words in groups of three or more (a list-like page scores high)."""
    n = len(blocks)
    siblings, _ = _group_sizes([(b.parent, b.tag) for b in blocks])
    repeats, _ = _group_sizes([(b.tag, b.ancestors, b.attr_tokens) for b in blocks])
    sib_count = np.bincount(siblings)[siblings]
    rep_count = np.bincount(repeats)[repeats]
    rep_words = np.bincount(repeats, weights=words)[repeats]
    rep_links = np.bincount(repeats, weights=links * words)[repeats]
    total = max(float(words.sum()), 1.0)
    page_repeat = float(words[rep_count >= 3].sum()) / total
    return np.stack([np.log1p(sib_count - 1), np.log1p(rep_count - 1), rep_words / total,
                     rep_links / np.maximum(rep_words, 1.0), np.full(n, page_repeat)], axis=1)


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
    page_lm = log_ppl is not None
    ppl = np.full(n, np.nan) if log_ppl is None else np.asarray(log_ppl, dtype=np.float64) - ppl_centre
    module = _native.compiled("html")
    if module is not None:  # the same matrix in one compiled pass
        X = np.empty((n, len(dense_names(nodes is not None))), dtype=np.float32)
        if n:
            module.page_rows(blocks, module.joined_words(primary_text), ppl.tolist(), page_lm, X, *_COMPILED_ROWS)
            if nodes is not None:
                X[:, -len(NODES):] = node_features(blocks, nodes)  # the columns after page_rows' own
        return X, hashed_tokens(blocks, X[:, IN_PRIMARY].tolist())
    primary = " ".join(primary_text.split())
    base = np.array([_base(b, primary, p) for b, p in zip(blocks, ppl.tolist())],
                    dtype=np.float32).reshape(n, len(BASE))
    col = {name: j for j, name in enumerate(BASE)}
    rel_ppl, scored = base[:, col["log_ppl"]], base[:, col["no_ppl"]] == 0
    page_ppl = float(np.median(rel_ppl[scored])) if scored.any() else 0.0
    words = np.expm1(base[:, col["log_words"]].astype(np.float64))
    extra = np.column_stack([np.linspace(0.0, 1.0, n) if n > 1 else np.zeros(n),
                             np.where(scored, rel_ppl - page_ppl, 0.0),
                             _rank(rel_ppl, scored),
                             np.full(n, base[:, col["in_primary"]].mean() if n else 0.0),
                             np.full(n, math.log1p(n) / 8),
                             _rank(words), words / max(float(words.sum()), 1.0),
                             structure(blocks, words, base[:, col["link_density"]].astype(np.float64)),
                             np.full(n, float(page_lm))]).reshape(n, len(PAGE))
    neigh = base[:, [col[name] for name in NEIGHBOUR]]
    shifted = []
    for step in (-1, -2, 1, 2):  # prev1, prev2, next1, next2
        moved = np.zeros_like(neigh)
        if step < 0 and n > -step:
            moved[-step:] = neigh[:step]
        elif step > 0 and n > step:
            moved[:-step] = neigh[step:]
        shifted.append(moved)
    padded = np.vstack([np.zeros((3, neigh.shape[1])), neigh, np.zeros((3, neigh.shape[1]))])
    idx = np.arange(n)
    counts = (np.minimum(idx + 3, n - 1) - np.maximum(idx - 3, 0) + 1)[:, None]
    window = sum(padded[k:k + n] for k in range(7)) / counts
    X = np.hstack([np.ones((n, 1)), base, extra,
                   _one_hot(words, WORD_BINS),
                   _one_hot(base[:, col["link_density"]], LINK_BINS),
                   _one_hot(rel_ppl, PPL_BINS, scored), *shifted, window,
                   *(() if nodes is None else (node_features(blocks, nodes),))]).astype(np.float32)
    return X, hashed_tokens(blocks, base[:, col["in_primary"]].tolist())


# What the compiled page_rows is handed: the bin edges (float64; digitize compares in float64 too), the tag sets of
# the tag features and the characters that end a sentence.
_COMPILED_ROWS = (*(np.asarray(edges, dtype=np.float64) for edges in (WORD_BINS, LINK_BINS, PPL_BINS)),
                  (HEADINGS, LIST_ITEMS, CELLS, CODE), ENDS_SENTENCE)


def hashed_tokens(blocks: list[Block], in_primary: list[float]) -> list[list[int]]:
    """Hashed indices (sorted) of each block's tag, tag path, parent and class/id tokens, and its tag
    with whether resiliparse kept it (``in_primary``, 0.0 or 1.0 per block)."""
    module = _native.compiled("html")
    if module is not None:  # the same lists, in compiled code
        return module.hashed_tokens(blocks, in_primary, _HASHES, _hash)
    hashed = []
    seen: dict[tuple, list[int]] = {}  # blocks of one element (and look-alikes) share their tokens
    for b, kept in zip(blocks, in_primary):
        key = (b.tag, b.ancestors[:2], b.attr_tokens, kept)
        indices = seen.get(key)
        if indices is None:
            tokens = [f"tag:{b.tag}", f"path:{b.tag}/{'/'.join(b.ancestors[:2])}", f"parent:{b.ancestors[:1]}",
                      f"prim:{int(kept)}:tag:{b.tag}", *(f"attr{a}" for a in b.attr_tokens)]
            indices = seen[key] = sorted({_hash(t) for t in tokens})
        hashed.append(indices)
    return hashed


# fastText gets this much text of the page's longer blocks to name its language.
LID_CHARS = 2000


def page_language(blocks: list[Block], lid_path: str) -> str:
    """fastText LID code of the page's text (blocks of 4+ words first, navigation words say little)."""
    long_blocks, joined = [], -1  # the length of " ".join(long_blocks)
    count = word_counter()
    for b in blocks:
        if joined >= LID_CHARS:
            break  # the rest would be cut off
        if count(b.text) >= 4:
            long_blocks.append(b.text)
            joined += len(b.text) + 1
    sample = " ".join(" ".join(long_blocks or [b.text for b in blocks])[:LID_CHARS].split())
    if not sample:
        return UNKNOWN_LANGUAGE
    labels, _ = models.fasttext_model(lid_path).predict(sample, k=1)
    return labels[0].replace("__label__", "") if labels else UNKNOWN_LANGUAGE


def context_features(prob: np.ndarray, X: np.ndarray) -> np.ndarray:
    """Second-stage features: each block's first-stage probability, its neighbours' (3 each side),
    window means (7 and 21 blocks), page-level summaries, the running maxima from either end,
    the kept words before it, and its own base features (``CONTEXT_BASE`` columns of ``X``)."""
    module = _native.compiled("html")
    if module is not None and prob.dtype == np.float64 and X.dtype == np.float32 and X.flags.c_contiguous:
        return module.context_rows(np.ascontiguousarray(prob), X, CONTEXT_BASE.start, CONTEXT_BASE.stop)
    n = len(prob)
    clipped = np.clip(prob, 1e-6, 1 - 1e-6)
    cols = [prob, np.log(clipped / (1 - clipped))]
    for k in (1, 2, 3):
        before, after = np.zeros(n), np.zeros(n)
        if n > k:
            before[k:], after[:-k] = prob[:-k], prob[k:]
        cols += [before, after]
    cumulative = np.concatenate([[0.0], np.cumsum(prob)])
    index = np.arange(n)
    for half in (3, 10):
        lo, hi = np.maximum(index - half, 0), np.minimum(index + half + 1, n)
        cols.append((cumulative[hi] - cumulative[lo]) / (hi - lo))
    cols += [np.full(n, prob.mean()), np.full(n, prob.max()), np.full(n, (prob > 0.5).mean()),
             np.maximum.accumulate(prob), np.maximum.accumulate(prob[::-1])[::-1]]
    kept_words = np.expm1(X[:, 1]) * (prob > 0.5)
    total = kept_words.sum()
    cols += [np.full(n, math.log1p(total)), np.cumsum(kept_words) / max(total, 1.0)]
    return np.column_stack([*cols, X[:, CONTEXT_BASE]]).astype(np.float64)


CONTEXT_BASE = slice(1, len(BASE) + 2)  # the BASE features and the position
