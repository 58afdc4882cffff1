"""Step ``langid``: document-level fastText lid.176 language ID of the extracted text."""

from __future__ import annotations

from warcplex import models
from warcplex.config import LangIdSettings
from warcplex.document import UNKNOWN_LANGUAGE, Document, Language
from warcplex.steps.base import Step


class LanguageIdentifier(Step):
    """Sets ``doc.language`` (once per page: a later cascade stage keeps the first stage's language)."""

    name = "langid"
    section = "langid"
    settings: LangIdSettings

    def __init__(self, settings: LangIdSettings) -> None:
        super().__init__(settings)
        self.model_path = settings.model_path or models.default_lid_model_path()

    def __call__(self, doc: Document) -> Document:
        if doc.language is not None:
            return doc
        return super().__call__(doc)

    def run(self, doc: Document) -> Document:
        doc.language = self.identify(doc.text)
        return doc

    def identify(self, text: str) -> Language:
        sample = " ".join(text[: self.settings.max_chars].split())
        if not self.settings.enabled or not sample:
            return Language(UNKNOWN_LANGUAGE, 0.0)
        labels, scores = models.fasttext_model(self.model_path).predict(sample, k=1)
        code = labels[0].replace("__label__", "") if labels else UNKNOWN_LANGUAGE
        score = float(min(1.0, scores[0])) if len(scores) else 0.0
        if score < self.settings.min_score:
            self.count("below_min_score")
            return Language(UNKNOWN_LANGUAGE, score)
        return Language(code, score)
