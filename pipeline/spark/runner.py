"""One split, start to finish: pages -> the steps -> Parquet files, stats and a marker.

:class:`~pipeline.steps.loop.StepLoop` runs the steps over a generator of pages;
:func:`run_split` is the unit of work a Spark task runs (and what tests and plain-Python
runs call directly).
"""

from __future__ import annotations

import json
import os
import time
from collections import Counter

from pipeline import model_cache
from pipeline.config import PerplexitySettings, Settings
from pipeline.document import Document, Sentence
from pipeline.spark import workers
from pipeline.spark.cpu import worker_start_up
from pipeline.stats import Stats, timed
from pipeline.steps.cascade import fallback_kind
from pipeline.steps.loop import StepLoop
from pipeline.perplexity_rule import REASON_PREFIX, Judgement, Unit, log10_bins
from pipeline.reading.reader import pages_read, read_pages
from pipeline.reading.shards import Split
from pipeline.writing.output import OutputTarget, SplitWriter
from pipeline.writing.rows import DROPPED_SCHEMA, PAGE_SCHEMA, SENTENCE_SCHEMA, dropped_rows, page_row, sentence_rows
from pipeline.writing.index_sample import IndexSample

def _count_page(stats: Stats, cleaned: Document, settings: PerplexitySettings) -> None:
    lang = cleaned.language_code
    stats.add(f"outcome.{cleaned.outcome}")
    stats.add(f"lang.{lang}.pages")
    stats.add("bytes.html", len(cleaned.page.html))
    if cleaned.fallback_reason:
        stats.add(f"fallback.{fallback_kind(cleaned.fallback_reason)}")
    if cleaned.outcome != "kept":
        return
    clean_text = cleaned.clean_text
    n_sent = len(cleaned.sentences)
    n_kept = sum(1 for s in cleaned.sentences if s.kept)
    raw_bytes = len(cleaned.text.encode("utf-8"))
    clean_bytes = len(clean_text.encode("utf-8"))
    stats.add(f"extractor.{cleaned.extractor}")
    if cleaned.blocks is not None and cleaned.blocks.page_type:
        stats.add(f"page_type.{cleaned.blocks.page_type}")
    for key, value in (("pages_kept", 1), ("sentences", n_sent), ("sentences_kept", n_kept),
                       ("bytes_raw", raw_bytes), ("bytes_clean", clean_bytes)):
        stats.add(f"lang.{lang}.{key}", value)
    stats.add("bytes.text_raw", raw_bytes)
    stats.add("bytes.text_clean", clean_bytes)
    stats.add("sentences.total", n_sent)
    stats.add("sentences.kept", n_kept)
    _count_sentences(stats, lang, cleaned.sentences)
    _count_units(stats, lang, cleaned, settings)


def _count_units(stats: Stats, lang: str, cleaned: Document, settings: PerplexitySettings) -> None:
    """What the filter's rule did to a kept page, unit by unit (lines under ``perplexity.unit: line``): each
    scored unit's own perplexity (its sentences pooled) and LM tokens as a 2-D histogram,
    ``units.<lang>.<side>.<length bin>.<perplexity bin>`` (:func:`log10_bins` of tokens + 1 and of the
    perplexity), the side ``kept``, ``kept_above`` (kept with a perplexity above the threshold), ``dropped``
    or ``dropped_below`` (dropped below it: protection, the length scale, the window and the neighbours
    decided those; their totals also as ``rule.<lang>.kept_above``, ``dropped_below``), and the units dropped by each part of the rule (``rule.<lang>.dropped.<why>``,
    :class:`~pipeline.perplexity_rule.Verdict`)."""
    threshold = cleaned.threshold
    if threshold is None:
        return
    sentences, min_tokens = cleaned.sentences, settings.min_tokens
    units = [Unit(s.perplexity if (s.n_tokens or 0) >= min_tokens else None, s.n_tokens or 0, s.paragraph)
             for s in sentences]
    judged = Judgement(units, settings.unit)  # the units (lines) pooled, without windows
    sides: list[str] = []
    tokens: list[float] = []
    scores: list[float] = []
    whys: Counter[str] = Counter()
    for group, own in zip(judged.groups, judged.judged):
        if own.perplexity is None:
            continue
        reason = sentences[group[0]].reason
        kept = not (reason or "").startswith(REASON_PREFIX)
        side = "kept" if kept else "dropped"
        if kept and own.perplexity > threshold:
            side = "kept_above"
        elif not kept and own.perplexity <= threshold:
            side = "dropped_below"
        sides.append(side)
        tokens.append(own.n_tokens + 1)
        scores.append(own.perplexity)
        if not kept:  # perplexity:<unit>/<why>@<threshold>
            whys[reason[len(REASON_PREFIX):].partition("/")[2].partition("@")[0]] += 1
    for (side, length, score), count in Counter(zip(sides, log10_bins(tokens), log10_bins(scores))).items():
        stats.add(f"units.{lang}.{side}.{length}.{score}", count)
    for side, count in Counter(sides).items():
        if side != "kept" and side != "dropped":
            stats.add(f"rule.{lang}.{side}", count)
    for why, count in whys.items():
        stats.add(f"rule.{lang}.dropped.{why}", count)


def _count_sentences(stats: Stats, lang: str, sentences: list[Sentence]) -> None:
    """A kept page's sentence counters: removal reasons, scored and unscored sentences and tokens, and
    the perplexity histogram. Counted in locals and added once per key (a page has hundreds of sentences)."""
    events: Counter[str] = Counter()  # per-sentence keys
    unscored = unscored_dropped = scored = tokens_scored = filtered = tokens_filtered = 0
    hist_kept: list[bool] = []  # the scored sentences' side and perplexity, for the histogram
    hist_scores: list[float] = []
    for sentence in sentences:
        kept = sentence.kept
        if not kept:
            events[f"removal_reasons.{sentence.reason}"] += 1
        if sentence.perplexity is None:
            unscored += 1
            if not kept:  # dropped by a step other than the filter (sore)
                unscored_dropped += 1
            continue
        scored += 1
        tokens_scored += sentence.n_tokens or 0
        if not kept and (sentence.reason or "").startswith("perplexity"):
            filtered += 1
            tokens_filtered += sentence.n_tokens or 0
        hist_kept.append(kept)
        hist_scores.append(sentence.perplexity)
    for key, value, present in (("sentences.unscored", unscored, unscored),
                                (f"lang.{lang}.sentences_unscored", unscored, unscored),
                                (f"lang.{lang}.sentences_unscored_dropped", unscored_dropped, unscored_dropped),
                                (f"lang.{lang}.sentences_scored", scored, scored),
                                (f"lang.{lang}.tokens_scored", tokens_scored, scored),
                                (f"lang.{lang}.sentences_filtered", filtered, filtered),
                                (f"lang.{lang}.tokens_filtered", tokens_filtered, filtered)):
        if present:  # a key is written only when a sentence counted into it, as before
            stats.add(key, value)
    for (kept, score), count in Counter(zip(hist_kept, log10_bins(hist_scores))).items():
        events[f"ppl_hist.{lang}.{'kept' if kept else 'dropped'}.{score}"] += count
    for key, value in events.items():
        stats.add(key, value)


def run_split(split: Split, settings: Settings, output: str, dropped: str | None = None,
              skip_ids: frozenset[str] = frozenset()) -> dict:
    """Process one split and commit its files; return its stats (also stored in its marker).

    A split whose marker exists is skipped (its stored stats are returned) unless
    ``output.resume`` is off. Responses whose record ids are in ``skip_ids`` are skipped as
    duplicates. A shard that cannot be read raises ``ShardReadError`` and nothing is committed.
    """
    target = OutputTarget(output, settings.s3)
    if settings.output.resume:
        done = target.read_marker(split.split_id)
        if done is not None:
            done.setdefault("splits", {})["resumed"] = 1
            return done
    stats = Stats()
    start_up = worker_start_up()
    if start_up:
        stats.add("cpu_start_up.python_workers", start_up)
    wall_start, cpu_start = time.time(), time.process_time()
    loads_before, load_seconds_before = model_cache.LOADS.copy(), sum(model_cache.LOAD_SECONDS.values())
    loop = StepLoop(settings)
    pages_writer = SplitWriter(target, split.split_id, PAGE_SCHEMA, settings.output.compression)
    dropped_writer = (SplitWriter(OutputTarget(dropped, settings.s3), split.split_id, DROPPED_SCHEMA,
                                  settings.output.compression, dataset="") if dropped else None)
    sentences_writer = (SplitWriter(OutputTarget(settings.output.sentences, settings.s3), split.split_id,
                                    SENTENCE_SCHEMA, settings.output.compression, dataset="")
                        if settings.output.sentences else None)
    sample = (IndexSample(settings.index.per_split_pages, settings.extract, settings.index.visible_text,
                          settings.index.sample_share)
              if settings.index.enabled else None)
    pages = read_pages(split, settings.input, settings.s3, stats, skip_ids)
    explained = None
    if settings.output.explain_sample:
        from pipeline.explain.sample import RunSample

        explained = RunSample(settings.output.explain_sample)
    for cleaned in loop.run(pages):
        _count_page(stats, cleaned, settings.perplexity)
        if explained is not None:
            explained.offer(cleaned)
        if cleaned.outcome in ("kept", "empty_after_filter"):
            if sentences_writer is not None:
                with timed(stats, "cpu.write"):
                    for row in sentence_rows(cleaned):
                        sentences_writer.add(cleaned.language_code, row)
            if sample is not None:
                sample.offer(cleaned, stats)
        if cleaned.outcome != "kept":
            continue
        with timed(stats, "cpu.write"):
            language = cleaned.language_code
            pages_writer.add(language, page_row(cleaned, split.shard_name))
            if dropped_writer is not None:
                for row in dropped_rows(cleaned):
                    dropped_writer.add(language, row)
    with timed(stats, "cpu.write"):
        pages_writer.commit()
        if dropped_writer is not None:
            dropped_writer.commit()
        if sentences_writer is not None:
            sentences_writer.commit()
        if sample is not None:
            sample.write(target, split.split_id, settings.output.compression)
            stats.add("index_sample.candidates", len(sample))
    if explained is not None:
        with timed(stats, "cpu.explain"):
            explained.write(settings, target, split.split_id, stats)
    for step in loop.all_steps:
        stats.merge(step.stats)
    split_cpu = time.process_time() - cpu_start
    stats.add("cpu.total", split_cpu)
    _count_split_cpu(stats, pages_read(stats.to_dict().get("records", {})), split_cpu)
    stats.add("wall.tasks", time.time() - wall_start)
    stats.add("splits.processed")
    for name, count in (model_cache.LOADS - loads_before).items():
        stats.add(f"model_loads.pid{os.getpid()}.{name.replace('.', '_')}", count)
    if sum(model_cache.LOAD_SECONDS.values()) > load_seconds_before:  # loading the models is start-up too
        stats.add("cpu_start_up.model_loads", sum(model_cache.LOAD_SECONDS.values()) - load_seconds_before)
    _check_worker_memory(stats, settings.extract.worker_max_rss_mb)
    result = stats.to_dict()
    target.write_marker(split.split_id, result)
    return result


def _count_split_cpu(stats: Stats, pages: int, cpu: float) -> None:
    """The sums from which the snapshot extrapolation's interval is worked out (``split_cpu``: the spread of CPU
    per page across splits, :func:`pipeline.analysis.carbon.per_page_spread`)."""
    if pages:
        for key, value in (("splits", 1), ("pages", pages), ("cpu", cpu), ("pages_sq", pages * pages),
                           ("cpu_sq", cpu * cpu), ("cpu_pages", cpu * pages)):
            stats.add(f"split_cpu.{key}", value)


def _check_worker_memory(stats: Stats, ceiling_mb: int) -> None:
    """Record this worker's peak RSS; past the ceiling, retire the worker after this task."""
    stats.set_max(f"rss.max_mb.pid{os.getpid()}", round(workers.peak_rss_mb(), 1))
    if ceiling_mb and workers.rss_mb() > ceiling_mb:
        stats.add("workers.over_rss_ceiling")
        if workers.retire_after_task():
            stats.add("workers.retired")


def dump_json(data: dict) -> str:
    return json.dumps(data, indent=2, sort_keys=True, ensure_ascii=False) + "\n"
