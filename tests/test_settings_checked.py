"""Every setting is checked against the files and models it needs before Spark starts: one line, exit 2.

And the settings that used to crash a job on the sample (percentile mode, codecarbon) now run it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from pipeline.cli import main as cli_main
from pipeline.config import PROJECT_ROOT, PerplexitySettings
from pipeline.model_registry import load_registry, unscored_languages

SAMPLE = PROJECT_ROOT / "tests" / "data" / "sample.warc.gz"


def _run(tmp_path, *settings: str) -> int:
    args = ["run", "--input", str(SAMPLE), "--output", str(tmp_path / "out")]
    for setting in settings:
        args += ["--set", setting]
    return cli_main(args)


@pytest.mark.parametrize("setting, content", [
    ("perplexity.registry", None),
    ("langid.model_path", None),
    ("extract.blocks_model", None),
    ("perplexity.registry", "models: [not, a, mapping]\n"),
    ("perplexity.registry", "models: {en: {threshold: 10}}\n"),
    ("perplexity.registry", "models: {en: {path: [unclosed\n"),
    ("extract.blocks_model", "{\"not\": \"a block model\"}"),
    ("extract.blocks_model", "not json at all"),
])
def test_a_missing_or_broken_model_file_is_one_line_and_exit_2(tmp_path, capsys, setting, content):
    path = tmp_path / "given"
    if content is not None:
        path.write_text(content, encoding="utf-8")
    assert _run(tmp_path, f"{setting}={path}") == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("warcplex: error: ") and setting in err, err
    assert not (tmp_path / "out").exists()  # refused before the output was prepared or Spark started


SORE_STEPS = "pipeline.steps=[decode,cascade,langid,sentences,perplexity,sore]"


@pytest.mark.parametrize("content", [None, "- just\n- a list\n", "groups: [unclosed\n"])
def test_a_missing_or_broken_sore_outliers_file_is_one_line_and_exit_2(tmp_path, capsys, content):
    path = tmp_path / "outliers.yaml"
    if content is not None:
        path.write_text(content, encoding="utf-8")
    assert _run(tmp_path, SORE_STEPS, f"pipeline.options.sore.outliers={path}") == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "pipeline.options.sore.outliers" in err, err


@pytest.mark.spark
def test_a_given_sore_outliers_file_reaches_the_executors(tmp_path):
    """The file is shipped with the models and found by name on the executors (no shared disk assumed)."""
    path = tmp_path / "my-outliers.yaml"
    path.write_text("cookie:\n  en: [We use cookies to improve your experience on our website.]\n", encoding="utf-8")
    assert _run(tmp_path, SORE_STEPS, f"pipeline.options.sore.outliers={path}") == 0
    stats = json.loads((tmp_path / "out" / "stats.json").read_text(encoding="utf-8"))
    loads = {name for per_process in stats["model_loads"].values() for name in per_process}
    assert any(n.startswith("sore_outliers") and "my-outliers" in n for n in loads), loads


def test_percentile_mode_leaves_only_languages_without_percentiles_unscored():
    settings = PerplexitySettings(threshold_mode="percentile")
    missing = unscored_languages(settings)
    registry = load_registry(settings.registry)
    assert missing == sorted(lang for lang, e in registry.items() if str(settings.percentile) not in e.percentiles)
    assert "en" not in missing and "it" not in missing  # it's percentiles come from its dev pages' truth sentences
    assert set(missing) < set(registry)
    assert unscored_languages(PerplexitySettings()) == []  # absolute mode: every shipped language has a threshold
    assert unscored_languages(PerplexitySettings(threshold_mode="percentile", threshold=5000.0)) == []


@pytest.mark.spark
def test_percentile_mode_and_codecarbon_run_the_sample(tmp_path, capsys):
    """Both once ended in a stack trace and exit 1 (a RegistryError on an executor; a lock Spark could not pickle)."""
    pytest.importorskip("codecarbon")
    assert _run(tmp_path, "perplexity.threshold_mode=percentile", "perplexity.percentile=90",
                "carbon.codecarbon=true", "carbon.codecarbon_country=DEU") == 0
    err = capsys.readouterr().err
    missing = unscored_languages(PerplexitySettings(threshold_mode="percentile"))
    warning = [line for line in err.splitlines() if line.startswith("warcplex: warning:")]
    assert len(warning) == 1 and all(lang in warning[0] for lang in missing) and "warcplex calibrate" in warning[0]
    stats = json.loads((tmp_path / "out" / "stats.json").read_text(encoding="utf-8"))
    registry = load_registry(PerplexitySettings().registry)
    assert stats["coverage"]["en"]["model"] == registry["en"].path.rsplit("/", 1)[-1]
    assert stats["coverage"]["en"]["sentences_scored"] > 0
    for lang in set(missing) & set(stats["coverage"]):
        assert stats["coverage"][lang]["model"] is None and stats["coverage"][lang]["sentences_scored"] == 0


@pytest.mark.spark
@pytest.mark.parametrize("settings, said", [
    # Spark's own error, not py4j's "An error occurred while calling ... JavaSparkContext"
    (["spark.conf.spark.eventLog.enabled=true", "spark.conf.spark.eventLog.dir=/nonexistent/events"],
     "Spark did not start (spark.master='local[*]'): java.io.FileNotFoundException: File file:/nonexistent/events "
     "does not exist"),
    # a standalone master that never answers: Spark gives the context up after a minute, under the run (it was a
    # stack trace from the first call on the stopped context, and exit 1)
    (["spark.master=spark://127.0.0.1:1"],
     "Spark stopped before the run ended (spark.master='spark://127.0.0.1:1'); its log above says why"),
])
def test_a_spark_property_or_master_spark_cannot_work_with_is_one_line_and_exit_2(tmp_path, settings, said):
    command = [sys.executable, "-m", "pipeline.cli", "run", "--input", str(SAMPLE), "--output", str(tmp_path / "out")]
    for setting in settings:
        command += ["--set", setting]
    ended = subprocess.run(command, cwd=PROJECT_ROOT, capture_output=True, text=True, timeout=300,
                           env={**os.environ, "SPARK_LOCAL_IP": "127.0.0.1"})
    assert ended.returncode == 2, ended.stderr[-2000:]
    assert ended.stderr.splitlines()[-1] == f"warcplex: error: {said}"
