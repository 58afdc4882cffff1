"""Reader comments: which blocks of a page's comment regions are comments rather than the page's own text.

A page's blocks are main content, comments or boilerplate. The block classifier tells main content from the
rest; a comment region (an element whose class or id names comments, replies or reviews:
:func:`~pipeline.steps.blocks.parse.names_comments`) holds comments, but also a forum's posts and a Q&A page's
answers, which are the page's main content, and the region's buttons, counts and forms, which are boilerplate.
:class:`CommentModel` (gradient-boosted trees, fitted by ``scripts/train_blocks.py`` on the dev pages' blocks in
comment regions whose text the truth leaves out) scores each block of a comment region by the block's own
features, where the region lies on the page and the page's signals (the page type's: a forum's markup, schema.org
types); :meth:`CommentModel.comments` marks those at or above its threshold, except on pages whose comment
regions hold main text (:func:`holds_posts`): pages whose type makes them so (:data:`MAIN_CONTENT_TYPES`: forums,
documentation, collections, listings) and threads by their markup (:func:`thread_markup`), of any type. The stage
then writes them apart from the text, drops them, or keeps them in it (``extract.comments``).
"""

from __future__ import annotations

from collections import Counter

import numpy as np

from pipeline.steps.blocks.features import dense_names
from pipeline.steps.blocks.page_type import signal_names
from pipeline.steps.blocks.parse import Block
from pipeline.steps.blocks.rules import in_form
from pipeline.steps.blocks.tree_ensemble import TreeEnsemble

# Page types whose comment regions hold main content, never comments: a forum's posts and a Q&A page's answers
# (as the WCXB truth keeps them), the code comments and discussions of documentation, the reviews and notes that
# make up the items of collections and listings. On the other pages (articles, products, services, and pages of
# unknown type, the older markup of blogs and news sites) the detector decides.
MAIN_CONTENT_TYPES = frozenset(("forum", "documentation", "collection", "listing"))
# schema.org types by which a page declares itself a thread, whatever its page type: a forum post with its replies
# (``DiscussionForumPosting``), a question with its answers (``QAPage``, or an ``Answer`` that is not one of an FAQ
# page's: ``FAQPage`` answers are the site's own text, on pages whose reader comments are comments still). A
# ``Comment`` alone declares nothing: a blog post marks its reader comments so.
THREAD_TYPES = ("discussionforumposting", "qapage")
_SIGNAL = {name: j for j, name in enumerate(signal_names())}

# Where a block of a comment region lies: the page's share of words in comment regions, the share of the page's
# words before the block, the block's place among the region blocks (0 first, 1 last), how often its text recurs
# among them (log1p of the other region blocks of the same text: "Reply", "Report this comment", dates), and
# whether it is inside a form (within four block-level levels: a comment form's notes and labels).
REGION = ["region_word_share", "words_before", "region_rank", "region_repeats", "in_form"]
_DENSE = dense_names()  # the block features it reads (a classifier fitted with more has them first)
_WORDS = _DENSE.index("log_words")


def thread_markup(signals: np.ndarray) -> bool:
    """The page's schema.org markup declares a thread (:data:`THREAD_TYPES`, or an ``Answer`` without an
    ``FAQPage``): its comment regions hold the thread's posts."""
    declared = {name: signals[_SIGNAL[f"schema_{name}"]] > 0 for name in (*THREAD_TYPES, "answer", "faqpage")}
    return any(declared[name] for name in THREAD_TYPES) or (declared["answer"] and not declared["faqpage"])


def holds_posts(page_type: str | None, signals: np.ndarray | None) -> bool:
    """The page's comment regions hold main text, never comments: its type is one of :data:`MAIN_CONTENT_TYPES`,
    or its markup declares a thread (:func:`thread_markup`)."""
    return page_type in MAIN_CONTENT_TYPES or (signals is not None and thread_markup(signals))


def feature_names() -> list[str]:
    """The columns of :func:`comment_features`: the block's dense features, :data:`REGION`, the page's signals."""
    return [*dense_names(), *REGION, *(f"page.{name}" for name in signal_names())]


def region_blocks(blocks: list[Block]) -> np.ndarray:
    """The indices of the blocks in comment regions that may be comments (not in a part never kept)."""
    return np.fromiter((i for i, b in enumerate(blocks) if b.comment_region and not b.excluded), dtype=np.intp)


def repeats(blocks: list[Block], chosen: np.ndarray) -> np.ndarray:
    """Per block of ``chosen``: how many other blocks of ``chosen`` have its text."""
    counts = Counter(blocks[i].text for i in chosen)
    return np.fromiter((counts[blocks[i].text] - 1 for i in chosen), dtype=np.float64, count=len(chosen))


def comment_features(blocks: list[Block], X: np.ndarray, chosen: np.ndarray, signals: np.ndarray) -> np.ndarray:
    """:func:`feature_names`' columns for the blocks ``chosen`` (:func:`region_blocks`) of a page whose dense
    features are ``X`` and whose page signals are ``signals``."""
    words = np.expm1(X[:, _WORDS].astype(np.float64))
    total = max(float(words.sum()), 1.0)
    before = (np.cumsum(words) - words)[chosen] / total
    rank = np.arange(len(chosen)) / max(len(chosen) - 1, 1)
    region = np.column_stack([np.full(len(chosen), words[chosen].sum() / total), before, rank,
                              np.log1p(repeats(blocks, chosen)),
                              np.fromiter((in_form(blocks[i]) for i in chosen), dtype=np.float64, count=len(chosen))])
    page = np.broadcast_to(signals, (len(chosen), len(signals)))
    return np.hstack([X[chosen, :len(_DENSE)].astype(np.float64), region, page])


class CommentModel:
    """Gradient-boosted trees over :func:`comment_features` and the probability at and above which a block of a
    comment region is a comment (the ``comments`` of ``blocks_model.json``)."""

    def __init__(self, data: dict) -> None:
        if data.get("feature_names") != feature_names():
            raise ValueError("comment model does not match the block features; rerun scripts/train_blocks.py")
        self.trees = TreeEnsemble(data["trees"])
        self.threshold = float(data["threshold"])

    def probabilities(self, blocks: list[Block], X: np.ndarray, chosen: np.ndarray, signals: np.ndarray) -> np.ndarray:
        """The probability that each block of ``chosen`` is a comment."""
        return 1.0 / (1.0 + np.exp(-self.trees.raw(comment_features(blocks, X, chosen, signals))))

    def found(self, blocks: list[Block], X: np.ndarray, signals: np.ndarray | None) -> np.ndarray:
        """Per block: in a comment region and scored at or above the threshold (a reader comment, or on a thread
        the text of a post, as opposed to the region's buttons, counts and forms)."""
        out = np.zeros(len(blocks), dtype=bool)
        chosen = region_blocks(blocks)
        if len(chosen) and signals is not None:
            out[chosen] = self.probabilities(blocks, X, chosen, signals) >= self.threshold
        return out

    def comments(self, blocks: list[Block], X: np.ndarray, signals: np.ndarray | None,
                 page_type: str | None) -> np.ndarray:
        """Per block: it is a reader comment (:meth:`found`, on a page whose comment regions do not hold main text,
        :func:`holds_posts`)."""
        if holds_posts(page_type, signals):
            return np.zeros(len(blocks), dtype=bool)
        return self.found(blocks, X, signals)

    def posts(self, blocks: list[Block], X: np.ndarray, signals: np.ndarray | None,
              page_type: str | None) -> np.ndarray:
        """Per block: it is a post of a thread (:meth:`found`, on a page whose markup declares a thread,
        :func:`thread_markup`, but whose type does not say so): main text, that the classifier, fitted to leave reader
        comments out, may have dropped. On a page of :data:`MAIN_CONTENT_TYPES` the classifier's decision stands: a
        Q&A page's answers are main text there, the remarks under them (``comment`` classes) are not."""
        if page_type in MAIN_CONTENT_TYPES or signals is None or not thread_markup(signals):
            return np.zeros(len(blocks), dtype=bool)
        return self.found(blocks, X, signals)
