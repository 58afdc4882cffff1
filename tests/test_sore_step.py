"""The `sore` step in the step list: through the real loop and through local Spark on real WARCs."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pyarrow.dataset as ds
import pytest

from conftest import real_warc
from pipeline.cli import main as cli_main
from pipeline.config import PROJECT_ROOT, ConfigError, load_settings
from pipeline.reading.shards import Split
from pipeline.spark.runner import run_split
from pipeline.stats import Stats
from pipeline.steps.loop import step_class
from pipeline.steps.sore import FAR_REASON, OUTLIER_REASON, Sore

WITH_SORE = ["pipeline.steps=[decode, cascade, langid, sentences, sore, perplexity]",
             "pipeline.options={sore: {far_distance: 0.9, outlier_distance: 0.3}}"]


def sore_rows(dropped: Path) -> list[dict]:
    rows = ds.dataset(str(dropped)).to_table().to_pylist()
    return [r for r in rows if (r["reason"] or "").startswith("sore_")]


def test_sore_is_a_step_with_its_options():
    assert step_class("sore") is Sore
    step = Sore.from_settings(load_settings(None, WITH_SORE))
    assert step.settings.far_distance == 0.9 and step.settings.segment == "line"
    with pytest.raises(ConfigError, match="pipeline.options.sore"):
        Sore.from_settings(load_settings(None, ["pipeline.options={sore: {far_distanc: 0.9}}"]))


def test_sore_step_in_the_real_loop_drops_sentences_with_reason_and_distance(tmp_path):
    path = real_warc("cc-genuine", "CC-MAIN-2020-34.sample-from-resiliparse-tests.warc.gz")
    settings = load_settings(None, [*WITH_SORE, "index.enabled=false"])
    baseline = run_split(Split(str(path), 0, 1), load_settings(None), str(tmp_path / "base"))
    stats = run_split(Split(str(path), 0, 1), settings, str(tmp_path / "out"), str(tmp_path / "dropped"))
    counts = Stats.from_dict(stats).counts
    assert counts["records.html"] == Stats.from_dict(baseline).counts["records.html"]
    assert counts["stage.sore.pages"] > 0 and counts["stage.sore.segments_removed"] > 0
    assert counts["cpu.sore"] > 0
    reasons = {k.removeprefix("removal_reasons."): v for k, v in counts.items() if k.startswith("removal_reasons.sore")}
    assert reasons and all(r == FAR_REASON or r.startswith(OUTLIER_REASON) for r in reasons)
    rows = sore_rows(tmp_path / "dropped")
    assert len(rows) == sum(reasons.values())
    for row in rows:
        assert row["distance"] is not None and 0 <= row["distance"] <= 2
        if row["reason"] == FAR_REASON:
            assert row["distance"] > 0.9
        else:
            assert row["distance"] <= 0.3
    # fewer sentences kept than without the step, never more
    assert counts["sentences.kept"] < Stats.from_dict(baseline).counts["sentences.kept"]


@pytest.mark.spark
def test_sore_step_through_local_spark_on_real_warcs(tmp_path):
    if shutil.which("java") is None:
        pytest.skip("Java is needed for Spark")
    inputs = [real_warc("cc-genuine", "CC-MAIN-2020-34.sample-from-resiliparse-tests.warc.gz"),
              real_warc("other-real", "dolma-tests_data_warc_sample-0000.warc.gz")]
    out = tmp_path / "out"
    status = cli_main(["run", "--input", *map(str, inputs), "--output", str(out),
                       "--config", str(PROJECT_ROOT / "conf" / "local.yaml"), "--set", "spark.master=local[1]",
                       "--set", "index.enabled=false", "--dropped", str(out / "dropped"),
                       *[arg for s in WITH_SORE for arg in ("--set", s)]])
    assert status == 0
    stats = json.loads((out / "stats.json").read_text())
    counts = Stats.from_dict(stats).counts
    outcomes = sum(v for k, v in counts.items() if k.startswith("outcome."))
    assert counts["records.html"] == outcomes > 0
    assert counts["stage.sore.pages"] > 0
    rows = sore_rows(out / "dropped")
    assert rows and all(r["distance"] is not None for r in rows)
    assert {r["reason"].split(":")[0] for r in rows} <= {FAR_REASON, OUTLIER_REASON.rstrip(":")}
    # the embedding model was loaded once in each Python worker, however many splits it ran
    loads = [v for k, v in counts.items() if k.startswith("model_loads.") and "usem3" in k]
    assert loads and all(v == 1 for v in loads)
    assert "sentences unscored" in (out / "summary.txt").read_text()
