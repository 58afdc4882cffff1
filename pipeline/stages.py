"""The text stages: extraction, language ID, sentence splitting and the perplexity filter.

Each stage is a small class holding only settings (so it pickles to executors cheaply),
with one working method, its own counters and its CPU time under ``cpu.<name>``. Native
models are fetched from :mod:`pipeline.models` on first use in each worker.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import ContextManager

from pipeline import models
from pipeline.charset import decode_html  # noqa: F401  (the decoding step of the extraction stages)
from pipeline.config import ExtractSettings, LangIdSettings, PerplexitySettings
from pipeline.normalize import lm_tokens
from pipeline.stats import Stats, timed


class Stage:
    """Base class: counters and CPU time of one stage."""

    name = "stage"

    def __init__(self) -> None:
        self.stats = Stats()

    def count(self, key: str, amount: float = 1) -> None:
        self.stats.add(f"stage.{self.name}.{key}", amount)

    def timed(self) -> ContextManager[None]:
        """Count the CPU time of a ``with`` block under ``cpu.<name>``."""
        return timed(self.stats, f"cpu.{self.name}")


# --- extraction ---------------------------------------------------------------------------


class Extractor(Stage):
    """Turns decoded HTML into plain text with paragraphs separated by newlines."""

    def extract(self, html: str) -> str:
        raise NotImplementedError


class PageTooDeep(ValueError):
    """The page's elements nest deeper than ``extract.max_main_content_depth``."""


_TAG = re.compile(r"<(/?)([A-Za-z][A-Za-z0-9]*)")
# Void elements and elements whose end tag is commonly omitted do not deepen the estimate.
_FLAT_TAGS = frozenset("area base br col embed hr img input link meta param source track wbr "
                       "p li dt dd tr td th option thead tbody tfoot colgroup rp rt".split())


def nesting_depth(html: str, stop_above: int) -> int:
    """Estimated element nesting depth of ``html`` from its tags; stops once above ``stop_above``."""
    if html.count("<") <= stop_above:
        return 0  # cannot nest deeper than it has tags
    depth = deepest = 0
    for closing, name in _TAG.findall(html):
        if name.lower() in _FLAT_TAGS:
            continue
        if closing:
            if depth:
                depth -= 1
        else:
            depth += 1
            if depth > deepest:
                deepest = depth
                if deepest > stop_above:
                    break
    return deepest


class ResiliparseExtractor(Extractor):
    name = "resiliparse"

    def __init__(self, settings: ExtractSettings, main_content: bool | None = None) -> None:
        super().__init__()
        self.main_content = settings.main_content if main_content is None else main_content
        self.max_depth = settings.max_main_content_depth
        self.options = dict(list_bullets=settings.list_bullets, comments=settings.comments,
                            links=settings.links, alt_texts=settings.alt_texts)

    def extract(self, html: str) -> str:
        """Main text of ``html``; raises :class:`PageTooDeep` where main-content mode would crawl."""
        from resiliparse.extract.html2text import extract_plain_text
        from resiliparse.parse.html import HTMLTree

        if self.main_content and nesting_depth(html, self.max_depth) > self.max_depth:
            raise PageTooDeep(f"nested deeper than {self.max_depth} elements")
        tree = HTMLTree.parse(html)
        return extract_plain_text(tree, preserve_formatting=True, main_content=self.main_content,
                                  noscript=False, form_fields=False, **self.options)


class ConservativeExtractor(ResiliparseExtractor):
    """All visible text, no main-content heuristics: SORE's conservative revert."""

    name = "conservative"

    def __init__(self, settings: ExtractSettings) -> None:
        super().__init__(settings, main_content=False)


class TrafilaturaExtractor(Extractor):
    name = "trafilatura"

    def extract(self, html: str) -> str:
        import trafilatura

        return trafilatura.extract(html, include_comments=False, include_tables=True,
                                   favor_recall=True, deduplicate=False) or ""


class ReadabilityExtractor(Extractor):
    """readability-lxml picks the article node; html-text renders it with paragraph breaks."""

    name = "readability"

    def extract(self, html: str) -> str:
        import html_text
        from readability import Document

        summary = Document(html).summary(html_partial=True)
        return html_text.extract_text(summary, guess_layout=True)


# --- language ID --------------------------------------------------------------------------


@dataclass(frozen=True)
class Language:
    code: str
    score: float


UNKNOWN_LANGUAGE = "und"


class LanguageIdentifier(Stage):
    """Document-level fastText lid.176 language ID."""

    name = "langid"

    def __init__(self, settings: LangIdSettings) -> None:
        super().__init__()
        self.settings = settings
        self.model_path = settings.model_path or models.default_lid_model_path()

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


# --- sentences ----------------------------------------------------------------------------


class SentenceSplitter(Stage):
    """Multilingual sentence splitting (sentencex), paragraph by paragraph."""

    name = "sentences"

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


# --- perplexity filter --------------------------------------------------------------------


@dataclass
class ScoredSentence:
    text: str
    perplexity: float | None  # None: not scored (no model for the language, or too short)
    kept: bool
    reason: str | None = None  # why it was dropped


def perplexity(model, text: str) -> tuple[float, int]:
    """Perplexity = 10^(-log10 P(sentence incl. </s>) / (words + 1)); also the word count."""
    tokens = lm_tokens(text)
    log10_prob = model.score(" ".join(tokens), bos=True, eos=True)
    return 10.0 ** (-log10_prob / (len(tokens) + 1)), len(tokens)


class PerplexityFilter(Stage):
    """Scores every sentence with the language's KenLM model and drops those above its threshold."""

    name = "perplexity"

    def __init__(self, settings: PerplexitySettings) -> None:
        super().__init__()
        self.settings = settings

    def has_model(self, language: str) -> bool:
        return self.settings.enabled and language in models.load_registry(self.settings.registry)

    def threshold(self, language: str) -> float:
        if self.settings.threshold is not None:
            return self.settings.threshold
        entry = models.load_registry(self.settings.registry)[language]
        if self.settings.threshold_mode == "percentile":
            percentiles = entry.get("percentiles") or {}
            value = percentiles.get(self.settings.percentile, percentiles.get(str(self.settings.percentile)))
            if value is None:
                raise ValueError(f"{self.settings.registry}: models.{language} has no "
                                 f"percentiles.{self.settings.percentile}; run `warcplex calibrate`")
            return float(value)
        return float(entry["threshold"])

    def filter(self, paragraphs: list[list[str]], language: str) -> list[list[ScoredSentence]]:
        """Score and keep/drop each sentence; a language without a model passes unscored."""
        if not self.has_model(language):
            self.count("unscored_language_pages")
            return [[ScoredSentence(s, None, True) for s in para] for para in paragraphs]
        entry = models.load_registry(self.settings.registry)[language]
        model = models.kenlm_model(entry["path"])
        limit = self.threshold(language)
        result = []
        for para in paragraphs:
            scored = []
            for sentence in para:
                ppl, n_words = perplexity(model, sentence)
                if n_words < self.settings.min_tokens:
                    scored.append(ScoredSentence(sentence, ppl, True))
                elif ppl > limit:
                    scored.append(ScoredSentence(sentence, ppl, False, f"perplexity>{limit:g}"))
                else:
                    scored.append(ScoredSentence(sentence, ppl, True))
            result.append(scored)
        return result


def median(values: list[float]) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    mid = len(ordered) // 2
    return ordered[mid] if len(ordered) % 2 else (ordered[mid - 1] + ordered[mid]) / 2


def log10_bin(value: float, bins_per_decade: int = 10) -> int:
    """Histogram bin of a perplexity on a log10 scale (bin k covers 10^(k/b) .. 10^((k+1)/b))."""
    return int(math.floor(math.log10(max(value, 1.0)) * bins_per_decade))
