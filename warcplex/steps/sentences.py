"""Step ``sentences``: multilingual sentence splitting (sentencex), paragraph by paragraph."""

from __future__ import annotations

from warcplex.document import UNKNOWN_LANGUAGE, Document, Sentence
from warcplex.steps.base import Step


class SentenceSplitter(Step):
    """Sets ``doc.sentences`` from ``doc.text`` in the document's language."""

    name = "sentences"

    def run(self, doc: Document) -> Document:
        doc.sentences = [Sentence(text, paragraph) for paragraph, para in
                         enumerate(self.split(doc.text, doc.language_code)) for text in para]
        return doc

    def split(self, text: str, language: str) -> list[list[str]]:
        """Return the sentences of each non-empty paragraph (line) of ``text``."""
        from sentencex import segment

        lang = language if language != UNKNOWN_LANGUAGE else "en"
        paragraphs = []
        for line in text.split("\n"):
            line = line.strip()
            if line:
                sentences = [s.strip() for s in segment(lang, line)]
                paragraphs.append([s for s in sentences if s])
        return paragraphs
