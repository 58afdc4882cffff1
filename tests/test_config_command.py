"""`warcplex config`: the effective configuration as YAML, through the real command, secrets masked."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import yaml

from conftest import ROOT
from pipeline.config import Settings, load_settings


def warcplex(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess:
    """The installed `warcplex` command (the one beside this Python), else the same entry point by module."""
    script = Path(sys.executable).with_name("warcplex")
    command = [str(script)] if script.exists() else [sys.executable, "-m", "pipeline.cli"]
    return subprocess.run([*command, *args], capture_output=True, text=True, cwd=cwd, timeout=120)


def test_config_prints_defaults_then_preset_then_overrides_and_masks_secrets(tmp_path):
    secret = "wJalrXUtnFEMI-K7MDENG"
    result = warcplex("config", "--config", "conf/cluster.yaml", "--set", "perplexity.threshold=5000",
                      "--set", "extract.cascade=[resiliparse, conservative]",
                      "--set", f"spark.conf.spark.hadoop.fs.s3a.secret.key={secret}",
                      "--set", f"input.base_url=https://reader:{secret}@crawl.example.org/")
    assert result.returncode == 0, result.stderr
    assert secret not in result.stdout and secret not in result.stderr
    printed = yaml.safe_load(result.stdout)
    assert list(printed) == list(Settings.model_fields)  # every section, in the settings' order
    assert printed["perplexity"]["threshold"] == 5000  # --set
    assert printed["extract"]["cascade"] == ["resiliparse", "conservative"]
    assert printed["input"]["splits_per_shard"] == 8  # the preset
    assert printed["spark"]["conf"]["spark.task.maxFailures"] == "8"
    assert printed["corpus"]["dedup"]["exact"] is True  # a default the preset does not set
    assert printed["spark"]["conf"]["spark.hadoop.fs.s3a.secret.key"] == "***"
    assert printed["input"]["base_url"] == "https://***@crawl.example.org/"
    # What it printed is a configuration a run accepts, equal to the one the flags build but for the secrets.
    (tmp_path / "effective.yaml").write_text(result.stdout, encoding="utf-8")
    reread = load_settings(tmp_path / "effective.yaml")
    expected = load_settings(ROOT / "conf" / "cluster.yaml", ["perplexity.threshold=5000",
                                                              "extract.cascade=[resiliparse, conservative]"])
    assert reread.model_dump(exclude={"spark": {"conf"}, "input": {"base_url"}}) == \
        expected.model_dump(exclude={"spark": {"conf"}, "input": {"base_url"}})


def test_config_without_flags_prints_the_built_in_defaults():
    result = warcplex("config")
    assert result.returncode == 0, result.stderr
    assert yaml.safe_load(result.stdout) == Settings().model_dump(mode="json")


def test_a_bad_key_value_or_file_is_one_line_and_exit_2(tmp_path):
    for args, message in [(["--set", "spark.cores=3"], "config: spark.cores: unknown key"),
                          (["--set", "extract.timeout_s=-1"], "extract.timeout_s"),
                          (["--set", "perplexity.threshold"], "--set 'perplexity.threshold': expected key="),
                          (["--config", "no-such-preset.yaml"], "cannot read config no-such-preset.yaml")]:
        result = warcplex("config", *args, cwd=tmp_path)
        assert result.returncode == 2, args
        assert result.stdout == ""
        lines = result.stderr.splitlines()
        assert len(lines) == 1 and lines[0].startswith("warcplex: error: ") and message in lines[0], result.stderr
