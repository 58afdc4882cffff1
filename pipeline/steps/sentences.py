"""Step ``sentences``: multilingual sentence splitting (sentencex), paragraph by paragraph.

Each sentence keeps its span (``start``, ``end``) in the extracted text, so the written text
is the extracted text with the dropped sentences cut out (:func:`pipeline.document.cut_dropped`).
"""

from __future__ import annotations

from pipeline.document import UNKNOWN_LANGUAGE, Document, Sentence
from pipeline.steps.base import Step

Span = tuple[str, int, int]  # a sentence and its [start, end) in the text; -1, -1 when it cannot be found


class SentenceSplitter(Step):
    """Sets ``doc.sentences`` from ``doc.text`` in the document's language."""

    name = "sentences"

    def run(self, doc: Document) -> Document:
        doc.sentences = []
        probs, regions, code = doc.line_probs, doc.line_regions, doc.line_preformatted
        for paragraph, (line, para) in enumerate(self.lines(doc.text, doc.language_code)):
            prob = probs[line] if probs is not None and line < len(probs) else None
            region = regions is not None and line < len(regions) and regions[line]
            preformatted = code is not None and line < len(code) and code[line]
            for text, start, end in para:
                if start < 0:
                    self.count("unaligned")
                doc.sentences.append(Sentence(text, paragraph, start=start, end=end, block_prob=prob,
                                              in_region=region, preformatted=preformatted))
        return doc

    def split(self, text: str, language: str) -> list[list[str]]:
        """Return the sentences of each non-empty paragraph (line) of ``text``."""
        return [[sentence for sentence, _, _ in para] for para in self.spans(text, language)]

    def spans(self, text: str, language: str) -> list[list[Span]]:
        """The sentences of each non-empty line of ``text``, stripped, with their spans in ``text``."""
        return [para for _, para in self.lines(text, language)]

    def lines(self, text: str, language: str) -> list[tuple[int, list[Span]]]:
        """Each non-empty line of ``text`` as its index among all lines and its sentences (:meth:`spans`)."""
        from sentencex import segment

        lang = language if language != UNKNOWN_LANGUAGE else "en"
        paragraphs = []
        offset = 0
        for index, line in enumerate(text.split("\n")):
            if line.strip():
                para, cursor = [], 0
                for sentence in (s.strip() for s in segment(lang, line.strip())):
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
