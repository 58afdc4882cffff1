"""A cluster of hosts on one machine: a standalone master and two workers, each worker and the driver in its own
mount namespace with a private tmpfs on /tmp (their temporary, work and local directories), so that nothing on
disk is shared between the driver and the workers but the read-only checkout.

The input is read from moto S3 behind the fault proxy of tests/test_s3.py (an S3 glob), the output is written back
there, with the corpus stages on (exact dedup, repeated lines). One worker is killed once the first split is
committed; the job finishes on the other (or a rerun finishes it), and the rows of data/ and corpus/ equal those of
a local run over the same shards: nothing lost, nothing duplicated.
"""

from __future__ import annotations

import io
import os
import signal
import subprocess
import sys
import threading
import time

import pyarrow.parquet as pq
import pytest
import pyspark
from pathlib import Path

from conftest import bench_file
from pipeline.config import PROJECT_ROOT, InputSettings, S3Settings
from pipeline.reading.reader import plan_splits
from pipeline.reading.shards import Shard
from test_cluster import exited, free_port, json_ui, wait_for
from test_s3 import BUCKET_IN, BUCKET_OUT, CREDENTIALS, FaultProxy, s3_server  # noqa: F401 (a fixture)

pytestmark = [pytest.mark.cluster, pytest.mark.spark, pytest.mark.s3, pytest.mark.slow]

SPARK_HOME = Path(pyspark.__file__).resolve().parent
SHARDS = 6
PRIVATE = "mount -t tmpfs tmpfs /tmp && mkdir -p /tmp/work /tmp/local && "


def private_tmp(command: str) -> list[str]:
    """``command`` in a mount namespace of its own with a fresh tmpfs on /tmp."""
    return ["unshare", "--mount", "--propagation", "private", "sh", "-c", PRIVATE + command]


def bench_shards(count: int) -> list[bytes]:
    """``count`` small shards cut from bench dev at gzip member boundaries (about 16 pages each)."""
    path = bench_file("warc", "bench-dev.warc.gz")
    splits = plan_splits([Shard(str(path), "bench-dev.warc.gz")], InputSettings(splits_per_shard=200, min_split_bytes=1),
                         S3Settings(), 1)
    with open(path, "rb") as fh:
        shards = []
        for split in splits[:count]:
            fh.seek(split.start)
            shards.append(fh.read(split.end - split.start))
    return shards


def rows(client, prefix: str, folder: str) -> list[tuple]:
    """Every row of ``folder`` under the output ``prefix``, with its partition, sorted."""
    listed = client.list_objects_v2(Bucket=BUCKET_OUT, Prefix=f"{prefix}/{folder}/")
    found = []
    for item in listed.get("Contents", []):
        if not item["Key"].endswith(".parquet"):
            continue
        language = next((p[len("language="):] for p in item["Key"].split("/") if p.startswith("language=")), None)
        table = pq.read_table(io.BytesIO(client.get_object(Bucket=BUCKET_OUT, Key=item["Key"])["Body"].read()))
        for row in table.to_pylist():
            row["language"] = language
            found.append(tuple(sorted(row.items())))
    return sorted(found, key=repr)


COMMON = ["--set", "perplexity.enabled=false", "--set", "index.enabled=false",
          "--set", "corpus.repeated_lines.enabled=true", "--set", "corpus.dedup.near=false",
          "--set", "corpus.quality.signals=false", "--set", "s3.backoff_base_s=0.01", "--set", "s3.backoff_max_s=0.05"]


class Cluster:
    """A master (plain) and workers (each in a private /tmp), stopped by PID."""

    def __init__(self, env: dict[str, str], logs: Path) -> None:
        self.env, self.logs = env, logs
        self.master_port, self.master_ui = free_port(), free_port()
        self.url = f"spark://127.0.0.1:{self.master_port}"
        self.processes: list[subprocess.Popen] = []

    def start_master(self) -> None:
        self._start("master", [str(SPARK_HOME / "bin" / "spark-class"), "org.apache.spark.deploy.master.Master",
                               "--host", "127.0.0.1", "--port", str(self.master_port),
                               "--webui-port", str(self.master_ui)])
        wait_for(lambda: json_ui(self.master_ui).get("status") == "ALIVE", "the master")

    def start_worker(self, name: str) -> subprocess.Popen:
        command = (f"exec {SPARK_HOME}/bin/spark-class org.apache.spark.deploy.worker.Worker --host 127.0.0.1 "
                   f"--cores 1 --memory 1g --webui-port {free_port()} --work-dir /tmp/work {self.url}")
        return self._start(name, private_tmp(command), {"SPARK_LOCAL_DIRS": "/tmp/local"})

    def _start(self, name: str, command: list[str], extra: dict[str, str] | None = None) -> subprocess.Popen:
        log = open(self.logs / f"{name}.log", "wb")
        process = subprocess.Popen(command, env={**self.env, **(extra or {})}, stdout=log, stderr=log,
                                   start_new_session=True)
        self.processes.append(process)
        return process

    def alive_workers(self) -> int:
        return sum(w["state"] == "ALIVE" for w in json_ui(self.master_ui)["workers"])

    def stop(self) -> None:
        for process in reversed(self.processes):
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGTERM)
                try:
                    process.wait(timeout=60)
                except subprocess.TimeoutExpired:
                    os.killpg(process.pid, signal.SIGKILL)
                    process.wait(timeout=30)


def submit(cluster: Cluster, proxy_url: str, output: str, env: dict[str, str], log: Path) -> subprocess.Popen:
    """spark-submit in client mode, the driver in a private /tmp: make dist's warcplex.zip and models shipped."""
    dist = "/tmp/dist"
    command = (f"{sys.executable} {PROJECT_ROOT}/scripts/make_dist.py --dist {dist} >/dev/null && "
               f"exec {SPARK_HOME}/bin/spark-submit --master {cluster.url} --py-files {dist}/warcplex.zip "
               f"--files \"$(cat {dist}/files.txt)\" --conf spark.pyspark.python={sys.executable} "
               f"--conf spark.executor.memory=512m --conf spark.executor.cores=1 --conf spark.task.maxFailures=4 "
               # The workers share the address 127.0.0.1, so Spark would take them for one host and read the
               # other's shuffle files from its own disk (spark.shuffle.readHostLocalDisk); on separate hosts it
               # fetches them over the network, as here.
               f"--conf spark.local.dir=/tmp/local --conf spark.shuffle.readHostLocalDisk=false "
               f"{PROJECT_ROOT}/jobs/clean_warc.py --input 's3://{BUCKET_IN}/multihost/*.warc.gz' --output {output} "
               f"--config conf/cluster.yaml --set s3.endpoint_url={proxy_url} "
               "--set spark.conf.spark.executor.memory=512m --set spark.conf.spark.executor.cores=1 "
               "--set spark.conf.spark.executor.memoryOverhead=384m " + " ".join(COMMON))
    handle = open(log, "wb")
    return subprocess.Popen(private_tmp(command), env={**env, "PYSPARK_DRIVER_PYTHON": sys.executable},
                            cwd=PROJECT_ROOT, stdout=handle, stderr=handle, start_new_session=True)


def test_two_private_workers_s3_in_and_out_a_worker_killed_loses_and_duplicates_nothing(s3_server, tmp_path):
    if subprocess.run(["unshare", "--mount", "true"], capture_output=True).returncode != 0:
        pytest.skip("unshare --mount is not permitted here (needs root or user namespaces)")
    endpoint, client, _ = s3_server
    for i, data in enumerate(bench_shards(SHARDS)):
        client.put_object(Bucket=BUCKET_IN, Key=f"multihost/shard-{i:02d}.warc.gz", Body=data)
    proxy = FaultProxy(int(endpoint.rsplit(":", 1)[1]))
    threading.Thread(target=proxy.serve_forever, daemon=True).start()
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYSPARK_PYTHON")}
    env.update(CREDENTIALS, SPARK_HOME=str(SPARK_HOME), SPARK_LOCAL_IP="127.0.0.1")
    cluster = Cluster(env, tmp_path)
    try:
        # The local run: the same shards, local[2], no faults.
        local = subprocess.run([sys.executable, "-m", "pipeline.cli", "run", "--input",
                                f"s3://{BUCKET_IN}/multihost/*.warc.gz", "--output", f"s3://{BUCKET_OUT}/local",
                                "--set", "spark.master=local[2]", "--set", f"s3.endpoint_url={endpoint}", *COMMON],
                               env={**env, "PYSPARK_PYTHON": sys.executable}, cwd=PROJECT_ROOT,
                               capture_output=True, text=True, timeout=900)
        assert local.returncode == 0, local.stderr[-3000:]

        cluster.start_master()
        victim = cluster.start_worker("worker-a")
        cluster.start_worker("worker-b")
        wait_for(lambda: cluster.alive_workers() == 2, "two workers", 120)
        output = f"s3://{BUCKET_OUT}/cluster"
        job = submit(cluster, proxy.url, output, env, tmp_path / "driver-1.log")
        # Kill worker A (and its executor) once the first split is committed.
        wait_for(lambda: client.list_objects_v2(Bucket=BUCKET_OUT, Prefix="cluster/_markers/").get("KeyCount", 0)
                 or job.poll() is not None, "the first marker", 900)
        killed_at = client.list_objects_v2(Bucket=BUCKET_OUT, Prefix="cluster/_markers/").get("KeyCount", 0)
        assert job.poll() is None, (tmp_path / "driver-1.log").read_text(errors="replace")[-4000:]  # mid-run
        os.killpg(victim.pid, signal.SIGKILL)
        victim.wait(timeout=30)
        status = job.wait(timeout=1200)
        attempts = 1
        if status != 0:  # the job failed with the worker: a rerun on the remaining worker finishes it
            attempts = 2
            status = submit(cluster, proxy.url, output, env, tmp_path / "driver-2.log").wait(timeout=1200)
        log = (tmp_path / f"driver-{attempts}.log").read_text(errors="replace")
        assert status == 0, log[-4000:]
        print(f"worker killed after {killed_at} of {SHARDS} markers; the job finished in {attempts} submission(s)")
        assert killed_at > 0
        assert {"slowdown", "internal", "cut", "put_slowdown"} <= set(proxy.faults)

        for folder in ("data", "corpus", "corpus_dropped/documents", "corpus_dropped/lines"):
            expected, found = rows(client, "local", folder), rows(client, "cluster", folder)
            assert found == expected, folder
            assert len(found) == len(set(found))
            assert expected or folder != "data"
        ids = [dict(r)["warc_record_id"] for r in rows(client, "cluster", "data")]
        assert len(ids) == len(set(ids)) > 0
        assert client.get_object(Bucket=BUCKET_OUT, Key="cluster/_corpus/marker.json")
        assert client.get_object(Bucket=BUCKET_OUT, Key="cluster/_SUCCESS")
    finally:
        cluster.stop()
        proxy.shutdown()
        proxy.server_close()
