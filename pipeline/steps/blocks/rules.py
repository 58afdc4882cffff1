"""Rules after the block classifier: the page's structure revises each block's keep decision.

The classifier judges blocks one by one (with a few neighbours as context); main content on list-like
pages (seed 004) and in tables comes in whole units that it may cut apart. :func:`revise` applies,
in order:

- ``rows``: every cell of a table row is kept when at least ``row_share`` of the row's cells are
  (a spec table's attribute names are short and easy to drop while their values are kept);
- ``regions``: the items of a repeated region (three or more blocks of one tag under one parent,
  or of one signature: tag, enclosing tags and class/id words) are all kept when at least
  ``region_share`` of them are, with a probability of at least ``region_min_prob`` each;
- ``headings``: a heading is kept when the block after it is kept and its probability is at least
  ``heading_min_prob`` (a section's title belongs to its section);
- ``gaps``: a run of at most ``MAX_GAP`` dropped blocks between two kept ones is kept when each has
  a probability of at least ``gap_min_prob`` (a list or a table cell inside a kept section);
- ``sections``: a run of at most ``MAX_SECTION`` dropped blocks between two kept headings is kept when
  its mean probability is at least ``section_min_prob`` (a section whose title the classifier kept and
  whose body, a short list or a table, it dropped);
- code (always on, not fitted): a code listing written a line per element is kept whole when one of its
  lines is (:func:`whole_code`).

On documentation pages and threads a code listing right after kept prose is kept (:func:`code_after_prose`;
not fitted).

A block in a pop-up its classes call a modal, popup or popover is dropped on every page type but products, whose
details open in modals (:func:`in_modal`; not fitted).

A link in an ``aside`` (a sidebar's list of authors, tags or related posts) is dropped (:func:`aside_links`; not
fitted), and so is a breadcrumb trail (:func:`in_breadcrumb`; not fitted). On a catalogue (collection and listing
pages) its filter panel is dropped (:func:`in_facets`; not fitted).

On a thread (a forum page, or a page whose posts the comment detector found) the posters' signatures are dropped
(:func:`signatures`; not fitted).

On a page of unknown type, a thread that only the page's layout shows (no thread markup, no comment the detector
found) keeps its replies: a comment region of posts each under a line saying when it was posted, after a first post
of a few words (:func:`thread_posts`; not fitted).

Blocks in a part of the page that is never kept (the page's footer, dialogs, menus: ``Block.excluded``,
:func:`pipeline.steps.blocks.parse.excluded_part`) stay dropped whatever the rules say.

The parameters (:class:`RuleSettings`) are fitted with the classifier by ``scripts/train_blocks.py``
and stored in ``blocks_model.json`` (``rules``); a share above 1 turns its rule off.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable
from dataclasses import asdict, dataclass

import numpy as np

from pipeline.document import visible
from pipeline.steps.blocks.features import CELLS, HEADINGS, word_count
from pipeline.steps.blocks.parse import Block

_WORD = re.compile(r"\w+")
# A repeated region has at least this many blocks.
MIN_REGION = 3
# The ``gaps`` rule fills runs of at most this many dropped blocks.
MAX_GAP = 2
# The ``sections`` rule fills runs of at most this many dropped blocks.
MAX_SECTION = 20
# :func:`drop_repeats` drops a run of at least this many kept blocks, of at least ``REPEAT_MIN_WORDS`` words, that
# repeats an earlier run of kept blocks word for word.
REPEAT_MIN_BLOCKS = 3
REPEAT_MIN_WORDS = 20


@dataclass(frozen=True)
class RuleSettings:
    """Parameters of :func:`revise` (from the model JSON's ``rules``; the defaults turn every rule off)."""

    row_share: float = 2.0
    """Keep every cell of a table row when at least this share of its cells is kept."""
    region_share: float = 2.0
    """Keep every item of a repeated region when at least this share of its items is kept."""
    region_min_prob: float = 0.0
    """... and each item has at least this main-content probability."""
    heading_min_prob: float = 2.0
    """Keep a heading followed by a kept block when its probability is at least this."""
    gap_min_prob: float = 2.0
    """Keep a short run of dropped blocks between kept ones when each has at least this probability."""
    section_min_prob: float = 2.0
    """Keep a run of dropped blocks between two kept headings when their mean probability is at least this."""

    def to_dict(self) -> dict:
        return asdict(self)


def _groups(keys: list) -> list[np.ndarray]:
    """Indices of the blocks sharing each key (groups of ``MIN_REGION`` or more)."""
    members: dict = {}
    for i, key in enumerate(keys):
        members.setdefault(key, []).append(i)
    return [np.array(m) for m in members.values() if len(m) >= MIN_REGION]


def regions(blocks: list[Block]) -> list[np.ndarray]:
    """The page's repeated regions: three or more blocks of one tag under one parent, or of one signature
    (tag, enclosing tags and class/id words)."""
    return (_groups([(b.parent, b.tag) for b in blocks])
            + _groups([(b.tag, b.ancestors, b.attr_tokens) for b in blocks]))


def in_kept_region(blocks: list[Block], keep: np.ndarray) -> np.ndarray:
    """Per block: it is a kept member of a repeated region (:func:`regions`) more than half of whose items
    are kept (a grid of item titles, the rows of a table, a list the classifier took)."""
    member = np.zeros(len(blocks), dtype=bool)
    for group in regions(blocks):
        if keep[group].mean() > 0.5:
            member[group] = True
    return member & keep


def _words(text: str) -> str:
    return " ".join(_WORD.findall(text.lower()))


def drop_repeats(blocks: list[Block], keep: np.ndarray, min_words: int | None = None) -> np.ndarray:
    """``keep`` without the second and later copies of a repeated section: a run of at least ``REPEAT_MIN_BLOCKS``
    consecutive kept blocks (of at least ``REPEAT_MIN_WORDS`` words) whose texts, word for word, are those of an
    earlier run of kept blocks; with ``min_words``, also any shorter run (a single block) of at least that many words. Modern templates write a section twice, one copy for phones and one for larger
    screens, and a browser shows one (a product's description, its specifications, a block of selling points);
    the reader, and the WCXB truth, read it once. Preformatted blocks (code) are never dropped: a run stops at one.
    """
    kept = [i for i in np.flatnonzero(keep) if blocks[i].text.strip()]
    keys = [None if blocks[i].preformatted else _words(blocks[i].text) or None for i in kept]
    out = keep.copy()
    seen: dict[str, list[int]] = {}
    n, k = len(kept), 0
    while k < n:
        best = 0
        if keys[k] is not None:
            for j in seen.get(keys[k], ()):
                length = 0
                while k + length < n and j + length < k and keys[k + length] is not None \
                        and keys[j + length] == keys[k + length]:
                    length += 1
                best = max(best, length)
        run = range(k, k + best)
        words = sum(keys[t].count(" ") + 1 for t in run)
        if best and ((best >= REPEAT_MIN_BLOCKS and words >= REPEAT_MIN_WORDS)
                     or (min_words is not None and words >= min_words)):
            out[[kept[t] for t in run]] = False
        else:
            run = range(k, k + 1)
        for t in run:
            if keys[t] is not None:
                seen.setdefault(keys[t], []).append(t)
        k = run.stop
    return out


def _per_block(blocks: list[Block], among: np.ndarray | None, test: Callable[[Block], bool]) -> np.ndarray:
    """``test`` of each block that ``among`` marks (of every block when None); False for the others."""
    out = np.zeros(len(blocks), dtype=bool)
    for i in range(len(blocks)) if among is None else np.flatnonzero(among).tolist():
        out[i] = test(blocks[i])
    return out


def _class_words(block: Block) -> str:
    """The class and id words of the block's element and its three nearest block-level ancestors as one string,
    each word written ``:word `` (its ``attr_tokens``, ``2:menu``, each followed by a space): a word starting with
    ``w`` is ``":w" in``, one ending with it ``"w " in``, one holding it ``"w" in`` the string (a word is letters
    only: ``class_id_tokens``)."""
    return " ".join(block.attr_tokens) + " "


def _named(block: Block, parts: tuple[str, ...]) -> bool:
    """Whether the block's class and id words (:func:`_class_words`) hold one of ``parts`` (a word's start
    ``":w"``, end ``"w "`` or part ``"w"``)."""
    words = _class_words(block)
    return any(part in words for part in parts)


def signatures(blocks: list[Block]) -> np.ndarray:
    """Per block, whether it lies in a forum post's signature: an element (the block's or one of its three nearest
    block-level ancestors') whose class or id has the word ``signature`` (phpBB's ``signature``, XenForo's
    ``message-signature``, vBulletin's ``signaturecontainer``). A signature is the poster's, repeated under each of
    their posts; the thread's text is the posts."""
    return _per_block(blocks, None, lambda block: _named(block, (":signature", "signature ")))


# What ends a pop-up's class or id word (:func:`in_modal`), as _class_words writes it.
POP_UP_ENDS = ("modal ", "popup ", "popover ")


def in_modal(blocks: list[Block], among: np.ndarray | None = None) -> np.ndarray:
    """Per block (of those ``among`` marks, if given; the others False), whether it lies in a pop-up the page's
    classes call one: an element (the block's or one of its three nearest block-level ancestors') whose class or id
    has a word ending in ``modal``, ``popup`` or ``popover`` (``modal-content``, ``membermodal``, ``newsletter-popup``,
    ``ipsPwaInstallPopover``). A sign-up, membership or newsletter pop-up, or a forum's "install this app" panel, that
    does not say ``aria-modal`` (the parse never keeps one that does) is written in the page like its text."""
    return _per_block(blocks, among, lambda block: _named(block, POP_UP_ENDS))


# What starts a breadcrumb trail's class or id word (:func:`in_breadcrumb`): `breadcrumb`, `breadcrumbs`,
# `breadcrumb-item`, `breadcrumblist`; as _class_words writes it.
BREADCRUMB = ":breadcrumb"


def in_breadcrumb(blocks: list[Block], among: np.ndarray | None = None) -> np.ndarray:
    """Per block (of those ``among`` marks, if given; the others False), whether it lies in a breadcrumb trail: an
    element (the block's or one of its three nearest block-level ancestors') whose class or id has a word starting
    with ``breadcrumb`` (``Home > Guides > Sleep``), but not a heading: a page's title written in the trail's banner
    (`<h1 class="breadcrumb-title">`) is its title. A trail that is a ``nav`` is never read (the parse skips it); one
    written as a list or a row of links is, and the classifier keeps some."""
    return _per_block(blocks, among, lambda block: block.tag not in HEADINGS and _named(block, (BREADCRUMB,)))


# What starts a catalogue's filter panel's class or id word (:func:`in_facets`), as _class_words writes it: `filter`,
# `filters`, `filter-box`, `filteritems`, `facet`, `facets`, `refinements`.
FACET_STARTS = (":filter", ":facet", ":refine")


def in_facets(blocks: list[Block], among: np.ndarray | None = None) -> np.ndarray:
    """Per block (of those ``among`` marks, if given; the others False), whether it lies in a catalogue's filter
    panel: an element (the block's or one of its three nearest block-level ancestors') whose class or id has a word
    starting with ``filter``, ``facet`` or ``refine`` (the price ranges, brands, sizes and "2 x DisplayPort 2.1"
    options beside a shop's grid), but not the page's title (``h1``). Asked of collection and listing pages only: on
    the other types such a word names too many other things."""
    return _per_block(blocks, among, lambda block: block.tag != "h1" and _named(block, FACET_STARTS))


# A block whose link text is at least this share of its text is a link (aside_links).
LINK_SHARE = 0.9


def aside_links(blocks: list[Block], among: np.ndarray | None = None) -> np.ndarray:
    """Per block (of those ``among`` marks, if given; the others False), whether it is a link in an ``aside`` (the
    block's element or one of its four nearest block-level ancestors): at least ``LINK_SHARE`` of its text is link
    text. An aside is what is beside the page's content (HTML's complementary content): a sidebar's widgets, a list
    of the site's authors, tags or archives, a box of related articles; a paragraph in one (a pull quote, a note)
    is not a link and stays the classifier's."""
    return _per_block(blocks, among, lambda block: (block.tag == "aside" or "aside" in block.ancestors)
                      and block.link_chars >= max(LINK_SHARE * len(block.text), 1))


# What a page writes over or under an advertisement, in the languages of the bench and of Common Crawl's largest
# shares: a block of this label alone (any case, any punctuation around it) is the ad slot's caption, not text.
AD_LABELS = frozenset("""advertisement advertisements advertising sponsored anzeige werbung publicidad publicité
pubblicità publicidade reklama reklame reklam annonce annons mainos advertentie reclame hirdetés oglas реклама
διαφήμιση 広告 广告 광고""".split())
_LABEL_EDGES = re.compile(r"^\W+|\W+$")


def ad_labels(blocks: list[Block], among: np.ndarray | None = None) -> np.ndarray:
    """Per block (of those ``among`` marks, if given; the others False), whether its whole text is an advertisement's
    label (AD_LABELS: `ADVERTISEMENT`, `- Anzeige -`). A heading or a table cell of that word is a section or a
    column of the page (`14 | Werbung | S. 208`)."""
    return _per_block(blocks, among, lambda block: len(block.text) <= 24 and block.tag not in HEADINGS
                      and block.tag not in CELLS and _LABEL_EDGES.sub("", block.text).lower() in AD_LABELS)


# A line of at least this many words is matched when a quote repeats the page's text (quoted_repeats).
MIN_QUOTED_WORDS = 4


def quoted_repeats(blocks: list[Block], keep: np.ndarray) -> np.ndarray:
    """Per block, whether it is a kept quote of what the page's earlier kept blocks already say: inside a
    ``blockquote`` or an element whose class or id has the word ``quote`` (phpBB's ``blockquote``, XenForo's
    ``bbCodeBlock--quote``, vBulletin's ``bbcode_quote``), with each of its lines of MIN_QUOTED_WORDS words or more a
    line of a kept block above it. A thread's reply quoting the post it answers repeats that post."""
    seen: set[str] = set()
    out = np.zeros(len(blocks), dtype=bool)
    for i in np.flatnonzero(keep).tolist():
        b = blocks[i]
        lines = [line for line in (" ".join(text.split()) for text in (b.lines or (b.text,)))
                 if len(line.split()) >= MIN_QUOTED_WORDS]
        if lines and _in_quote(b) and all(line in seen for line in lines):
            out[i] = True
        else:
            seen.update(lines)
    return out


def _in_quote(block: Block) -> bool:
    return (block.tag == "blockquote" or "blockquote" in block.ancestors
            or _named(block, ("quote",)))


def whole_code(blocks: list[Block], keep: np.ndarray) -> np.ndarray:
    """``keep`` with every line of a code listing kept when one of its lines is: a listing written a line per
    element (two or more preformatted blocks under one parent) is one unit, as a ``pre`` written whole is one
    block, where the classifier, judging its lines one by one, keeps some and drops others (a JSON example whose
    keys it drops and whose closing lines it keeps)."""
    units: dict[int, list[int]] = {}
    for i, b in enumerate(blocks):
        if b.preformatted and not b.excluded:
            units.setdefault(b.parent, []).append(i)
    out = keep.copy()
    for lines in units.values():
        if len(lines) > 1 and keep[lines].any():
            out[lines] = True
    return out


def code_after_prose(blocks: list[Block], keep: np.ndarray) -> np.ndarray:
    """``keep`` with every dropped code listing kept whose nearest block before it (over blank blocks and those in
    a part never kept) is kept prose: in documentation and threads the listing a paragraph introduces is part of
    what the paragraph says (the classifier, reading code as it reads prose, drops a long listing at the end of a
    page; Python's itertools recipes)."""
    out = keep.copy()
    before = -1  # the nearest block so far that is neither blank nor in a part never kept
    for i, b in enumerate(blocks):
        if b.excluded or not visible(b.text):
            continue
        if b.preformatted and not keep[i] and before >= 0 and keep[before] and not blocks[before].preformatted:
            out[i] = True
        before = i
    return out


def revise(blocks: list[Block], probs: np.ndarray, threshold: float, rules: RuleSettings) -> np.ndarray:
    """Which blocks to keep: the classifier's ``probs >= threshold``, revised by the page's structure. A block
    in a part of the page never kept (``Block.excluded``) counts as one the classifier gave no chance, and no
    rule brings it back."""
    if not blocks:
        return probs >= threshold
    excluded = np.fromiter((b.excluded for b in blocks), dtype=bool, count=len(blocks))
    if excluded.any():
        probs = np.where(excluded, -1.0, probs)
    keep = probs >= threshold
    if rules.row_share <= 1.0:
        rows: dict[int, list[int]] = {}
        for i, b in enumerate(blocks):
            if b.tag in CELLS:
                rows.setdefault(b.parent, []).append(i)
        for cells in rows.values():
            if len(cells) > 1 and np.count_nonzero(keep[cells]) >= rules.row_share * len(cells):
                keep[cells] = True
    if rules.region_share <= 1.0:
        for group in regions(blocks):
            if keep[group].mean() >= rules.region_share:
                keep[group[probs[group] >= rules.region_min_prob]] = True
    if rules.heading_min_prob <= 1.0:
        for i in range(len(blocks) - 2, -1, -1):  # backwards: a run of headings before kept text
            if not keep[i] and blocks[i].tag in HEADINGS and keep[i + 1] and probs[i] >= rules.heading_min_prob:
                keep[i] = True
    if rules.gap_min_prob <= 1.0:
        kept = np.flatnonzero(keep)
        for left, right in zip(kept[:-1], kept[1:]):
            if 1 < right - left <= MAX_GAP + 1 and (probs[left + 1:right] >= rules.gap_min_prob).all():
                keep[left + 1:right] = True
    if rules.section_min_prob <= 1.0:
        kept = np.flatnonzero(keep)
        for left, right in zip(kept[:-1], kept[1:]):
            if (1 < right - left <= MAX_SECTION + 1 and blocks[left].tag in HEADINGS and blocks[right].tag in HEADINGS
                    and probs[left + 1:right].mean() >= rules.section_min_prob):
                keep[left + 1:right] = True
    keep = whole_code(blocks, keep)
    keep[excluded] = False
    return keep


# When a post was written, as a forum, a Q&A site or a comment system writes it beside the poster's name: a date
# (2021-01-01, 01.08.20, 2020年12月31日, Jan 5, 2021, 5 Jan 2021), a time of day (10:34) or an age (3 days ago, 1 月前,
# vor 2 Tagen, il y a 3 jours, hace 2 días, 2 часа назад).
_WHEN = re.compile(
    r"\d{4}\s*[-/.年]\s*\d{1,2}\s*[-/.月]\s*\d{1,2}|\d{1,2}[./]\d{1,2}[./]\d{2,4}|\d{1,2}:\d{2}"
    r"|\b(?:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]*\.?\s+\d{1,2}\b|\b\d{1,2}\.?\s+(?:jan|feb|mar|apr"
    r"|may|jun|jul|aug|sep|oct|nov|dec)[a-z]*\b"
    r"|\d+\s*(?:秒|分钟|分鐘|小时|小時|天|周|週|个月|個月|月|年)前|\d+\s*(?:秒|分|時間|日|週間|か月|ヶ月|年)前"
    r"|\b\d+\s+(?:sec|min|hour|hr|day|week|month|year)s?\s+ago\b|\bvor\s+\d+\s+\w+|\bil y a\s+\d+|\bhace\s+\d+"
    r"|\d+\s+\w+\s+назад|\b(?:yesterday|today|gestern|heute)\b|昨天|今天|前天",
    re.IGNORECASE)
# A post's line of who and when is short: at most this many words (word_count).
WHEN_MAX_WORDS = 14
# Comment regions are a thread's when at least this many of their blocks say who posted when ...
MIN_POSTS = 3
# ... and the page's kept text (its first post: a question, a topic's few lines) has at most this many words, or
# lies in that many posts with at most this many words outside them: under an article its comments are reader
# comments.
FIRST_POST_MAX_WORDS = 120


def in_form(block: Block) -> bool:
    """The block is a form or inside one (among its four nearest block-level ancestors)."""
    return block.tag == "form" or "form" in block.ancestors


def _says_when(block: Block) -> bool:
    return word_count(block.text) <= WHEN_MAX_WORDS and _WHEN.search(block.text) is not None


def thread_posts(blocks: list[Block], keep: np.ndarray) -> np.ndarray:
    """Per block, whether it is the text of a post of a thread that the page shows as one, whatever its markup says:
    its comment regions (``Block.comment_region``) hold at least ``MIN_POSTS`` short lines saying when a post was
    written (and mostly by whom: ``gazeldx #1 1 月前``, ``客栈小K | 扫地 | 6天前``), and the page's kept text is its
    first post, short (at most ``FIRST_POST_MAX_WORDS`` words: a question and its few lines, not an article), or lies
    in ``MIN_POSTS`` or more of the posts with at most that many words outside them (a list of reviews of which the
    classifier kept the longer). A post's text is each block of the regions from the first such line to as many
    blocks past the last as lie between two of them (a post's line may come before or after its text), less the
    lines themselves, links (a poster's name), forms and the texts the regions repeat (``Reply``, ``点赞``, ``|``);
    where the classifier kept posts, only the blocks of the shape (tag and classes) of those it kept (not a thread's
    likes, edits and notices). None elsewhere: reader comments under an article stay the comment detector's."""
    out = np.zeros(len(blocks), dtype=bool)
    region = [i for i, b in enumerate(blocks) if b.comment_region and not b.excluded]
    if len(region) < MIN_POSTS:
        return out
    when = [i for i in region if _says_when(blocks[i])]
    if len(when) < MIN_POSTS:
        return out
    last = when[-1] + int(np.median(np.diff(when)))  # the last post: as many blocks after its line as the others
    kept = np.flatnonzero(keep)
    words = np.array([word_count(blocks[i].text) for i in kept], dtype=np.int64)
    in_posts = (kept > when[0]) & (kept <= last)
    posts_kept = len(np.unique(np.searchsorted(when, kept[in_posts])))  # a post: the blocks between two lines
    shapes = None  # the posts' text is any block of theirs ...
    if words.sum() > FIRST_POST_MAX_WORDS:
        if posts_kept < MIN_POSTS or words[~in_posts].sum() > FIRST_POST_MAX_WORDS:
            return out
        # ... or, where the classifier kept posts, the blocks of the shape (tag, classes) of those it kept
        shapes = {(blocks[i].tag, blocks[i].attr_tokens) for i in kept[in_posts]}
    counts, lines = Counter(blocks[i].text for i in region), set(when)
    for i in region:
        b = blocks[i]
        if (when[0] < i <= last and i not in lines and counts[b.text] == 1 and word_count(b.text) >= 1
                and b.link_chars < LINK_SHARE * len(b.text) and not in_form(b)
                and (shapes is None or (b.tag, b.attr_tokens) in shapes)):
            out[i] = True
    return out
