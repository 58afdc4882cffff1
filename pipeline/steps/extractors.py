"""The extraction steps: decoded HTML -> plain text with paragraphs on lines.

Each extractor is a :class:`~pipeline.steps.base.Step` whose ``extract(html) -> str`` does
the work; the cascade (:mod:`pipeline.steps.cascade`) tries them in ``extract.cascade`` order.
An extractor is a part (:mod:`pipeline.parts`): a class in a module of ``pipeline/steps/`` that
says its ``name``, which ``extract.cascade`` (or a reader, for its pages) names.
:class:`ResiliparseExtractor` holds the resiliparse options and the depth guard for every
caller (the ``blocks`` stage uses its main-content text as a feature).
"""

from __future__ import annotations

from pipeline import parts
from pipeline import _native
from pipeline.config import ExtractSettings, Settings
from pipeline.document import Document, visible_lines
from pipeline.steps.base import Step

_html = _native.compiled("html")  # the compiled block stage (pipeline/_native/html.pyx)


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

    def incomplete(self, doc: Document) -> str | None:
        """Evidence that ``doc``'s text, this stage's, misses main content (a short reason), or None. Stages
        without such evidence never claim it."""
        return None

    def skip_to(self, reason: str) -> str | None:
        """The later stage that should take a page whose text this stage found incomplete for ``reason``
        (:meth:`incomplete`); None: the next stage."""
        return None

    def run(self, doc: Document) -> Document:
        doc.text = visible_lines(self.extract_page(doc))
        doc.extractor = self.name
        doc.unfiltered = self.unfiltered
        return doc

    def extract_page(self, doc: Document) -> str:
        """:meth:`extract` of the document's page (a stage may take what an earlier stage found of it instead)."""
        return self.extract(doc.html)


class PageTooDeep(ValueError):
    """The page's elements nest deeper than ``extract.max_main_content_depth``."""


# Estimated element nesting depth of a page from its tags, stopping once above a bound: the depth guard's scan
# (compiled: pipeline/_native/depth.pxi, with the tags that do not deepen it, FLAT_TAGS).
nesting_depth = _html.nesting_depth


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
    def text_key(self) -> tuple:
        """What resiliparse's text of a page depends on besides the page: two stages of equal keys extract the same
        text (:meth:`extract_page`)."""
        return (self.main_content, *self.options.values())

    def plain_text(self, html: str) -> str:
        """resiliparse's text of ``html`` with this extractor's options (no depth guard)."""
        from resiliparse.extract.html2text import extract_plain_text
        from resiliparse.parse.html import HTMLTree

        tree = HTMLTree.parse(html)
        return extract_plain_text(tree, preserve_formatting=True, main_content=self.main_content,
                                  noscript=False, form_fields=False, **self.options)

    def extract(self, html: str) -> str:
        """Main text of ``html``; raises :class:`PageTooDeep` where main-content mode would crawl."""
        self.check_depth(html)
        return self.plain_text(html)

    def extract_page(self, doc: Document) -> str:
        """The block stage's main-content pass of the page where it read it with these options (its reading,
        ``doc.blocks``, holds it: ``primary`` under ``primary_key``), else :meth:`extract`."""
        reading = doc.blocks
        if reading is not None and reading.primary_key == self.text_key:
            return reading.primary
        return self.extract(doc.html)


class ConservativeExtractor(ResiliparseExtractor):
    """All visible text, no main-content heuristics: SORE's conservative revert (``revert``: its text
    passes the filter unscored), or, as the first stage, the paper's tag-stripped text that the
    filter cleans (``conf/pyplexity.yaml``)."""

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
