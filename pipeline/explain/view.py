"""The page view: the page's own HTML as the block stage parsed it, each block's element marked with the stage's
label, and nothing left in it that can run or reach the network.

The HTML is parsed as the block stage parses it (:func:`~pipeline.steps.blocks.parse.parse_tree`), so a block's
``element`` (its preorder index) is its element here. A block that is the only one of its element marks the element
itself (class ``wx-b wx-<label>``, its probability in ``title``); the runs of text of an element that also holds
other blocks' elements (``<div>text<p>...</p>more</div>``) are wrapped in spans of their own, so that an outline
never claims a child block's text. Then every script, event handler, frame, embedded object, ``javascript:`` URL,
external style sheet and refresh goes, links and resources keep their URLs only as ``data-wx-*`` attributes, and the
page gets a Content-Security-Policy that allows no script and no request. The explanation also shows it in an
iframe sandboxed without ``allow-scripts`` (:mod:`pipeline.explain.render`): three locks, each enough alone.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from lxml import etree

from pipeline.steps.blocks.parse import INLINE, SKIP, Block, parse_tree

# What the page may load: nothing but inline styles and data: images and fonts.
PAGE_POLICY = ("default-src 'none'; style-src 'unsafe-inline'; img-src data:; font-src data:; media-src data:; "
               "base-uri 'none'; form-action 'none'")
# Elements that run code, embed another document or load one: removed with their content.
REMOVED = frozenset("script iframe frame frameset base link portal noembed".split())
# Embedded objects: removed, their content kept (a browser shows an object's fallback content; and the HTML parser,
# which does not know `embed` is empty, nests the rest of the page inside one).
UNWRAPPED = frozenset(("object", "embed", "applet"))
# Attributes whose value is a URL: kept only as data-wx-<name> (never followed, never loaded).
URL_ATTRIBUTES = frozenset("href src srcset action formaction poster background data codebase cite longdesc lowsrc "
                           "dynsrc ping manifest archive classid icon profile xlink:href".split())
_CSS_URL = re.compile(r"url\(\s*(?!['\"]?data:)[^)]*\)", re.IGNORECASE)
_CSS_IMPORT = re.compile(r"@import\s+[^;]*;?", re.IGNORECASE)

STYLE = """
.wx-b{--c:#984ea3;--t:rgba(152,78,163,.10);outline:2px solid var(--c)!important;outline-offset:-1px!important;
background-color:var(--t)!important}
.wx-main{--c:#1a9850;--t:rgba(26,152,80,.12)}
.wx-boilerplate{--c:#d73027;--t:rgba(215,48,39,.07)}
.wx-comment{--c:#4575b4;--t:rgba(69,117,180,.12)}
.wx-mixed{outline-style:dashed!important;background-color:transparent!important}
.wx-excluded{outline-style:dotted!important}
.wx-b:hover{outline-width:4px!important}
.wx-b[data-wx-p]::before{content:attr(data-wx-p);font:bold 10px/1.3 sans-serif!important;color:#fff;
background:var(--c);padding:0 3px;margin-right:4px;border-radius:2px;vertical-align:top;text-decoration:none;
display:inline-block;font-style:normal}
.wx-filtered{text-decoration:line-through!important;background-image:repeating-linear-gradient(135deg,
rgba(215,48,39,.25) 0 3px,transparent 3px 9px)!important}
.wx-partfiltered{text-decoration:underline wavy #d73027!important}
a[data-wx-href]{color:#0645ad;text-decoration:underline;cursor:default}
img{max-width:100%!important;max-height:6em!important;width:auto!important;height:auto!important;
outline:1px dashed #bbb}
svg:not([width]){width:1.5em;height:1.5em}
"""


@dataclass
class Mark:
    """How one block is drawn: its label (a class ``wx-<label>``), its tooltip, and what the filter did to its lines
    (``dropped``: all of them, ``part``: some, None: none or not its text)."""

    label: str
    title: str
    filtered: str | None = None
    excluded: bool = False
    probability: float | None = None  # shown on the block, as its label's badge


def page_document(html: str, blocks: list[Block] | None = None, marks: list[Mark] | None = None) -> str:
    """``html`` with each of ``blocks`` marked by its :class:`Mark`, made inert (:func:`make_inert`), as a whole
    document ('' when the parser reads nothing)."""
    try:
        root = parse_tree(html)
    except (etree.XMLSyntaxError, ValueError):
        return ""
    if root is None:
        return ""
    if blocks and marks:
        mark_blocks(root, blocks, marks)
    make_inert(root)
    head = root.find("head")
    if head is None:
        head = etree.Element("head")
        root.insert(0, head)
    charset = etree.Element("meta", charset="utf-8")
    policy = etree.Element("meta", {"http-equiv": "Content-Security-Policy", "content": PAGE_POLICY})
    head.insert(0, policy)
    head.insert(0, charset)
    style = etree.SubElement(head, "style")
    style.text = STYLE
    doctype = root.getroottree().docinfo.doctype
    return (doctype + "\n" if doctype else "") + etree.tostring(root, method="html", encoding="unicode")


def _classes(element, *names: str) -> None:
    element.set("class", " ".join(filter(None, [element.get("class", ""), *names])))


def _draw(element, index: int, mark: Mark) -> None:
    _classes(element, "wx-b", f"wx-{mark.label}", "wx-excluded" if mark.excluded else "",
             f"wx-{'filtered' if mark.filtered == 'dropped' else 'partfiltered'}" if mark.filtered else "")
    element.set("title", mark.title)
    element.set("data-wx-block", str(index))
    element.set("data-wx-label", mark.label)
    if mark.probability is not None:
        element.set("data-wx-p", f"{mark.probability:.2f}")


def mark_blocks(root, blocks: list[Block], marks: list[Mark]) -> None:
    """Mark each block's element (or its runs of text, :func:`wrap_runs`) in the tree of :func:`parse_tree`."""
    elements = [e for e in root.iter() if isinstance(e.tag, str)]
    by_element: dict[int, list[int]] = {}
    for i, block in enumerate(blocks):
        if 0 <= block.element < len(elements):
            by_element.setdefault(block.element, []).append(i)
    owners = {elements[e]: e for e in by_element}
    containers = set()  # elements holding another block's element
    for e in by_element:
        parent = elements[e].getparent()
        while parent is not None:
            if parent in owners:
                containers.add(owners[parent])
            parent = parent.getparent()
    for e, indices in by_element.items():
        element = elements[e]
        if e not in containers and len(indices) == 1:
            _draw(element, indices[0], marks[indices[0]])
            continue
        spans = wrap_runs(element, [blocks[i] for i in indices])
        if spans is not None:
            for span, i in zip(spans, indices):
                _draw(span, i, marks[i])
            continue
        labels = {marks[i].label for i in indices}  # the runs cannot be told apart: the element, dashed
        mark = Mark(labels.pop() if len(labels) == 1 else "mixed", "\n".join(marks[i].title for i in indices))
        _draw(element, indices[0], mark)
        _classes(element, "wx-mixed")


def _block_level(tag) -> bool:
    return isinstance(tag, str) and tag not in INLINE and tag != "br" and tag not in SKIP


def _inline_text(node) -> str | None:
    """The text an inline element gives its block (skipped subtrees give none); None when a block-level element
    inside it cuts its block's run."""
    if node.tag in SKIP:
        return ""
    parts = [node.text or ""]
    for child in node:
        if not isinstance(child.tag, str):
            continue
        if _block_level(child.tag):
            return None
        inner = _inline_text(child)
        if inner is None:
            return None
        parts += [inner, child.tail or ""]
    return "".join(parts)


def wrap_runs(element, blocks: list[Block]) -> list | None:
    """Wrap each run of ``element``'s own text (between its block-level children) that is one of ``blocks`` in a
    span, in order; None (and nothing changed) when the runs and the blocks do not match one to one."""
    runs: list[tuple[object, str, list, str]] = []  # (holder of the leading text, "text"/"tail", members, text)
    holder, attribute, members, texts = element, "text", [], [element.text or ""]
    for child in element:
        if not isinstance(child.tag, str):
            continue
        if _block_level(child.tag):
            runs.append((holder, attribute, members, "".join(texts)))
            holder, attribute, members, texts = child, "tail", [], [child.tail or ""]
            continue
        inner = _inline_text(child)
        if inner is None:
            return None
        members.append(child)
        texts += [inner, child.tail or ""]
    runs.append((holder, attribute, members, "".join(texts)))
    runs = [run for run in runs if run[3].split()]
    if len(runs) != len(blocks) or any(" ".join(run[3].split()) != " ".join(block.text.split())
                                       for run, block in zip(runs, blocks)):
        return None
    spans = []
    for holder, attribute, members, _ in runs:
        span = etree.Element("span")
        span.text = getattr(holder, attribute)
        setattr(holder, attribute, None)
        element.insert(0 if holder is element else element.index(holder) + 1, span)
        for member in members:
            span.append(member)  # with its tail
        spans.append(span)
    return spans


def _text_before(element, text: str | None) -> None:
    """Put ``text`` where ``element`` begins: after its previous sibling, or as its parent's text."""
    if not text:
        return
    previous = element.getprevious()
    if previous is not None:
        previous.tail = (previous.tail or "") + text
    else:
        parent = element.getparent()
        parent.text = (parent.text or "") + text


def _remove(element) -> None:
    """Remove ``element`` and its content, keeping the text after it."""
    if element.getparent() is not None:
        _text_before(element, element.tail)
        element.getparent().remove(element)


def _unwrap(element) -> None:
    """Replace ``element`` by its content."""
    if element.getparent() is None:
        return
    _text_before(element, element.text)
    for child in list(element):
        element.addprevious(child)  # with its tail
    _remove(element)


def make_inert(root) -> None:
    """Remove what can run code, embed or load another document, or reach the network: ``REMOVED`` elements (and
    ``UNWRAPPED`` ones, their content kept),
    refresh and policy ``meta`` elements, event handler attributes, URLs (kept as ``data-wx-<name>``; ``javascript:``
    ones dropped), ``srcdoc``, and ``url()`` and ``@import`` in styles."""
    for element in list(root.iter()):
        if not isinstance(element.tag, str):
            _remove(element)
            continue
        tag = element.tag.lower()
        if tag in REMOVED or (tag == "meta" and (element.get("http-equiv") or element.get("charset"))):
            _remove(element)
            continue
        if tag in UNWRAPPED:
            _unwrap(element)
            continue
        for name in list(element.attrib):
            lowered = name.lower()
            value = element.attrib.pop(name)
            if lowered.startswith("on") or lowered == "srcdoc":
                continue
            if lowered in URL_ATTRIBUTES:
                if not re.match(r"\s*(javascript|vbscript|data:text/html)", value, re.IGNORECASE):
                    element.set(f"data-wx-{lowered.replace(':', '-')}", value)
                continue
            if lowered == "style":
                value = _inert_css(value)
            try:
                element.set(name, value)
            except ValueError:  # a name lxml will not write back
                continue
        if tag == "style" and element.text:
            element.text = _inert_css(element.text)


def _inert_css(css: str) -> str:
    return _CSS_URL.sub("none", _CSS_IMPORT.sub("", css))
