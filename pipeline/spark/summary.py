"""summary.txt: the short human summary printed at the end of a run, from its merged stats."""

from __future__ import annotations

from typing import Any, Sequence

from pipeline.reading.reader import pages_line
from pipeline.spark.extension import JobExtension
from pipeline.stats import Stats, index_summary_lines

FAILED_SHARDS_NAMED = 20  # the shards summary.txt names when some could not be read (all are in stats.json)


def _coverage_note(entry: dict[str, Any]) -> str:
    """`(12% unscored)`, `(100% unscored, no model)`; empty when every sentence was scored."""
    total = entry["sentences_scored"] + entry["sentences_unscored"]
    if not entry["sentences_unscored"]:
        return "" if entry["model"] or not total else " (no model)"
    note = f"{100 * entry['sentences_unscored'] / total:.0f}% unscored"
    return f" ({note}{'' if entry['model'] else ', no model'})"


def _unscored_line(coverage: dict[str, dict[str, Any]], preformatted: int = 0) -> str:
    """How many kept sentences no model scored, in which languages without a model (most first), and how many
    sentences of preformatted text (code) the filter left unscored."""
    unscored = {lang: v["sentences_unscored"] for lang, v in coverage.items() if v["sentences_unscored"]}
    total = sum(v["sentences_scored"] + v["sentences_unscored"] for v in coverage.values())
    no_model = sorted((lang for lang in unscored if not coverage[lang]["model"]), key=lambda l: -unscored[l])
    return (f"  sentences unscored: {sum(unscored.values())} of {total}; languages without a model: "
            + (", ".join(f"{lang} {unscored[lang]}" for lang in no_model) or "none")
            + (f"; preformatted text (code): {preformatted}" if preformatted else ""))


def _filter_line(languages: dict[str, dict[str, Any]]) -> str | None:
    """What the perplexity filter removed per language: sentences and LM tokens of those it scored."""
    rows = sorted(((lang, v) for lang, v in languages.items() if v.get("sentences_scored")),
                  key=lambda kv: -kv[1]["sentences_scored"])[:8]
    if not rows:
        return None
    return "  perplexity filter removed (sentences, LM tokens of the scored): " + ", ".join(
        f"{lang} {v.get('sentences_filtered', 0)} of {v['sentences_scored']} sentences, "
        f"{100 * v.get('tokens_filtered', 0) / max(v.get('tokens_scored', 0), 1):.1f}% of tokens" for lang, v in rows)


def _counts(section: dict[str, Any]) -> str:
    return ", ".join(f"{k} {v:g}" for k, v in sorted(section.items(), key=lambda kv: (-kv[1], kv[0]))
                     if not isinstance(v, dict))


def extraction_lines(stats: dict[str, Any]) -> list[str]:
    """What extraction did: the block stage's blocks kept as main content, the page types, the pages whose reader
    comments went to their own column, and the pages that fell back to a later stage, with the stage each ended in."""
    blocks = stats.get("stage", {}).get("blocks", {})
    parts = []
    if blocks.get("blocks", {}).get("total"):
        parts.append(f"main-content blocks kept {blocks['blocks'].get('kept', 0):,} of {blocks['blocks']['total']:,}")
    if stats.get("page_type"):
        parts.append(f"page types {_counts(stats['page_type'])}")
    if "comments" in blocks:
        parts.append(f"reader comments apart on {blocks['comments'].get('pages', 0):g} page(s)")
    fallback = stats.get("fallback", {})
    parts.append(f"fallbacks {sum(v for v in fallback.values() if not isinstance(v, dict)):g}"
                 + (f" ({_counts(fallback)})" if fallback else ""))
    if stats.get("extractor"):
        parts.append(f"pages by final stage: {_counts(stats['extractor'])}")
    return [f"  extraction: {'; '.join(parts)}"] if stats.get("extractor") or blocks else []


def summary_text(stats: dict[str, Any], extensions: Sequence[JobExtension] = ()) -> str:
    """The short human summary printed at the end of a run and saved as summary.txt (with the lines of the job's
    ``extensions``)."""
    lines = [*pages_lines(stats), *job_cpu_line(stats), *index_summary_lines(stats.get("index", {}))]
    for extension in extensions:
        lines += extension.summary_lines(stats)
    lines += failure_lines(stats)
    lines.append(f"  output: {stats['run']['output']} ({', '.join(stats['run'].get('files', []))})")
    lines += next_steps_lines(stats)
    return "\n".join(lines)


def pages_lines(stats: dict[str, Any]) -> list[str]:
    """What was read, what became of the pages, their sentences, bytes and languages, and the filter's share."""
    run = stats["run"]
    records = stats.get("records", {})
    sentences = stats.get("sentences", {})
    text_bytes = stats.get("bytes", {})
    raw, clean = text_bytes.get("text_raw", 0), text_bytes.get("text_clean", 0)
    skipped = Stats.from_dict({"skip": stats.get("skip", {})}).counts
    outcomes = Stats.from_dict({"outcome": stats.get("outcome", {})}).counts
    languages = sorted(stats.get("lang", {}).items(), key=lambda kv: -kv[1].get("pages_kept", 0))[:8]
    coverage = stats.get("coverage", {})
    lines = [
        f"warcplex: {records.get('read', 0)} WARC records read from {run['splits']} split(s) "
        f"in {run['wall_seconds']:.1f} s ({run['pages_per_second'] or 0:.1f} HTML pages/s)",
        f"  {pages_line(records)}; "
        + ", ".join(f"{k.removeprefix('outcome.')} {v}" for k, v in sorted(outcomes.items(), key=lambda kv: -kv[1])),
        f"  skipped records: {sum(skipped.values())} "
        + "(" + ", ".join(f"{k.removeprefix('skip.')} {v}" for k, v in sorted(skipped.items())) + ")",
        f"  sentences kept: {sentences.get('kept', 0)} of {sentences.get('total', 0)}; "
        f"text bytes {raw} -> {clean} ({100 * clean / raw if raw else 0:.1f}% kept)",
        "  languages (pages kept): " + ", ".join(
            f"{lang} {v.get('pages_kept', 0)}" + (_coverage_note(coverage[lang]) if lang in coverage else "")
            for lang, v in languages),
        _unscored_line(coverage, stats.get("stage", {}).get("perplexity", {}).get("sentences_preformatted", 0)),
    ]
    lines += extraction_lines(stats)
    removed = _filter_line(stats.get("lang", {}))
    if removed:
        lines.append(removed)
    dropped_to = run.get("config", {}).get("output", {}).get("dropped")
    if dropped_to:
        lines.append(f"  dropped sentences of the kept pages, each with its perplexity and reason: {dropped_to}/")
    return lines


def job_cpu_line(stats: dict[str, Any]) -> list[str]:
    """The whole job's pages per CPU-second (:func:`~pipeline.spark.cpu.pages_per_cpu_second`) and start-up."""
    job = stats.get("job_cpu")
    if not job:
        return []
    rate = stats["run"].get("pages_per_cpu_second")
    return [f"  whole job: {rate or 0:.2f} pages per CPU-second ({job['total']:.1f} CPU-s in all); start-up "
            f"{job['start_up']['total']:.1f} CPU-s; Spark task metrics {job['executor_tasks']:.1f} CPU-s (a part of "
            "the JVMs')"]


def next_steps_lines(stats: dict[str, Any]) -> list[str]:
    """The summary's last lines: where the report is, and one page to follow through every stage."""
    output = stats["run"]["output"].rstrip("/")
    lines = []
    if "report.html" in stats["run"].get("files", []):
        lines.append(f"  next: open {output}/report.html (charts, every stage's counts)")
    example = (stats.get("index") or {}).get("example")
    if example:
        lines.append(f"  one page through every stage: warcplex explain --from-output {output} "
                     f"--record-id '{example}' --output {output}/explain-one")
    return lines


def failure_lines(stats: dict[str, Any]) -> list[str]:
    """The shards that could not be read (named, up to :data:`FAILED_SHARDS_NAMED`), the damaged ones, and the
    records dropped as duplicate record ids."""
    lines = []
    failed = stats["run"].get("splits_failed", 0)
    if failed:
        lines.append(f"  FAILED: {failed} split(s) could not be read; they have no completion marker and the next "
                     "run retries them (exit status 3):")
        unread = [(uri, error) for uri, error in sorted(stats.get("file_errors", {}).items())
                  if error.startswith("not read")]
        lines += [f"    {uri}: {error}" for uri, error in unread[:FAILED_SHARDS_NAMED]]
        if len(unread) > FAILED_SHARDS_NAMED:
            lines.append(f"    and {len(unread) - FAILED_SHARDS_NAMED} more (stats.json file_errors)")
    if len(stats.get("file_errors", {})) > failed:
        lines.append(f"  unreadable parts of {len(stats['file_errors']) - failed} file(s), "
                     "see stats.json file_errors")
    duplicates = stats.get("skip", {}).get("duplicate_record_id", 0)
    if duplicates:
        lines.append(f"  {duplicates} record(s) dropped as duplicate WARC-Record-IDs of records kept elsewhere")
    return lines
