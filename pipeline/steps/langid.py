"""Step ``langid``: document-level fastText lid.176 language ID of the extracted text."""

from __future__ import annotations

import re

from pipeline import model_cache
from pipeline.config import LangIdSettings
from pipeline.document import UNKNOWN_LANGUAGE, Document, Language
from pipeline.steps.base import Step

# Japanese is written with kana between its kanji; a text of Chinese characters with none is Chinese, whatever
# fastText makes of short lines (a Chinese shop's list of item names and click counts reads as Japanese to it).
_KANA = re.compile(r"[\u3040-\u30ff\u31f0-\u31ff\uff66-\uff9f]")
_HAN = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff]")
_MIN_HAN = 10  # fewer Chinese characters than this say too little to overrule fastText


class LanguageIdentifier(Step):
    """Sets ``doc.language`` from ``doc.text``: in the cascade, the language of each stage's own text,
    so the page's language is that of the text finally kept, and the filter scores it with that language."""

    name = "langid"
    section = "langid"
    settings: LangIdSettings

    def __init__(self, settings: LangIdSettings) -> None:
        super().__init__(settings)
        self.model_path = settings.model_path or model_cache.default_lid_model_path()

    def run(self, doc: Document) -> Document:
        doc.language = self.identify(doc.text)
        return doc

    def identify(self, text: str) -> Language:
        sample = " ".join(text[: self.settings.max_chars].split())
        if not self.settings.enabled or not sample:
            return Language(UNKNOWN_LANGUAGE, 0.0)
        labels, scores = model_cache.fasttext_model(self.model_path).predict(sample, k=1)
        code = labels[0].replace("__label__", "") if labels else UNKNOWN_LANGUAGE
        score = float(min(1.0, scores[0])) if len(scores) else 0.0
        if code == "ja" and not _KANA.search(sample) and len(_HAN.findall(sample)) >= _MIN_HAN:
            self.count("ja_without_kana")
            code, score = "zh", self._score_of("zh", sample)
        if score < self.settings.min_score:
            self.count("below_min_score")
            return Language(UNKNOWN_LANGUAGE, score)
        return Language(code, score)

    def _score_of(self, code: str, sample: str) -> float:
        """fastText's score for ``code`` on ``sample`` (0 when it is not among its ten likeliest)."""
        labels, scores = model_cache.fasttext_model(self.model_path).predict(sample, k=10)
        return next((float(min(1.0, s)) for label, s in zip(labels, scores) if label == f"__label__{code}"), 0.0)
