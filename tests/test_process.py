"""run_split on real WARC bytes without Spark: every record accounted for, rows match the counts."""

from __future__ import annotations

import pyarrow.parquet as pq
import pytest
import yaml

from conftest import ROOT, SAMPLE_WARC, TINY_ARPA, real_warc
from pipeline.config import load_settings
from pipeline.document import join_sentences
from pipeline.spark.runner import run_split
from pipeline.stats import Stats
from pipeline.reading.shards import Split

REGISTRY = ROOT / "conf" / "models.yaml"
REQUIRED_COLUMNS = {"warc_record_id", "url", "warc_date", "language", "language_score", "text", "n_sentences",
                    "n_sentences_kept", "perplexity_median", "extractor", "html_bytes", "text_bytes_raw",
                    "text_bytes_clean"}


def rows(out) -> list[dict]:
    """All rows of the Parquet files under ``out``, with the language from the partition directory."""
    found = []
    for path in sorted(out.glob("**/language=*/*.parquet")):
        language = path.parent.name.split("=", 1)[1]
        found += [{**row, "language": language} for row in pq.read_table(path).to_pylist()]
    return found


def check_accounting(result: dict) -> Stats:
    stats = Stats.from_dict(result)
    c = stats.counts
    skipped = sum(v for k, v in c.items() if k.startswith("skip."))
    outcomes = sum(v for k, v in c.items() if k.startswith("outcome."))
    assert c["records.read"] > 0
    assert c["records.read"] == skipped + c["records.html"]
    assert c["records.html"] == outcomes
    return stats


REAL = [("cc-genuine", "CC-MAIN-2020-34.sample-from-resiliparse-tests.warc.gz"),
        ("other-real", "clueweb09-ja.quirk.from-resiliparse-tests.warc.gz"),
        ("other-real", "dolma-tests_data_warc_sample-0000.warc.gz"),
        ("other-real", "dolma-tests_data_warc_sample-0001.warc.gz")]


@pytest.mark.parametrize("folder, name", REAL, ids=[n.split(".")[0] for _, n in REAL])
def test_every_record_of_a_real_warc_is_accounted_for(tmp_path, folder, name):
    path = real_warc(folder, name)
    settings = load_settings(None, ["perplexity.enabled=false"])
    result = run_split(Split(str(path), 0, 1), settings, str(tmp_path / "out"))
    stats = check_accounting(result)
    written = rows(tmp_path / "out")
    assert len(written) == stats.counts["outcome.kept"] > 0
    assert len({r["warc_record_id"] for r in written}) == len(written)
    assert REQUIRED_COLUMNS <= set(written[0])
    for row in written:
        assert row["text"] and row["n_sentences_kept"] == row["n_sentences"]  # nothing filtered
        assert row["text_bytes_clean"] == len(row["text"].encode("utf-8"))
        assert row["html_bytes"] > 0 and row["warc_date"] and row["url"].startswith("http")
    by_language = {}
    for row in written:
        by_language[row["language"]] = by_language.get(row["language"], 0) + 1
    for language, count in by_language.items():
        assert stats.counts[f"lang.{language}.pages_kept"] == count


def test_clueweb_pages_are_japanese(tmp_path, clueweb_quirk_warc):
    settings = load_settings(None, ["perplexity.enabled=false"])
    run_split(Split(str(clueweb_quirk_warc), 0, 1), settings, str(tmp_path / "out"))
    languages = [r["language"] for r in rows(tmp_path / "out")]
    assert languages.count("ja") >= len(languages) * 0.8


needs_models = pytest.mark.skipif(not REGISTRY.exists(), reason="conf/models.yaml (the shipped KenLM models) missing")


@needs_models
def test_sample_with_the_shipped_models_filters_and_writes_dropped_sentences(tmp_path):
    settings = load_settings(ROOT / "conf" / "local.yaml")
    result = run_split(Split(str(SAMPLE_WARC), 0, 1), settings, str(tmp_path / "out"), str(tmp_path / "dropped"))
    stats = check_accounting(result)
    c = stats.counts
    assert c["records.html"] == c["outcome.kept"]  # every sample page has prose
    written = rows(tmp_path / "out")
    dropped = rows(tmp_path / "dropped")
    registry = yaml.safe_load(REGISTRY.read_text())["models"]
    assert {"en", "de", "fr", "es", "ja", "ru", "it"} <= {r["language"] for r in written}
    for row in written:
        if row["language"] in registry and row["extractor"] == "resiliparse":
            assert row["perplexity_median"] is not None
        if row["language"] not in registry:
            assert row["perplexity_median"] is None and row["n_sentences_kept"] == row["n_sentences"]
    unscored = [r for r in written if r["language"] not in registry and r["extractor"] != "conservative"]
    assert {"ja", "ru"} <= set(registry)  # shipped since issue 14: their pages are scored
    assert not {"ja", "ru"} & {r["language"] for r in unscored}
    assert c["stage.perplexity.unscored_language_pages"] == len(unscored)
    assert len(dropped) == c["sentences.total"] - c["sentences.kept"]
    for row in dropped:  # the rule (line, context) judges pooled scores: the reason names it and the threshold
        threshold = float(registry[row["language"]]["threshold"])
        assert row["reason"] == f"perplexity:line/context@{threshold:g}"
    assert sum(v for k, v in c.items() if k.startswith("removal_reasons.")) == len(dropped)


def tiny_registry(tmp_path, language: str) -> str:
    (tmp_path / "tiny.arpa").write_text(TINY_ARPA)
    registry = tmp_path / "models.yaml"
    registry.write_text(yaml.safe_dump({"models": {language: {"path": str(tmp_path / "tiny.arpa"), "threshold": 1e9}}}))
    return str(registry)


def test_unknown_language_drop_mode_counts_pages(tmp_path):
    settings = load_settings(None, [f"perplexity.registry={tiny_registry(tmp_path, 'en')}",
                                    "perplexity.unknown_language=drop", "extract.cascade=[resiliparse]"])
    result = run_split(Split(str(SAMPLE_WARC), 0, 1), settings, str(tmp_path / "out"))
    stats = check_accounting(result)
    c = stats.counts
    assert c["outcome.unknown_language_dropped"] == c["records.html"] - c["lang.en.pages"] > 0
    assert c["outcome.kept"] == c["lang.en.pages"]  # a huge threshold keeps every English page
    assert {r["language"] for r in rows(tmp_path / "out")} == {"en"}


def test_an_all_dropping_filter_empties_pages_without_fallback(tmp_path):
    settings = load_settings(None, [f"perplexity.registry={tiny_registry(tmp_path, 'en')}",
                                    "perplexity.threshold=1.01", "extract.cascade=[resiliparse]"])
    result = run_split(Split(str(SAMPLE_WARC), 0, 1), settings, str(tmp_path / "out"))
    stats = check_accounting(result)
    assert stats.counts["outcome.empty_after_filter"] == stats.counts["lang.en.pages"] > 0
    assert "en" not in {r["language"] for r in rows(tmp_path / "out")}


def test_cjk_sentences_are_rejoined_without_spaces(tmp_path):
    settings = load_settings(None, ["perplexity.enabled=false"])
    run_split(Split(str(SAMPLE_WARC), 0, 1), settings, str(tmp_path / "out"))
    [page] = [r for r in rows(tmp_path / "out") if r["language"] == "ja"]
    assert "三十分ほど歩くことにしています。始めたのは去年の春で" in page["text"]


def test_join_sentences_spaces_only_after_non_cjk_sentences():
    assert join_sentences(["日本語です。", "次の文！", "Next one.", "Then."]) == "日本語です。次の文！Next one. Then."
    assert join_sentences([]) == ""
