"""Page types (seed 004): what kind of page the block stage is reading, from signals it already has.

Main content looks different on an article, a product page, a grid of items or a forum thread: on list-like
pages the repeated items are the content. The block classifier judges blocks one at a time; the page type
decides how sure it must be (:class:`TypedDecision`: a threshold and structure rules per type, fitted by
``scripts/train_blocks.py --page-types``). The types are WCXB's: article, collection, documentation, forum,
listing, product, service. A page whose markup is unlike the modern pages the type model was fitted on (the
older benchmark pages: table layouts, no sectioning elements, no structured data) is ``unknown`` and keeps
the classifier's global threshold and rules.

:func:`page_signals` describes a page by its blocks (tag kinds, lengths, link density, repeated structures,
prices) and what the parse read of its markup (:class:`~pipeline.steps.blocks.parse.Markup`: schema.org types,
``og:type``, https links, data- and aria- attributes, a viewport for phones, the number of sectioning, widget and
older layout elements; the HTML5 doctype); :class:`PageTypeModel` (gradient-boosted trees,
one ensemble per type) names the type.
"""

from __future__ import annotations

import math
import operator
import re
from dataclasses import dataclass

import numpy as np

from pipeline.steps.blocks.features import IN_PRIMARY, dense_names, word_count
from pipeline.steps.blocks.parse import COUNTED_TAGS, Block, Markup
from pipeline.steps.blocks.rules import RuleSettings
from pipeline.steps.blocks.tree_ensemble import TreeEnsemble

PAGE_TYPES = ("article", "collection", "documentation", "forum", "listing", "product", "service")
UNKNOWN = "unknown"  # markup unlike the pages the type model was fitted on: the global decision holds

# schema.org types named in JSON-LD (``"@type": "Product"``) or microdata (``itemtype=".../Product"``).
SCHEMA_TYPES = ("product", "offer", "aggregaterating", "itemlist", "collectionpage", "breadcrumblist", "article",
                "newsarticle", "blogposting", "discussionforumposting", "qapage", "question", "answer", "comment",
                "faqpage", "techarticle", "softwareapplication", "softwaresourcecode", "howto", "recipe", "event",
                "jobposting", "localbusiness", "organization", "service", "searchresultspage", "person", "webpage",
                "apireference", "review", "course", "videoobject")
OG_TYPES = ("article", "product", "website", "profile", "video", "book")

# schema.org types in a JSON-LD script's text (a type or the first of a list of types).
_JSON_LD_TYPE = re.compile(r'"@type"\s*:\s*\[?\s*"(?:https?://schema\.org/)?([A-Za-z]+)"')
_DOCTYPE_HTML5 = re.compile(r"<!doctype\s+html\s*>", re.IGNORECASE)
CURRENCIES = "$\u20ac\u00a3\u00a5\u20b9"  # a count of these stands for the page's prices
_COLUMNS = {name: j for j, name in enumerate(dense_names())}  # the block features' columns
_EXCLUDED = operator.attrgetter("excluded")
_TEXT = operator.attrgetter("text")


def signal_names() -> list[str]:
    """The names of :func:`page_signals`' values, in order."""
    names = ["log_blocks", "log_words"]
    kinds = ("heading", "list_item", "cell", "code")
    names += [f"blocks_{k}" for k in kinds] + [f"words_{k}" for k in kinds]
    names += ["link_density", "linked_blocks", "short_blocks", "mean_log_words", "repeat_share", "log_groups",
              "top_group_words", "log_top_group", "top_group_links", "in_primary", "primary_words", "excluded",
              "top_block_words", "log_long_blocks", "log_prices", "prices_per_block", "mean_depth"]
    names += [f"tags_{tag}" for tag in COUNTED_TAGS]
    names += ["doctype_html5", "log_html_kb", "text_per_html", "https_share", "viewport", "data_attributes",
              "aria_attributes"]
    names += [f"schema_{t}" for t in SCHEMA_TYPES] + [f"og_{t}" for t in OG_TYPES] + ["og_other"]
    return names


def page_signals(blocks: list[Block], X: np.ndarray, primary: str, markup: Markup, html: str) -> np.ndarray:
    """The page's signals (:func:`signal_names`): ``blocks`` (at least one) and their dense features ``X`` as the
    stage computed them (word counts, link density, tag kinds and the repeated structures of
    :func:`features.structure`), resiliparse's main-content text, what the parse read of the markup and the decoded
    ``html``."""
    n = len(blocks)
    primary_words = word_count(primary) if primary.strip() else 0
    column = _COLUMNS
    words = np.expm1(X[:, column["log_words"]].astype(np.float64))
    links = X[:, column["link_density"]].astype(np.float64)
    total = max(float(words.sum()), 1.0)
    kinds = X[:, [column[name] for name in ("heading", "list_item", "cell", "code")]] > 0
    text = "\n".join(map(_TEXT, blocks))
    out = [math.log1p(n), math.log1p(total)]
    out += kinds.mean(axis=0).tolist() + (words @ kinds / total).tolist()
    out += [float((links * words).sum()) / total, float((links > 0.5).mean()), float((words < 5).mean()),
            float(np.log1p(words).mean())]
    # Groups of three or more blocks of one signature (tag, enclosing tags, class/id words): each of a group's
    # blocks carries its size, its share of the page's words and its link density.
    size = np.rint(np.expm1(X[:, column["log_repeats"]].astype(np.float64))) + 1
    grouped = size >= 3
    share = np.where(grouped, X[:, column["repeat_word_share"]], -1.0)
    top = int(np.argmax(share))
    out += [float(X[0, column["page_repeat_share"]]), math.log1p(float((1.0 / size[grouped]).sum())),
            max(float(share[top]), 0.0), math.log1p(size[top]) if grouped[top] else 0.0,
            float(X[top, column["repeat_link_density"]]) if grouped[top] else 0.0]
    out += [float(X[:, IN_PRIMARY].mean()), min(primary_words / total, 3.0), sum(map(_EXCLUDED, blocks)) / n,
            float(words.max()) / total, math.log1p(int((words >= 40).sum()))]
    prices = sum(text.count(symbol) for symbol in CURRENCIES)
    out += [math.log1p(prices), prices / n, float(X[:, column["depth"]].mean())]
    out += [math.log1p(count) for count in markup.tags.values()]
    elements = max(markup.elements, 1)
    links_total = markup.https_links + markup.http_links
    out += [float(bool(_DOCTYPE_HTML5.search(html, 0, 512))), math.log1p(len(html) / 1024),
            (len(text) - n + 1) / max(len(html), 1),
            markup.https_links / links_total if links_total else 0.5, float(markup.viewport),
            markup.data_attributes / elements, markup.aria_attributes / elements]
    schema = {name.lower() for text in markup.json_ld for name in _JSON_LD_TYPE.findall(text)}
    schema |= {value.rstrip("/").rsplit("/", 1)[-1].lower() for value in markup.itemtypes}
    out += [float(t in schema) for t in SCHEMA_TYPES]
    og = {value.strip().lower().split(".")[0] for value in markup.og_types}
    out += [float(t in og) for t in OG_TYPES] + [float(bool(og - set(OG_TYPES)))]
    return np.asarray(out, dtype=np.float64)


@dataclass(frozen=True)
class TypedDecision:
    """How sure the classifier must be on a page of one type: the block threshold and the structure rules."""

    threshold: float
    rules: RuleSettings


class PageTypeModel:
    """Gradient-boosted trees over :func:`page_signals`, one ensemble per class (the page types and
    ``unknown``), the least probability that names a type, and each type's :class:`TypedDecision` (exported by
    ``scripts/train_blocks.py``)."""

    def __init__(self, data: dict) -> None:
        if data.get("signal_names") != signal_names():
            raise ValueError("page type model does not match the page signals; rerun scripts/train_blocks.py")
        self.classes: list[str] = list(data["classes"])
        self.ensembles = [TreeEnsemble(trees) for trees in data["trees"]]
        self.min_probability = float(data.get("min_probability", 0.0))
        self.decisions = {name: TypedDecision(float(d["threshold"]), RuleSettings(**d["rules"]))
                          for name, d in data.get("decisions", {}).items()}

    def probabilities(self, signals: np.ndarray) -> np.ndarray:
        """Each class's probability (``classes`` order) for one page's signals."""
        row = np.ascontiguousarray(signals, dtype=np.float64)[None, :]
        raw = np.array([ensemble.raw(row)[0] for ensemble in self.ensembles])
        raw -= raw.max()
        exp = np.exp(raw)
        return exp / exp.sum()

    def page_type(self, signals: np.ndarray) -> str:
        """The most probable class of the page, or ``unknown`` where it is less probable than ``min_probability``
        (a page the model cannot tell apart from others keeps the global decision)."""
        probabilities = self.probabilities(signals)
        best = int(np.argmax(probabilities))
        return self.classes[best] if probabilities[best] >= self.min_probability else UNKNOWN
