"""Step ``min_words``: drop a page whose kept text has fewer than ``min_words`` words.

Enable it by adding ``min_words`` to ``pipeline.steps`` (after ``perplexity`` it counts the
words the filter kept); set the limit with ``pipeline.options.min_words.min_words``.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from pipeline.config import Settings
from pipeline.document import Document
from pipeline.steps.base import Filter


class MinWordsSettings(BaseModel):
    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)

    min_words: int = Field(default=50, ge=0)
    """Pages whose kept text has fewer white-space separated words than this are dropped."""


class MinWords(Filter):
    name = "min_words"
    settings: MinWordsSettings

    @classmethod
    def from_settings(cls, settings: Settings) -> "MinWords":
        return cls(MinWordsSettings(**settings.pipeline.options.get(cls.name, {})))

    def filter(self, doc: Document) -> bool | tuple[bool, str]:
        return len(doc.clean_text.split()) >= self.settings.min_words, "too_few_words"
