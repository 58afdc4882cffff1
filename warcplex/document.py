"""The one document type every step reads and writes, and the one sentence type.

A :class:`Document` starts as a WARC page (:class:`~warcplex.reading.warc.Page`) and is
filled in by the steps: decoded HTML, extracted text, language, scored sentences. The page
text that is written is rebuilt from the kept sentences by :func:`page_text`, the same
function the sweep, the index statistics and calibration use.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Iterable

from warcplex.reading.warc import Page

UNKNOWN_LANGUAGE = "und"


@dataclass(frozen=True)
class Language:
    code: str
    score: float


@dataclass
class Sentence:
    """One sentence of a page, as split, scored and kept or dropped by the filter."""

    text: str
    paragraph: int = 0  # the index of its paragraph (line of the extracted text)
    perplexity: float | None = None  # None: not scored (no model for the language, filter off)
    kept: bool = True
    reason: str | None = None  # why it was dropped
    n_tokens: int | None = None  # LM tokens, when known


@dataclass
class Document:
    """One page on its way through the steps; ``outcome`` says where it ended."""

    page: Page
    html: str = ""  # the decoded payload
    text: str = ""  # the chosen extractor's text (``raw_text`` in the stats)
    extractor: str | None = None
    fallback_reason: str | None = None  # why the cascade left its first stage
    language: Language | None = None
    sentences: list[Sentence] = field(default_factory=list)
    unfiltered: bool = False  # the extractor's text passes the filter unscored (the conservative revert)
    outcome: str = "kept"  # kept | empty_extraction | empty_after_filter | <a step's drop reason> | error.<kind>

    @property
    def language_code(self) -> str:
        return self.language.code if self.language is not None else UNKNOWN_LANGUAGE

    @property
    def clean_text(self) -> str:
        """The text written to the corpus: the kept sentences, paragraph by paragraph."""
        return page_text(self.sentences, lambda s: s.kept)

    def paragraphs(self) -> list[list[Sentence]]:
        grouped: dict[int, list[Sentence]] = {}
        for sentence in self.sentences:
            grouped.setdefault(sentence.paragraph, []).append(sentence)
        return [grouped[k] for k in sorted(grouped)]


_CJK_TERMINATORS = ("\u3002", "\uff01", "\uff1f", "\uff0e", "\u300d", "\u300f")  # 。！？． 」』


def join_sentences(sentences: list[str]) -> str:
    """Rejoin a paragraph's sentences: nothing after a CJK full-width terminator, a space otherwise."""
    parts = []
    for i, sentence in enumerate(sentences):
        if i and not sentences[i - 1].endswith(_CJK_TERMINATORS):
            parts.append(" ")
        parts.append(sentence)
    return "".join(parts)


def page_text(sentences: Iterable[Sentence], keep: Callable[[Sentence], bool] | None = None) -> str:
    """A page's text from the sentences ``keep`` accepts (all when None), one paragraph a line."""
    paragraphs: dict[int, list[str]] = {}
    for sentence in sentences:
        if keep is None or keep(sentence):
            paragraphs.setdefault(sentence.paragraph, []).append(sentence.text)
    texts = (join_sentences(p) for _, p in sorted(paragraphs.items()))
    return "\n".join(t for t in texts if t)
