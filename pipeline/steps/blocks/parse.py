"""Block parsing for the ``blocks`` stage: decoded HTML -> text blocks in document order.

The page is simplified into a sequence of text blocks (each contiguous run of text owned by a
block-level element: p, h1-h6, li, td, pre, blockquote, a div with direct text, ...), read from
the HTML parser's events without building a tree. A block's ``element`` is the preorder index of
its element (:func:`block_element` finds it in :func:`parse_tree`, :func:`dom_path` gives its
XPath), so every decision maps back to the original DOM.
"""

from __future__ import annotations

import itertools
import re
import threading
from dataclasses import dataclass, field

from pipeline import _native

INLINE = frozenset("a abbr acronym b bdi bdo big cite code data del dfn em font i ins kbd label mark nobr q "
                   "s samp small span strike strong sub sup time tt u var wbr".split())
# Subtrees never read. Not `form` (whole pages are often wrapped in one) nor `noscript` (the HTML
# parser nests the rest of the page inside one whose end tag it ignores): their text goes to the
# classifier like any other.
SKIP = frozenset("script style template head title meta link iframe svg canvas object embed select "
                 "option button input textarea nav math".split())
# Skipped elements a browser shows nothing of. Every other one (a form control, an embedded object, an icon, a
# menu) stands between the words around it (:func:`separates`): `<label>XS</label><input><label>S</label>` is
# written "XS S", where the words would otherwise run together ("XSS"). So may the junction of two inline elements,
# where a page's style sets them apart (badges, buttons, tags: `<span>Genuine Part</span><span>Lifetime</span>`).
# Only the written text has these spaces (:func:`block_text`): the features read the words as the classifier was
# fitted on them.
UNSEEN = frozenset("script style template head title meta link".split())
SKIPPED, JUNCTION = 1, 2  # what stands between a block's last part and its next text (_Owner.separator)
# Inline elements whose junction with another is never a word boundary: exponents, indices, footnote marks (`n<sup>2`).
UNJOINED = frozenset(("sup", "sub"))
# A character of a script written without spaces between words (CJK, Thai, Lao, Burmese, Khmer).
UNSPACED = re.compile("[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\u0e00-\u0e7f\u0e80-\u0eff"
                      "\u1000-\u109f\u1780-\u17ff]")
# What is never written with a space before (closing punctuation) or after (opening punctuation) it
# (:func:`separates`), nor next to it: UNSPACED scripts, East Asian punctuation and full-width forms.
_CLOSING = frozenset(".,;:!?)]}%\u2026\u2019\u201d\u00bb")
_OPENING = frozenset("([{\u2018\u201c\u00ab\u00bf\u00a1")
_EAST_ASIAN = re.compile(f"{UNSPACED.pattern}|[\u3000-\u303f\uff00-\uffef]")
_CURRENCY = frozenset("$\u20ac\u00a3\u00a5\u20b9")  # a price starts a new word


def separates(before: str, after: str, junction: bool = False) -> bool:
    """Whether what stands between the text ``before`` and the text ``after`` of one block (both non-empty) is a
    space: a rendered element the parse skips (not ``UNSEEN``) or, ``junction``, the end of an inline element
    and the start of the next (neither ``UNJOINED``). Never where white space already separates them, before
    closing or after opening punctuation (`Python<svg/>.` reads "Python."), or next to a script written without
    spaces or East Asian punctuation (an icon after a linked term in Chinese). A junction only after a small
    letter, a digit or sentence punctuation, and where a new word visibly starts: a capitalised word, a digit
    after a letter or a currency sign (`Part</span><span>Lifetime`, `was</span><s>$540`); not inside a word
    marked up piece by piece (`cl</b></i><i><b>és`, `NA</b><b>SA`) nor in code (`json.</span><span>JSONDecoder`,
    `skipkeys</span><span>=</span><span>False`)."""
    last, first = before[-1], after[0]
    if (last.isspace() or first.isspace() or first in _CLOSING or last in _OPENING
            or _EAST_ASIAN.match(last) or _EAST_ASIAN.match(first)):
        return False
    if junction:
        return ((last.islower() or last.isdigit() or last in ".!?,;:)%")
                and ((first.isupper() and not after[1:2].isupper()) or first in _CURRENCY
                     or (first.isdigit() and last.isalpha())))
    return True


def settle_separator(owner, text: str) -> None:
    """Before ``text`` joins the parts of ``owner`` (a parser target's owner, Python or compiled) after a separator
    (``owner.separator``): note a written space before it in ``owner.spaces`` where :func:`separates` says so."""
    if separates(owner.parts[-1], text, owner.separator == JUNCTION):
        if owner.spaces is None:
            owner.spaces = []
        owner.spaces.append(len(owner.parts))
    owner.separator = 0


_TOKEN_SPLIT = re.compile(r"[^a-z]+")
# Parts of a page that are not its content whatever their text says: the page's footer, modal dialogs (cookie
# and sign-up pop-ups, a privacy policy in a modal) and menus. Their blocks are parsed and classified like any
# other, so the page the classifier sees is the one it was fitted on, and never kept (``rules.revise``;
# README, "Parts never kept"). A `footer` is the page's outside these elements (HTML's rule for its
# contentinfo role); inside one it is an article's or a section's footer, which sites also fill with content.
SECTIONS = frozenset("article aside main nav section".split())
# The tags of such parts; any other element is one only by its role or aria-modal attribute.
EXCLUDED_TAGS = frozenset(("footer", "dialog"))
# ARIA roles of such parts: a navigation (`nav`'s, whose subtree SKIP skips), the page's footer, a menu, a dialog.
EXCLUDED_ROLES = frozenset("navigation contentinfo menu menubar dialog alertdialog".split())


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
    parent: int = -1  # preorder index of the enclosing block-level element (-1: none inside the body)
    excluded: bool = False  # inside a part of the page that is never kept (:func:`excluded_part`)
    lines: tuple[str, ...] = ()  # the text's lines as written (:func:`block_text`), else none: ``text`` is written
    preformatted: bool = False  # inside a ``PREFORMATTED`` element (code): its lines keep their spacing
    comment_region: bool = False  # inside an element whose class or id names comments (:func:`names_comments`)

    @property
    def written(self) -> str:
        """The block's text as written on one line (a table cell's): its lines joined, else ``text``."""
        return " ".join(self.lines) if self.lines else self.text


# A ``br`` in a block's collected text (:func:`break_lines`): never in a document's text, which libxml2 ends at NUL.
BREAK = "\x00"
# Elements whose text keeps its line breaks and indentation (code, poems, ASCII tables), and so every block inside.
PREFORMATTED = frozenset(("pre", "listing", "xmp", "plaintext"))
_PREFORMATTED_BREAK = re.compile(f"[{BREAK}\n]")


def break_lines(text: str, preformatted: bool = False) -> tuple[str, tuple[str, ...]]:
    """A block's collected text, with ``BREAK`` where a ``br`` was, as the block's text (white space collapsed,
    each break a space: what the features read) and its lines (:attr:`Block.lines`, when two or more;
    :func:`~pipeline.steps.blocks.step.block_lines` writes them one per line). Blank lines are left out.
    ``preformatted`` (inside a ``PREFORMATTED`` element): a line break is one too, and each line keeps its
    spacing and indentation; otherwise a line's white space is collapsed, and a line that starts with a
    lower-case letter goes on the line before it: that ``br`` wraps a sentence (``track attendance,<br>simplify
    pay``)."""
    if preformatted:
        written = [line.rstrip() for line in _PREFORMATTED_BREAK.split(text) if line and not line.isspace()]
        return " ".join(" ".join(written).split()), (tuple(written) if len(written) > 1 else ())
    lines: list[str] = []
    for line in (" ".join(part.split()) for part in text.split(BREAK)):
        if not line:
            continue
        if lines and line[0].islower():
            lines[-1] += " " + line
        else:
            lines.append(line)
    return " ".join(lines), (tuple(lines) if len(lines) > 1 else ())


def block_text(parts: list[str], spaces: list[int] | None, preformatted: bool) -> tuple[str, tuple[str, ...]]:
    """A block's text from its collected ``parts`` (:func:`break_lines`: what the features read) and its lines as
    written: ``spaces`` are the indices of the parts a space goes before (:func:`separates`), and where they change
    the text, the written lines are given even when there is only one (:attr:`Block.lines`)."""
    text, lines = break_lines("".join(parts), preformatted)
    if spaces:
        spaced, start = [], 0
        for index in spaces:
            spaced += parts[start:index]
            spaced.append(" ")
            start = index
        spaced += parts[start:]
        written, written_lines = break_lines("".join(spaced), preformatted)
        if written_lines or written != text:
            lines = written_lines or (written,)
    return text, lines


# Elements whose number the parse counts (Markup.tags): sectioning, modern widgets, the older layout's markup and
# paragraphs.
COUNTED_TAGS = ("main", "article", "section", "header", "nav", "aside", "figure", "time", "table", "font", "center",
                "button", "svg", "picture", "p")


# Class and id words of the elements that hold reader comments, replies and reviews (WordPress's `comment-list`,
# `comment-body` and `respond`, Disqus's `disqus_thread`, `komentarze`, `user-reviews`): a block inside one is in a
# comment region (:attr:`Block.comment_region`), where the comment detector (:mod:`pipeline.steps.blocks.comments`)
# tells comments from the page's own text (a forum's posts, a review the page is about).
COMMENT_STEMS = ("comment", "koment", "komment", "coment")  # anywhere in a word: `commentlist`, `fbcomments`
COMMENT_PREFIXES = ("review",)  # at a word's start: `reviews`, `reviewbody`, but not `preview`
COMMENT_WORDS = frozenset("reply replies respond responses discussion discussions disqus talkback".split())


def names_comments(tokens: tuple[str, ...]) -> bool:
    """Whether an element's class/id words (:func:`attr_tokens`) name a comment region."""
    return any(t in COMMENT_WORDS or t.startswith(COMMENT_PREFIXES) or any(s in t for s in COMMENT_STEMS)
               for t in tokens)


# Seed 004's list selection takes the group of the highest average text length among the groups of this many
# highest scores R.
LIST_CANDIDATES = 3
NO_NODE = (-1, -1)


@dataclass
class Nodes:
    """The page's main-content candidates by the structure heuristics of seed 003 (MCE) and seed 004, each an
    element's preorder range ``(first, last)`` (the element and its descendants; ``NO_NODE``: none), found in the
    same parse from each block-level element's text length (its blocks' characters and its descendants'). A block
    is inside a node when its element is in the range (:func:`pipeline.steps.blocks.features.node_features`).

    - ``most_children`` (seed 003): the element with the most children that bear text;
    - ``leaf_parent`` (seed 003): the parent of the element with the most text among those whose children bear
      none (the longest run of text, a paragraph: its parent holds the paragraphs);
    - ``middle`` (seed 003): of those two, the one nearest the middle depth of the page's tree of block-level
      elements (the first on a tie);
    - ``article`` (seed 004, the article test): from the body down, each element's children's text lengths: where
      the gap between the two longest is at least their standard deviation, one child holds the text and the test
      goes on in it; otherwise the element is the main one;
    - ``list_items`` (seed 004, the list selection): the elements of one group (the same depth, tag and class/id
      words; at least two), scored R = 2 x occurrences x text length / (occurrences + text length); of the
      ``LIST_CANDIDATES`` groups of highest R, the one of the highest average text length."""

    most_children: tuple[int, int] = NO_NODE
    leaf_parent: tuple[int, int] = NO_NODE
    middle: tuple[int, int] = NO_NODE
    article: tuple[int, int] = NO_NODE
    list_items: list[tuple[int, int]] = field(default_factory=list)


def article_descends(count: int, total: float, squares: float, longest: float, second: float) -> bool:
    """Seed 004's article test of an element whose ``count`` children's text lengths sum to ``total`` (squares to
    ``squares``; the two longest ``longest`` and ``second``): True when the gap between the two longest is at least
    their sample standard deviation (an "indirect" element: the test goes on in the longest child). One child: True;
    none, or no text in them: False. Exact in integers, computed in floats as the compiled parse computes it:
    gap >= sd  <=>  gap^2 n (n-1) >= n squares - total^2."""
    if count == 0 or longest <= 0:
        return False
    if count == 1:
        return True
    gap = longest - second
    return gap * gap * count * (count - 1) >= count * squares - total * total


def list_choice(groups) -> list[tuple[int, int]]:
    """Seed 004's list selection over ``groups`` (each ``[occurrences, text length, element ranges]``, in the order
    they were first closed): the ranges of the chosen group, or none."""
    scored = []
    for occurrences, length, ranges in groups:
        if occurrences >= 2 and length > 0:
            scored.append((2.0 * occurrences * length / (occurrences + length), length / occurrences, ranges))
    if not scored:
        return []
    scored.sort(key=lambda g: -g[0])  # stable: the first closed of equal scores first
    best = scored[0]
    for candidate in scored[1:LIST_CANDIDATES]:
        if candidate[1] > best[1]:
            best = candidate
    return list(best[2])


@dataclass
class Markup:
    """What a page's markup says besides its blocks, read in the same parse from every element, the skipped ones
    (``head``, ``script``) included: the page type's signals (:mod:`pipeline.steps.blocks.page_type`)."""

    elements: int = 0  # start tags
    https_links: int = 0  # href values starting https:
    http_links: int = 0  # ... and http:
    data_attributes: int = 0  # attributes named data-*
    aria_attributes: int = 0  # ... and aria-*
    viewport: bool = False  # a meta element named viewport (a page made for phones)
    og_types: list[str] = field(default_factory=list)  # the content of each meta property="og:type"
    itemtypes: list[str] = field(default_factory=list)  # each itemtype attribute (schema.org microdata)
    json_ld: list[str] = field(default_factory=list)  # the text of each script of type application/ld+json
    tags: dict[str, int] = field(default_factory=lambda: dict.fromkeys(COUNTED_TAGS, 0))  # start tags of COUNTED_TAGS
    nodes: Nodes = field(default_factory=Nodes)  # the structure heuristics' main-content candidates (seeds 003, 004)


JSON_LD = "application/ld+json"


def read_markup(markup: Markup, tag: str, attrib) -> bool:
    """Count one element's attributes into ``markup`` (as the compiled parser reads libxml2's attribute array);
    True when it opens a JSON-LD script, whose text the caller then adds to ``markup.json_ld``."""
    for name, value in attrib.items():
        if name.startswith("data-"):
            markup.data_attributes += 1
        elif name.startswith("aria-"):
            markup.aria_attributes += 1
        elif name == "href":
            if value.startswith("https:"):
                markup.https_links += 1
            elif value.startswith("http:"):
                markup.http_links += 1
        elif name == "itemtype":
            markup.itemtypes.append(value)
    if tag == "meta":
        if (attrib.get("name") or "").lower() == "viewport":
            markup.viewport = True
        if attrib.get("property") == "og:type":
            markup.og_types.append(attrib.get("content") or "")
    elif tag == "script" and (attrib.get("type") or "").lower() == JSON_LD:
        markup.json_ld.append("")
        return True
    return False


def excluded_part(tag: str, open_tags: list[str], role: str | None, aria_modal: str | None) -> bool:
    """Whether a block-level element opening inside the elements ``open_tags`` (outermost first) is a part of the
    page never kept: the page's footer, a `dialog`, a modal (``aria-modal="true"``) or an element whose role
    (its first token) is one of ``EXCLUDED_ROLES``. Only an element of ``EXCLUDED_TAGS``, or one with a role or
    an aria-modal attribute, can be one (the parsers ask only about those)."""
    if tag == "dialog" or (tag == "footer" and not any(name in SECTIONS for name in open_tags)):
        return True
    if role:
        tokens = role.split(None, 1)
        if tokens and tokens[0].lower() in EXCLUDED_ROLES:
            return True
    return aria_modal is not None and aria_modal.strip().lower() == "true"


# Class and id values -> their tokens: a page's elements, and a site's pages, repeat the same few. At most
# ATTR_CACHE_SIZE values are held (the compiled parser's cache of them, too).
ATTR_TOKENS: dict[str, tuple[str, ...]] = {}
ATTR_CACHE_SIZE = 50_000


def attr_tokens(attrib) -> tuple[str, ...]:
    """Lower-cased words (2+ letters) of an element's class and id (lxml's attribute mapping)."""
    if not attrib:  # most elements (lxml's empty mapping answers get() slowly)
        return ()
    return class_id_tokens(f"{attrib.get('class') or ''} {attrib.get('id') or ''}")


def class_id_tokens(class_id: str) -> tuple[str, ...]:
    """:func:`attr_tokens` of an element's class and id values joined by a space (cached in ``ATTR_TOKENS``; the
    compiled parser asks about the values that are not ASCII, and tokenizes the others itself)."""
    tokens = ATTR_TOKENS.get(class_id)
    if tokens is None:
        if len(ATTR_TOKENS) >= ATTR_CACHE_SIZE:
            ATTR_TOKENS.clear()
        tokens = ATTR_TOKENS[class_id] = tuple(t for t in _TOKEN_SPLIT.split(class_id.lower()) if len(t) > 1)
    return tokens


class _Owner:
    """A block-level element on the parser's stack, collecting its runs of text, and its text lengths for the
    structure heuristics (:class:`Nodes`): its own blocks' characters, and per child (block-level) the count, the
    sum and squares of their text lengths, the two longest and the article test's choice in the longest."""

    __slots__ = ("element", "tag", "ancestors", "levels", "depth", "parent", "excluded", "preformatted", "parts",
                 "link", "separator", "spaces", "_attrs", "comment", "own_text", "children", "bearing", "total",
                 "squares", "longest", "second", "longest_choice")

    def __init__(self, element: int, tag: str, ancestors: tuple, levels: tuple, depth: int, parent: int,
                 excluded: bool = False, preformatted: bool = False, comment: bool = False) -> None:
        self.element, self.tag, self.ancestors, self.levels, self.depth = element, tag, ancestors, levels, depth
        self.parent, self.excluded, self.preformatted, self.comment = parent, excluded, preformatted, comment
        self.parts: list[str] = []
        self.link = 0
        self.separator = 0  # SKIPPED or JUNCTION after its last part (:func:`separates` decides), or 0
        self.spaces: list[int] | None = None  # the parts a written space goes before (:func:`block_text`)
        self._attrs: tuple[str, ...] | None = None
        self.own_text = 0  # characters of its own blocks
        self.children = self.bearing = 0  # block-level children, and those with text
        self.total = self.squares = 0.0  # the children's text lengths: sum, sum of squares
        self.longest = self.second = 0  # ... the two longest
        self.longest_choice = NO_NODE  # the article test's choice inside the longest child

    @property
    def attrs(self) -> tuple[str, ...]:
        """Class/id tokens of the element and its ancestors, prefixed by level (computed once)."""
        if self._attrs is None:
            self._attrs = tuple(f"{level}:{t}" for level, tokens in enumerate(self.levels) for t in tokens)
        return self._attrs


class _BlockTarget:
    """lxml parser target: SAX events of the HTML parser -> blocks, without building a tree.

    Text belongs to the nearest enclosing block-level element (anything but inline tags and
    ``br``, which breaks the block's text into lines); a block-level child ends the current run of
    its parent's text, and the text after the child starts a new run of the same parent. Subtrees of
    ``SKIP`` tags are ignored; only the ``body`` is read. Blocks inside a part :func:`excluded_part`
    are marked ``excluded``.
    """

    def __init__(self) -> None:
        self.nodes = False  # compute the structure heuristics' candidates (Markup.nodes; parse_page's ``nodes``)
        self.reset()

    def reset(self) -> None:
        """Start a new document (one parser and its target read page after page)."""
        self.blocks: list[Block] = []
        self.markup = Markup()
        self.in_json_ld = False  # inside a JSON-LD script: its text goes to the markup
        self.element = -1
        self.skip = 0
        self.junction = False  # an inline element has just ended (nothing since)
        self.owners: list[_Owner] = []
        self.stack: list[tuple[str, _Owner | None, bool]] = []  # (tag, owner it opened, inside a link)
        # the structure heuristics (Nodes) so far: the most text-bearing children and their element's depth; the
        # most text of an element without text-bearing children, its parent and the parent's depth; the deepest
        # element; the list groups ((depth, tag, class/id words) -> [occurrences, text length, ranges])
        self.most_bearing, self.most_children_depth = 0, 0
        self.leaf_text, self.leaf_parent, self.leaf_parent_depth = 0, -1, 0
        self.deepest = 0
        self.groups: dict[tuple, list] = {}

    def _flush(self, owner: _Owner) -> None:
        if owner.parts:
            text, lines = block_text(owner.parts, owner.spaces, owner.preformatted)
            if text:
                self.blocks.append(Block(text, owner.element, owner.tag, owner.ancestors, owner.attrs,
                                         min(owner.link, len(text)), owner.depth, owner.parent, owner.excluded,
                                         lines, owner.preformatted, owner.comment))
                owner.own_text += len(text)
            owner.parts.clear()
            owner.link = 0
            owner.spaces = None
        owner.separator = 0

    def start(self, tag, attrib) -> None:
        junction, self.junction = self.junction, False
        self.element += 1
        if tag in self.markup.tags:
            self.markup.tags[tag] += 1
        self.in_json_ld = read_markup(self.markup, tag, attrib) if attrib else False
        if self.skip:
            self.skip += 1
            return
        if tag in SKIP:
            self.skip = 1
            if tag not in UNSEEN and self.owners and self.owners[-1].parts and not self.owners[-1].preformatted:
                self.owners[-1].separator = SKIPPED  # preformatted text keeps the page's own spacing
            return
        in_link = bool(self.stack) and self.stack[-1][2]
        if not self.owners:
            if tag == "body":
                self.owners.append(_Owner(self.element, tag, (), (), 0, -1))
                self.stack.append((tag, self.owners[-1], False))
            else:
                self.stack.append((tag, None, False))
            return
        owner = self.owners[-1]
        if tag in INLINE:
            if junction and tag not in UNJOINED and owner.parts and not owner.separator and not owner.preformatted:
                owner.separator = JUNCTION
            self.stack.append((tag, None, in_link or tag == "a"))
        elif tag == "br":
            owner.parts.append(BREAK)
            self.stack.append((tag, None, in_link))
        else:
            self._flush(owner)
            excluded = owner.excluded
            if not excluded and (tag in EXCLUDED_TAGS or "role" in attrib or "aria-modal" in attrib):
                excluded = excluded_part(tag, [name for name, _, _ in self.stack], attrib.get("role"),
                                         attrib.get("aria-modal"))
            tokens = attr_tokens(attrib)
            child = _Owner(self.element, tag, (owner.tag, *owner.ancestors)[:4], (tokens, *owner.levels[:3]),
                           owner.depth + 1, owner.element, excluded, owner.preformatted or tag in PREFORMATTED,
                           owner.comment or (bool(tokens) and names_comments(tokens)))
            self.owners.append(child)
            self.stack.append((tag, child, False))

    def end(self, tag) -> None:
        self.in_json_ld = False
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
                if self.nodes:
                    self._closed(opened)
            if name == tag:
                break
        self.junction = tag in INLINE and tag not in UNJOINED  # the next inline element may start a word (separates)

    def data(self, text: str) -> None:
        self.junction = False
        if self.in_json_ld:
            self.markup.json_ld[-1] += text
        if self.skip or not self.owners:
            return
        owner = self.owners[-1]
        if owner.separator:
            settle_separator(owner, text)
        owner.parts.append(text)
        if self.stack[-1][2]:
            owner.link += len(text)

    def _closed(self, owner: _Owner) -> None:
        """An element's end (after its last block): its place in the structure heuristics (:class:`Nodes`), and its
        text length handed to its parent (the next owner on the stack)."""
        nodes, last = self.markup.nodes, self.element  # its descendants' preorder indexes end at the last start
        text = owner.own_text + int(owner.total)
        if owner.bearing > self.most_bearing:
            self.most_bearing, self.most_children_depth = owner.bearing, owner.depth
            nodes.most_children = (owner.element, last)
        parent = self.owners[-1] if self.owners else None
        if owner.bearing == 0 and text > self.leaf_text:
            self.leaf_text = text
            holder = owner if parent is None else parent
            self.leaf_parent, self.leaf_parent_depth = holder.element, holder.depth
        if owner.element == self.leaf_parent:
            nodes.leaf_parent = (owner.element, last)
        choice = (owner.element, last)
        if article_descends(owner.children, owner.total, owner.squares, owner.longest, owner.second):
            choice = owner.longest_choice
        if owner.depth > self.deepest:
            self.deepest = owner.depth
        key = (owner.depth, owner.tag, owner.levels[0] if owner.levels else ())
        group = self.groups.get(key)
        if group is None:
            group = self.groups[key] = [0, 0, []]
        group[0] += 1
        group[1] += text
        group[2].append((owner.element, last))
        if parent is None:
            nodes.article = choice
            return
        parent.children += 1
        parent.total += text
        parent.squares += float(text) * text
        if text > 0:
            parent.bearing += 1
        if text > parent.longest:
            parent.second, parent.longest, parent.longest_choice = parent.longest, text, choice
        elif text > parent.second:
            parent.second = text

    def close(self) -> list[Block]:
        while self.owners:
            owner = self.owners.pop()
            self._flush(owner)
            if self.nodes:
                self._closed(owner)
        self.markup.elements = self.element + 1
        if not self.nodes:
            return self.blocks
        nodes = self.markup.nodes
        if nodes.most_children != NO_NODE and nodes.leaf_parent != NO_NODE:
            middle = self.deepest / 2
            nodes.middle = (nodes.most_children if abs(self.most_children_depth - middle)
                            <= abs(self.leaf_parent_depth - middle) else nodes.leaf_parent)
        else:
            nodes.middle = nodes.most_children if nodes.most_children != NO_NODE else nodes.leaf_parent
        nodes.list_items = list_choice(self.groups.values())
        return self.blocks


def _html_parser(target=None):
    from lxml import etree

    return etree.HTMLParser(target=target, encoding="utf-8", remove_comments=True, remove_pis=True)


def compiled_target(module):
    """The compiled parser target of ``module`` (the compiled ``html`` part), handed this module's rules."""
    return module.BlockTarget(Block, Markup, read_markup, class_id_tokens, excluded_part, settle_separator,
                              names_comments, list_choice, inline=INLINE, skip=SKIP, unseen=UNSEEN, unjoined=UNJOINED, preformatted=PREFORMATTED,
                              excluded=EXCLUDED_TAGS, counted=COUNTED_TAGS, br=BREAK, skipped=SKIPPED,
                              junction=JUNCTION, cache_size=ATTR_CACHE_SIZE)


# Per thread: (the compiled module or None, the parser target, lxml's HTML parser reading into it, or None
# where the compiled module's parse_html reads the page).
_PARSER = threading.local()


def parse_page(html: str, nodes: bool = False) -> tuple[list[Block], Markup]:
    """Simplify decoded HTML into text blocks in document order, and read what its markup says (:class:`Markup`);
    with ``nodes``, also the main-content candidates of the structure heuristics of seeds 003 and 004
    (``Markup.nodes``, in the same pass; without, they stay :data:`NO_NODE`).

    The compiled module drives lxml's libxml2 with its own callbacks (``parse_html``: the same parser, the
    same events, without lxml's Python call per event); otherwise lxml's parser calls the target."""
    from lxml import etree

    module = _native.compiled("html")
    cached = getattr(_PARSER, "cached", None)
    if cached is None or cached[0] is not module:  # a parser costs more to make than a small page to read
        target = _BlockTarget() if module is None else compiled_target(module)
        own_parse = module is not None and module.sax_available()
        cached = _PARSER.cached = (module, target, None if own_parse else _html_parser(target))
    _, target, parser = cached
    target.nodes = nodes
    data = html.encode("utf-8", "replace")
    if parser is None:
        return module.parse_html(data, target), target.markup
    target.reset()
    try:
        blocks = etree.fromstring(data, parser)
    except etree.XMLSyntaxError:  # nothing the parser could read
        blocks = target.close()
    return blocks, target.markup


def parse_blocks(html: str) -> list[Block]:
    """The text blocks of decoded HTML in document order (:func:`parse_page`)."""
    return parse_page(html)[0]


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
