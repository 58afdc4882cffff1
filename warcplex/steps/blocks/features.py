"""A Dripper-style block stage: HTML -> semantic blocks -> main/other with a small CPU classifier.

The page is simplified into a sequence of text blocks (each contiguous run of text owned by a
block-level element: p, h1-h6, li, td, pre, blockquote, a div with direct text, ...), read from
the HTML parser's events without building a tree. A block's ``element`` is the preorder index of
its element (:func:`block_element` finds it in :func:`parse_tree`, :func:`dom_path` gives its
XPath), so every decision maps back to the original DOM. A logistic regression (weights in
``pipeline/blocks_model.json``, fitted by ``scripts/train_blocks.py`` on bench dev pages only)
classifies each block from its KenLM perplexity, link density, length, punctuation, tag path,
hashed class/id tokens, position, whether resiliparse's main-content pass kept it, and the same
features of its neighbours; a gradient-boosted tree ensemble combines the dense features with
the regression's score, and a second ensemble revises each block's probability in the light of
its neighbours' (:func:`context_features`). The kept blocks, in document order, are the page's text.
"""

from __future__ import annotations

import itertools
import json
import math
import pkgutil
import re
import zlib
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from warcplex import models
from warcplex.config import ExtractSettings, PerplexitySettings
from warcplex.steps.extractors import Extractor, PageTooDeep, nesting_depth, perplexity

MODEL_PATH = Path(__file__).resolve().parent / "blocks_model.json"

INLINE = frozenset("a abbr acronym b bdi bdo big cite code data del dfn em font i ins kbd label mark nobr q "
                   "s samp small span strike strong sub sup time tt u var wbr".split())
# Subtrees never read. Not `form` (whole pages are often wrapped in one) nor `noscript` (the HTML
# parser nests the rest of the page inside one whose end tag it ignores): their text goes to the
# classifier like any other.
SKIP = frozenset("script style template head title meta link iframe svg canvas object embed select "
                 "option button input textarea nav math".split())
HASH_DIM = 1 << 12
_TOKEN_SPLIT = re.compile(r"[^a-z]+")


@dataclass
class Block:
    """A contiguous run of text owned by one block-level element."""

    text: str
    element: int  # preorder index of the owning element in the document (see :func:`dom_path`)
    tag: str
    ancestors: tuple[str, ...]  # tag names of the enclosing block-level elements, nearest first
    attr_tokens: tuple[str, ...]  # class/id tokens of the element and ancestors, prefixed by level
    link_chars: int
    depth: int


_ATTR_CACHE: dict[str, tuple[str, ...]] = {}


def _attr_tokens(attrib) -> tuple[str, ...]:
    """Lower-cased words (2+ letters) of an element's class and id."""
    raw = f"{attrib.get('class') or ''} {attrib.get('id') or ''}"
    tokens = _ATTR_CACHE.get(raw)
    if tokens is None:
        if len(_ATTR_CACHE) > 50_000:
            _ATTR_CACHE.clear()
        tokens = _ATTR_CACHE[raw] = tuple(t for t in _TOKEN_SPLIT.split(raw.lower()) if len(t) > 1)
    return tokens


class _Owner:
    """A block-level element on the parser's stack, collecting its runs of text."""

    __slots__ = ("element", "tag", "ancestors", "levels", "depth", "parts", "link", "_attrs")

    def __init__(self, element: int, tag: str, ancestors: tuple, levels: tuple, depth: int) -> None:
        self.element, self.tag, self.ancestors, self.levels, self.depth = element, tag, ancestors, levels, depth
        self.parts: list[str] = []
        self.link = 0
        self._attrs: tuple[str, ...] | None = None

    @property
    def attrs(self) -> tuple[str, ...]:
        """Class/id tokens of the element and its ancestors, prefixed by level (computed once)."""
        if self._attrs is None:
            self._attrs = tuple(f"{level}:{t}" for level, tokens in enumerate(self.levels) for t in tokens)
        return self._attrs


class _BlockTarget:
    """lxml parser target: SAX events of the HTML parser -> blocks, without building a tree.

    Text belongs to the nearest enclosing block-level element (anything but inline tags and
    ``br``); a block-level child ends the current run of its parent's text, and the text after
    the child starts a new run of the same parent. Subtrees of ``SKIP`` tags are ignored; only
    the ``body`` is read.
    """

    def __init__(self) -> None:
        self.blocks: list[Block] = []
        self.element = -1
        self.skip = 0
        self.owners: list[_Owner] = []
        self.stack: list[tuple[str, _Owner | None, bool]] = []  # (tag, owner it opened, inside a link)

    def _flush(self, owner: _Owner) -> None:
        if owner.parts:
            text = " ".join("".join(owner.parts).split())
            if text:
                self.blocks.append(Block(text, owner.element, owner.tag, owner.ancestors, owner.attrs,
                                         min(owner.link, len(text)), owner.depth))
            owner.parts.clear()
            owner.link = 0

    def start(self, tag, attrib) -> None:
        self.element += 1
        if self.skip:
            self.skip += 1
            return
        if tag in SKIP:
            self.skip = 1
            return
        in_link = bool(self.stack) and self.stack[-1][2]
        if not self.owners:
            if tag == "body":
                self.owners.append(_Owner(self.element, tag, (), (), 0))
                self.stack.append((tag, self.owners[-1], False))
            else:
                self.stack.append((tag, None, False))
            return
        owner = self.owners[-1]
        if tag in INLINE:
            self.stack.append((tag, None, in_link or tag == "a"))
        elif tag == "br":
            owner.parts.append(" ")
            self.stack.append((tag, None, in_link))
        else:
            self._flush(owner)
            child = _Owner(self.element, tag, (owner.tag, *owner.ancestors)[:4],
                           (_attr_tokens(attrib), *owner.levels[:3]), owner.depth + 1)
            self.owners.append(child)
            self.stack.append((tag, child, False))

    def end(self, tag) -> None:
        if self.skip:
            self.skip -= 1
            return
        stack = self.stack
        if not stack or (stack[-1][0] != tag and all(t != tag for t, _, _ in stack)):
            return  # an end tag the parser never opened
        while stack:
            name, opened, _ = stack.pop()
            if opened is not None:
                self._flush(opened)
                self.owners.pop()
            if name == tag:
                return

    def data(self, text: str) -> None:
        if self.skip or not self.owners:
            return
        owner = self.owners[-1]
        owner.parts.append(text)
        if self.stack[-1][2]:
            owner.link += len(text)

    def close(self) -> list[Block]:
        while self.owners:
            self._flush(self.owners.pop())
        return self.blocks


def _html_parser(target=None):
    from lxml import etree

    return etree.HTMLParser(target=target, encoding="utf-8", remove_comments=True, remove_pis=True)


def parse_blocks(html: str) -> list[Block]:
    """Simplify decoded HTML into text blocks in document order."""
    from lxml import etree

    target = _BlockTarget()
    try:
        return etree.fromstring(html.encode("utf-8", "replace"), _html_parser(target))
    except etree.XMLSyntaxError:  # nothing the parser could read
        return target.close()


def parse_tree(html: str):
    """``html`` parsed into an lxml tree exactly as :func:`parse_blocks` reads it (its root element)."""
    from lxml import etree

    return etree.fromstring(html.encode("utf-8", "replace"), _html_parser())


def block_element(root, block: Block):
    """The element of :func:`parse_tree`'s ``root`` that owns ``block``."""
    return next(itertools.islice((e for e in root.iter() if isinstance(e.tag, str)), block.element, None))


def dom_path(html: str, block: Block) -> str:
    """The XPath of the block's element in ``html``."""
    root = parse_tree(html)
    return root.getroottree().getpath(block_element(root, block))


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


class TreeEnsemble:
    """Gradient-boosted trees (sklearn HistGradientBoosting, exported by scripts/train_blocks.py)
    evaluated with numpy, every tree at once, one level per step."""

    def __init__(self, trees: dict) -> None:
        self.baseline = float(trees["baseline"])
        self.depth = int(trees["depth"])
        self.feature, self.cut, self.value = _complete_trees(trees, self.depth)

    def raw(self, D: np.ndarray) -> np.ndarray:
        """The ensemble's log-odds for each row of ``D`` (float64)."""
        n_trees, width = self.feature.shape
        tree_start = np.arange(n_trees, dtype=np.intp) * width
        row_start = np.arange(len(D), dtype=np.intp)[:, None] * D.shape[1]
        values, feature, cut = np.ascontiguousarray(D).ravel(), self.feature.ravel(), self.cut.ravel()
        node = np.zeros((len(D), n_trees), dtype=np.intp)
        at = np.empty_like(node)
        for _ in range(self.depth):
            np.add(tree_start, node, out=at)
            column = feature.take(at)
            column += row_start
            node *= 2
            node += 1
            node += values.take(column) > cut.take(at)
        leaf = node - width  # positions after the `width` inner nodes are the leaves
        return self.baseline + self.value[np.arange(n_trees), leaf].sum(axis=1)


def _sigmoid(raw: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-raw))


class BlockModel:
    """The fitted classifier in two stages. Stage one: a logistic regression over dense and hashed
    features, whose score joins the dense features of a tree ensemble. Stage two: a tree ensemble
    over each block's stage-one probability in the context of its neighbours and page
    (:func:`context_features`)."""

    def __init__(self, data: dict) -> None:
        if data.get("dense_names") != dense_names() or data.get("hash_dim") != HASH_DIM:
            raise ValueError("blocks model does not match the feature set; rerun scripts/train_blocks.py")
        self.dense = np.asarray(data["dense"], dtype=np.float32)
        self.hashed = np.asarray(data["hashed"], dtype=np.float32)
        self.threshold = float(data["threshold"])
        self.trees = TreeEnsemble(data["trees"])
        self.context_trees = TreeEnsemble(data["context_trees"]) if data.get("context_trees") else None

    @classmethod
    def load(cls, path: str | Path | None = None) -> "BlockModel":
        """The weights at ``path``; by default the packaged ``blocks_model.json`` (also from a zip)."""
        if path is None:
            raw = pkgutil.get_data(__package__, MODEL_PATH.name)
            return cls(json.loads(raw.decode("utf-8")))
        return cls(json.loads(Path(path).read_text(encoding="utf-8")))

    def linear(self, X: np.ndarray, hashed: list[list[int]]) -> np.ndarray:
        """The logistic regression's log-odds per block."""
        lengths = np.fromiter(map(len, hashed), dtype=np.intp, count=len(hashed))
        flat = np.fromiter(itertools.chain.from_iterable(hashed), dtype=np.intp, count=int(lengths.sum()))
        rows = np.repeat(np.arange(len(hashed)), lengths)
        return X @ self.dense + np.bincount(rows, weights=self.hashed[flat], minlength=len(hashed)).astype(np.float32)

    def first_stage(self, X: np.ndarray, hashed: list[list[int]]) -> np.ndarray:
        """Stage-one probability that each block is main content."""
        return _sigmoid(self.trees.raw(np.hstack([X, self.linear(X, hashed)[:, None]]).astype(np.float64)))

    def scores(self, X: np.ndarray, hashed: list[list[int]]) -> np.ndarray:
        """Probability that each block is main content."""
        prob = self.first_stage(X, hashed)
        if self.context_trees is None:
            return prob
        return _sigmoid(self.context_trees.raw(context_features(prob, X)))


def _complete_trees(trees: dict, depth: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Re-lay fitted trees as complete binary trees of ``depth`` levels (children of k at 2k+1, 2k+2).

    A leaf above the last level becomes a split that always goes left (cut +inf), so every
    path has ``depth`` steps and no child index has to be looked up. Returns per tree the
    split feature and cut of the ``2**depth - 1`` inner nodes and the values of the ``2**depth``
    leaves.
    """
    inner, leaves = 2 ** depth - 1, 2 ** depth
    feature = np.zeros((len(trees["feature"]), inner), dtype=np.intp)
    cut = np.full((len(trees["feature"]), inner), np.inf)
    value = np.zeros((len(trees["feature"]), leaves))
    for t, (feat, thr, left, right, val) in enumerate(zip(trees["feature"], trees["threshold"], trees["left"],
                                                          trees["right"], trees["value"])):
        pending = [(0, 0, 0)]  # (fitted node, complete-tree position, level)
        while pending:
            fitted, position, level = pending.pop()
            is_leaf = left[fitted] == fitted
            if level == depth:
                value[t, position - inner] = val[fitted]
                continue
            if is_leaf:
                pending.append((fitted, 2 * position + 1, level + 1))
                pending.append((fitted, 2 * position + 2, level + 1))  # never reached (cut is +inf)
            else:
                feature[t, position], cut[t, position] = feat[fitted], thr[fitted]
                pending.append((left[fitted], 2 * position + 1, level + 1))
                pending.append((right[fitted], 2 * position + 2, level + 1))
    return feature, cut, value


_MODELS: dict[str, BlockModel] = {}


def block_model(path: str | Path | None = None) -> BlockModel:
    """The block model, loaded once per process."""
    key = str(path)
    if key not in _MODELS:
        _MODELS[key] = BlockModel.load(path)
    return _MODELS[key]


def primary_text(html: str, settings: ExtractSettings) -> str:
    """resiliparse's main-content text, a feature of every block."""
    from resiliparse.extract.html2text import extract_plain_text

    return extract_plain_text(html, preserve_formatting=True, main_content=True, list_bullets=settings.list_bullets,
                              comments=settings.comments, links=settings.links, alt_texts=settings.alt_texts,
                              noscript=False, form_fields=False)


class BlocksExtractor(Extractor):
    """Cascade stage ``blocks``: the kept blocks of the page, one per line."""

    name = "blocks"

    def __init__(self, settings: ExtractSettings, perplexity_settings: PerplexitySettings) -> None:
        super().__init__()
        self.settings = settings
        self.registry = perplexity_settings.registry  # used even when the sentence filter is off
        self.lm_language = settings.blocks_lm_language

    def language_model(self):
        """The KenLM model of ``extract.blocks_lm_language`` from the registry, if there is one."""
        try:
            entry = models.load_registry(self.registry).get(self.lm_language)
        except FileNotFoundError:  # no registry yet: the classifier runs without the perplexity feature
            return None
        return models.kenlm_model(entry["path"]) if entry else None

    def classify(self, html: str) -> tuple[list[Block], np.ndarray]:
        """The page's blocks and each block's main-content probability.

        Raises :class:`PageTooDeep` like the resiliparse stage (its main-content pass is a feature).
        """
        depth_limit = self.settings.max_main_content_depth
        if nesting_depth(html, depth_limit) > depth_limit:
            raise PageTooDeep(f"nested deeper than {depth_limit} elements")
        blocks = parse_blocks(html)
        if not blocks:
            return blocks, np.zeros(0, dtype=np.float32)
        X, hashed = featurize(blocks, primary_text(html, self.settings), self.language_model())
        return blocks, block_model(self.settings.blocks_model).scores(X, hashed)

    def extract(self, html: str) -> str:
        blocks, probs = self.classify(html)
        threshold = block_model(self.settings.blocks_model).threshold
        kept = [b.text for b, p in zip(blocks, probs) if p >= threshold]
        self.count("blocks.total", len(blocks))
        self.count("blocks.kept", len(kept))
        return "\n".join(kept)
