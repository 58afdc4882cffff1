"""Block parsing for the ``blocks`` stage: decoded HTML -> text blocks in document order.

The page is simplified into a sequence of text blocks (each contiguous run of text owned by a block-level element:
p, h1-h6, li, td, pre, blockquote, a div with direct text, ...), read from libxml2's parser events without building a
tree, by the compiled parse (``pipeline/_native/parse.pxi``, where every rule of it is written: the tag sets,
:func:`separates`, :func:`excluded_part`, :func:`names_comments`, the structure heuristics). A block's ``element`` is
the preorder index of its element (:func:`block_element` finds it in :func:`parse_tree`, :func:`dom_path` gives its
XPath), so every decision maps back to the original DOM.
"""

from __future__ import annotations

import itertools
import threading

from pipeline import _native
from pipeline._native.parsed import COUNTED_TAGS, NO_NODE, Block, Markup, Nodes

_html = _native.compiled("html")  # the compiled block stage (pipeline/_native/html.pyx)

# The parse's rules, as the compiled module holds them (for the callers that read them: explain's view, the tests).
INLINE, SKIP, PREFORMATTED, BREAK = _html.INLINE, _html.SKIP, _html.PREFORMATTED, _html.BREAK
separates, excluded_part, names_comments = _html.separates, _html.excluded_part, _html.names_comments
class_id_tokens, article_descends, list_choice = _html.class_id_tokens, _html.article_descends, _html.list_choice

__all__ = ["COUNTED_TAGS", "NO_NODE", "Block", "Markup", "Nodes", "parse_page", "parse_blocks", "parse_tree",
           "block_element", "dom_path"]

_TARGET = threading.local()  # per thread, the parser target (one reads page after page; a target costs to make)


def parse_page(html: str, nodes: bool = False) -> tuple[list[Block], Markup]:
    """Simplify decoded HTML into text blocks in document order, and read what its markup says (:class:`Markup`);
    with ``nodes``, also the main-content candidates of the structure heuristics of seeds 003 and 004
    (``Markup.nodes``, in the same pass; without, they stay :data:`NO_NODE`)."""
    target = getattr(_TARGET, "target", None)
    if target is None:
        target = _TARGET.target = _html.BlockTarget()
    target.nodes = nodes
    blocks = _html.parse_html(html.encode("utf-8", "replace"), target)
    return blocks, target.markup


def parse_blocks(html: str) -> list[Block]:
    """The text blocks of decoded HTML in document order (:func:`parse_page`)."""
    return parse_page(html)[0]


def parse_tree(html: str):
    """``html`` parsed into an lxml tree exactly as :func:`parse_blocks` reads it (its root element): the same libxml2
    parser with the same options."""
    from lxml import etree

    parser = etree.HTMLParser(encoding="utf-8", remove_comments=True, remove_pis=True)
    return etree.fromstring(html.encode("utf-8", "replace"), parser)


def block_element(root, block: Block):
    """The element of :func:`parse_tree`'s ``root`` that owns ``block``."""
    return next(itertools.islice((e for e in root.iter() if isinstance(e.tag, str)), block.element, None))


def dom_path(html: str, block: Block) -> str:
    """The XPath of the block's element in ``html``."""
    root = parse_tree(html)
    return root.getroottree().getpath(block_element(root, block))
