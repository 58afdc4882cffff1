"""What the block parse (the compiled ``html`` module, parse.pxi) returns: the page's text blocks (:class:`Block`),
what its markup says (:class:`Markup`) and the main-content candidates of the structure heuristics (:class:`Nodes`)."""

from __future__ import annotations

from dataclasses import dataclass, field

# Elements whose number the parse counts (Markup.tags): sectioning, modern widgets, the older layout's markup and
# paragraphs.
COUNTED_TAGS = ("main", "article", "section", "header", "nav", "aside", "figure", "time", "table", "font", "center",
                "button", "svg", "picture", "p")
NO_NODE = (-1, -1)


@dataclass
class Block:
    """A contiguous run of text owned by one block-level element."""

    text: str
    element: int  # preorder index of the owning element in the document (pipeline.steps.blocks.parse.dom_path)
    tag: str  # the element's name; a heading's for a `div` right inside one (parse.pxi's HEADING_PARTS)
    ancestors: tuple[str, ...]  # tag names of the enclosing block-level elements, nearest first
    attr_tokens: tuple[str, ...]  # class/id tokens of the element and ancestors, prefixed by level
    link_chars: int
    depth: int
    parent: int = -1  # preorder index of the enclosing block-level element (-1: none inside the body)
    excluded: bool = False  # inside a part of the page that is never kept (excluded_part)
    lines: tuple[str, ...] = ()  # the text's lines as written (block_text), else none: ``text`` is written
    preformatted: bool = False  # inside a PREFORMATTED element (code): its lines keep their spacing
    comment_region: bool = False  # inside an element whose class or id names comments (names_comments)

    @property
    def written(self) -> str:
        """The block's text as written on one line (a table cell's): its lines joined, else ``text``."""
        return " ".join(self.lines) if self.lines else self.text


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
    - ``article`` (seed 004, the article test, ``article_descends``): from the body down, each element's children's
      text lengths: where the gap between the two longest is at least their standard deviation, one child holds the
      text and the test goes on in it; otherwise the element is the main one;
    - ``list_items`` (seed 004, the list selection, ``list_choice``): the elements of one group (the same depth, tag
      and class/id words; at least two) of the best score."""

    most_children: tuple[int, int] = NO_NODE
    leaf_parent: tuple[int, int] = NO_NODE
    middle: tuple[int, int] = NO_NODE
    article: tuple[int, int] = NO_NODE
    list_items: list[tuple[int, int]] = field(default_factory=list)


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
    title: str | None = None  # the text of the first title element in the head or the body (not an svg's), as written
    tags: dict[str, int] = field(default_factory=lambda: dict.fromkeys(COUNTED_TAGS, 0))  # start tags of COUNTED_TAGS
    nodes: Nodes = field(default_factory=Nodes)  # the structure heuristics' main-content candidates (seeds 003, 004)
