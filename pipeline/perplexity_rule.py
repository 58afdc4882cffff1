"""The perplexity rule: each sentence's KenLM perplexity, how sentences are pooled and judged, and which are kept.

:func:`perplexity` is the one formula (``lm_models/train.py`` imports it); which sentences are kept is
:func:`rule_mask`, for the filter (:class:`pipeline.steps.perplexity.PerplexityFilter`), ``warcplex sweep`` and
``warcplex calibrate`` alike (:func:`kept_mask` applies a run's settings to a page's scored sentences); a removal's
reason is :func:`drop_reason` (every one starts with :data:`REASON_PREFIX`).
"""

from __future__ import annotations

import math
from typing import NamedTuple

from pipeline import _native, model_cache
from pipeline.config import PerplexitySettings
from pipeline.document import Sentence
from pipeline.lm_text import lm_line

_text = _native.compiled("text")  # the compiled pooling (pipeline/_native/text.pyx)


def perplexity_of(log10_prob: float, n_tokens: int) -> float:
    """The formula: 10^(-log10 P(sentence incl. </s>) / (tokens + 1))."""
    return 10.0 ** (-log10_prob / (n_tokens + 1))


# Texts scored in this process, per model: the block stage scores a page's blocks and the filter its
# sentences, which are often the same texts, and a site's boilerplate repeats across its pages. A window of 32
# pages (extract.prepare_window) brings about 4,000 texts, blocks and sentences; the cache holds about four
# windows (at 4,096 it was emptied in every window, between the block stage's scores and the filter's), far
# fewer than the pages between two copies of a page in `make bench`'s 5x input.
_SCORED: dict[tuple[object, str], tuple[float, int]] = {}
SCORED_CACHE_SIZE = 16384


def perplexity(model, text: str) -> tuple[float, int]:
    """The perplexity of ``text`` (normalised for the LM) under the KenLM ``model``; also its token count."""
    return perplexities(model, [text])[0]


def perplexities(model, texts: list[str]) -> list[tuple[float, int]]:
    """:func:`perplexity` of each of ``texts``, in one loop (a page's sentences or blocks)."""
    score, get = model.score, _SCORED.get
    out = []
    for text in texts:
        key = (model, text)
        scored = get(key)
        if scored is None:
            if len(_SCORED) >= SCORED_CACHE_SIZE:
                _SCORED.clear()
            line, n_tokens = lm_line(text)  # normalize_for_lm's line and its token count
            scored = _SCORED[key] = perplexity_of(score(line, bos=True, eos=True), n_tokens), n_tokens
        out.append(scored)
    return out


class Unit(NamedTuple):
    """What the rule sees of a sentence: its perplexity (None: unscored), LM tokens and line (a tuple:
    the rule makes one per sentence, group and window)."""

    perplexity: float | None
    n_tokens: int
    paragraph: int = 0


def _log_term(unit: Unit) -> float | None:
    """A unit's share of a pool's log-probability, ``(tokens + 1) * log10 perplexity`` (None: unscored)."""
    return None if unit.perplexity is None else (unit.n_tokens + 1) * math.log10(max(unit.perplexity, 1.0))


def _pool(log_sum: float, weight: int, n_scored: int, paragraph: int) -> Unit:
    """The formula of :func:`pooled`: ``n_scored`` members whose :func:`_log_term` add up to ``log_sum``
    and whose ``tokens + 1`` add up to ``weight``."""
    return Unit(10.0 ** (log_sum / weight), weight - n_scored, paragraph)


def pooled(units: list[Unit]) -> Unit:
    """Several units scored as one: the perplexity of their joint log-probability (each unit's
    ``(tokens + 1) * log10 perplexity`` summed, over the summed ``tokens + 1``)."""
    scored = [u for u in units if u.perplexity is not None]
    if not scored:
        return Unit(None, sum(u.n_tokens for u in units), units[0].paragraph if units else 0)
    return _pool(sum(_log_term(u) for u in scored), sum(u.n_tokens + 1 for u in scored), len(scored),
                 scored[0].paragraph)


RULES = ("fixed", "window", "length", "context")


class Judgement:
    """A page's units as a rule judges them, before any threshold: the groups judged together (one per
    line under ``line``), each group pooled (``judged``) and the score it faces (``scores``: pooled with
    its neighbours under ``window`` and ``context``). One judgement serves several thresholds and
    protections (:meth:`mask`)."""

    def __init__(self, units: list[Unit], unit: str = "sentence", rule: str = "fixed", window_tokens: int = 40) -> None:
        if rule not in RULES:
            raise ValueError(f"unknown perplexity rule {rule!r}")
        self.rule, self.size = rule, len(units)
        by_line, windowed = unit == "line", rule in ("window", "context")
        # the groups (one per line, or per unit), each pooled (pooled), and the score each faces: pooled with its
        # nearest neighbours on both sides in turn until the window holds window_tokens tokens (compiled: one pass)
        self.groups, self.judged, self.scores = _text.judge(units, by_line, windowed, window_tokens, Unit)

    def mask(self, threshold: float, short_tokens: int = 30, protected: list[bool] | None = None,
             protected_threshold: float = math.inf) -> list[bool]:
        """Which units are kept at ``threshold`` (see :func:`rule_mask`)."""
        return [verdict.kept for verdict in self.verdicts(threshold, short_tokens, protected, protected_threshold)]

    def verdicts(self, threshold: float, short_tokens: int = 30, protected: list[bool] | None = None,
                 protected_threshold: float = math.inf) -> list[Verdict]:
        """Each unit's :class:`Verdict` at ``threshold``: kept or not, which part of the rule decided, and
        the threshold its score faced (the rule of :func:`rule_mask`)."""
        groups, judged, rule = self.groups, self.judged, self.rule
        scale = rule in ("length", "context")
        safe = [protected is not None and any(protected[i] for i in group) for group in groups]
        decided = []
        for own, score, sure in zip(judged, self.scores, safe):
            if own.perplexity is None:
                decided.append(UNSCORED)
            elif sure:
                decided.append(Verdict(score.perplexity <= protected_threshold, "protected", protected_threshold))
            else:
                bar = threshold * min(1.0, (own.n_tokens + 1) / short_tokens) if scale else threshold
                if score.perplexity <= bar:
                    decided.append(Verdict(True, "score", bar))
                elif score.perplexity > threshold:  # over the threshold itself, whatever its length
                    decided.append(Verdict(False, rule, threshold))
                else:
                    decided.append(Verdict(False, "length", bar))
        if rule == "context":  # a short line whose two neighbours agree takes their decision
            decided = [Verdict(decided[i - 1].kept, "neighbours", decided[i].bar)
                       if 0 < i < len(decided) - 1 and decided[i - 1].kept == decided[i + 1].kept != decided[i].kept
                       and not safe[i] and judged[i].n_tokens < short_tokens and judged[i].perplexity is not None
                       else decided[i] for i in range(len(decided))]
        out = [UNSCORED] * self.size
        for group, verdict in zip(groups, decided):
            for i in group:
                out[i] = verdict
        return out


class Verdict(NamedTuple):
    """What the rule decided for a unit: ``kept``; ``why``: ``score`` (kept: its score was under its
    threshold), ``unscored``, ``protected`` (judged against the protected bar), ``neighbours`` (a short
    line that took its two neighbours' decision), ``length`` (dropped: under the threshold but over its
    length-scaled share of it), or the rule's name (dropped: over the threshold itself); ``bar``: the
    threshold that decided: the length-scaled one for ``score``, ``length`` and ``neighbours``, the threshold
    itself for the rule's name, the protected bar for ``protected``."""

    kept: bool
    why: str
    bar: float


UNSCORED = Verdict(True, "unscored", math.inf)


def rule_mask(units: list[Unit], threshold: float, unit: str = "sentence", rule: str = "fixed",
              window_tokens: int = 40, short_tokens: int = 30, protected: list[bool] | None = None,
              protected_threshold: float = math.inf) -> list[bool]:
    """The filter's rule: which sentences of a page (``units``, in page order) are kept at ``threshold``.

    ``unit``: ``sentence`` judges each sentence; ``line`` each line (its sentences pooled, all kept
    or dropped together). ``rule``:

    - ``fixed``: a unit is kept when its perplexity is at most ``threshold``;
    - ``window``: a unit shorter than ``window_tokens`` LM tokens is scored pooled with its
      nearest neighbours, both sides in turn, until the window holds ``window_tokens`` tokens;
    - ``length``: a unit of n tokens must score under ``threshold * min(1, (n + 1) / short_tokens)``
      (a one-word line cannot be judged like a 30-word sentence);
    - ``context``: ``window``'s score against ``length``'s threshold, then a unit shorter than
      ``short_tokens`` whose two neighbours agree takes their decision (a heading between kept
      paragraphs stays, a lone short line amid boilerplate goes).

    Unscored units (no model, fewer than ``perplexity.min_tokens`` tokens) are kept. ``protected``
    ones (per unit of ``units``; a line is protected when one of its sentences is) face only their
    score (pooled with neighbours under ``window`` and ``context``) against ``protected_threshold``,
    with no length scale, and ``context`` never overturns them.
    """
    return Judgement(units, unit, rule, window_tokens).mask(threshold, short_tokens, protected, protected_threshold)


def judgement(sentences: list[Sentence], settings: PerplexitySettings) -> Judgement:
    """A page's scored sentences judged under the unit and rule of ``settings`` (sentences shorter than
    ``min_tokens`` LM tokens count as unscored)."""
    units = [Unit(s.perplexity if (s.n_tokens or 0) >= settings.min_tokens else None, s.n_tokens or 0, s.paragraph)
             for s in sentences]
    return Judgement(units, settings.unit, settings.rule, settings.window_tokens)


def kept_mask(sentences: list[Sentence], threshold: float, settings: PerplexitySettings,
              protect: bool = True, judged: Judgement | None = None, page_type: str | None = None) -> list[bool]:
    """Which of a page's scored sentences the rule of ``settings`` keeps at ``threshold``. With ``protect``,
    a sentence whose line the block stage kept with a probability of at least ``protect_min_prob``
    (:func:`protected`) is kept unless its line scores above ``threshold * protect_factor``. ``judged``:
    the page's :func:`judgement` when the caller has it; ``page_type``: the block stage's type of the page."""
    if judged is None:
        judged = judgement(sentences, settings)
    return judged.mask(threshold, settings.short_tokens, protected(sentences, settings, page_type) if protect else None,
                       threshold * settings.protect_factor)


def protected(sentences: list[Sentence], settings: PerplexitySettings, page_type: str | None = None) -> list[bool]:
    """The sentences the filter judges only against ``protect_factor`` times the threshold: the block
    classifier kept their line with a probability of at least ``perplexity.protect_min_prob`` (on a page of a type
    in ``perplexity.protect_min_prob_by_type``, that type's), or
    (``perplexity.protect_regions``) as a member of a repeated region it mostly kept. The rule decides
    where the classifier was unsure; where it was sure, only text the LM finds far off (mojibake,
    garbled or machine-made text) goes."""
    least = settings.protect_min_prob_by_type.get(page_type, settings.protect_min_prob) if page_type else \
        settings.protect_min_prob
    return [(s.block_prob is not None and s.block_prob >= least)
            or (settings.protect_regions and s.in_region) for s in sentences]


REASON_PREFIX = "perplexity:"  # every reason of this filter's removals starts so


def drop_reason(unit: str, verdict: Verdict) -> str:
    """A filtered sentence's reason: the unit, the part of the rule that dropped it and the threshold that
    applied, e.g. ``perplexity:line/context@3000`` (its window scored over the threshold),
    ``perplexity:line/length@600`` (a short line over its length-scaled share of it),
    ``perplexity:line/neighbours@600`` (a short line under its threshold whose two neighbours were dropped),
    ``perplexity:line/protected@9000`` (a line the block stage was sure of, over the protected bar)."""
    bar = verdict.bar
    return f"{REASON_PREFIX}{unit}/{verdict.why}@{round(bar) if bar >= 100 else float(f'{bar:.3g}'):g}"


def median(values: list[float]) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    mid = len(ordered) // 2
    return ordered[mid] if len(ordered) % 2 else (ordered[mid - 1] + ordered[mid]) / 2


def log10_bins(values: list[float], bins_per_decade: int = 10) -> list[int]:
    """Histogram bin of each perplexity on a log10 scale (bin k covers 10^(k/b) .. 10^((k+1)/b); values below 1
    are bin 0)."""
    floor, log10 = math.floor, math.log10
    return [floor(log10(value if value > 1.0 else 1.0) * bins_per_decade) for value in values]


def log10_bin(value: float, bins_per_decade: int = 10) -> int:
    """:func:`log10_bins` of one value."""
    return log10_bins([value], bins_per_decade)[0]
