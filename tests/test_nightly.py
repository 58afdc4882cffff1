"""Nightly builds: SIGKILL the driver mid-run, rerun, and get byte-identical Parquet; lock and CLI errors."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from conftest import real_warc
from pipeline.config import PROJECT_ROOT

pytestmark = [pytest.mark.spark, pytest.mark.slow]

WARCS = [("cc-genuine", "CC-MAIN-2020-34.sample-from-resiliparse-tests.warc.gz"),
         ("other-real", "dolma-tests_data_warc_sample-0000.warc.gz")]
# Two splits per shard, sequential (local[1]): four tasks, each committing its own marker.
SETTINGS = ["--set", "spark.master=local[1]", "--set", "input.splits_per_shard=2",
            "--set", "input.min_split_bytes=1"]


def nightly_command(manifest: Path, output: Path, *extra: str) -> list[str]:
    command = [sys.executable, "-m", "pipeline.cli", "nightly", "--manifest", str(manifest),
               "--output", str(output), *SETTINGS, *extra]
    if not (PROJECT_ROOT / "conf" / "models.yaml").exists():
        command += ["--set", "perplexity.enabled=false"]
    return command


def parquet_digests(output: Path) -> dict[str, str]:
    """Per Parquet file: its bytes' digest (warcplex's own writer), or its rows' for the corpus stages'
    files, their index sample's too (Spark's Parquet writer may encode the same rows in different bytes from
    run to run: the order of a column's encodings in its metadata)."""
    def digest(path: Path) -> str:
        if {"corpus", "corpus_dropped", "_corpus"} & set(path.relative_to(output).parts):
            rows = json.dumps(pq.read_table(path).to_pylist(), sort_keys=True, default=str)
            return hashlib.sha256(rows.encode("utf-8")).hexdigest()
        return hashlib.sha256(path.read_bytes()).hexdigest()

    return {str(p.relative_to(output)): digest(p) for p in sorted(output.rglob("*.parquet")) if "_tmp" not in p.parts}


def record_ids(output: Path) -> list[str]:
    return [rid for p in sorted((output / "data").rglob("*.parquet")) if "_tmp" not in p.parts
            for rid in pq.read_table(p, columns=["warc_record_id"]).column(0).to_pylist()]


def wait_gone(pgid: int, timeout_s: float = 60) -> None:
    """Wait for every process of a group we started to exit (the JVM follows its driver)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            os.killpg(pgid, 0)
        except ProcessLookupError:
            return
        time.sleep(0.3)
    os.killpg(pgid, signal.SIGKILL)


@pytest.fixture
def manifest(tmp_path) -> Path:
    paths = [real_warc(*parts) for parts in WARCS]
    listing = tmp_path / "warc.paths"
    listing.write_text("".join(f"{p}\n" for p in paths))
    return listing


def test_killed_build_resumes_to_identical_output(tmp_path, manifest):
    if shutil.which("java") is None:
        pytest.skip("Java is needed for Spark")
    env = {**os.environ, "SPARK_LOCAL_IP": "127.0.0.1"}
    reference = tmp_path / "reference"
    done = subprocess.run(nightly_command(manifest, reference), env=env, cwd=PROJECT_ROOT,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    total_splits = len(list((reference / "_markers").glob("*.json")))
    assert total_splits == 2 * len(WARCS)

    output = tmp_path / "killed"
    driver = subprocess.Popen(nightly_command(manifest, output), env=env, cwd=PROJECT_ROOT,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    deadline = time.monotonic() + 300
    while not list((output / "_markers").glob("*.json")):
        assert driver.poll() is None, "the build ended before it could be killed"
        assert time.monotonic() < deadline, "no split finished in time"
        time.sleep(0.1)
    os.kill(driver.pid, signal.SIGKILL)
    driver.wait()
    wait_gone(driver.pid)
    markers_at_kill = len(list((output / "_markers").glob("*.json")))
    assert 1 <= markers_at_kill < total_splits
    assert not (output / "_SUCCESS").exists()

    rerun = subprocess.run(nightly_command(manifest, output), env=env, cwd=PROJECT_ROOT,
                           capture_output=True, text=True, timeout=600)
    assert rerun.returncode == 0, rerun.stderr[-3000:]
    assert f"{len(WARCS)} shards" in rerun.stdout
    ids = record_ids(output)
    assert len(ids) == len(set(ids)) > 0
    assert sorted(ids) == sorted(record_ids(reference))
    assert parquet_digests(output) == parquet_digests(reference)
    assert (output / "_SUCCESS").exists()

    # A third run finds nothing new to do.
    again = subprocess.run(nightly_command(manifest, output), env=env, cwd=PROJECT_ROOT,
                           capture_output=True, text=True, timeout=120)
    assert again.returncode == 0 and f"{len(WARCS)} done, 0 to process now" in again.stdout


def test_max_shards_takes_new_shards_in_manifest_order(tmp_path, manifest):
    result = subprocess.run(nightly_command(manifest, tmp_path / "out", "--max-shards", "1", "--dry-run"),
                            cwd=PROJECT_ROOT, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert "0 done, 1 to process now, 1 left for later runs" in lines[0]
    assert lines[1].strip() == manifest.read_text().splitlines()[0]


@pytest.mark.parametrize("args, message", [
    (["--crawl", "CC-2024"], "expected a crawl id like CC-MAIN-2024-22"),
    (["--crawl", "CC-MAIN-2024-22", "--set", "input.splits_per_shard=0"], "fixed input.splits_per_shard"),
    (["--crawl", "CC-MAIN-2024-22", "--set", "spark.cores=4"], "spark.cores: unknown key"),
    (["--crawl", "CC-MAIN-2024-22", "--set", "s3.max_attempts=none"], "s3.max_attempts"),
])
def test_bad_nightly_invocations_fail_in_one_line(tmp_path, args, message):
    result = subprocess.run([sys.executable, "-m", "pipeline.cli", "nightly", *args, "--output", str(tmp_path)],
                            cwd=PROJECT_ROOT, capture_output=True, text=True, timeout=120)
    assert result.returncode == 2
    assert result.stderr.count("\n") == 1 and result.stderr.startswith("warcplex: error:")
    assert message in result.stderr


def test_a_spark_property_spark_refuses_ends_the_build_at_once_in_one_line(tmp_path, manifest):
    """A property value Spark refuses only when a task reads it is the user's mistake: exit 2 after the first
    attempt, one line of ours last, where every attempt failed alike and the build ended with exit 1."""
    command = nightly_command(manifest, tmp_path / "out", "--attempts", "3",
                              "--set", "spark.conf.spark.python.worker.reuse=maybe")
    result = subprocess.run(command, cwd=PROJECT_ROOT, capture_output=True, text=True, timeout=600,
                            env={**os.environ, "PYSPARK_PYTHON": sys.executable})
    assert result.returncode == 2, result.stderr[-2000:]
    assert result.stderr.strip().splitlines()[-1].startswith(
        "warcplex: error: Spark refused a property (spark.conf): The value 'maybe' in the config")
    assert "nightly attempt" not in result.stderr


def test_nightly_script_refuses_to_overlap(tmp_path):
    if shutil.which("flock") is None:
        pytest.skip("flock (util-linux) is needed by scripts/nightly.sh")
    lock = tmp_path / "nightly.lock"
    env = {**os.environ, "WARCPLEX_LOCK": str(lock), "WARCPLEX_LOG_DIR": str(tmp_path / "logs"),
           "WARCPLEX_PYTHON": sys.executable}
    script = str(PROJECT_ROOT / "scripts" / "nightly.sh")
    holder = subprocess.Popen(["flock", "-o", str(lock), "sleep", "30"])
    try:
        deadline = time.monotonic() + 10
        while subprocess.run(["flock", "-n", str(lock), "true"]).returncode == 0:
            assert time.monotonic() < deadline
            time.sleep(0.05)
        blocked = subprocess.run([script, "--crawl", "CC-MAIN-2024-22", "--output", str(tmp_path / "o")],
                                 env=env, capture_output=True, text=True, timeout=60)
    finally:
        holder.kill()
        holder.wait()
    assert blocked.returncode == 75 and "another build holds" in blocked.stderr
    # With the lock free, a usage error comes back as status 2 with the log named.
    failed = subprocess.run([script, "--crawl", "bogus", "--output", str(tmp_path / "o")],
                            env=env, capture_output=True, text=True, timeout=60)
    assert failed.returncode == 2
    log = next((tmp_path / "logs").glob("nightly-*.log")).read_text()
    assert "expected a crawl id" in log and "finished" in log
