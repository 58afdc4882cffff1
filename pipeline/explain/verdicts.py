"""The filter's decision on each line (or sentence) of a page, with the score it faced and the threshold that applied.

The filter (:mod:`pipeline.steps.perplexity`, its rule :mod:`pipeline.perplexity_rule`) answers only kept or dropped. To show why, each unit the rule
judged is given its own perplexity, the score it faced (pooled with its neighbours under ``window`` and
``context``), the threshold that applied to it (scaled by its length under ``length`` and ``context``, raised
for a line the block stage was sure of) and what decided. The decision itself is always the filter's
(:func:`~pipeline.perplexity_rule.kept_mask` of the same judgement); ``tests/test_explain.py`` checks that the
threshold shown here decides every unit as that mask does.
"""

from __future__ import annotations

from dataclasses import dataclass

from pipeline.config import PerplexitySettings
from pipeline.document import Sentence
from pipeline.perplexity_rule import judgement, kept_mask, protected

# What decided a unit: it was not scored; its score against the threshold; against a threshold lowered for its
# length; its two neighbours' agreement (``context``); the raised bar of a line the block stage was sure of.
UNSCORED, SCORE, LENGTH, NEIGHBOURS, PROTECTED = "unscored", "score", "length", "neighbours", "protected"


@dataclass
class Verdict:
    """The filter's decision on one unit (a line, or a sentence under ``unit: sentence``)."""

    sentences: list[int]  # indices of the page's sentences in the unit
    perplexity: float | None  # the unit's own perplexity (its sentences pooled); None: unscored
    faced: float | None  # the score the threshold judged (pooled with its neighbours under window and context)
    tokens: int  # LM tokens of the unit
    threshold: float | None  # the threshold that applied to it
    kept: bool  # the filter's decision
    decided_by: str  # UNSCORED, SCORE, LENGTH, NEIGHBOURS or PROTECTED

    def explanation(self, base: float, short_tokens: int) -> str:
        """What a reader needs besides the two numbers to check the decision: how the score was pooled, why the
        threshold is not ``base``, who decided."""
        if self.decided_by == UNSCORED:
            return "not scored (no model for the language, too short, or code)"
        notes = [f"{self.faced:,.0f} {'<=' if self.faced <= self.threshold else '>'} {self.threshold:,.0f}"]
        if self.faced != self.perplexity:
            notes.append(f"scored with its neighbours (alone {self.perplexity:,.0f})")
        if self.decided_by == PROTECTED:
            notes.append(f"{self.threshold / base:g}x the threshold: the block stage was sure of this line")
        elif self.threshold < base:
            notes.append(f"the threshold scaled to its length ({self.tokens} of {short_tokens} tokens)")
        if self.decided_by == NEIGHBOURS:
            notes.append(f"a short line: it follows its two neighbours, both {'kept' if self.kept else 'dropped'}")
        return "; ".join(notes)


def verdicts(sentences: list[Sentence], settings: PerplexitySettings, threshold: float,
             page_type: str | None = None) -> list[Verdict]:
    """The filter's decision on each unit of a page's scored ``sentences`` at ``threshold`` under ``settings``
    (``page_type``: the block stage's type of the page): the same judgement and mask the filter makes, with the
    threshold each unit faced."""
    judged = judgement(sentences, settings)
    mask = kept_mask(sentences, threshold, settings, judged=judged, page_type=page_type)
    sure = protected(sentences, settings, page_type)
    scaled = settings.rule in ("length", "context")
    out = []
    for group, own, faced in zip(judged.groups, judged.judged, judged.scores):
        kept = mask[group[0]]
        if own.perplexity is None:
            out.append(Verdict(group, None, None, own.n_tokens, None, kept, UNSCORED))
            continue
        if any(sure[i] for i in group):
            bar, decided_by = threshold * settings.protect_factor, PROTECTED
        else:
            bar = threshold * (min(1.0, (own.n_tokens + 1) / settings.short_tokens) if scaled else 1.0)
            by_score = faced.perplexity <= bar
            decided_by = (NEIGHBOURS if by_score != kept else
                          LENGTH if not kept and faced.perplexity <= threshold else SCORE)
        out.append(Verdict(group, own.perplexity, faced.perplexity, own.n_tokens, bar, kept, decided_by))
    return out
