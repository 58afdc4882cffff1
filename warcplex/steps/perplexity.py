"""Step ``perplexity``: every sentence scored by its language's KenLM model, those above the threshold dropped.

:func:`perplexity` is the one formula (``lm_models/train.py`` imports it); which sentence is
kept is :func:`warcplex.registry.keeps`.
"""

from __future__ import annotations

import math

from warcplex import models
from warcplex.config import PerplexitySettings
from warcplex.document import Document
from warcplex.registry import RegistryEntry, load_registry
from warcplex.steps.base import Step
from warcplex.steps.blocks import native
from warcplex.steps.normalize import lm_tokens


def perplexity_of(log10_prob: float, n_tokens: int) -> float:
    """The formula: 10^(-log10 P(sentence incl. </s>) / (tokens + 1))."""
    return 10.0 ** (-log10_prob / (n_tokens + 1))


# Texts scored in this process, per model: the block stage scores a page's blocks and the filter its
# sentences, which are often the same texts, and a site's boilerplate repeats across its pages.
_SCORED: dict[tuple[object, str], tuple[float, int]] = {}
SCORED_CACHE_SIZE = 4096


def perplexity(model, text: str) -> tuple[float, int]:
    """The perplexity of ``text`` (normalised for the LM) under the KenLM ``model``; also its token count."""
    key = (model, text)
    scored = _SCORED.get(key)
    if scored is None:
        if len(_SCORED) >= SCORED_CACHE_SIZE:
            _SCORED.clear()
        compiled = native.compiled()
        if compiled is None:
            tokens = lm_tokens(text)
            line, n_tokens = " ".join(tokens), len(tokens)
        else:
            line, n_tokens = compiled.lm_line(text)  # the same line, in compiled code
        scored = _SCORED[key] = perplexity_of(model.score(line, bos=True, eos=True), n_tokens), n_tokens
    return scored


class PerplexityFilter(Step):
    """Scores every sentence with the language's KenLM model and drops those above its threshold.

    A page of a language without a model passes unscored, or is dropped as
    ``unknown_language_dropped`` with ``perplexity.unknown_language: drop``. An extractor
    marked ``unfiltered`` (the conservative revert) passes unscored.
    """

    name = "perplexity"
    section = "perplexity"
    settings: PerplexitySettings

    def __call__(self, doc: Document) -> Document | None:
        if doc.unfiltered or not self.settings.enabled:
            return doc  # sentences stay kept and unscored
        if not self.has_model(doc.language_code) and self.settings.unknown_language == "drop":
            return self.drop(doc, "unknown_language_dropped")
        return super().__call__(doc)

    def run(self, doc: Document) -> Document:
        entry = self.entry(doc.language_code)
        if entry is None:
            self.count("unscored_language_pages")
            return doc
        model = models.kenlm_model(entry.path)
        for sentence in doc.sentences:
            sentence.perplexity, sentence.n_tokens = perplexity(model, sentence.text)
            if not entry.keeps(sentence.perplexity, sentence.n_tokens):
                sentence.kept, sentence.reason = False, f"perplexity>{entry.limit:g}"
        return doc

    def has_model(self, language: str) -> bool:
        return self.settings.enabled and language in load_registry(self.settings.registry)

    def entry(self, language: str) -> RegistryEntry | None:
        """The language's registry entry bound to this run's rule, or None without a model."""
        if not self.has_model(language):
            return None
        return load_registry(self.settings.registry)[language].bind(self.settings)

    def threshold(self, language: str) -> float:
        return load_registry(self.settings.registry)[language].threshold_for(self.settings)


def median(values: list[float]) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    mid = len(ordered) // 2
    return ordered[mid] if len(ordered) % 2 else (ordered[mid - 1] + ordered[mid]) / 2


def log10_bin(value: float, bins_per_decade: int = 10) -> int:
    """Histogram bin of a perplexity on a log10 scale (bin k covers 10^(k/b) .. 10^((k+1)/b))."""
    return int(math.floor(math.log10(max(value, 1.0)) * bins_per_decade))
