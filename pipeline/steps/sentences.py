"""Step ``sentences``: multilingual sentence splitting (sentencex), paragraph by paragraph.

Each sentence keeps its span (``start``, ``end``) in the extracted text, so the written text
is the extracted text with the dropped sentences cut out (:func:`pipeline.document.cut_dropped`).
:func:`sentence_splitter` is the one choice of the splitter: the step, ``warcplex train-lm``,
calibration and the language models' corpora all split with it.
"""

from __future__ import annotations

import functools
from typing import Callable, Iterable

from pipeline.document import UNKNOWN_LANGUAGE, Document, Sentence
from pipeline.steps.base import Step
from pipeline.steps.blocks.step import written_reading

Span = tuple[str, int, int]  # a sentence and its [start, end) in the text; -1, -1 when it cannot be found


def sentence_splitter(language: str) -> Callable[[str], Iterable[str]]:
    """The sentence splitter of ``language`` (``und``: English's rules): one text -> its sentences (sentencex)."""
    from sentencex import segment

    return functools.partial(segment, language if language != UNKNOWN_LANGUAGE else "en")


def split(text: str, language: str) -> list[list[str]]:
    """The sentences of each non-empty paragraph (line) of ``text``."""
    return [[sentence for sentence, _, _ in para] for _, para in line_spans(text, language)]


def line_spans(text: str, language: str) -> list[tuple[int, list[Span]]]:
    """Each non-empty line of ``text`` as its index among all lines and its sentences, stripped, with their spans in
    ``text``."""
    segment = sentence_splitter(language)
    paragraphs = []
    offset = 0
    for index, line in enumerate(text.split("\n")):
        if line.strip():
            para, cursor = [], 0
            for sentence in (s.strip() for s in segment(line.strip())):
                if not sentence:
                    continue
                position = line.find(sentence, cursor)
                if position < 0:
                    para.append((sentence, -1, -1))
                    continue
                cursor = position + len(sentence)
                para.append((sentence, offset + position, offset + cursor))
            paragraphs.append((index, para))
        offset += len(line) + 1
    return paragraphs


class SentenceSplitter(Step):
    """Sets ``doc.sentences`` from ``doc.text`` in the document's language."""

    name = "sentences"

    def run(self, doc: Document) -> Document:
        doc.sentences = []
        written = written_reading(doc)  # the block stage's evidence of each line of its text, when it is the text
        probs, regions, code = ((written.line_probs, written.line_regions, written.line_preformatted)
                                if written is not None else (None, None, None))
        for paragraph, (line, para) in enumerate(line_spans(doc.text, doc.language_code)):
            prob = probs[line] if probs is not None and line < len(probs) else None
            region = regions is not None and line < len(regions) and regions[line]
            preformatted = code is not None and line < len(code) and code[line]
            for text, start, end in para:
                if start < 0:
                    self.count("unaligned")
                doc.sentences.append(Sentence(text, paragraph, start=start, end=end, block_prob=prob,
                                              in_region=region, preformatted=preformatted))
        return doc
