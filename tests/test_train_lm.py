"""`warcplex train-lm` and `perplexity.unknown_language: self-train`: a real run's output -> KenLM -> a run scored with it."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pyarrow.dataset as ds
import pytest
import yaml

from conftest import ROOT, real_warc
from pipeline.cli import main as cli_main
from pipeline.lm import train
from pipeline.lm.train import CorpusCounts, TrainError, TrainOptions
from pipeline.model_cache import kenlm_model
from pipeline.perplexity_rule import perplexity

REAL_WARCS = [("other-real", "dolma-tests_data_warc_sample-0000.warc.gz"),
              ("other-real", "dolma-tests_data_warc_sample-0001.warc.gz"),
              ("cc-genuine", "CC-MAIN-2020-34.sample-from-resiliparse-tests.warc.gz")]


def test_lines_repeated_anywhere_are_dropped_everywhere():
    counts = CorpusCounts()
    texts = ["Home | About\nThe river rose by two metres overnight.\nShare this", "HOME | about\nA new bridge opened.",
             "Share this\nShare this\nThe mayor spoke at noon."]
    assert train.unique_lines(texts, counts) == ["The river rose by two metres overnight.", "A new bridge opened.",
                                                 "The mayor spoke at noon."]
    assert (counts.lines, counts.lines_repeated_dropped) == (8, 5)


def test_only_confident_primary_pages_are_sources():
    counts = CorpusCounts()
    long = " ".join(["word"] * 60)
    rows = [{"text": long, "extractor": "blocks", "fallback_reason": None, "language_score": 0.9, "warc_record_id": "a"},
            {"text": long, "extractor": "resiliparse", "fallback_reason": None, "language_score": 0.9, "warc_record_id": "b"},
            {"text": long, "extractor": "blocks", "fallback_reason": "short_3of90", "language_score": 0.9, "warc_record_id": "c"},
            {"text": long, "extractor": "blocks", "fallback_reason": None, "language_score": 0.2, "warc_record_id": "d"},
            {"text": "too short", "extractor": "blocks", "fallback_reason": None, "language_score": 0.9, "warc_record_id": "e"},
            {"text": long, "extractor": "wet", "fallback_reason": None, "language_score": 0.9, "warc_record_id": "f"},
            {"text": long, "extractor": "blocks", "fallback_reason": None, "language_score": 0.9, "warc_record_id": "g"}]
    texts = train.select_pages(rows, {"blocks", "wet"}, TrainOptions(language="en"), counts, frozenset({"g"}))
    assert len(texts) == 2
    assert (counts.pages_not_primary, counts.pages_fallback, counts.pages_low_language_score, counts.pages_short,
            counts.pages_excluded) == (1, 1, 1, 1, 1)


def test_missing_kenlm_tools_is_one_line(monkeypatch, tmp_path, capsys):
    monkeypatch.setenv("KENLM_BIN", str(tmp_path))
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setattr(train, "PROJECT_ROOT", tmp_path)
    with pytest.raises(TrainError, match="make -C lm_models tools"):
        train.kenlm_tools()


def test_not_a_run_output_is_exit_2(tmp_path, capsys):
    assert cli_main(["train-lm", "--from", str(tmp_path), "--language", "en"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("warcplex: error:") and "stats.json" in err and "\n" not in err


def _needs_spark_and_tools() -> None:
    if shutil.which("java") is None:
        pytest.skip("Java is needed for Spark")
    try:
        train.kenlm_tools()
    except TrainError as exc:
        pytest.skip(str(exc))


def _run(out: Path, *extra: str) -> dict:
    status = cli_main(["run", "--input", *(str(real_warc(*w)) for w in REAL_WARCS), "--output", str(out),
                       "--config", str(ROOT / "conf" / "local.yaml"), "--set", "index.enabled=false",
                       "--set", "spark.master=local[1]", *extra])
    assert status == 0
    return json.loads((out / "stats.json").read_text())


@pytest.mark.spark
def test_train_lm_from_a_real_run_then_a_run_scored_with_it(tmp_path, capsys):
    _needs_spark_and_tools()
    first = _run(tmp_path / "run1")
    assert first["coverage"]["en"]["model"] == "en.3gram.trie.bin"
    lm = tmp_path / "lm"
    assert cli_main(["train-lm", "--from", str(tmp_path / "run1"), "--language", "en", "--out", str(lm),
                     "--min-sentences", "100"]) == 0
    assert "registry" in capsys.readouterr().out
    card = json.loads((lm / "card.json").read_text())
    corpus = card["corpus"]
    assert corpus["pages"] == first["lang"]["en"]["pages_kept"]
    assert 0 < corpus["pages_selected"] <= corpus["pages"]
    assert 0 < corpus["lines_repeated_dropped"] < corpus["lines"]  # real pages repeat their navigation
    assert corpus["train_sentences"] >= 100 and corpus["heldout_sentences"] > 0
    model_file = lm / card["model"]
    assert model_file.stat().st_size == card["bytes"] and (lm / "README.md").read_text().count(card["sha256"]) == 1
    registry = yaml.safe_load((lm / "models.yaml").read_text())["models"]
    entry = registry["en"]
    assert entry["path"] == card["model"] and entry["threshold"] == card["heldout"]["percentiles"]["95"]
    assert registry["de"]["path"].endswith("de.3gram.trie.bin")  # the other languages are kept

    # the per-sentence rule with every line judged by it (no block-stage protection), so that each
    # sentence's decision is its own perplexity against the new threshold
    second = _run(tmp_path / "run2", "--set", f"perplexity.registry={lm / 'models.yaml'}",
                  "--set", "perplexity.unit=sentence", "--set", "perplexity.rule=fixed",
                  "--set", "perplexity.protect_min_prob=2",
                  "--sentences", str(tmp_path / "sentences"))
    assert second["coverage"]["en"]["model"] == card["model"]
    rows = ds.dataset(tmp_path / "sentences" / "language=en", format="parquet").to_table().to_pylist()
    scored = [r for r in rows if r["perplexity"] is not None]
    assert len(scored) == second["coverage"]["en"]["sentences_scored"] > 0
    model = kenlm_model(str(model_file))
    for r in scored[:200]:  # the second run scored with the new model and its threshold
        assert r["perplexity"] == pytest.approx(perplexity(model, r["sentence"])[0], rel=1e-4)
        assert r["kept"] == (r["perplexity"] <= entry["threshold"])
    assert any(not r["kept"] for r in scored)


@pytest.mark.spark
def test_self_train_bootstraps_a_model_for_a_language_without_one(tmp_path):
    _needs_spark_and_tools()
    shipped = yaml.safe_load((ROOT / "conf" / "models.yaml").read_text(encoding="utf-8"))["models"]
    german = {**shipped["de"], "path": str(ROOT / shipped["de"]["path"])}
    registry_file = tmp_path / "models.yaml"
    registry_file.write_text(yaml.safe_dump({"models": {"de": german}}), encoding="utf-8")
    out = tmp_path / "out"
    stats = _run(out, "--set", f"perplexity.registry={registry_file}", "--set", "perplexity.unknown_language=self-train",
                 "--set", "perplexity.self_train_min_pages=5")
    section = stats["self_train"]
    en = section["languages"]["en"]
    assert en["model"] == "en.selftrained.4gram.bin" and en["pages"] >= 5 and en["train_sentences"] >= 200
    assert stats["coverage"]["en"]["model"] == en["model"] and stats["coverage"]["en"]["sentences_scored"] > 0
    assert stats["coverage"]["de"]["model"] == "de.3gram.trie.bin"
    # a language with enough pages but too little text is reported with its reason, and stays unscored
    for lang, entry in section["languages"].items():
        if entry["model"] is None:
            assert "training sentences" in entry["reason"] and stats["coverage"][lang]["sentences_scored"] == 0
    # below the page count: unscored, not tried
    assert all(stats["lang"][lang]["pages"] < 5 for lang in stats["coverage"]
               if lang not in section["languages"] and lang != "de")
    pass1 = json.loads((Path(str(out) + ".selftrain") / "pass1" / "stats.json").read_text())
    assert pass1["coverage"]["en"]["model"] is None and pass1["coverage"]["en"]["sentences_unscored"] > 0
    trained = {lang for lang, entry in section["languages"].items() if entry["model"]}
    assert trained <= set(yaml.safe_load(Path(section["registry"]).read_text())["models"])

    # the same command again: the same models (deterministic), so both passes resume
    card = json.loads((Path(str(out) + ".selftrain") / "en" / "card.json").read_text())
    again = _run(out, "--set", f"perplexity.registry={registry_file}", "--set", "perplexity.unknown_language=self-train",
                 "--set", "perplexity.self_train_min_pages=5")
    assert again["run"]["splits_resumed"] == again["run"]["splits"] > 0
    assert json.loads((Path(str(out) + ".selftrain") / "en" / "card.json").read_text())["sha256"] == card["sha256"]
    assert again["coverage"]["en"] == stats["coverage"]["en"]
