"""The page a reader yields, the one document type every step reads and writes, and the one sentence type.

A :class:`Document` starts as a :class:`Page` (what a reader of ``pipeline.reading`` made of one record) and is
filled in by the steps: decoded HTML, extracted text, language, scored sentences. The page
text that is written is the extracted text with the dropped sentences cut out as spans of
it (:func:`cut_dropped`): spacing, line breaks and code are kept and nothing is rejoined.
The sweep, the index statistics and calibration, which only have the sentences, rebuild a
page's text with :func:`page_text`.
"""

from __future__ import annotations

import dataclasses
import functools
import re
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable

from pipeline import _native

UNKNOWN_LANGUAGE = "und"


@dataclass
class Page:
    """One record of an input file as its reader made it: the payload undecoded, what ``kind`` of page it is (the
    ``records.<kind>`` it is counted under) and the extractor of its text (None: the ``extract.cascade`` stages)."""

    record_id: str
    url: str
    warc_date: str
    html: bytes
    http_charset: str | None
    kind: str = "html"
    extractor: str | None = None


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
    start: int = -1  # its span [start, end) in the extracted text (-1: not located)
    end: int = -1
    distance: float | None = None  # a sore removal's embedding distance (to the outlier phrase or the core)
    block_prob: float | None = None  # the block stage's main-content probability of its line (None: no such evidence)
    in_region: bool = False  # its line is in a repeated region the block stage kept (a grid, list or table)
    preformatted: bool = False  # its line is preformatted text (code) the block stage kept: the filter leaves it


@dataclass
class StageTry:
    """One extraction stage's try at a page, as a traced page records it (:class:`Trace`)."""

    name: str
    verdict: str  # kept | filter_overruled | filtered_too_much | empty | short | error | timeout | memory | skipped
    reason: str | None = None  # the cascade's reason (``blocks_short_12of340``) or the error
    text: str = ""  # the stage's text, when it gave one
    language: Language | None = None  # ... its language
    sentences: list[Sentence] = field(default_factory=list)  # ... and its sentences as the steps after it left them


@dataclass
class Trace:
    """What the steps did to one page, kept only when ``warcplex explain`` asks (``Document.trace``; None on
    every page of a run, where recording it would cost per page): each cascade stage tried (the block stage's
    decisions are its reading's, ``Document.blocks``)."""

    stages: list[StageTry] = field(default_factory=list)

    def tried(self, name: str, verdict: str, reason: str | None = None, doc: "Document | None" = None) -> None:
        """Note a stage's try; with ``doc``, a copy of its text, language and sentences as they are now."""
        if doc is None:
            self.stages.append(StageTry(name, verdict, reason))
        else:
            self.stages.append(StageTry(name, verdict, reason, doc.text, doc.language,
                                        [dataclasses.replace(s) for s in doc.sentences]))


@dataclass
class Document:
    """One page on its way through the steps; ``outcome`` says where it ended."""

    page: Page
    html: str = ""  # the decoded payload
    text: str = ""  # the chosen extractor's text (``raw_text`` in the stats)
    extractor: str | None = None
    fallback_reason: str | None = None  # why the cascade left its first stage
    # The block stage's reading of the page (pipeline.steps.blocks.extractor.BlockPage: its parse, page type, comments,
    # the evidence of each line of its text), from the stage on, whichever stage's text is written; None: not read.
    blocks: Any = None
    language: Language | None = None
    sentences: list[Sentence] = field(default_factory=list)
    unfiltered: bool = False  # the extractor's text passes the filter unscored (the conservative revert)
    threshold: float | None = None  # the perplexity threshold the filter judged the text against (None: not judged)
    outcome: str = "kept"  # kept | empty_extraction | empty_after_filter | <a step's drop reason> | error.<kind>
    # clean_text's last answer and what it was computed from (the loop, the counters and the row each ask)
    _clean: tuple[tuple, str] | None = field(default=None, repr=False, compare=False)
    # What the steps did, for ``warcplex explain`` only (a class attribute: no field to fill on a run's pages)
    trace = None  # type: Trace | None

    @property
    def language_code(self) -> str:
        return self.language.code if self.language is not None else UNKNOWN_LANGUAGE

    @property
    def clean_text(self) -> str:
        """The text written to the corpus: the extracted text with the dropped sentences cut out. Computed
        again only when the text or a sentence's decision or place has changed since the last time."""
        key = (self.text, [(s.kept, s.start, s.end, s.paragraph) for s in self.sentences])
        if self._clean is None or self._clean[0] != key:
            self._clean = (key, cut_dropped(self.text, self.sentences))
        return self._clean[1]

    def paragraphs(self) -> list[list[Sentence]]:
        grouped: dict[int, list[Sentence]] = {}
        for sentence in self.sentences:
            grouped.setdefault(sentence.paragraph, []).append(sentence)
        return [grouped[k] for k in sorted(grouped)]


# Unicode's format characters (category Cf, Unicode 14: Python 3.11's unicodedata): zero-width spaces and
# joiners, soft hyphens, direction marks, byte-order marks, tags. A regex class, as ``re`` has no \p{Cf}.
FORMAT_CHARACTERS = ("\u00ad\u0600-\u0605\u061c\u06dd\u070f\u0890-\u0891\u08e2\u180e\u200b-\u200f\u202a-\u202e"
                     "\u2060-\u2064\u2066-\u206f\ufeff\ufff9-\ufffb\U000110bd\U000110cd\U00013430-\U00013438"
                     "\U0001bca0-\U0001bca3\U0001d173-\U0001d17a\U000e0001\U000e0020-\U000e007f")
_INVISIBLE = re.compile(rf"[\s{FORMAT_CHARACTERS}]*")
_INVISIBLE_LINE = re.compile(rf"\n(?:[^\S\n]|[{FORMAT_CHARACTERS}])+(?=\n|\Z)")  # with the line break before it
_BLANK_RUNS = re.compile(r"\n{3,}")
# Words of format characters only (white space or a line's end on both sides), with the white space around them.
_FORMAT_WORDS = re.compile(rf"([^\S\n]*)(?:(?<!\S)[{FORMAT_CHARACTERS}]+(?!\S)[^\S\n]*)+")


def visible(text: str) -> bool:
    """Whether a reader sees any of ``text``: a character that is neither white space (``&nbsp;`` included)
    nor a format character (:data:`FORMAT_CHARACTERS`)."""
    return _INVISIBLE.fullmatch(text) is None


def visible_lines(text: str) -> str:
    """An extractor's ``text`` as it is written: each line a reader sees as blank (only white space and
    format characters, such as a ``<p>&nbsp;</p>`` or a spacer of zero-width joiners) made empty, runs of
    blank lines collapsed to one, and none at either end; inside a line, a word of format characters only
    (a zero-width joiner between two sentences) goes with the white space around it, its neighbours keep
    one space between them, and a line keeps its indentation. Format characters inside words stay."""
    text = _closed_up(_INVISIBLE_LINE.sub("\n", "\n" + text)[1:])
    return _FORMAT_WORDS.sub(_format_word_gone, text) if has_format_character(text) else text


def _class_ranges(members: str) -> list[tuple[int, int]]:
    """The characters of a regex class body of characters and ``a-b`` ranges (:data:`FORMAT_CHARACTERS`), as
    inclusive code point ranges."""
    ranges, i = [], 0
    while i < len(members):
        if i + 2 < len(members) and members[i + 1] == "-":
            ranges.append((ord(members[i]), ord(members[i + 2])))
            i += 3
        else:
            ranges.append((ord(members[i]), ord(members[i])))
            i += 1
    return ranges


@functools.cache
def _format_scan():
    """The compiled scan for :data:`FORMAT_CHARACTERS` (``CharRanges`` of the compiled ``text`` part; a regex class of
    many ranges costs about 14 ns a character)."""
    return _native.compiled("text").CharRanges(_class_ranges(FORMAT_CHARACTERS)).search


def has_format_character(text: str) -> bool:
    """Whether ``text`` holds a format character (:data:`FORMAT_CHARACTERS`)."""
    return _format_scan()(text)


def _format_word_gone(match: re.Match) -> str:
    """What replaces a run of format-character words (:data:`_FORMAT_WORDS`): nothing at a line's end, the
    indentation at its start, one space between two words."""
    text, start, end = match.string, match.start(), match.end()
    if end == len(text) or text[end] == "\n":
        return ""
    if start == 0 or text[start - 1] == "\n":
        return match.group(1)
    return " "


def _closed_up(text: str) -> str:
    """``text`` with its runs of blank lines collapsed to one and none at either end."""
    if "\n\n\n" in text:
        text = _BLANK_RUNS.sub("\n\n", text)
    return text.strip("\n")


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


def cut_dropped(text: str, sentences: list[Sentence]) -> str:
    """``text`` without the spans of its dropped sentences; ``text`` itself when none is dropped.

    A line whose sentences are all dropped goes with its line break, and the blank lines that leaves in
    a row (between paragraphs, at either end) close up as :func:`visible_lines` writes them. Within a
    line, a run of dropped sentences goes with the white space up to the next sentence, or, at the end
    of the line, with the white space after the last kept one. A sentence whose span is unknown stays.
    """
    if all(s.kept or s.start < 0 for s in sentences):
        return text
    cuts: list[tuple[int, int]] = []
    lines: dict[int, list[Sentence]] = {}
    for sentence in sentences:
        lines.setdefault(sentence.paragraph, []).append(sentence)
    for line in lines.values():
        located = [s for s in line if s.start >= 0]
        if located and len(located) == len(line) and not any(s.kept for s in line):
            start = text.rfind("\n", 0, located[0].start) + 1
            end = text.find("\n", located[-1].end)
            cuts.append((start, end + 1) if end >= 0 else (max(start - 1, 0), len(text)))
            continue
        i = 0
        while i < len(located):
            if located[i].kept:
                i += 1
                continue
            j = i
            while j + 1 < len(located) and not located[j + 1].kept:
                j += 1
            if j + 1 < len(located):
                cuts.append((located[i].start, located[j + 1].start))
            else:
                cuts.append((located[i - 1].end if i else located[i].start, located[j].end))
            i = j + 1
    parts, position = [], 0
    for start, end in sorted(cuts):
        if start > position:
            parts.append(text[position:start])
        position = max(position, end)
    parts.append(text[position:])
    return _closed_up("".join(parts))
