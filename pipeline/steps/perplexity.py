"""Step ``perplexity``: every sentence scored by its language's KenLM model; the perplexity rule
(:mod:`pipeline.perplexity_rule`) drops those it judges noise."""

from __future__ import annotations

from pipeline import model_cache
from pipeline.config import PerplexitySettings
from pipeline.document import Document
from pipeline.perplexity_rule import drop_reason, judgement, perplexities, protected
from pipeline.model_registry import RegistryEntry, load_registry
from pipeline.steps.base import Step


class PerplexityFilter(Step):
    """Scores every sentence with the language's KenLM model and drops those the rule (:func:`kept_mask`) rejects.

    A page of a language without a model passes unscored, or is dropped as
    ``unknown_language_dropped`` with ``perplexity.unknown_language: drop``. An extractor
    marked ``unfiltered`` (the conservative revert) passes unscored, and so does preformatted text
    (code) the block stage kept: a model of prose cannot judge it, and a line dropped from it breaks it.
    """

    name = "perplexity"
    section = "perplexity"
    settings: PerplexitySettings

    def __call__(self, doc: Document) -> Document | None:
        doc.threshold = None
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
        model = model_cache.kenlm_model(entry.path)
        scored = [s for s in doc.sentences if not s.preformatted]
        if len(scored) < len(doc.sentences):
            self.count("sentences_preformatted", len(doc.sentences) - len(scored))  # kept unscored
        for sentence, (ppl, n_tokens) in zip(scored, perplexities(model, [s.text for s in scored])):
            sentence.perplexity, sentence.n_tokens = ppl, n_tokens
        limit = doc.threshold = entry.threshold_for(self.settings)
        judged = judgement(doc.sentences, self.settings)
        sure = protected(doc.sentences, self.settings, doc.blocks.page_type if doc.blocks is not None else None)
        verdicts = judged.verdicts(limit, self.settings.short_tokens, sure, limit * self.settings.protect_factor)
        if any(sure):
            unprotected = judged.mask(limit, self.settings.short_tokens)
            saved = sum(v.kept and not u for v, u in zip(verdicts, unprotected))
            if saved:
                self.count("sentences_protected", saved)  # kept only because the block stage was sure of them
        for sentence, verdict in zip(doc.sentences, verdicts):
            if not verdict.kept:
                sentence.kept, sentence.reason = False, drop_reason(self.settings.unit, verdict)
        return doc

    def has_model(self, language: str) -> bool:
        """True when the registry has a model for ``language`` and a threshold for this run's mode."""
        entry = load_registry(self.settings.registry).get(language) if self.settings.enabled else None
        return entry is not None and entry.scores_under(self.settings)

    def entry(self, language: str) -> RegistryEntry | None:
        """The language's registry entry, or None without a model."""
        if not self.has_model(language):
            return None
        return load_registry(self.settings.registry)[language]
