"""Per-language coverage: pages, sentences scored / unscored and the model, in stats, summary and report."""

from __future__ import annotations

import os

import yaml

from conftest import ROOT, real_warc
from pipeline.analysis.report import render
from pipeline.config import load_settings
from pipeline.reading.shards import Split
from pipeline.model_registry import load_registry
from pipeline.spark.job import CleanWarcJob
from pipeline.spark.summary import summary_text
from pipeline.spark.runner import run_split
from pipeline.stats import Stats


def test_unscored_languages_are_visible_in_stats_summary_and_report(tmp_path):
    path = real_warc("cc-genuine", "CC-MAIN-2020-34.sample-from-resiliparse-tests.warc.gz")
    # A registry with the English model only: the shard's Chinese and Russian pages go unscored.
    shipped = yaml.safe_load((ROOT / "conf" / "models.yaml").read_text(encoding="utf-8"))["models"]
    english = {**shipped["en"], "path": str(ROOT / shipped["en"]["path"])}
    registry_file = tmp_path / "models.yaml"
    registry_file.write_text(yaml.safe_dump({"models": {"en": english}}), encoding="utf-8")
    settings = load_settings(None, ["index.enabled=false", f"perplexity.registry={registry_file}"])
    result = run_split(Split(str(path), 0, 1), settings, str(tmp_path / "out"))
    job = CleanWarcJob()
    stats = job.merge_stats(str(tmp_path / "out"), 1, Stats.from_dict(result), settings, 1.0, [str(path)])

    counts = Stats.from_dict(result).counts
    coverage = stats["coverage"]
    assert {"zh", "ru"} <= set(coverage)
    for lang in ("zh", "ru"):
        entry = coverage[lang]
        assert entry["model"] is None and entry["sentences_scored"] == 0
        assert entry["sentences_unscored"] == counts[f"lang.{lang}.sentences"] > 0
        assert entry["pages"] >= entry["pages_kept"] > 0
    registry = load_registry(settings.perplexity.registry)
    for lang, entry in coverage.items():
        assert entry["model"] == (os.path.basename(registry[lang].path) if lang in registry else None)
    # every kept sentence is either scored or unscored, per language and in total
    total = sum(v["sentences_scored"] + v["sentences_unscored"] for v in coverage.values())
    assert total == counts["sentences.total"]
    assert sum(v["sentences_unscored"] for v in coverage.values()) == counts["sentences.unscored"]

    summary = summary_text({**stats, "run": {**stats["run"], "files": []}})
    line = next(l for l in summary.splitlines() if "languages (pages kept)" in l)
    assert f"zh {coverage['zh']['pages_kept']} (100% unscored, no model)" in line
    unscored_line = next(l for l in summary.splitlines() if "sentences unscored" in l)
    assert f"zh {coverage['zh']['sentences_unscored']}" in unscored_line
    # code the filter left unscored is said apart from the languages without a model
    code = stats.get("stage", {}).get("perplexity", {}).get("sentences_preformatted", 0)
    assert ("preformatted text (code)" in unscored_line) == bool(code)
    stage = {**stats.get("stage", {}), "perplexity": {**stats.get("stage", {}).get("perplexity", {}),
                                                       "sentences_preformatted": code + 3}}
    with_code = summary_text({**stats, "stage": stage, "run": {**stats["run"], "files": []}})
    assert f"preformatted text (code): {code + 3}" in with_code

    html = render(stats)
    assert "sentences unscored" in html and "none (unscored)" in html


def test_the_all_text_preset_filters_all_text_and_reports_what_it_removed_per_language(tmp_path):
    """conf/all-text.yaml: all visible text (the conservative stage, alone) judged by the filter; stats,
    summary and report say per language how many sentences and LM tokens it removed."""
    path = real_warc("cc-genuine", "CC-MAIN-2020-34.sample-from-resiliparse-tests.warc.gz")
    settings = load_settings(ROOT / "conf" / "all-text.yaml", ["index.enabled=false"])
    assert settings.extract.cascade == ["conservative"]
    result = run_split(Split(str(path), 0, 1), settings, str(tmp_path / "out"))
    stats = CleanWarcJob().merge_stats(str(tmp_path / "out"), 1, Stats.from_dict(result), settings, 1.0, [str(path)])
    counts = Stats.from_dict(result).counts
    assert counts["extractor.conservative"] == counts["outcome.kept"] > 0
    english = stats["lang"]["en"]
    assert 0 < english["sentences_filtered"] < english["sentences_scored"]
    assert 0 < english["tokens_filtered"] < english["tokens_scored"]
    removed = sum(v for k, v in counts.items() if k.startswith("removal_reasons.perplexity:line/"))
    assert removed == sum(v.get("sentences_filtered", 0) for v in stats["lang"].values())
    summary = summary_text({**stats, "run": {**stats["run"], "files": []}})
    line = next(l for l in summary.splitlines() if "perplexity filter removed" in l)
    assert f"en {english['sentences_filtered']} of {english['sentences_scored']} sentences" in line
    assert "LM tokens removed" in render(stats)


def test_dropped_reasons_name_the_part_of_the_rule_and_the_threshold_that_applied(tmp_path):
    """On a real crawl sample under the default rule (line/context, protection): every removal says whether the
    line's window went over the threshold, its length-scaled share, its neighbours or the protected bar decided,
    with that bar; the stats count what the rule kept above and dropped below the threshold."""
    import pyarrow.dataset as ds

    path = real_warc("cc-genuine", "CC-MAIN-2020-34.sample-from-resiliparse-tests.warc.gz")
    settings = load_settings(ROOT / "conf" / "local.yaml", ["index.enabled=false"])
    result = run_split(Split(str(path), 0, 1), settings, str(tmp_path / "out"), str(tmp_path / "dropped"))
    registry = load_registry(settings.perplexity.registry)
    rows = ds.dataset(tmp_path / "dropped", format="parquet").to_table().to_pylist()
    whys = set()
    for row in rows:
        unit, _, rest = row["reason"].removeprefix("perplexity:").partition("/")
        why, _, bar = rest.partition("@")
        threshold = registry[row["language"]].threshold_for(settings.perplexity)
        assert unit == "line" and why in {"context", "length", "neighbours", "protected"}, row["reason"]
        expected = {"context": threshold, "protected": threshold * settings.perplexity.protect_factor}
        if why in expected:
            assert float(bar) == round(expected[why]), row["reason"]
        else:  # a length-scaled threshold: under the threshold itself
            assert float(bar) < threshold, row["reason"]
        whys.add(why)
    assert {"context", "length", "protected"} <= whys
    counts = Stats.from_dict(result).counts
    assert counts["rule.zh.kept_above"] > 0 and counts["rule.zh.dropped_below"] > 0
    # every dropped unit is counted once under what dropped it, and in the units' histogram
    dropped_units = sum(v for k, v in counts.items() if k.startswith("rule.") and ".dropped." in k)
    assert dropped_units == sum(v for k, v in counts.items() if k.startswith("units.") and ".dropped" in k) > 0
    stats = CleanWarcJob().merge_stats(str(tmp_path / "out"), 1, Stats.from_dict(result), settings, 1.0, [str(path)])
    page = render(stats)
    assert "kept above threshold" in page and "dropped: length" in page
    assert page.count("<img ") >= 2
