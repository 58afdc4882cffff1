"""Configuration: defaults, YAML presets from conf/, --set overrides and one-line errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from pipeline.config import PROJECT_ROOT, ConfigError, Settings, load_settings, resolve_path

PRESETS = sorted(p for p in (PROJECT_ROOT / "conf").glob("*.yaml") if p.name != "models.yaml")


def test_defaults_need_no_file():
    settings = load_settings()
    assert settings == Settings()
    assert settings.extract.main_content is True
    assert settings.extract.cascade == ["blocks", "resiliparse", "trafilatura", "readability", "conservative"]
    assert settings.langid.enabled and settings.perplexity.enabled
    assert settings.perplexity.threshold_mode == "absolute"
    assert settings.perplexity.unknown_language == "keep"
    assert settings.output.resume is True


@pytest.mark.parametrize("preset", PRESETS, ids=lambda p: p.name)
def test_every_shipped_preset_loads(preset):
    assert isinstance(load_settings(preset), Settings)


def test_preset_overrides_defaults_and_set_overrides_the_preset(tmp_path):
    preset = tmp_path / "p.yaml"
    preset.write_text("extract:\n  main_content: false\nperplexity:\n  threshold: 500\n")
    settings = load_settings(preset, ["perplexity.threshold=1200.5", "langid.enabled=false",
                                      "input.splits_per_shard=3", "extract.cascade=[trafilatura, conservative]"])
    assert settings.extract.main_content is False
    assert settings.perplexity.threshold == 1200.5
    assert settings.langid.enabled is False
    assert settings.input.splits_per_shard == 3
    assert settings.extract.cascade == ["trafilatura", "conservative"]


def test_spark_properties_are_taken_literally():
    settings = load_settings(None, ["spark.conf.spark.executor.memory=8g", "spark.conf.spark.task.maxFailures=4"])
    assert settings.spark.conf == {"spark.executor.memory": "8g", "spark.task.maxFailures": "4"}
    sizes = ["spark.conf.spark.driver.memory=1536M", "spark.conf.spark.executor.memory=4gb",
             "spark.conf.spark.executor.pyspark.memory=2048", "spark.conf.spark.driver.maxResultSize=0"]
    assert len(load_settings(None, sizes).spark.conf) == 4


def test_a_presets_unquoted_spark_numbers_and_booleans_are_read_as_spark_reads_them(tmp_path):
    preset = tmp_path / "p.yaml"
    preset.write_text("spark:\n  conf:\n    spark.executor.cores: 4\n    spark.python.worker.reuse: true\n"
                      "    spark.memory.fraction: 0.6\n", encoding="utf-8")
    assert load_settings(preset).spark.conf == {"spark.executor.cores": "4", "spark.python.worker.reuse": "true",
                                                "spark.memory.fraction": "0.6"}


@pytest.mark.parametrize("override, message", [
    (["perplexity.bogus=1"], "perplexity.bogus: unknown key"),
    (["nosuchsection.key=1"], "nosuchsection: unknown key"),
    (["perplexity.threshold_mode=median"], "perplexity.threshold_mode"),
    (["input.splits_per_shard=-1"], "input.splits_per_shard"),
    (["extract.timeout_s=0.001"], "extract.timeout_s"),  # under the loop's own 0.1 s waits: refused, not a crash
    (["extract.main_content=[1, 2]"], "extract.main_content"),
    (["perplexity.enabled"], "expected key=value"),
    (["perplexity..enabled=true"], "empty key component"),
    (["perplexity.threshold=[unclosed"], "not valid YAML"),
    (["perplexity.enabled=true", "perplexity.enabled.deeper=1"], "not a section"),
    # sizes Spark's launcher or the JVM refuses, which stopped the run as "Spark did not start" or failed every task
    (["spark.conf.spark.driver.memory=lots"], "spark.driver.memory: 'lots' is not a size Spark reads"),
    (["spark.conf.spark.driver.memory=4gb"], "spark.driver.memory"),  # the JVM's -Xmx takes no "b"
    (["spark.conf.spark.executor.memory=1.5g"], "spark.executor.memory"),
    (["spark.conf.spark.executor.memoryOverhead=much"], "spark.executor.memoryOverhead"),
])
def test_bad_overrides_are_one_line_errors_naming_the_key(override, message):
    with pytest.raises(ConfigError) as err:
        load_settings(None, override)
    assert message in str(err.value)
    assert "\n" not in str(err.value)


@pytest.mark.parametrize("content, message", [
    ("extract: [unclosed", "not valid YAML"),
    ("- a\n- list\n", "top level must be a mapping"),
    ("extract:\n  main_contnet: true\n", "extract.main_contnet: unknown key"),
])
def test_bad_preset_files_are_errors_naming_the_file(tmp_path, content, message):
    preset = tmp_path / "bad.yaml"
    preset.write_text(content)
    with pytest.raises(ConfigError, match=message) as err:
        load_settings(preset)
    assert str(preset) in str(err.value)


def test_missing_preset_is_an_error(tmp_path):
    with pytest.raises(ConfigError, match="cannot read config"):
        load_settings(tmp_path / "absent.yaml")


def test_project_relative_paths_resolve_against_the_root(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert resolve_path("conf/models.yaml") == PROJECT_ROOT / "conf" / "models.yaml"
    assert resolve_path(str(tmp_path)) == Path(tmp_path).resolve()


def test_presets_are_found_by_name_or_project_path_from_any_directory(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    local = load_settings(PROJECT_ROOT / "conf" / "local.yaml")
    assert load_settings("local") == local == load_settings("conf/local.yaml")
    assert load_settings("nightly") == load_settings(PROJECT_ROOT / "conf" / "nightly.yaml")
    (tmp_path / "local").mkdir()  # a folder of that name does not hide the preset
    assert load_settings("local") == local
    (tmp_path / "conf").mkdir()
    (tmp_path / "conf" / "local.yaml").write_text("spark:\n  app_name: mine\n")  # a file given is that file
    assert load_settings("conf/local.yaml").spark.app_name == "mine"
    with pytest.raises(ConfigError, match=r"cannot read config nosuch: .*shipped presets: all-text, cluster, local, nightly"):
        load_settings("nosuch")
