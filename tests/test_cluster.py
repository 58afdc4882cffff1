"""spark-submit to a real Spark standalone cluster (one master, one worker, on 127.0.0.1).

The daemons are started with the ``sbin/spark-daemon.sh`` the pyspark wheel ships and stopped
by PID. The job is shipped the way a real cluster gets it: ``make dist``'s ``warcplex.zip``
with ``--py-files`` and the model files with ``--files``.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pyarrow.dataset as ds
import pytest
import pyspark

from pipeline import _native
from pipeline.config import PROJECT_ROOT

pytestmark = [pytest.mark.cluster, pytest.mark.spark]

SPARK_HOME = Path(pyspark.__file__).resolve().parent


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def json_ui(port: int) -> dict:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/json/", timeout=5) as response:
        return json.load(response)


def wait_for(predicate, what: str, timeout_s: float = 90.0):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            value = predicate()
            if value:
                return value
        except OSError:
            pass
        time.sleep(0.5)
    raise AssertionError(f"timed out waiting for {what}")


def exited(pid: int) -> bool:
    """The process is gone, or a zombie that its parent has not reaped yet."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    except OSError:
        return True


@pytest.fixture
def standalone_cluster(tmp_path):
    """A master and one worker (1 core, 1 GiB) bound to 127.0.0.1; yields (master URL, env, dirs)."""
    if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
        pytest.skip("Java is needed for a Spark cluster")
    env = {**os.environ, "SPARK_HOME": str(SPARK_HOME), "SPARK_LOCAL_IP": "127.0.0.1",
           "SPARK_LOG_DIR": str(tmp_path / "logs"), "SPARK_PID_DIR": str(tmp_path / "pids"),
           "SPARK_WORKER_DIR": str(tmp_path / "worker"), "SPARK_IDENT_STRING": "warcplex-test"}
    daemon = str(SPARK_HOME / "sbin" / "spark-daemon.sh")
    master_port, master_ui, worker_ui = free_port(), free_port(), free_port()
    master_url = f"spark://127.0.0.1:{master_port}"
    started: list[Path] = []
    try:
        subprocess.run(["bash", daemon, "start", "org.apache.spark.deploy.master.Master", "1",
                        "--host", "127.0.0.1", "--port", str(master_port), "--webui-port", str(master_ui)],
                       env=env, check=True, capture_output=True)
        started.append(tmp_path / "pids" / "spark-warcplex-test-org.apache.spark.deploy.master.Master-1.pid")
        wait_for(lambda: json_ui(master_ui).get("status") == "ALIVE", "the master")
        subprocess.run(["bash", daemon, "start", "org.apache.spark.deploy.worker.Worker", "1", master_url,
                        "--host", "127.0.0.1", "--cores", "1", "--memory", "1g", "--webui-port", str(worker_ui),
                        "--work-dir", str(tmp_path / "worker")],
                       env=env, check=True, capture_output=True)
        started.append(tmp_path / "pids" / "spark-warcplex-test-org.apache.spark.deploy.worker.Worker-1.pid")
        wait_for(lambda: [w for w in json_ui(master_ui)["workers"] if w["state"] == "ALIVE"], "the worker")
        yield master_url, master_ui, env, tmp_path
    finally:
        for pid_file in reversed(started):  # stop by PID, worker first
            if pid_file.exists():
                pid = int(pid_file.read_text().strip())
                try:
                    os.kill(pid, signal.SIGTERM)
                    try:
                        wait_for(lambda: exited(pid), f"pid {pid} to exit", 60)
                    except AssertionError:  # a daemon slow to stop on a loaded machine
                        os.kill(pid, signal.SIGKILL)
                        wait_for(lambda: exited(pid), f"pid {pid} to exit", 30)
                except ProcessLookupError:
                    pass


def test_spark_submit_runs_tasks_on_the_worker(standalone_cluster, cc_genuine_warc):
    if not (PROJECT_ROOT / "conf" / "models.yaml").exists():
        pytest.skip("conf/models.yaml (the shipped KenLM registry) is missing")
    master_url, master_ui, env, tmp = standalone_cluster
    dist = tmp / "dist"
    subprocess.run([sys.executable, str(PROJECT_ROOT / "scripts" / "make_dist.py"), "--dist", str(dist)],
                   check=True, capture_output=True)
    out = tmp / "out"
    submit = [str(SPARK_HOME / "bin" / "spark-submit"), "--master", master_url,
              "--py-files", str(dist / "warcplex.zip"), "--files", (dist / "files.txt").read_text().strip(),
              "--conf", f"spark.pyspark.python={sys.executable}",
              "--conf", "spark.executor.memory=512m", "--conf", "spark.executor.cores=1",
              str(PROJECT_ROOT / "jobs" / "clean_warc.py"),
              "--input", str(cc_genuine_warc), "--output", str(out), "--config", "conf/cluster.yaml",
              "--set", "spark.conf.spark.executor.memory=512m", "--set", "spark.conf.spark.executor.cores=1",
              "--set", "spark.conf.spark.executor.memoryOverhead=384m",
              "--set", "input.splits_per_shard=2", "--set", "input.min_split_bytes=1",
              "--set", "index.sample_share=1",  # every page in the index sample: its chain covers the corpus
              # every corpus stage (the index chain needs no --sentences: every split writes its sample)
              "--set", "corpus.repeated_lines.enabled=true", "--set", "corpus.dedup.near=true"]
    # The checkout must not leak into the driver through PYTHONPATH: it imports from warcplex.zip.
    submit_env = {k: v for k, v in env.items() if k not in ("PYTHONPATH", "PYSPARK_PYTHON")}
    submit_env["PYSPARK_DRIVER_PYTHON"] = sys.executable
    result = subprocess.run(submit, env=submit_env, cwd=PROJECT_ROOT, capture_output=True, text=True, timeout=900)
    errors = [line for line in result.stderr.splitlines() if " INFO " not in line]
    assert result.returncode == 0, result.stdout[-2000:] + "\n".join(errors[-60:])

    stats = json.loads((out / "stats.json").read_text())
    assert stats["splits"]["processed"] == stats["run"]["splits"] == 2
    assert stats["outcome"]["kept"] == ds.dataset(sorted(out.glob("data/language=*/*.parquet"))).count_rows() > 0
    # The corpus stages ran on the cluster after the splits, on the same data
    corpus = stats["corpus"]
    assert corpus["documents_in"] == stats["outcome"]["kept"]
    assert corpus["order"] == ["exact_dedup", "repeated_lines", "near_dedup", "quality"]
    assert ds.dataset(out / "corpus").count_rows() == corpus["documents_out"] > 0
    # ... and the index-size chain covers the same sampled pages from all visible text to the last stage
    chain = [link["step"] for link in stats["index"]["chain"]]
    assert chain == ["visible", "main_content", "filtered", *[f"corpus.{name}" for name in corpus["order"]]]
    assert stats["index"]["chain"][-1]["documents"] == corpus["documents_out"]
    assert stats["index"]["sample"]["splits"] == 2 and stats["index"]["sample"]["exact"]
    assert all(link["query_cpu_seconds"] > 0 for link in stats["index"]["chain"])
    # The whole job's CPU: the driver JVM apart from the executor JVM, which a probe task read on the worker
    job = stats["job_cpu"]
    assert not job["local"] and job["executors_probed"] >= 1
    assert "probe" in job["method"]["executor_jvms"] and job["parts"]["executor_jvms"] > job["executor_tasks"] > 0
    assert all(job["parts"][part] > 0 for part in ("driver_jvm", "python_driver", "python_workers"))
    assert stats["carbon"]["cpu_seconds"] == job["total"]
    # The tasks ran in an executor the worker launched for this application ...
    app = wait_for(lambda: [a for a in json_ui(master_ui)["completedapps"] if a["name"] == "warcplex"],
                   "the application in the master's list")[0]
    executor_dirs = list((tmp / "worker" / app["id"]).iterdir())
    assert executor_dirs and (executor_dirs[0] / "stderr").exists()
    # ... which received the models shipped with --files ...
    assert (executor_dirs[0] / "en.3gram.trie.bin").exists()
    # ... and the compiled parts, which its workers loaded from there (warcplex.zip cannot hold them).
    assert all((executor_dirs[0] / _native.shipped_name(part)).exists() for part in _native.PARTS)
    assert stats["stage"]["blocks"]["blocks"]["total"] > 0 and "native" not in stats
    # ... and whose Python workers (not the driver's process) loaded them.
    load_pids = set(stats["model_loads"])
    assert load_pids and f"pid{os.getpid()}" not in load_pids


def test_a_registry_shipped_with_its_models_finds_them_by_name(tmp_path):
    """What an executor sees with --files: the registry and the binaries side by side, paths as written."""
    registry = PROJECT_ROOT / "conf" / "models.yaml"
    if not registry.exists():
        pytest.skip("conf/models.yaml (the shipped KenLM registry) is missing")
    from pipeline.model_registry import load_registry

    entries = load_registry(str(registry))
    shipped = tmp_path / "sparkfiles"
    shipped.mkdir()
    shutil.copy(registry, shipped / "models.yaml")
    language, entry = next(iter(entries.items()))
    shutil.copy(entry.path if os.path.isabs(entry.path) else PROJECT_ROOT / entry.path,
                shipped / Path(entry.path).name)
    moved = load_registry(str(shipped / "models.yaml"))
    assert moved[language].path == str(shipped / Path(entry.path).name)
    assert entries[language].path == entry.path  # the project's registry keeps its own paths
