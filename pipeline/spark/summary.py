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


def native_summary_lines(native: dict[str, dict[str, int]], splits: int) -> list[str]:
    """The compiled parts that did not run (``native.<missing|stale>.<part>``: splits that ran its Python reference)."""
    return [f"  compiled code: the {part} part was {cause} in {count} of {splits} split(s), which ran its Python "
            "reference (the same output, slower; `pip install -e .` builds it, `make dist` ships it)"
            for cause, parts in sorted(native.items()) for part, count in sorted(parts.items())]


def summary_text(stats: dict[str, Any], extensions: Sequence[JobExtension] = ()) -> str:
    """The short human summary printed at the end of a run and saved as summary.txt (with the lines of the job's
    ``extensions``)."""
    lines = [*pages_lines(stats), *cpu_lines(stats), *native_summary_lines(stats.get("native", {}), stats["run"]["splits"]),
             *index_summary_lines(stats.get("index", {}))]
    for extension in extensions:
        lines += extension.summary_lines(stats)
    lines += failure_lines(stats)
    lines.append(f"  output: {stats['run']['output']} ({', '.join(stats['run'].get('files', []))})")
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
    removed = _filter_line(stats.get("lang", {}))
    return lines + ([removed] if removed else [])


def cpu_lines(stats: dict[str, Any]) -> list[str]:
    """The run's CPU and CO2, the whole job's CPU by part, and the snapshot extrapolated from them."""
    lines = []
    carbon = stats.get("carbon", {})
    if carbon:
        lines.append(f"  CPU {carbon['cpu_hours'] * 3600:.1f} s, est. {carbon['kg_co2'] * 1000:.4f} g CO2 "
                     f"(eq. 9, C_e {carbon['grid_intensity_kg_per_kwh']} kg/kWh)")
    job = stats.get("job_cpu")
    if job:
        parts = job["parts"]
        shown = ", ".join(f"{name.replace('_', ' ')} {parts[name]:.1f}" for name in
                          ("driver_jvm", "executor_jvms", "python_driver", "python_workers")
                          if parts.get(name) is not None)
        lines.append(f"  whole job's CPU {job['total']:.1f} s: {shown} (Spark task metrics "
                     f"{job['executor_tasks']:.1f}); start-up {job['start_up']['total']:.1f} s")
    snapshot = carbon.get("snapshot")
    if snapshot:
        rough = f"rough, extrapolated from only {snapshot['measured_pages']:,} pages" if snapshot.get("rough") \
            else f"extrapolated from {snapshot.get('measured_pages', 0):,} pages"
        fixed = (f"; {100 * snapshot['start_up_share']:.0f}% of the measured CPU is start-up, without it "
                 f"{snapshot['core_hours_without_start_up']:,.0f} core-hours"
                 if snapshot.get("start_up_share") and snapshot.get("core_hours_without_start_up") is not None else "")
        lines.append(f"  one snapshot ({snapshot['pages']:,} pages; {rough}): {snapshot['core_hours']:,.0f} "
                     f"core-hours, ${snapshot['dollars']:,.0f}, {snapshot['kg_co2']:,.0f} kg CO2{fixed}")
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
