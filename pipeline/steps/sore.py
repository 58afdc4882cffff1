"""Step ``sore``: semantic outlier removal with multilingual sentence embeddings (SORE, seed 000).

A page's *core* is its title and description, embedded together with its segments (lines or
sentences) by Google's USE multilingual v3 (:func:`pipeline.model_cache.sentence_encoder`). The
``core_share`` of segments most similar to the core join it and are never removed. Every other
segment is removed when

- its nearest outlier phrase (ads, legal/cookie text, navigation, social/sharing, ..., in
  eleven languages, ``pipeline/steps/sore_outliers.yaml``) is within ``outlier_distance`` and
  nearer than the core: reason ``sore_outlier_group:<group>``, distance to that phrase;
- or its distance to the core (title/description vector and core segments) exceeds
  ``far_distance``: reason ``sore_far_from_core``, that distance.

A page that would lose more than ``max_removed_share`` of its segments keeps them all
(``reverted``), as SORE reverts to conservative extraction. Distances are 1 - cosine.
:class:`SoreScorer` is the scorer (page metadata and segment texts in, decisions out; it embeds
all texts of the pages it is given in one batch); :class:`Sore` is the step.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from importlib import resources
from typing import Literal

import numpy as np
import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from pipeline import model_cache
from pipeline.config import ConfigError, Settings
from pipeline.document import Document, Sentence, join_sentences
from pipeline.steps.base import Step

DEFAULT_OUTLIERS = "sore_outliers.yaml"  # packaged next to this module
OUTLIER_REASON = "sore_outlier_group:"
FAR_REASON = "sore_far_from_core"


class SoreSettings(BaseModel):
    """``pipeline.options.sore``: SORE's thresholds. Distances are 1 - cosine similarity
    (0 the same meaning, about 1 unrelated)."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)

    segment: Literal["line", "sentence"] = "line"
    """What one decision covers: a line (paragraph) of the extracted text, or one sentence."""
    outliers: str | None = None
    """YAML file of outlier groups (group -> language -> phrases); None: pipeline/steps/sore_outliers.yaml."""
    core_share: float = Field(default=0.1, ge=0, le=1)
    """Share of a page's segments most similar to its title/description that join its core (k);
    core segments are never removed."""
    outlier_distance: float = Field(default=0.25, ge=0, le=2)
    """A segment at most this far from an outlier phrase (and nearer to it than to the core) is removed."""
    far_distance: float = Field(default=2.0, ge=0, le=2)
    """A segment farther than this from the core (title, description and core segments) is removed;
    2 (the default, tuned after the block classifier) disables the test; 0.9 suits all-text input."""
    max_removed_share: float = Field(default=0.5, ge=0, le=1)
    """A page that would lose more than this share of its segments keeps them all (SORE's revert)."""
    min_core_chars: int = Field(default=10, ge=0)
    """A title plus description shorter than this is no core: only the outlier groups apply."""
    apply_to_revert: bool = False
    """Also judge the cascade's conservative all-text revert (which the filter leaves unscored)."""
    threads: int = Field(default=1, ge=1)
    """BLAS threads of the embedding model in each worker (one Spark task per core: keep 1)."""


@dataclass(frozen=True)
class PageMeta:
    """What SORE embeds as a page's core."""

    title: str = ""
    description: str = ""

    @property
    def texts(self) -> list[str]:
        return [t for t in (self.title, self.description) if t]


def page_metadata(html: str) -> PageMeta:
    """The page's ``<title>`` (else og:title) and meta description (else og:description)."""
    from resiliparse.parse.html import HTMLTree

    tree = HTMLTree.parse(html)
    found: dict[str, str] = {}
    head = tree.head
    for meta in head.query_selector_all("meta") if head is not None else []:
        key = (meta.getattr("name") or meta.getattr("property") or "").strip().lower()
        content = " ".join((meta.getattr("content") or "").split())
        if key in ("description", "og:description", "og:title") and content:
            found.setdefault(key, content)
    title = " ".join((tree.title or "").split()) or found.get("og:title", "")
    return PageMeta(title, found.get("description") or found.get("og:description", ""))


@dataclass(frozen=True)
class SegmentDecision:
    """SORE's verdict on one segment. ``distance`` is to the matched outlier phrase for an
    outlier, else to the core (None when the page has no core)."""

    kept: bool
    reason: str | None
    distance: float | None
    core: bool = False


@dataclass(frozen=True)
class PageDecision:
    segments: list[SegmentDecision]
    has_core: bool
    reverted: bool = False  # more than `max_removed_share` would have gone: all kept

    @property
    def removed(self) -> int:
        return sum(not d.kept for d in self.segments)


@dataclass(frozen=True)
class PageGeometry:
    """A page's similarities, independent of the thresholds (:meth:`SoreScorer.measure`)."""

    outlier_distance: np.ndarray  # (n,) distance of each segment to its nearest outlier phrase
    outlier_group: list[str]  # that phrase's group
    core_sim: np.ndarray | None  # (n,) similarity to the title/description; None without a core
    segment_sim: np.ndarray | None  # (n, n) similarities between the segments


@dataclass(frozen=True)
class OutlierGroups:
    """Embedded outlier phrases: one row per phrase, with its group."""

    groups: list[str]
    phrases: list[str]
    vectors: np.ndarray  # (phrases, dim), L2-normalised


def read_outlier_groups(path: str | None) -> dict[str, list[str]]:
    """group -> its phrases in every language (deduplicated, file order) from the YAML file
    (None: the packaged one, read with importlib.resources so a ``--py-files`` zip works too)."""
    if path is None:
        text = resources.files("pipeline.steps").joinpath(DEFAULT_OUTLIERS).read_text(encoding="utf-8")
    else:
        with open(path, encoding="utf-8") as fh:
            text = fh.read()
    tree = yaml.safe_load(text) or {}
    path = path or DEFAULT_OUTLIERS
    if not isinstance(tree, dict) or not tree:
        raise ValueError(f"{path}: expected a mapping group -> language -> phrases")
    groups: dict[str, list[str]] = {}
    for group, by_language in tree.items():
        if not isinstance(by_language, dict):
            raise ValueError(f"{path}: {group} must map languages to phrase lists")
        phrases = [str(p).strip() for lang_phrases in by_language.values() for p in lang_phrases or []]
        groups[str(group)] = list(dict.fromkeys(p for p in phrases if p))
    return groups


class SoreScorer:
    """Per-segment SORE decisions for pages given their metadata and segments.

    Holds only settings (it pickles cheaply); the encoder and the embedded outlier phrases are
    built once per worker process on first use.
    """

    def __init__(self, settings: SoreSettings) -> None:
        self.settings = settings

    def _encoder(self):
        return model_cache.sentence_encoder(self.settings.threads)

    def outlier_groups(self) -> OutlierGroups:
        encoder = self._encoder()  # outside the cache's lock, which is not re-entrant

        def build(source: str) -> OutlierGroups:  # a given file as located (Spark's shipped copy first)
            groups = read_outlier_groups(None if self.settings.outliers is None else source)
            names = [g for g, phrases in groups.items() for _ in phrases]
            phrases = [p for ps in groups.values() for p in ps]
            return OutlierGroups(names, phrases, encoder.encode(phrases))

        key = self.settings.outliers or DEFAULT_OUTLIERS
        return model_cache.cached(f"sore_outliers_t{self.settings.threads}", key, build,
                             find=self.settings.outliers is not None)

    def embed(self, texts: list[str]) -> np.ndarray:
        """L2-normalised embeddings of ``texts`` in one batch."""
        if not texts:
            return np.zeros((0, 512), dtype=np.float32)
        return self._encoder().encode(texts)

    def score_page(self, meta: PageMeta, segments: list[str]) -> PageDecision:
        return self.score_pages([(meta, segments)])[0]

    def score_pages(self, pages: list[tuple[PageMeta, list[str]]]) -> list[PageDecision]:
        """Decisions for many pages; every text of every page is embedded in one batch."""
        texts: list[str] = []
        spans = []
        for meta, segments in pages:
            core = " ".join(meta.texts)
            core_text = core if len(core) >= self.settings.min_core_chars else ""
            start = len(texts)
            texts.extend(([core_text] if core_text else []) + [s for s in segments if s.strip()])
            spans.append((start, bool(core_text)))
        unique = list(dict.fromkeys(texts))  # repeated lines (menus, footers) are embedded once
        row = {text: i for i, text in enumerate(unique)}
        vectors = self.embed(unique)[[row[t] for t in texts]] if texts else self.embed([])
        decisions = []
        for (meta, segments), (start, has_core) in zip(pages, spans):
            n_core = int(has_core)
            n = sum(1 for s in segments if s.strip())
            page_vectors = vectors[start:start + n_core + n]
            page = self.decide(page_vectors[0] if has_core else None, page_vectors[n_core:])
            decided = iter(page.segments)
            blank = SegmentDecision(True, None, None)
            decisions.append(PageDecision([next(decided) if s.strip() else blank for s in segments],
                                          page.has_core, page.reverted))
        return decisions

    def decide(self, core: np.ndarray | None, segments: np.ndarray) -> PageDecision:
        """Decisions from embeddings: ``core`` (dim,) or None, ``segments`` (n, dim)."""
        return self.judge(self.measure(core, segments))

    def measure(self, core: np.ndarray | None, segments: np.ndarray) -> PageGeometry:
        """The similarities every decision needs, whatever the thresholds."""
        outliers = self.outlier_groups()
        outlier_sim = segments @ outliers.vectors.T
        nearest = outlier_sim.argmax(axis=1) if len(segments) else np.zeros(0, dtype=int)
        return PageGeometry(
            outlier_distance=np.clip(1.0 - outlier_sim[np.arange(len(segments)), nearest], 0.0, 2.0),
            outlier_group=[outliers.groups[i] for i in nearest],
            core_sim=None if core is None else segments @ core,
            segment_sim=None if core is None else segments @ segments.T)

    def judge(self, page: PageGeometry) -> PageDecision:
        """Decisions under this scorer's thresholds; reverted when more than ``max_removed_share`` would go."""
        settings = self.settings
        n = len(page.outlier_distance)
        if n == 0:
            return PageDecision([], page.core_sim is not None)
        if page.core_sim is None:
            core_distance = None
            in_core = np.zeros(n, dtype=bool)
        else:
            n_core = min(n, max(1, math.ceil(settings.core_share * n))) if settings.core_share else 0
            in_core = np.zeros(n, dtype=bool)
            in_core[np.argsort(-page.core_sim, kind="stable")[:n_core]] = True
            # a core segment's distance is to the title/description, any other's to the nearest of
            # the title/description and the core segments
            nearest_anchor = page.core_sim.copy()
            if in_core.any():
                nearest_anchor = np.maximum(nearest_anchor, page.segment_sim[:, in_core].max(axis=1))
            core_distance = np.clip(1.0 - np.where(in_core, page.core_sim, nearest_anchor), 0.0, 2.0)
        decisions = []
        for i in range(n):
            core_d = None if core_distance is None else float(core_distance[i])
            outlier_d = float(page.outlier_distance[i])
            if in_core[i]:
                decisions.append(SegmentDecision(True, None, core_d, core=True))
            elif outlier_d <= settings.outlier_distance and (core_d is None or outlier_d < core_d):
                decisions.append(SegmentDecision(False, OUTLIER_REASON + page.outlier_group[i], outlier_d))
            elif core_d is not None and core_d > settings.far_distance:
                decisions.append(SegmentDecision(False, FAR_REASON, core_d))
            else:
                decisions.append(SegmentDecision(True, None, core_d))
        has_core = core_distance is not None
        if sum(not d.kept for d in decisions) / n > settings.max_removed_share:
            decisions = [SegmentDecision(True, None, d.distance, d.core) for d in decisions]
            return PageDecision(decisions, has_core, reverted=True)
        return PageDecision(decisions, has_core)


class Sore(Step):
    """Step ``sore``: SORE's removals applied to ``doc.sentences``.

    Put it after ``sentences`` (or after ``perplexity``) in ``pipeline.steps``; its settings are
    ``pipeline.options.sore`` (:class:`SoreSettings`). It judges the sentences still kept, one
    segment per line (paragraph) or per sentence (``segment``); a removed segment's sentences are
    dropped with the reason (``sore_outlier_group:<group>``, ``sore_far_from_core``) and the
    distance. The cascade's fallback rule counts them with the filter's. The conservative
    revert (``doc.unfiltered``) is left alone unless ``apply_to_revert``.
    """

    name = "sore"
    settings: SoreSettings

    def __init__(self, settings: SoreSettings | None = None) -> None:
        super().__init__(settings or SoreSettings())
        self.scorer = SoreScorer(self.settings)
        # The model and the embedded outlier phrases (cached once per process) are loaded here,
        # when a worker builds its steps, not under the per-page time limit (extract.timeout_s),
        # which a first load on a busy machine can exceed; an interrupted load would be retried
        # on every page.
        with self.timed():
            self.scorer.outlier_groups()

    @classmethod
    def from_settings(cls, settings: Settings) -> "Sore":
        try:
            return cls(SoreSettings(**settings.pipeline.options.get(cls.name, {})))
        except ValidationError as exc:
            raise ConfigError(f"pipeline.options.sore: {exc.errors()[0]['loc']}: {exc.errors()[0]['msg']}") from None

    def run(self, doc: Document) -> Document:
        if doc.unfiltered and not self.settings.apply_to_revert:
            return doc
        groups: dict[int, list[Sentence]] = {}
        for position, sentence in enumerate(s for s in doc.sentences if s.kept):
            groups.setdefault(sentence.paragraph if self.settings.segment == "line" else position, []).append(sentence)
        if not groups:
            return doc
        segments = [join_sentences([s.text for s in group]) for group in groups.values()]
        decision = self.scorer.score_page(page_metadata(doc.html), segments)
        self.count("pages")
        self.count("segments", len(segments))
        if not decision.has_core:
            self.count("no_core")
        if decision.reverted:
            self.count("reverted")
        for group, verdict in zip(groups.values(), decision.segments):
            if verdict.kept:
                continue
            self.count("segments_removed")
            for sentence in group:
                sentence.kept, sentence.reason, sentence.distance = False, verdict.reason, verdict.distance
        return doc
