"""Corpus trust through the real CLI and local Spark: resume identity, config fingerprint and
--overwrite, duplicate record ids, failed shards, output directory rules, redaction, progress."""

from __future__ import annotations

import gzip
import json
import os
import pty
import shutil
import subprocess
import sys
import threading
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from conftest import real_warc
from pipeline.config import PROJECT_ROOT, S3Settings, load_settings
from pipeline.reading.shards import shard_key
from pipeline.writing.outdir import config_fingerprint
from pipeline.writing.outdir import OutputError, prepare_output
from pipeline.redact import redact, redact_text
from pipeline.reading.sources import resolve_shards

SMALL = ("cc-genuine", "CC-MAIN-2024-22.whirlwind.warc.gz")
LARGER = ("cc-genuine", "CC-MAIN-2020-34.sample-from-resiliparse-tests.warc.gz")
FAST = ["--set", "spark.master=local[1]", "--set", "perplexity.enabled=false", "--set", "index.enabled=false"]
SECRET = "SUPERSECRET-4711"


def need_java() -> None:
    if shutil.which("java") is None:
        pytest.skip("Java is needed for Spark")


def warcplex(*args: str, timeout: int = 600) -> subprocess.CompletedProcess:
    env = {**os.environ, "SPARK_LOCAL_IP": "127.0.0.1"}
    return subprocess.run([sys.executable, "-m", "pipeline.cli", *args], env=env, cwd=PROJECT_ROOT,
                          capture_output=True, text=True, timeout=timeout)


def warcplex_on_a_terminal(*args: str, timeout: int = 600) -> tuple[int, str, str]:
    """Run the CLI with stderr on a pseudo-terminal; return (status, stdout, what the terminal showed)."""
    master, slave = pty.openpty()
    shown: list[bytes] = []

    def drain() -> None:
        while True:
            try:
                chunk = os.read(master, 4096)
            except OSError:  # the terminal closed
                return
            if not chunk:
                return
            shown.append(chunk)

    reader = threading.Thread(target=drain, daemon=True)
    reader.start()
    env = {**os.environ, "SPARK_LOCAL_IP": "127.0.0.1"}
    try:
        done = subprocess.run([sys.executable, "-m", "pipeline.cli", *args], env=env, cwd=PROJECT_ROOT,
                              stdout=subprocess.PIPE, stderr=slave, text=True, timeout=timeout)
    finally:
        os.close(slave)
        reader.join(timeout=10)
        os.close(master)
    return done.returncode, done.stdout, b"".join(shown).decode("utf-8", "replace")


def record_ids(output: Path) -> list[str]:
    return [rid for p in sorted((output / "data").rglob("*.parquet"))
            for rid in pq.read_table(p, columns=["warc_record_id"]).column(0).to_pylist()]


def stats_of(output: Path) -> dict:
    return json.loads((output / "stats.json").read_text())


@pytest.fixture
def crawl(tmp_path) -> Path:
    """A crawl directory with two real shards."""
    root = tmp_path / "crawl"
    root.mkdir()
    for parts in (SMALL, LARGER):
        shutil.copy(real_warc(*parts), root / parts[1])
    return root


# --- identity, fingerprint and redaction without Spark ------------------------------------------


def test_shard_keys_do_not_depend_on_location_symlink_or_base_url(crawl, tmp_path):
    moved = tmp_path / "elsewhere" / "crawl"
    shutil.copytree(crawl, moved)
    link = tmp_path / "link"
    link.symlink_to(crawl)
    manifest = tmp_path / "warc.paths"
    manifest.write_text("".join(f"{p[1]}\n" for p in (SMALL, LARGER)))
    keys = {
        "dir": [s.key for s in resolve_shards([str(crawl)], S3Settings())],
        "moved": [s.key for s in resolve_shards([str(moved)], S3Settings())],
        "symlink": [s.key for s in resolve_shards([str(link)], S3Settings())],
        "glob": [s.key for s in resolve_shards([str(link / "*.warc.gz")], S3Settings())],
        "manifest": [s.key for s in resolve_shards([str(manifest)], S3Settings(), base_url=str(crawl))],
        "manifest elsewhere": [s.key for s in resolve_shards([str(manifest)], S3Settings(), base_url=str(moved))],
    }
    assert len({tuple(sorted(v)) for v in keys.values()}) == 1, keys
    size = (crawl / SMALL[1]).stat().st_size
    assert f"{SMALL[1]}@{size}" in keys["dir"]
    # A remote shard is its object key or URL path, whatever the bucket or host it is read from.
    path = "crawl-data/CC-MAIN-2024-22/segments/1/warc/x.warc.gz"
    assert shard_key(f"s3://commoncrawl/{path}") == shard_key(f"https://data.commoncrawl.org/{path}") == path


def test_config_fingerprint_counts_only_settings_that_change_the_output(monkeypatch):
    base = config_fingerprint(load_settings(None))
    same = ["spark.master=local[1]", "spark.conf.spark.executor.memory=8g", "s3.max_attempts=3",
            "output.dropped=/x", "carbon.pue=1.5", "index.enabled=false", "input.base_url=s3://b/",
            "extract.worker_max_rss_mb=100"]
    for assignment in same:
        assert config_fingerprint(load_settings(None, [assignment])) == base, assignment
    for assignment in ["perplexity.threshold=5000", "extract.cascade=[resiliparse]", "input.splits_per_shard=3",
                       "langid.min_score=0.5", "output.compression=gzip", "input.dedup_record_ids=false"]:
        assert config_fingerprint(load_settings(None, [assignment])) != base, assignment
    # an output written with other page columns (an older warcplex) is not resumed into
    from pipeline.writing import outdir

    monkeypatch.setattr(outdir, "PAGE_SCHEMA", outdir.PAGE_SCHEMA.remove(outdir.PAGE_SCHEMA.get_field_index("page_type")))
    assert config_fingerprint(load_settings(None)) != base


def test_redaction_masks_secret_keys_and_url_credentials():
    config = {"spark": {"conf": {"spark.hadoop.fs.s3a.secret.key": SECRET, "spark.hadoop.fs.s3a.access.key": SECRET,
                                 "spark.executor.memory": "4g", "spark.ssl.keyPassword": SECRET}},
              "input": {"base_url": f"https://user:{SECRET}@host/crawl/"}, "s3": {"max_attempts": 8}}
    cleaned = json.dumps(redact(config))
    assert SECRET not in cleaned and '"4g"' in cleaned and '"max_attempts": 8' in cleaned
    for text in (f"https://u:{SECRET}@h/x.warc.gz", f"s3://b/k?X-Amz-Signature={SECRET}&x=1",
                 f"--set spark.conf.fs.s3a.secret.key={SECRET}", f"api_token: {SECRET}"):
        assert SECRET not in redact_text(text), text
    assert redact_text("s3://bucket/keys/a.warc.gz: NoSuchKey") == "s3://bucket/keys/a.warc.gz: NoSuchKey"
    # counter trees keep their numbers (index.raw.tokens is not a secret)
    assert redact({"raw": {"tokens": 5}}, secret_keys=False) == {"raw": {"tokens": 5}}


@pytest.mark.parametrize("args", [
    ["report", f"s3://AKIA:{SECRET}@bucket/out"],  # pyarrow's message cuts the scheme off
    ["sweep", "--output", f"s3://AKIA:{SECRET}@bucket/out", "--thresholds", "1000"],
    ["calibrate", "--data", f"/nowhere?token={SECRET}"],
    ["train-lm", "--from", "/nowhere", "--language", "en", "--exclude-ids", f"/nowhere?token={SECRET}"],
    ["config", "--config", f"/nowhere?token={SECRET}"],
    ["explain", "--from-output", f"s3://AKIA:{SECRET}@bucket/out", "--sample", "2", "--output", "/nowhere"],
    ["run", "--input", f"s3://AKIA:{SECRET}@bucket/crawl/a.warc.gz", "--output", "/nowhere/out"],
    ["run", "--input", str(real_warc(*SMALL)), "--output", f"s3://AKIA:{SECRET}@bucket/out"],
], ids=["report", "sweep", "calibrate", "train-lm", "config", "explain", "run-input", "run-output"])
def test_every_command_tells_a_users_mistake_in_one_line_without_its_secret(args):
    result = warcplex(*args, timeout=120)
    assert result.returncode == 2, result.stderr[-2000:]
    assert result.stderr.count("\n") == 1 and result.stderr.startswith("warcplex: error:"), result.stderr
    assert SECRET not in result.stderr + result.stdout, result.stderr


# --- output directory rules: one line, exit 2, before Spark starts -------------------------------


def one_line_error(result: subprocess.CompletedProcess, message: str) -> None:
    assert result.returncode == 2, result.stderr[-2000:]
    assert result.stderr.count("\n") == 1 and result.stderr.startswith("warcplex: error:"), result.stderr
    assert message in result.stderr, result.stderr


def test_output_that_is_a_file_or_inside_the_input_or_foreign_is_refused(crawl, tmp_path):
    shard = str(crawl / SMALL[1])
    a_file = tmp_path / "stats.json"
    a_file.write_text("{}")
    one_line_error(warcplex("run", "--input", shard, "--output", str(a_file), *FAST), "is a file")
    one_line_error(warcplex("run", "--input", str(crawl), "--output", str(crawl / "out"), *FAST),
                   "inside the input directory")
    one_line_error(warcplex("run", "--input", str(crawl / "*.gz"), "--output", str(crawl / "sub" / "out"), *FAST),
                   "inside the input directory")
    users = tmp_path / "users"
    users.mkdir()
    (users / "stats.json").write_text('{"mine": true}')
    one_line_error(warcplex("run", "--input", shard, "--output", str(users), *FAST), "not written by warcplex")
    assert (users / "stats.json").read_text() == '{"mine": true}'
    one_line_error(warcplex("run", "--input", shard, "--output", str(tmp_path / "o"), "--set", "spark.master=bogus"),
                   "spark.master")


def test_side_outputs_inside_the_output_stay_its_own_on_later_runs(tmp_path):
    out = tmp_path / "out"
    prepare_output(str(out), load_settings(None, [f"output.dropped={out / 'dropped'}"]), [])
    (out / "dropped" / "language=en").mkdir(parents=True)
    prepare_output(str(out), load_settings(None), [])  # a rerun without --dropped
    assert json.loads((out / "_warcplex.json").read_text())["side_outputs"] == ["dropped"]
    (out / "notes.txt").write_text("mine")
    with pytest.raises(OutputError, match=r"did not write \(notes.txt\)"):
        prepare_output(str(out), load_settings(None), [])


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes to read-only directories")
def test_read_only_output_is_refused(crawl, tmp_path):
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0o555)
    try:
        one_line_error(warcplex("run", "--input", str(crawl / SMALL[1]), "--output", str(locked / "out"), *FAST),
                       "cannot write to output")
    finally:
        locked.chmod(0o755)


# --- real runs ----------------------------------------------------------------------------------


@pytest.mark.spark
def test_relocated_shards_resume_changed_config_is_refused_and_overwrite_replaces(crawl, tmp_path):
    need_java()
    out = tmp_path / "out"
    first = warcplex("run", "--input", str(crawl), "--output", str(out), *FAST,
                     "--set", f"spark.conf.spark.hadoop.fs.s3a.secret.key={SECRET}")
    assert first.returncode == 0, first.stderr[-3000:]
    ids = record_ids(out)
    assert len(ids) == len(set(ids)) > 0
    # progress lines (not a terminal: plain lines), no third-party noise, no snapshot extrapolated from a few pages
    assert "warcplex: splits 2/2," in first.stderr and "pages/s" in first.stderr
    assert "FutureWarning" not in first.stderr and "Closing down clientserver" not in first.stderr
    assert "one snapshot: not estimated from" in first.stdout
    assert "Not estimated: it needs 10,000 pages" in (out / "report.html").read_text()
    written = first.stdout + first.stderr + "".join(p.read_text(errors="replace") for p in out.rglob("*")
                                                    if p.is_file() and p.suffix in (".json", ".txt", ".html"))
    assert SECRET not in written
    assert stats_of(out)["run"]["config"]["spark"]["conf"]["spark.hadoop.fs.s3a.secret.key"] == "***"
    files_before = sorted(p.relative_to(out) for p in (out / "data").rglob("*"))

    # The same shards moved elsewhere, reached through a symlink and a manifest with another base.
    moved = tmp_path / "moved"
    shutil.copytree(crawl, moved)
    link = tmp_path / "link"
    link.symlink_to(moved)
    manifest = tmp_path / "warc.paths"
    manifest.write_text("".join(f"{p[1]}\n" for p in (SMALL, LARGER)))
    again = warcplex("run", "--input", str(manifest), "--input-base-url", str(link), "--output", str(out), *FAST)
    assert again.returncode == 0, again.stderr[-3000:]
    run = stats_of(out)["run"]
    assert run["splits"] == run["splits_resumed"] == 2
    assert sorted(p.relative_to(out) for p in (out / "data").rglob("*")) == files_before
    assert sorted(record_ids(out)) == sorted(ids)

    # A changed config is refused, naming the change; nothing is touched.
    changed = warcplex("run", "--input", str(crawl), "--output", str(out), *FAST,
                       "--set", "extract.cascade=[resiliparse,conservative]")
    one_line_error(changed, "different configuration (extract.cascade:")
    assert "--overwrite" in changed.stderr
    assert (out / "_SUCCESS").exists() and sorted(record_ids(out)) == sorted(ids)

    replaced = warcplex("run", "--input", str(crawl), "--output", str(out), *FAST,
                        "--set", "extract.cascade=[resiliparse,conservative]", "--overwrite")
    assert replaced.returncode == 0, replaced.stderr[-3000:]
    stats = stats_of(out)
    assert stats["run"]["splits_resumed"] == 0 and stats["run"]["config"]["extract"]["cascade"][0] == "resiliparse"
    assert sorted(record_ids(out)) == sorted(ids)
    assert len(list((out / "_markers").glob("*.json"))) == 2


@pytest.mark.spark
def test_duplicate_record_ids_across_inputs_are_dropped_once(crawl, tmp_path):
    need_java()
    copy = tmp_path / "copies" / f"copy-of-{LARGER[1]}"
    copy.parent.mkdir()
    shutil.copy(crawl / LARGER[1], copy)
    out = tmp_path / "out"
    inputs = [str(crawl / LARGER[1]), str(copy), str(crawl / SMALL[1])]
    first = warcplex("run", "--input", *inputs, "--output", str(out), *FAST)
    assert first.returncode == 0, first.stderr[-3000:]
    ids = record_ids(out)
    assert len(ids) == len(set(ids)) > 0
    stats = stats_of(out)
    listing = next((out / "_ids").glob(f"{LARGER[1]}-*"))
    responses = gzip.decompress(listing.read_bytes()).decode().split("\n")
    assert stats["skip"]["duplicate_record_id"] == len(responses) > 0  # every response of the copy
    assert stats["records"]["read"] == sum(_leaves(stats["skip"])) + stats["records"]["html"]
    # The copy's pages all went to the original (earlier in plan order): the copy wrote no rows.
    assert not list((out / "data").rglob("part-copy-of-*"))
    # A rerun adds nothing.
    again = warcplex("run", "--input", *inputs, "--output", str(out), *FAST)
    assert again.returncode == 0, again.stderr[-3000:]
    assert sorted(record_ids(out)) == sorted(ids)


def _leaves(tree) -> list[float]:
    return [v for value in tree.values() for v in (_leaves(value) if isinstance(value, dict) else [value])]


@pytest.mark.spark
def test_missing_shard_is_not_marked_and_is_retried_by_the_next_night(crawl, tmp_path):
    need_java()
    """A missing shard and a file that is no WARC (an HTML page under a WARC's name): exit status 3, both named
    in the summary, no marker; the command itself tries them again once (``--attempts 2``), the next night
    reads them once they are there."""
    manifest = tmp_path / "warc.paths"
    manifest.write_text(f"{SMALL[1]}\nnot-yet-there.warc.gz\nnot-a-warc.warc.gz\n")
    (crawl / "not-a-warc.warc.gz").write_bytes(b"<html><body><p>a page saved under a WARC's name</p></body></html>\n")
    out = tmp_path / "out"
    nightly = ["nightly", "--manifest", str(manifest), "--base-url", str(crawl), "--output", str(out), *FAST,
               "--set", "input.splits_per_shard=1"]
    status, stdout, terminal = warcplex_on_a_terminal(*nightly)
    assert status == 3, terminal[-3000:]
    assert "FAILED: 2 split(s) could not be read" in stdout and "not-yet-there.warc.gz" in stdout
    assert "not-a-warc.warc.gz: not read, retried by the next run: " in stdout and "no WARC record found" in stdout
    assert "nightly attempt 1 of 2: 2 split(s) could not be read; trying them again" in terminal
    # On a terminal the progress line is rewritten in place.
    assert "\rwarcplex: splits 3/3," in terminal and "\x1b[K" in terminal
    assert len(list((out / "_markers").glob("*.json"))) == 1  # the good shard only
    stats = stats_of(out)
    assert stats["run"]["splits_failed"] == 2 and stats["records"]["html"] > 0
    assert (out / "_SUCCESS").exists()

    shutil.copy(crawl / LARGER[1], crawl / "not-yet-there.warc.gz")
    shutil.copy(PROJECT_ROOT / "tests" / "data" / "sample.warc.gz", crawl / "not-a-warc.warc.gz")
    second = warcplex(*nightly)
    assert second.returncode == 0, second.stderr[-3000:]
    assert "3 shards in" in second.stdout and "1 done, 2 to process now" in second.stdout
    assert len(list((out / "_markers").glob("*.json"))) == 3
    assert stats_of(out)["run"]["splits_failed"] == 0
    ids = record_ids(out)
    assert len(ids) == len(set(ids))
