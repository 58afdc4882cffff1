"""A Dripper-style block stage: HTML -> semantic blocks -> main/other with a small CPU classifier.

:mod:`~pipeline.steps.blocks.parse` cuts the page into blocks, :mod:`~pipeline.steps.blocks.features`
describes them (with the pinned KenLM model of the page's language), :mod:`~pipeline.steps.blocks.model`
scores them and :mod:`~pipeline.steps.blocks.rules` revises the decisions by the page's structure; the kept blocks, in document order, are the page's text, one per line with the cells
of a table row on one line (:func:`block_lines`). :mod:`~pipeline.steps.blocks.comments` tells the reader comments
in the page's comment regions apart: out of the text, and written to the row's ``comments`` (``extract.comments``).
The stage also tells the cascade when its text looks incomplete (:func:`shorter_than_primary`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import NamedTuple

import numpy as np

from pipeline import model_cache
from pipeline.config import ExtractSettings, LangIdSettings, Settings
from pipeline.document import Document, visible, visible_lines
from pipeline.steps.blocks.features import (CELLS, block_perplexities, dense_names, featurize, page_language,
                                            word_count)
from pipeline.steps.blocks.model import block_model, pinned_language_model
from pipeline.steps.blocks.page_type import UNKNOWN, TypedDecision, page_signals
from pipeline.steps.blocks.parse import Block, Markup, parse_page
from pipeline.steps.blocks.rules import (ad_labels, aside_links, code_after_prose, drop_repeats, in_breadcrumb,
                                         in_facets, in_kept_region, in_modal, quoted_repeats, revise, signatures,
                                         thread_posts)
from pipeline.steps import guards
from pipeline.steps.extractors import Extractor, ResiliparseExtractor

# Below this many words of resiliparse text, a short block output is no evidence of loss.
MIN_PRIMARY_WORDS = 20
# Where a page goes when its block output is short against resiliparse's main content: resiliparse's
# far longer text is then mostly not main content (README, "Extraction cascade and the block classifier").
SHORT_TO = "trafilatura"
# The page types on which a section the page writes twice is read once (:func:`~pipeline.steps.blocks.rules.drop_repeats`):
# there the second copy is a template's copy for another screen size, or a carousel's (a service page's feature cards
# and customer quotes; its price plans that list the same features lose their second list, docs/research/tried.md). On
# documentation (code, the same step in two procedures) a repeat is the page's text; pages of unknown type (the older
# benchmarks' markup) have no such copies, and their truths keep what the page repeats.
REPEATS_DROPPED = frozenset(("article", "collection", "forum", "listing", "product", "service"))
# On product pages a single block the page repeats (of at least this many words) is also read once: the product's name
# in its heading and again in the buy box, the description in a tab and again in an accordion, a promotion's banner,
# the shipping terms under each variant.
PRODUCT_REPEAT_MIN_WORDS = 4
# The page types on which a dropped code listing right after kept prose is kept (:func:`~pipeline.steps.blocks.rules.
# code_after_prose`): documentation and threads, where a paragraph introduces the code it explains. On articles and
# services it lost a little on the bench's dev side (docs/models.md).
CODE_INTRODUCED = frozenset(("documentation", "forum"))
# The page types whose modals hold the page's own text (:func:`~pipeline.steps.blocks.rules.in_modal`): a product's
# details, materials and size guide open in one (IKEA's product sheet). On the other types a block in an element whose
# class says modal is a pop-up over the page and is not kept (docs/models.md).
MODAL_CONTENT = frozenset(("product",))
# The page types whose filter panels are dropped (:func:`~pipeline.steps.blocks.rules.in_facets`): a catalogue's grid
# of products or entries. On other types such a class word may hold the page's own text (an agency's FAQ under tabs
# that filter it, a service's use cases), and dropping it lost there (docs/models.md).
FACETED = frozenset(("collection", "listing"))
# resiliparse's main content, a feature of the blocks, as the classifier was fitted on it: without comment sections,
# bullets, link targets or alt texts.
FITTED_RESILIPARSE = {"comments": "separate", "list_bullets": False, "links": False, "alt_texts": False}
# What starts a list item's first line with ``extract.list_bullets`` (trafilatura's and Markdown's bullet).
BULLET = "- "
# A title longer than this is not a title (an unclosed title element holds the rest of the page).
TITLE_CHARS = 1000


def shorter_than_primary(text: str, primary: str, min_share: float) -> str | None:
    """Evidence that the block stage lost main content: it kept fewer than ``min_share`` of the words
    resiliparse's main-content pass found on the page (at least ``MIN_PRIMARY_WORDS`` of them).
    Returns the reason (``short_<kept>of<primary>``) or None."""
    primary_words = word_count(primary)
    if primary_words < MIN_PRIMARY_WORDS:
        return None
    kept_words = word_count(text) if text.strip() else 0
    return f"short_{kept_words}of{primary_words}" if kept_words < min_share * primary_words else None


def line_groups(kept: list[Block]) -> list[list[int]]:
    """The indices of ``kept`` on each line of :func:`block_lines`: one block a line, except that
    consecutive cells (td, th) of one table row share a line. Two runs of one cell's own text (a block-level element
    between them, even an empty one: a browser breaks the line there) are two lines."""
    groups: list[list[int]] = []
    for i, block in enumerate(kept):
        previous = kept[i - 1] if i else None
        if (previous is not None and block.tag in CELLS and previous.tag in CELLS and block.parent == previous.parent
                and block.element != previous.element):
            groups[-1].append(i)
        else:
            groups.append([i])
    return groups


def list_item(block: Block) -> int | None:
    """The element of the list item (``li``) whose text ``block`` is, or is the first block-level child of (a
    paragraph in an item); else None."""
    if block.tag == "li":
        return block.element
    return block.parent if block.ancestors[:1] == ("li",) else None


def group_lines(kept: list[Block], groups: list[list[int]], bullets: bool = False) -> list[tuple[int, str]]:
    """The lines of the text of ``kept`` and the index of the group (:func:`line_groups`) each comes from: a table
    row's cells on one line, tab-separated; another block on one line, or on each of its lines that a reader sees
    (:attr:`Block.lines`: where its ``br`` elements or a preformatted element's line breaks break it; with the
    words the markup runs together written apart, :func:`~pipeline.steps.blocks.parse.separates`). ``bullets``
    (``extract.list_bullets``): the first line of each list item's text starts with BULLET."""
    out = []
    items: set[int] = set()  # the list items whose first line is written
    for g, group in enumerate(groups):
        block = kept[group[0]]
        lines = ["\t".join(kept[i].written for i in group)] if len(group) > 1 or block.tag in CELLS or not block.lines \
            else [line for line in block.lines if visible(line)]
        item = list_item(block) if bullets and lines else None
        if item is not None and item not in items:
            items.add(item)
            lines[0] = BULLET + lines[0]
        out.extend((g, line) for line in lines)
    return out


def block_lines(kept: list[Block], groups: list[list[int]] | None = None, bullets: bool = False) -> str:
    """Kept blocks as text (:func:`group_lines`; ``groups``: :func:`line_groups` of ``kept`` when the caller has
    them)."""
    return "\n".join(line for _, line in group_lines(kept, groups or line_groups(kept), bullets))


def read_once(blocks: list[Block], keep: np.ndarray, page_type: str | None) -> np.ndarray:
    """``keep`` with a section the page writes twice read once on a page of :data:`REPEATS_DROPPED`
    (:func:`~pipeline.steps.blocks.rules.drop_repeats`; on product pages a single repeated block of
    :data:`PRODUCT_REPEAT_MIN_WORDS` words too); ``keep`` itself on the other pages."""
    if page_type not in REPEATS_DROPPED:
        return keep
    return drop_repeats(blocks, keep, PRODUCT_REPEAT_MIN_WORDS if page_type == "product" else None)


MAIN, BOILERPLATE, COMMENT = "main", "boilerplate", "comment"  # the labels of the stage's decisions (BlockDecisions.labels)


class BlockDecisions(NamedTuple):
    """The stage's decisions on one page, as ``warcplex explain`` draws them (``Document.trace``): every block,
    its main-content probability, the threshold of the page's type, whether the stage kept it (after the
    structure rules) and showed it (its written text is visible), and the lines of the text (:func:`group_lines`) with
    the groups of kept blocks (:func:`line_groups`) they come from, and which blocks are reader comments."""

    blocks: list[Block]
    probs: np.ndarray
    threshold: float
    keep: np.ndarray
    shown: np.ndarray
    lines: list[tuple[int, str]]
    groups: list[list[int]]
    comments: np.ndarray | None = None  # per block, a reader comment (comments.CommentModel), or None: no comment model
    # the blocks the rules after the classifier left out, by rule: "signature", "quote", "modal", "aside_link",
    # "breadcrumb", "facet", "ad_label" (those that left out at least one)
    left_out: dict[str, np.ndarray] | None = None

    def labels(self) -> list[str]:
        """Each block's label as the stage decided it: a comment (wherever ``extract.comments`` put its text), main
        content, or boilerplate."""
        comments = self.comments if self.comments is not None else np.zeros(len(self.blocks), dtype=bool)
        return [COMMENT if comment else MAIN if kept else BOILERPLATE for kept, comment in zip(self.keep, comments)]

    def line_blocks(self) -> list[list[int]]:
        """For each line of the stage's text, the indices (into ``blocks``) of the blocks it comes from."""
        kept = np.flatnonzero(self.shown)
        return [[int(kept[i]) for i in self.groups[g]] for g, _ in self.lines]


@dataclass
class PageFeatures:
    """One page's parse and features, with the pinned model of its language: its blocks, what its markup says, the
    dense matrix and hashed tokens (:func:`featurize`) and resiliparse's main-content text (``primary``)."""

    blocks: list[Block]
    markup: Markup
    X: np.ndarray
    hashed: list[list[int]]
    primary: str


@dataclass
class BlockPage:
    """The block stage's reading of one page, from its one parse: its blocks and markup, resiliparse's main-content
    text (``primary``, a feature; ``primary_key``: the options it was extracted with), each block's main-content
    probability, the page's type, which blocks are reader comments and which a thread's posts (main text,
:meth:`~pipeline.steps.blocks.comments.CommentModel.posts`) (None: no comment model); once decided
    (:meth:`BlocksExtractor.decide`), the stage's text, its decisions (``warcplex explain`` draws them), the comments it
    wrote apart, and per line of the text the evidence the filter reads (:func:`written_reading`): each line's highest
    block probability, whether one of its blocks lies in a kept repeated region (only under
    ``perplexity.protect_regions``, else None), whether it is preformatted text (code).

    A Document carries it (``Document.blocks``) from the block stage on, whichever stage's text is written: the page
    type is the page's; the rest of what it says is about the block stage's text."""

    blocks: list[Block]
    markup: Markup
    primary: str
    primary_key: tuple
    probs: np.ndarray
    page_type: str | None = None
    comment_blocks: np.ndarray | None = None
    post_blocks: np.ndarray | None = None
    text: str = ""
    decisions: BlockDecisions | None = None
    comments: str | None = None
    line_probs: list[float] = field(default_factory=list)
    line_regions: list[bool] | None = None
    line_preformatted: list[bool] = field(default_factory=list)

    def visible_text(self) -> str:
        """All the page's text as the parse read it, a block a line (its lines as written): the tag-stripped text of
        the index statistics' first link, from this one parse (the subtrees the parse skips, script, style, nav and
        form controls, are not in it)."""
        return visible_lines("\n".join("\n".join(block.lines) if block.lines else block.text for block in self.blocks))

    def title(self) -> str | None:
        """The page's title (its first ``title`` element, not an svg's), its white space collapsed and cut at
        TITLE_CHARS characters; None when the page has none or it is blank."""
        words = (self.markup.title or "").split()
        return " ".join(words)[:TITLE_CHARS] or None


def written_reading(doc: Document) -> BlockPage | None:
    """The block stage's reading of ``doc`` when the text ``doc`` carries is the block stage's (a later stage's text
    has none of its line evidence or comments)."""
    return doc.blocks if doc.blocks is not None and doc.extractor == BlocksExtractor.name else None


class BlocksExtractor(Extractor):
    """Cascade stage ``blocks``: the kept blocks of the page (:func:`block_lines`)."""

    name = "blocks"
    overrules_filter = True  # a page the filter would empty is a grid or list of short lines it kept on evidence

    def __init__(self, settings: ExtractSettings, langid: LangIdSettings, regions: bool = False) -> None:
        super().__init__(settings)
        # Also tell which lines lie in a kept repeated region (the evidence of perplexity.protect_regions;
        # a pass over the page's groups that a run without that option does not need).
        self.regions = regions
        # its text is a feature, read as the classifier was fitted on it whatever extract's writing options say
        self.resiliparse = ResiliparseExtractor(settings.model_copy(update=FITTED_RESILIPARSE), main_content=True)
        self.lid_path = langid.model_path or model_cache.default_lid_model_path()
        self._prepared: dict[int, tuple[str, object]] = {}  # id(html) -> (html, its BlockPage): prepare()'s window

    @classmethod
    def from_settings(cls, settings: Settings, first: bool = False) -> "BlocksExtractor":
        return cls(settings.extract, settings.langid, regions=settings.perplexity.protect_regions)

    def page_features(self, html: str) -> PageFeatures:
        """The page's blocks and their features, with the pinned model of the page's language.

        Raises :class:`PageTooDeep` like the resiliparse stage (its main-content pass is a feature).
        """
        return _result(self._featurised([html])[0])

    def prepare(self, htmls: list[str]) -> None:
        """Classify a window of pages phase by phase (parse, main content, LID, KenLM, features, trees):
        each model stays in the CPU's caches across the window, where page by page the other steps' models
        push it out. :meth:`classify` then takes each page's result, or raises what its work raised."""
        with self.timed():
            self._prepared = {}  # (a window interrupted while preparing leaves its pages to classify())
            self._prepared = {id(html): (html, result) for html, result in zip(htmls, self._classified(htmls))}

    def classify(self, html: str) -> BlockPage:
        """The stage's reading of the page, undecided (prepared, or computed now): its blocks, their main-content
        probabilities, the page's type, which blocks are comments and which a thread's posts."""
        entry = self._prepared.pop(id(html), None)
        return _result(entry[1] if entry is not None and entry[0] is html else self._classified([html])[0])

    def _featurised(self, htmls: list[str]) -> list:
        """Each page's :class:`PageFeatures`, or what its work raised; computed one phase at a time over all pages,
        each page's phase under a fresh time limit."""
        results: list = [None] * len(htmls)
        blocks: list = [None] * len(htmls)
        markup: list = [None] * len(htmls)
        primary: list = [""] * len(htmls)
        pins: list = [None] * len(htmls)
        log_ppl: list = [None] * len(htmls)

        try:  # the model reads the structure heuristics' candidates (a broken model raises in the language phase)
            nodes = block_model(self.settings.blocks_model).nodes
        except Exception:  # noqa: BLE001
            nodes = False

        def parse(i: int) -> None:
            self.resiliparse.check_depth(htmls[i])
            blocks[i], markup[i] = parse_page(htmls[i], nodes)

        def main_content(i: int) -> None:
            primary[i] = self.resiliparse.plain_text(htmls[i])

        def language(i: int) -> None:
            model = block_model(self.settings.blocks_model)  # loaded once per process (a broken one raises here)
            pins[i] = model.language_models.get(page_language(blocks[i], self.lid_path))
            self.count(f"lm.{'page_language' if pins[i] else 'none'}")

        def perplexities(i: int) -> None:
            if pins[i] is not None:
                log_ppl[i] = block_perplexities(blocks[i], pinned_language_model(pins[i]))

        def features(i: int) -> None:
            if not blocks[i]:
                X, hashed = np.zeros((0, len(dense_names(nodes))), dtype=np.float32), []
            else:
                pin = pins[i]
                candidates = markup[i].nodes if nodes else None
                X, hashed = (featurize(blocks[i], primary[i], nodes=candidates) if pin is None
                             else featurize(blocks[i], primary[i], log_ppl[i], pin.centre, candidates))
            results[i] = PageFeatures(blocks[i], markup[i], X, hashed, primary[i])

        for phase, needs_blocks in ((parse, False), (main_content, False), (language, True), (perplexities, True),
                                    (features, False)):
            _each(phase, [i for i in range(len(htmls)) if blocks[i] or not needs_blocks], results)
        return results

    def _classified(self, htmls: list[str]) -> list:
        """Each page's :class:`BlockPage`, undecided, or what its work raised (see :meth:`_featurised`)."""
        results = self._featurised(htmls)

        def scores(i: int) -> None:
            model = block_model(self.settings.blocks_model)
            page: PageFeatures = results[i]
            blocks = page.blocks
            probs = model.scores(page.X, page.hashed) if blocks else np.zeros(0, np.float32)
            page_type, comments, posts, signals = None, None, None, None  # no blocks, or no model to tell them by
            if blocks and (model.page_types is not None
                           or (model.comments is not None and any(b.comment_region for b in blocks))):
                signals = page_signals(blocks, page.X, page.primary, page.markup, htmls[i])
            if model.page_types is not None and blocks:
                page_type = model.page_types.page_type(signals)
            if model.comments is not None:
                comments = model.comments.comments(blocks, page.X, signals, page_type)
                posts = model.comments.posts(blocks, page.X, signals, page_type)
            results[i] = BlockPage(blocks, page.markup, page.primary, self.resiliparse.text_key, probs, page_type,
                                   comments, posts)

        _each(scores, range(len(htmls)), results)
        return results

    def decide(self, page: BlockPage, decision: TypedDecision | None = None) -> BlockPage:
        """``page`` decided: the kept blocks by its type's threshold and the structure rules (``decision``: others
        in their place), the comments kept, left out or written apart (``extract.comments``), the text and its
        lines' evidence."""
        blocks, probs = page.blocks, page.probs
        if page.page_type is not None:
            self.count(f"page_type.{page.page_type}")
        if decision is None:
            decision = block_model(self.settings.blocks_model).decision(page.page_type)
        keep = revise(blocks, probs, decision.threshold, decision.rules)
        comments = page.comment_blocks
        if page.post_blocks is not None and page.post_blocks.any():  # a thread's posts are its main text
            self.count("threads.pages")
            keep = keep | page.post_blocks
        elif (page.page_type in (None, UNKNOWN) and (posts := thread_posts(blocks, keep)).any()
              and (comments is None or not (comments & posts).any())):
            self.count("threads.shown")  # a thread by what the page shows: its posts, not reader comments
            keep = keep | posts
            comments = None
        page.comments = None
        left_out: dict[str, np.ndarray] = {}
        if comments is not None and comments.any():
            self.count("comments.pages")
            self.count("comments.blocks", int(comments.sum()))
            if self.settings.comments == "main":
                keep = keep | comments
            else:
                keep = keep & ~comments
                if self.settings.comments == "separate":
                    written = [b for b, c in zip(blocks, comments) if c and visible(b.text)]
                    page.comments = visible_lines(block_lines(written, bullets=self.settings.list_bullets)) or None

        def leave_out(keep: np.ndarray, reason: str, mask: np.ndarray, pages: str | None = None,
                      counted_blocks: str | None = None) -> np.ndarray:
            """``keep`` without the blocks ``mask`` marks, recorded in ``left_out[reason]`` and counted (the page in
            ``pages``, the blocks in ``counted_blocks``) when it marks any."""
            if not mask.any():
                return keep
            if pages:
                self.count(pages)
            if counted_blocks:
                self.count(counted_blocks, int(mask.sum()))
            left_out[reason] = mask
            return keep & ~mask

        if page.page_type == "forum" or (page.post_blocks is not None and page.post_blocks.any()):
            # a thread: its posters' signatures are not its text, nor a reply's quote of a post above it
            keep = leave_out(keep, "signature", signatures(blocks) & keep, "signatures.pages")
            keep = leave_out(keep, "quote", quoted_repeats(blocks, keep), "quotes.pages", "quotes.blocks")
        if page.page_type not in MODAL_CONTENT:  # a sign-up or membership pop-up written in the page
            keep = leave_out(keep, "modal", in_modal(blocks, among=keep), "modals.pages")
        # a sidebar's list of authors, tags or related posts; Home > Guides > ...
        keep = leave_out(keep, "aside_link", aside_links(blocks, among=keep), "aside_links.pages")
        keep = leave_out(keep, "breadcrumb", in_breadcrumb(blocks, among=keep), "breadcrumbs.pages")
        if page.page_type in FACETED:  # Price: $50 to $75 (25) ..., Brand, Size
            keep = leave_out(keep, "facet", in_facets(blocks, among=keep), "facets.pages")
        # an ad slot's caption between the paragraphs it interrupts
        keep = leave_out(keep, "ad_label", ad_labels(blocks, among=keep), counted_blocks="ad_labels.blocks")
        if page.page_type in CODE_INTRODUCED:  # a listing the prose before it introduces
            keep = code_after_prose(blocks, keep)
        kept_before = int(keep.sum())
        keep = read_once(blocks, keep, page.page_type)
        if keep.sum() < kept_before:
            self.count("repeats.pages")
        # no blank lines, nor a block whose written text is none (rustdoc's source link: parse.pxi's SOURCE_LINK)
        shown = np.array([k and visible(b.written) for b, k in zip(blocks, keep)], dtype=bool)
        kept = [b for b, k in zip(blocks, shown) if k]
        kept_probs, groups = probs[shown].tolist(), line_groups(kept)  # a group is mostly one block: Python's max
        lines = group_lines(kept, groups, self.settings.list_bullets)
        group_probs = [max(kept_probs[i] for i in group) for group in groups]
        page.line_probs = [group_probs[g] for g, _ in lines]
        page.line_preformatted = [kept[groups[g][0]].preformatted for g, _ in lines]
        page.decisions = BlockDecisions(blocks, probs, decision.threshold, keep, shown, lines, groups, comments,
                                        left_out or None)
        page.line_regions = None
        if self.regions:
            kept_regions = in_kept_region(blocks, keep)[shown]
            group_regions = [bool(kept_regions[group].any()) for group in groups]
            page.line_regions = [group_regions[g] for g, _ in lines]
        self.count("blocks.total", len(blocks))
        self.count("blocks.kept", len(kept))
        page.text = "\n".join(line for _, line in lines)
        return page

    def read(self, html: str) -> BlockPage:
        """The stage's reading of the page, decided (:meth:`classify`, then :meth:`decide`)."""
        return self.decide(self.classify(html))

    def extract(self, html: str) -> str:
        return self.read(html).text

    def run(self, doc: Document) -> Document:
        """The kept blocks as the page's text; the stage's reading of the page (:class:`BlockPage`: its parse, page
        type, comments and each line's evidence for the filter) as ``doc.blocks``, also when it raises nothing but
        a later stage's text is written."""
        page = self.read(doc.html)
        doc.blocks = page
        doc.text = visible_lines(page.text)
        doc.extractor = self.name
        doc.unfiltered = self.unfiltered
        return doc

    def skip_to(self, reason: str) -> str | None:
        """A short output (:func:`shorter_than_primary`) sends the page to ``SHORT_TO``, past resiliparse."""
        return SHORT_TO if reason.startswith("short_") else None

    def incomplete(self, doc: Document) -> str | None:
        """Why this page's output looks incomplete (see :func:`shorter_than_primary`), or None."""
        page = written_reading(doc)
        if page is None:
            return None
        return shorter_than_primary(doc.text, page.primary, block_model(self.settings.blocks_model).fallback_min_share)


def _each(phase, pages, results: list) -> None:
    """``phase(i)`` for each page ``i`` whose work has not failed, each under a fresh time limit; what
    one raises (a guard interrupt too) becomes that page's result."""
    for i in pages:
        if isinstance(results[i], BaseException):
            continue
        guards.restart()
        try:
            phase(i)
        except (Exception, *guards.GUARD_INTERRUPTS) as exc:
            results[i] = exc


def _result(result):
    """A page's result of :meth:`BlocksExtractor._featurised` or ``_classified``, raising what its work raised."""
    if isinstance(result, BaseException):
        raise result
    return result
