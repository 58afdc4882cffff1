"""Block features for the ``blocks`` stage: each block's KenLM perplexity, link density, length,
punctuation, tag path, hashed class/id tokens, position, whether resiliparse's main-content pass
kept it, and the same features of its neighbours (:func:`featurize`); the second stage's
context features (:func:`context_features`).
"""

from __future__ import annotations

import math
import re
import zlib

import numpy as np

from warcplex.steps.blocks.parse import Block
from warcplex.steps.perplexity import perplexity

HASH_DIM = 1 << 12

WORD_BINS = np.array([2, 3, 5, 8, 13, 21, 40, 80])
LINK_BINS = np.array([0.01, 0.3, 0.6, 0.9])
PPL_BINS = np.array([2.3, 2.7, 3.0, 3.3, 3.7, 4.2])
BASE = ["log_words", "link_density", "in_primary", "ends_punct", "comma_rate", "digit_share", "title_share",
        "log_ppl", "no_ppl", "depth"]
NEIGHBOUR = ["log_words", "link_density", "in_primary", "ends_punct"]
_DIGITS = str.maketrans("", "", "0123456789")


def dense_names() -> list[str]:
    names = ["bias", *BASE, "position", "ppl_vs_page", "page_in_primary", "log_page_blocks"]
    names += [f"words_bin{i}" for i in range(len(WORD_BINS) + 1)]
    names += [f"link_bin{i}" for i in range(len(LINK_BINS) + 1)]
    names += [f"ppl_bin{i}" for i in range(len(PPL_BINS) + 1)]
    names += [f"{side}{k}.{n}" for side in ("prev", "next") for k in (1, 2) for n in NEIGHBOUR]
    names += [f"win.{n}" for n in NEIGHBOUR]
    return names


_HASHES: dict[str, int] = {}


def _hash(token: str) -> int:
    value = _HASHES.get(token)
    if value is None:
        if len(_HASHES) > 200_000:
            _HASHES.clear()
        value = _HASHES[token] = zlib.crc32(token.encode("utf-8")) % HASH_DIM
    return value


# Scripts written without spaces between words: two such characters count as about one word.
_UNSPACED = re.compile("[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\u0e00-\u0e7f\u0e80-\u0eff"
                       "\u1000-\u109f\u1780-\u17ff]")
_ENDS_SENTENCE = ".!?:;\"'\u201d)\u3002\uff01\uff1f\u300d\u300f"


# A block's perplexity is estimated from its first characters (long blocks cost, and do not gain).
LM_CHARS = 300


def word_count(text: str, spaced: int | None = None) -> int:
    """Words of ``text``: white-space separated (``spaced``, when the caller has counted them),
    plus one per two characters of CJK, Thai, Lao, Burmese and Khmer, which are written without spaces."""
    words = len(text.split()) if spaced is None else spaced
    if not text.isascii():
        unspaced = len(_UNSPACED.findall(text))
        if unspaced:
            words += unspaced // 2
    return max(words, 1)


def _base(block: Block, primary: str, lm) -> list[float]:
    text = block.text
    n_chars = len(text)
    words = text.split()
    n_words = word_count(text, len(words))
    if lm is not None and n_words >= 3:
        log_ppl, no_ppl = math.log10(max(perplexity(lm, text[:LM_CHARS])[0], 1.0)), 0.0
    else:
        log_ppl, no_ppl = 0.0, 1.0
    punct = text.count(",") + text.count(".")
    if not text.isascii():
        punct += text.count("\u3001") + text.count("\u3002") + text.count("\uff0c")
    return [math.log1p(n_words), block.link_chars / n_chars, 1.0 if primary and text in primary else 0.0,
            1.0 if text[-1] in _ENDS_SENTENCE else 0.0, min(1.0, punct / n_words),
            (n_chars - len(text.translate(_DIGITS))) / n_chars,
            sum(1 for w in words if w[0].isupper()) / n_words, log_ppl, no_ppl, min(block.depth, 30) / 30]


def _one_hot(values: np.ndarray, edges: np.ndarray, mask: np.ndarray | None = None) -> np.ndarray:
    out = np.zeros((len(values), len(edges) + 1), dtype=np.float32)
    out[np.arange(len(values)), np.digitize(values, edges)] = 1.0
    if mask is not None:
        out[~mask] = 0.0
    return out


def featurize(blocks: list[Block], primary_text: str, lm=None) -> tuple[np.ndarray, list[list[int]]]:
    """Dense feature matrix (``dense_names()`` columns) and hashed sparse indices per block."""
    primary = " ".join(primary_text.split())
    n = len(blocks)
    base = np.array([_base(b, primary, lm) for b in blocks], dtype=np.float32).reshape(n, len(BASE))
    col = {name: j for j, name in enumerate(BASE)}
    log_ppl, scored = base[:, col["log_ppl"]], base[:, col["no_ppl"]] == 0
    page_ppl = float(np.median(log_ppl[scored])) if scored.any() else 0.0
    extra = np.stack([np.linspace(0.0, 1.0, n) if n > 1 else np.zeros(n),
                      np.where(scored, log_ppl - page_ppl, 0.0),
                      np.full(n, base[:, col["in_primary"]].mean() if n else 0.0),
                      np.full(n, math.log1p(n) / 8)], axis=1)
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
                   _one_hot(np.expm1(base[:, col["log_words"]]), WORD_BINS),
                   _one_hot(base[:, col["link_density"]], LINK_BINS),
                   _one_hot(log_ppl, PPL_BINS, scored), *shifted, window]).astype(np.float32)
    hashed = []
    seen: dict[tuple, list[int]] = {}  # blocks of one element (and look-alikes) share their tokens
    for b, in_primary in zip(blocks, base[:, col["in_primary"]].tolist()):
        key = (b.tag, b.ancestors[:2], b.attr_tokens, in_primary)
        indices = seen.get(key)
        if indices is None:
            tokens = [f"tag:{b.tag}", f"path:{b.tag}/{'/'.join(b.ancestors[:2])}", f"parent:{b.ancestors[:1]}",
                      f"prim:{int(in_primary)}:tag:{b.tag}", *(f"attr{a}" for a in b.attr_tokens)]
            indices = seen[key] = sorted({_hash(t) for t in tokens})
        hashed.append(indices)
    return X, hashed


def context_features(prob: np.ndarray, X: np.ndarray) -> np.ndarray:
    """Second-stage features: each block's first-stage probability, its neighbours' (3 each side),
    window means (7 and 21 blocks), page-level summaries, the running maxima from either end,
    the kept words before it, and its own base features (``CONTEXT_BASE`` columns of ``X``)."""
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
