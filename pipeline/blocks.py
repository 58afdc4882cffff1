"""A Dripper-style block stage: HTML -> semantic blocks -> main/other with a small CPU classifier.

The page is simplified into a sequence of text blocks (each contiguous run of text owned by a
block-level element: p, h1-h6, li, td, pre, blockquote, a div with direct text, ...). A block's
``element`` is the preorder index of its element and ``node`` the element itself (:func:`dom_path`
gives its XPath), so every decision maps back to the original DOM. A logistic regression (weights in
``pipeline/blocks_model.json``, fitted by ``scripts/train_blocks.py`` on bench dev pages only)
classifies each block from its KenLM perplexity, link density, length, punctuation, tag path,
hashed class/id tokens, position, whether resiliparse's main-content pass kept it, and the same
features of its neighbours; a small gradient-boosted tree ensemble then combines the dense
features with the regression's score. The kept blocks, in document order, are the page's text.
"""

from __future__ import annotations

import json
import math
import pkgutil
import re
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from pipeline import models
from pipeline.config import ExtractSettings, PerplexitySettings
from pipeline.stages import Extractor, PageTooDeep, nesting_depth, perplexity

MODEL_PATH = Path(__file__).resolve().parent / "blocks_model.json"

INLINE = frozenset("a abbr acronym b bdi bdo big cite code data del dfn em font i ins kbd label mark nobr q "
                   "s samp small span strike strong sub sup time tt u var wbr".split())
SKIP = frozenset("script style noscript template head title meta link iframe svg canvas object embed select "
                 "option button input textarea form nav math".split())
HASH_DIM = 1 << 12
_TOKEN_SPLIT = re.compile(r"[^a-z]+")


@dataclass
class Block:
    """A contiguous run of text owned by one block-level element."""

    text: str
    element: int  # preorder index of the owning element below <body> (skipped subtrees not counted)
    node: Any  # the lxml element itself (see :func:`dom_path`)
    tag: str
    ancestors: tuple[str, ...]  # tag names, nearest first
    attr_tokens: tuple[str, ...]  # class/id tokens of the element and ancestors, prefixed by level
    link_chars: int
    depth: int


def _attr_tokens(el) -> list[str]:
    raw = f"{el.get('class') or ''} {el.get('id') or ''}".lower()
    return [t for t in _TOKEN_SPLIT.split(raw) if len(t) > 1]


def parse_blocks(html: str) -> list[Block]:
    """Simplify decoded HTML into text blocks in document order."""
    from lxml import etree

    parser = etree.HTMLParser(encoding="utf-8", remove_comments=True, remove_pis=True)
    root = etree.fromstring(html.encode("utf-8", "replace"), parser)
    if root is None:
        return []
    blocks: list[Block] = []
    counter = [0]

    def walk(el, index: int, ancestors: tuple, levels: tuple, depth: int) -> None:
        parts: list[str] = []
        link = [0]

        def flush() -> None:
            text = " ".join("".join(parts).split())
            if text:
                attrs = tuple(f"{level}:{t}" for level, tokens in enumerate(levels) for t in tokens)
                blocks.append(Block(text, index, el, el.tag, ancestors, attrs, min(link[0], len(text)), depth))
            parts.clear()
            link[0] = 0

        def inline(node, in_link: bool) -> None:
            if node.text:
                parts.append(node.text)
                if in_link:
                    link[0] += len(node.text)
            for child in node:
                counter[0] += 1
                tag = child.tag
                if not isinstance(tag, str) or tag in SKIP:
                    pass
                elif tag in INLINE:
                    inline(child, in_link or tag == "a")
                elif tag == "br":
                    parts.append(" ")
                else:
                    flush()
                    walk(child, counter[0], (el.tag, *ancestors)[:4], (_attr_tokens(child), *levels[:3]), depth + 1)
                if child.tail:
                    parts.append(child.tail)
                    if in_link:
                        link[0] += len(child.tail)

        inline(el, el.tag == "a")
        flush()

    body = root.find("body")
    walk(body if body is not None else root, 0, (), (), 0)
    return blocks


def dom_path(block: Block) -> str:
    """The XPath of the block's element in the parsed page."""
    return block.node.getroottree().getpath(block.node)


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


def _hash(token: str) -> int:
    return zlib.crc32(token.encode("utf-8")) % HASH_DIM


def _base(block: Block, primary: str, lm) -> list[float]:
    text = block.text
    words = text.split()
    n_words = len(words)
    if lm is not None and n_words >= 3:
        log_ppl, no_ppl = math.log10(max(perplexity(lm, text)[0], 1.0)), 0.0
    else:
        log_ppl, no_ppl = 0.0, 1.0
    return [math.log1p(n_words), block.link_chars / len(text), 1.0 if primary and text in primary else 0.0,
            1.0 if text[-1] in ".!?:;\"'\u201d)" else 0.0,
            min(1.0, (text.count(",") + text.count(".")) / n_words),
            (len(text) - len(text.translate(_DIGITS))) / len(text),
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
    for b, in_primary in zip(blocks, base[:, col["in_primary"]]):
        tokens = [f"tag:{b.tag}", f"path:{b.tag}/{'/'.join(b.ancestors[:2])}", f"parent:{b.ancestors[:1]}",
                  f"prim:{int(in_primary)}:tag:{b.tag}", *(f"attr{a}" for a in b.attr_tokens)]
        hashed.append(sorted({_hash(t) for t in tokens}))
    return X, hashed


class BlockModel:
    """The fitted classifier: a logistic regression over dense and hashed features, whose score
    joins the dense features of a gradient-boosted tree ensemble (sklearn HistGradientBoosting,
    exported as flat node arrays and evaluated here with numpy)."""

    def __init__(self, data: dict) -> None:
        if data.get("dense_names") != dense_names() or data.get("hash_dim") != HASH_DIM:
            raise ValueError("blocks model does not match the feature set; rerun scripts/train_blocks.py")
        self.dense = np.asarray(data["dense"], dtype=np.float32)
        self.hashed = np.asarray(data["hashed"], dtype=np.float32)
        self.threshold = float(data["threshold"])
        trees = data["trees"]
        self.baseline = float(trees["baseline"])
        feature = np.asarray(trees["feature"], dtype=np.int64)
        cut = np.asarray(trees["threshold"], dtype=np.float64)
        value = np.asarray(trees["value"], dtype=np.float64)
        self.depth = int(trees["depth"])
        # Flat node arrays: node k of tree t is entry t * width + k, children point into the same.
        n_trees, width = feature.shape
        self.roots = np.arange(n_trees) * width
        self.feature, self.cut, self.value = feature.ravel(), cut.ravel(), value.ravel()
        self.left = (np.asarray(trees["left"], dtype=np.int64) + self.roots[:, None]).ravel()
        self.right = (np.asarray(trees["right"], dtype=np.int64) + self.roots[:, None]).ravel()

    @classmethod
    def load(cls, path: str | Path | None = None) -> "BlockModel":
        """The weights at ``path``; by default the packaged ``blocks_model.json`` (also from a zip)."""
        if path is None:
            raw = pkgutil.get_data("pipeline", MODEL_PATH.name)
            return cls(json.loads(raw.decode("utf-8")))
        return cls(json.loads(Path(path).read_text(encoding="utf-8")))

    def linear(self, X: np.ndarray, hashed: list[list[int]]) -> np.ndarray:
        """The logistic regression's log-odds per block."""
        return X @ self.dense + np.array([self.hashed[h].sum() for h in hashed], dtype=np.float32)

    def scores(self, X: np.ndarray, hashed: list[list[int]]) -> np.ndarray:
        """Probability that each block is main content."""
        D = np.hstack([X, self.linear(X, hashed)[:, None]]).astype(np.float64)
        row_start = (np.arange(len(D)) * D.shape[1])[:, None]
        values = D.ravel()
        node = np.broadcast_to(self.roots, (len(D), len(self.roots)))  # blocks x trees
        for _ in range(self.depth):  # all trees at once, one level per step; leaves point to themselves
            go_left = values[row_start + self.feature[node]] <= self.cut[node]
            node = np.where(go_left, self.left[node], self.right[node])
        raw = self.baseline + self.value[node].sum(axis=1)
        return 1.0 / (1.0 + np.exp(-raw))


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
