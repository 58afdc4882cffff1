"""One split, start to finish: pages -> cascade of stages -> Parquet files, stats and a marker.

:class:`PageCleaner` composes the stages over a generator of pages; :func:`run_split` is
the unit of work a Spark task runs (and what tests and plain-Python runs call directly).
"""

from __future__ import annotations

import json
import os
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Iterable, Iterator

import pyarrow as pa
from resiliparse.process_guard import ExecutionTimeout, InterruptType, MemoryLimitExceeded, mem_guard, time_guard

from pipeline import models, workers
from pipeline.config import ExtractSettings, Settings
from pipeline.normalize import lm_tokens
from pipeline.output import OutputTarget, SplitWriter
from pipeline.stages import (UNKNOWN_LANGUAGE, ConservativeExtractor, Extractor, Language, LanguageIdentifier,
                             PerplexityFilter, ReadabilityExtractor, ResiliparseExtractor, ScoredSentence,
                             SentenceSplitter, TrafilaturaExtractor, decode_html, log10_bin, median)
from pipeline.stats import Stats, timed
from pipeline.warc import Page, Split, iter_pages

PAGE_SCHEMA = pa.schema([
    ("warc_record_id", pa.string()),
    ("url", pa.string()),
    ("warc_date", pa.string()),
    ("warc_filename", pa.string()),
    ("language_score", pa.float32()),
    ("text", pa.string()),
    ("n_sentences", pa.int32()),
    ("n_sentences_kept", pa.int32()),
    ("perplexity_median", pa.float32()),
    ("extractor", pa.string()),
    ("fallback_reason", pa.string()),
    ("html_bytes", pa.int64()),
    ("text_bytes_raw", pa.int64()),
    ("text_bytes_clean", pa.int64()),
])

DROPPED_SCHEMA = pa.schema([
    ("warc_record_id", pa.string()),
    ("url", pa.string()),
    ("sentence", pa.string()),
    ("perplexity", pa.float32()),
    ("reason", pa.string()),
    ("extractor", pa.string()),
])

# Side output (`output.sentences`) of every sentence of every page that reached the filter,
# scored or not: what `warcplex sweep` re-filters and the index statistics are built from.
SENTENCE_SCHEMA = pa.schema([
    ("warc_record_id", pa.string()),
    ("paragraph", pa.int32()),
    ("position", pa.int32()),
    ("sentence", pa.string()),
    ("n_tokens", pa.int32()),
    ("perplexity", pa.float32()),
    ("kept", pa.bool_()),
])


@dataclass
class CleanedPage:
    """The outcome for one page: a row to write (``text`` non-empty) or an outcome to count."""

    page: Page
    outcome: str  # kept | empty_extraction | empty_after_filter | unknown_language_dropped | error.<Type>
    language: Language = Language(UNKNOWN_LANGUAGE, 0.0)
    extractor: str | None = None
    fallback_reason: str | None = None
    raw_text: str = ""
    sentences: list[list[ScoredSentence]] = field(default_factory=list)

    @property
    def text(self) -> str:
        paragraphs = (join_sentences([s.text for s in para if s.kept]) for para in self.sentences)
        return "\n".join(p for p in paragraphs if p)


_CJK_TERMINATORS = ("\u3002", "\uff01", "\uff1f", "\uff0e", "\u300d", "\u300f")  # 。！？． 」』


def join_sentences(sentences: list[str]) -> str:
    """Rejoin a paragraph's sentences: nothing after a CJK full-width terminator, a space otherwise."""
    parts = []
    for i, sentence in enumerate(sentences):
        if i and not sentences[i - 1].endswith(_CJK_TERMINATORS):
            parts.append(" ")
        parts.append(sentence)
    return "".join(parts)


def build_extractor(name: str, settings: Settings) -> Extractor:
    extract = settings.extract
    if name == "resiliparse":
        return ResiliparseExtractor(extract)
    if name == "trafilatura":
        return TrafilaturaExtractor()
    if name == "readability":
        return ReadabilityExtractor()
    if name == "conservative":
        return ConservativeExtractor(extract)
    if name == "blocks":
        from pipeline.blocks import BlocksExtractor

        return BlocksExtractor(extract, settings.perplexity)
    raise ValueError(f"unknown extraction stage {name!r}")


GUARD_INTERRUPTS = (ExecutionTimeout, MemoryLimitExceeded)


def _guard_kind(exc: BaseException) -> str:
    return "timeout" if isinstance(exc, ExecutionTimeout) else "memory"


@contextmanager
def record_guards(extract: ExtractSettings) -> Iterator:
    """resiliparse time and memory guards (exceptions only) around a run of pages; yields the time guard."""
    timeout_ms = max(1, int(extract.timeout_s * 1000))
    with time_guard(timeout_ms=timeout_ms, grace_period_ms=timeout_ms, interrupt_type=InterruptType.exception,
                    check_interval=max(10, min(500, timeout_ms // 4))) as guard, \
            mem_guard(extract.memory_limit_mb * 1024, absolute=False, interrupt_type=InterruptType.exception,
                      secondary_grace_period_ms=1000, check_interval=200):
        yield guard


class PageCleaner:
    """The extraction cascade, language ID, sentence splitting and perplexity filter for pages.

    Stages are tried in ``extract.cascade`` order. A stage's output is used unless it is
    empty, raises, or the filter removed more than ``extract.max_removed_share`` of its
    sentences; ``conservative`` is the unfiltered all-text revert and always ends the cascade.
    """

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.extractors = [build_extractor(name, settings) for name in settings.extract.cascade]
        self.langid = LanguageIdentifier(settings.langid)
        self.splitter = SentenceSplitter()
        self.filter = PerplexityFilter(settings.perplexity)
        self._guard = None

    @property
    def stages(self) -> list:
        return [*self.extractors, self.langid, self.splitter, self.filter]

    def clean(self, page: Page) -> CleanedPage:
        """Run the cascade on one page; a guard interrupt ends the page as ``error.timeout``/``error.memory``."""
        try:
            return self._clean(page)
        except GUARD_INTERRUPTS as exc:
            self._reset_guard()
            return CleanedPage(page, f"error.{_guard_kind(exc)}")

    def _reset_guard(self) -> None:
        if self._guard is not None:
            self._guard.progress()

    def _clean(self, page: Page) -> CleanedPage:
        extract = self.settings.extract
        self._reset_guard()
        try:
            with self.extractors[0].timed():
                html = decode_html(page.html, page.http_charset)
        except Exception as exc:  # a payload no decoder accepts
            return CleanedPage(page, f"error.decode_{type(exc).__name__}")
        first_reason: str | None = None
        guard_failure: str | None = None
        language: Language | None = None
        last_stage = len(self.extractors) - 1
        for position, extractor in enumerate(self.extractors):
            conservative = isinstance(extractor, ConservativeExtractor)
            with extractor.timed():
                try:
                    text = extractor.extract(html)
                except GUARD_INTERRUPTS as exc:  # too slow or too big: the next stage gets a fresh limit
                    guard_failure = _guard_kind(exc)
                    extractor.count(f"error.{guard_failure}")
                    first_reason = first_reason or f"{extractor.name}_{guard_failure}"
                    self._reset_guard()
                    continue
                except Exception as exc:
                    extractor.count(f"error.{type(exc).__name__}")
                    first_reason = first_reason or f"{extractor.name}_error"
                    continue
            self._reset_guard()  # the time limit holds per stage: LID, splitting and filter get their own
            if len(text.strip()) < max(1, extract.min_text_chars):
                extractor.count("empty")
                first_reason = first_reason or f"{extractor.name}_empty"
                continue
            if language is None:
                with self.langid.timed():
                    language = self.langid.identify(text)
            with self.splitter.timed():
                paragraphs = self.splitter.split(text, language.code)
            if conservative or not self.filter.settings.enabled:
                scored = [[ScoredSentence(s, None, True) for s in para] for para in paragraphs]
            else:
                if (not self.filter.has_model(language.code)
                        and self.filter.settings.unknown_language == "drop"):
                    return CleanedPage(page, "unknown_language_dropped", language, extractor.name, first_reason, text)
                with self.filter.timed():
                    scored = self.filter.filter(paragraphs, language.code)
                total = sum(len(p) for p in scored)
                removed = sum(1 for p in scored for s in p if not s.kept)
                if total and removed / total > extract.max_removed_share and position < last_stage:
                    extractor.count("filtered_too_much")
                    first_reason = first_reason or f"{extractor.name}_filtered_{removed}of{total}"
                    continue
            cleaned = CleanedPage(page, "kept", language, extractor.name, first_reason, text, scored)
            if not cleaned.text:
                cleaned.outcome = "empty_after_filter"
            return cleaned
        return CleanedPage(page, f"error.{guard_failure}" if guard_failure else "empty_extraction",
                           language or Language(UNKNOWN_LANGUAGE, 0.0),
                           None, first_reason)

    def run(self, pages: Iterable[Page]) -> Iterator[CleanedPage]:
        """Clean pages under the per-record guards (``extract.timeout_s``, ``extract.memory_limit_mb``).

        resiliparse's guards watch this thread for the whole split and only raise exceptions
        (never signals, which would kill a Spark Python worker); the time limit restarts for
        each page and each cascade stage. A native call that never returns is not interruptible.
        """
        with record_guards(self.settings.extract) as guard:
            self._guard = guard
            try:
                for page in pages:
                    yield self.clean(page)
            finally:
                self._guard = None


def _count_page(stats: Stats, cleaned: CleanedPage) -> None:
    lang = cleaned.language.code
    stats.add(f"outcome.{cleaned.outcome}")
    stats.add(f"lang.{lang}.pages")
    stats.add("bytes.html", len(cleaned.page.html))
    if cleaned.fallback_reason:
        stats.add(f"fallback.{cleaned.fallback_reason.split('_filtered_')[0]}")
    if cleaned.outcome != "kept":
        return
    clean_text = cleaned.text
    n_sent = sum(len(p) for p in cleaned.sentences)
    n_kept = sum(1 for p in cleaned.sentences for s in p if s.kept)
    raw_bytes = len(cleaned.raw_text.encode("utf-8"))
    clean_bytes = len(clean_text.encode("utf-8"))
    stats.add(f"extractor.{cleaned.extractor}")
    for key, value in (("pages_kept", 1), ("sentences", n_sent), ("sentences_kept", n_kept),
                       ("bytes_raw", raw_bytes), ("bytes_clean", clean_bytes)):
        stats.add(f"lang.{lang}.{key}", value)
    stats.add("bytes.text_raw", raw_bytes)
    stats.add("bytes.text_clean", clean_bytes)
    stats.add("sentences.total", n_sent)
    stats.add("sentences.kept", n_kept)
    for para in cleaned.sentences:
        for sentence in para:
            if sentence.perplexity is None:
                stats.add("sentences.unscored")
                stats.add(f"lang.{lang}.sentences_unscored")
                continue
            stats.add(f"lang.{lang}.sentences_scored")
            side = "kept" if sentence.kept else "dropped"
            stats.add(f"ppl_hist.{lang}.{side}.{log10_bin(sentence.perplexity)}")
            if not sentence.kept:
                stats.add(f"removal_reasons.{sentence.reason}")


def page_row(cleaned: CleanedPage, shard: str) -> dict:
    scores = [s.perplexity for p in cleaned.sentences for s in p if s.perplexity is not None]
    text = cleaned.text
    return {
        "warc_record_id": cleaned.page.record_id,
        "url": cleaned.page.url,
        "warc_date": cleaned.page.warc_date,
        "warc_filename": shard,
        "language_score": cleaned.language.score,
        "text": text,
        "n_sentences": sum(len(p) for p in cleaned.sentences),
        "n_sentences_kept": sum(1 for p in cleaned.sentences for s in p if s.kept),
        "perplexity_median": median(scores),
        "extractor": cleaned.extractor,
        "fallback_reason": cleaned.fallback_reason,
        "html_bytes": len(cleaned.page.html),
        "text_bytes_raw": len(cleaned.raw_text.encode("utf-8")),
        "text_bytes_clean": len(text.encode("utf-8")),
    }


def dropped_rows(cleaned: CleanedPage) -> Iterator[dict]:
    for para in cleaned.sentences:
        for sentence in para:
            if not sentence.kept:
                yield {"warc_record_id": cleaned.page.record_id, "url": cleaned.page.url,
                       "sentence": sentence.text, "perplexity": sentence.perplexity,
                       "reason": sentence.reason, "extractor": cleaned.extractor}


def sentence_rows(cleaned: CleanedPage) -> Iterator[dict]:
    position = 0
    for paragraph, para in enumerate(cleaned.sentences):
        for sentence in para:
            yield {"warc_record_id": cleaned.page.record_id, "paragraph": paragraph, "position": position,
                   "sentence": sentence.text, "n_tokens": len(lm_tokens(sentence.text)),
                   "perplexity": sentence.perplexity, "kept": sentence.kept}
            position += 1


def run_split(split: Split, settings: Settings, output: str, dropped: str | None = None) -> dict:
    """Process one split and commit its files; return its stats (also stored in its marker).

    A split whose marker exists is skipped (its stored stats are returned) unless
    ``output.resume`` is off.
    """
    target = OutputTarget(output, settings.s3)
    if settings.output.resume:
        done = target.read_marker(split.split_id)
        if done is not None:
            done.setdefault("splits", {})["resumed"] = 1
            return done
    wall_start, cpu_start = time.time(), time.process_time()
    loads_before = models.LOADS.copy()
    stats = Stats()
    cleaner = PageCleaner(settings)
    pages_writer = SplitWriter(target, split.split_id, PAGE_SCHEMA, settings.output.compression)
    dropped_writer = (SplitWriter(OutputTarget(dropped, settings.s3), split.split_id, DROPPED_SCHEMA,
                                  settings.output.compression, dataset="") if dropped else None)
    sentences_writer = (SplitWriter(OutputTarget(settings.output.sentences, settings.s3), split.split_id,
                                    SENTENCE_SCHEMA, settings.output.compression, dataset="")
                        if settings.output.sentences else None)
    pages = iter_pages(split, settings.input, settings.s3, stats)
    for cleaned in cleaner.run(pages):
        _count_page(stats, cleaned)
        if sentences_writer is not None and cleaned.sentences:
            with timed(stats, "cpu.write"):
                for row in sentence_rows(cleaned):
                    sentences_writer.add(cleaned.language.code, row)
        if cleaned.outcome != "kept":
            continue
        with timed(stats, "cpu.write"):
            language = cleaned.language.code
            pages_writer.add(language, page_row(cleaned, split.uri))
            if dropped_writer is not None:
                for row in dropped_rows(cleaned):
                    dropped_writer.add(language, row)
    with timed(stats, "cpu.write"):
        pages_writer.commit()
        if dropped_writer is not None:
            dropped_writer.commit()
        if sentences_writer is not None:
            sentences_writer.commit()
    for stage in cleaner.stages:
        stats.merge(stage.stats)
    stats.add("cpu.total", time.process_time() - cpu_start)
    stats.add("wall.tasks", time.time() - wall_start)
    stats.add("splits.processed")
    for name, count in (models.LOADS - loads_before).items():
        stats.add(f"model_loads.pid{os.getpid()}.{name.replace('.', '_')}", count)
    _check_worker_memory(stats, settings.extract.worker_max_rss_mb)
    result = stats.to_dict()
    target.write_marker(split.split_id, result)
    return result


def _check_worker_memory(stats: Stats, ceiling_mb: int) -> None:
    """Record this worker's peak RSS; past the ceiling, retire the worker after this task."""
    stats.set_max(f"rss.max_mb.pid{os.getpid()}", round(workers.peak_rss_mb(), 1))
    if ceiling_mb and workers.rss_mb() > ceiling_mb:
        stats.add("workers.over_rss_ceiling")
        if workers.retire_after_task():
            stats.add("workers.retired")


def dump_json(data: dict) -> str:
    return json.dumps(data, indent=2, sort_keys=True, ensure_ascii=False) + "\n"
