"""The extraction steps: decoded HTML -> plain text with paragraphs on lines.

Each extractor is a :class:`~pipeline.steps.base.Step` whose ``extract(html) -> str`` does
the work; the cascade (:mod:`pipeline.steps.cascade`) tries them in ``extract.cascade`` order.
An extractor is a part (:mod:`pipeline.parts`): a class in a module of ``pipeline/steps/`` that
says its ``name``, which ``extract.cascade`` (or a reader, for its pages) names.
:class:`ResiliparseExtractor` holds the resiliparse options and the depth guard for every
caller (the ``blocks`` stage uses its main-content text as a feature).
"""

from __future__ import annotations

import functools
import re

from pipeline import _native, parts
from pipeline.config import ExtractSettings, Settings
from pipeline.document import Document, visible_lines
from pipeline.steps.base import Step


class Extractor(Step):
    """Turns decoded HTML into plain text with paragraphs separated by newlines."""

    part, setting = "extractor", "extract.cascade"
    unfiltered = False  # True: its text passes the perplexity filter unscored
    visible_text = False  # True: its text is all the page's visible text (the index chain's first link reuses it)
    # True: when the filter removes too much of its text, the stage keeps it unfiltered instead of passing
    # the page on (its own evidence outweighs the filter's: the block stage, see Cascade.overrule_filter).
    overrules_filter = False

    @classmethod
    def from_settings(cls, settings: Settings, first: bool = False) -> "Extractor":
        """The stage as the run's settings configure it (``first``: the cascade's first stage)."""
        return cls(settings.extract)

    def extract(self, html: str) -> str:
        raise NotImplementedError

    def text(self, html: str) -> str:
        """The stage's text of ``html`` as it is written: :meth:`extract`, its blank-looking lines closed
        up (:func:`~pipeline.document.visible_lines`)."""
        return visible_lines(self.extract(html))

    def prepare(self, htmls: list[str]) -> None:
        """Get ready to extract these pages, which the cascade will hand over one by one (the loop's window,
        :meth:`~pipeline.steps.cascade.Cascade.prepare`); most stages have nothing to prepare."""

    def incomplete(self, text: str) -> str | None:
        """Evidence, from the page just extracted, that ``text`` misses main content (a short reason),
        or None. Stages without such evidence never claim it."""
        return None

    def skip_to(self, reason: str) -> str | None:
        """The later stage that should take a page whose text this stage found incomplete for ``reason``
        (:meth:`incomplete`); None: the next stage."""
        return None

    def run(self, doc: Document) -> Document:
        doc.text = self.text(doc.html)
        doc.extractor = self.name
        doc.unfiltered = self.unfiltered
        doc.line_probs = doc.line_regions = doc.line_preformatted = None
        doc.comments = None  # the block stage's (BlocksExtractor.run)
        return doc


class PageTooDeep(ValueError):
    """The page's elements nest deeper than ``extract.max_main_content_depth``."""


_TAG = re.compile(r"<(/?)([A-Za-z][A-Za-z0-9]*)")
# Void elements and elements whose end tag is commonly omitted do not deepen the estimate.
FLAT_TAGS = frozenset("area base br col embed hr img input link meta param source track wbr "
                       "p li dt dd tr td th option thead tbody tfoot colgroup rp rt".split())


def nesting_depth(html: str, stop_above: int) -> int:
    """Estimated element nesting depth of ``html`` from its tags; stops once above ``stop_above``
    (compiled where it is built: the same scan, without a match object per tag)."""
    module = _native.compiled("html")
    if module is not None:
        return _depth_scan(module).depth(html, stop_above)
    if html.count("<") <= stop_above:
        return 0  # cannot nest deeper than it has tags
    depth = deepest = 0
    for closing, name in _TAG.findall(html):
        if name.lower() in FLAT_TAGS:
            continue
        if closing:
            if depth:
                depth -= 1
        else:
            depth += 1
            if depth > deepest:
                deepest = depth
                if deepest > stop_above:
                    break
    return deepest


@functools.cache
def _depth_scan(module):
    """The compiled scan of ``module`` (the compiled ``html`` part) for this module's FLAT_TAGS."""
    return module.DepthScan(FLAT_TAGS)


# The last page's text (html, options, text): the cascade's resiliparse stage gets the same page and
# options as the block stage's main-content feature, so it does not parse and extract twice.
_LAST_TEXT: tuple[str, tuple, str] | None = None


class ResiliparseExtractor(Extractor):
    name = "resiliparse"

    def __init__(self, settings: ExtractSettings, main_content: bool | None = None) -> None:
        super().__init__()
        self.main_content = settings.main_content if main_content is None else main_content
        self.max_depth = settings.max_main_content_depth
        self.options = dict(list_bullets=settings.list_bullets, comments=settings.comments == "main",
                            links=settings.links, alt_texts=settings.alt_texts)

    def check_depth(self, html: str) -> None:
        """Raise :class:`PageTooDeep` where main-content mode would crawl (the depth guard)."""
        if self.main_content and nesting_depth(html, self.max_depth) > self.max_depth:
            raise PageTooDeep(f"nested deeper than {self.max_depth} elements")

    @property
    def _text_key(self) -> tuple:
        """What resiliparse's text of a page depends on besides the page (the reuse of ``_LAST_TEXT``)."""
        return (self.main_content, *self.options.values())

    def plain_text(self, html: str) -> str:
        """resiliparse's text of ``html`` with this extractor's options (no depth guard)."""
        from resiliparse.extract.html2text import extract_plain_text
        from resiliparse.parse.html import HTMLTree

        global _LAST_TEXT
        key = self._text_key
        if _LAST_TEXT is not None and _LAST_TEXT[0] is html and _LAST_TEXT[1] == key:
            return _LAST_TEXT[2]  # the block stage's main-content pass of this page, reused by the next stage
        tree = HTMLTree.parse(html)
        text = extract_plain_text(tree, preserve_formatting=True, main_content=self.main_content,
                                  noscript=False, form_fields=False, **self.options)
        _LAST_TEXT = (html, key, text)
        return text

    def reuse(self, html: str, text: str) -> None:
        """Remember ``text`` as this extractor's text of ``html`` (computed earlier by :meth:`plain_text`), so
        that a stage with the same options extracting ``html`` next takes it instead of extracting again."""
        global _LAST_TEXT
        _LAST_TEXT = (html, self._text_key, text)

    def extract(self, html: str) -> str:
        """Main text of ``html``; raises :class:`PageTooDeep` where main-content mode would crawl."""
        self.check_depth(html)
        return self.plain_text(html)


class ConservativeExtractor(ResiliparseExtractor):
    """All visible text, no main-content heuristics: SORE's conservative revert (``revert``: its text
    passes the filter unscored), or, as the first stage, the paper's tag-stripped text that the
    filter cleans (``conf/all-text.yaml``)."""

    name = "conservative"
    visible_text = True

    def __init__(self, settings: ExtractSettings, revert: bool = True) -> None:
        super().__init__(settings, main_content=False)
        self.unfiltered = revert

    @classmethod
    def from_settings(cls, settings: Settings, first: bool = False) -> "ConservativeExtractor":
        return cls(settings.extract, revert=not first)


class TrafilaturaExtractor(Extractor):
    name = "trafilatura"

    def extract(self, html: str) -> str:
        import trafilatura

        comments = self.settings is not None and self.settings.comments == "main"  # (settings: ExtractSettings)
        return trafilatura.extract(html, include_comments=comments, include_tables=True,
                                   favor_recall=True, deduplicate=False) or ""


class ReadabilityExtractor(Extractor):
    """readability-lxml picks the article node; html-text renders it with paragraph breaks."""

    name = "readability"

    def extract(self, html: str) -> str:
        import html_text
        from readability import Document as ReadabilityDocument

        summary = ReadabilityDocument(html).summary(html_partial=True)
        return html_text.extract_text(summary, guess_layout=True)


# --- language ID --------------------------------------------------------------------------


class WetExtractor(Extractor):
    """WET input: the text Common Crawl already extracted from the page, as it is (written, like every
    stage's text, with its blank lines closed up: :func:`~pipeline.document.visible_lines`)."""

    name = "wet"
    visible_text = True

    def extract(self, html: str) -> str:
        return html


def build_extractor(name: str, settings: Settings, first: bool = False) -> Extractor:
    """The extraction stage called ``name`` (an ``extract.cascade`` entry; ``first``: the cascade's first)."""
    return parts.find(Extractor, name).from_settings(settings, first)
