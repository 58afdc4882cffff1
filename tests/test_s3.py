"""S3 in and out against a real S3-compatible server (moto_server on 127.0.0.1), with faults.

A threaded proxy in front of the server answers WARC GETs with ``SlowDown`` 503s and 500s and
cuts bodies mid-object, and throttles some output writes. The job reads a ``warc.paths.gz``
manifest from S3, writes Parquet, markers, stats, summary and ``_SUCCESS`` to S3, and must
produce exactly the records of a fault-free run: nothing lost, nothing duplicated.
"""

from __future__ import annotations

import gzip
import http.client
import http.server
import io
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import threading
import time
from collections import Counter
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from conftest import real_warc
from pipeline.config import PROJECT_ROOT, InputSettings, S3Settings, load_settings
from pipeline.reading.sources import InputError, RetriesExhausted, open_stream, resolve_inputs, resolve_shards
from pipeline.spark.runner import run_split
from pipeline.stats import Stats
from pipeline.reading.reader import ShardReadError, read_pages
from pipeline.reading.shards import Split

pytestmark = [pytest.mark.s3, pytest.mark.spark]

WARCS = [("cc-genuine", "CC-MAIN-2020-34.sample-from-resiliparse-tests.warc.gz"),
         ("cc-genuine", "CC-MAIN-2024-22.whirlwind.warc.gz")]
BUCKET_IN, BUCKET_OUT = "crawl", "corpus"
CREDENTIALS = {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing-secret-never-logged",
               "AWS_DEFAULT_REGION": "us-east-1", "AWS_EC2_METADATA_DISABLED": "true",
               "AWS_REQUEST_CHECKSUM_CALCULATION": "WHEN_REQUIRED",
               "AWS_RESPONSE_CHECKSUM_VALIDATION": "WHEN_REQUIRED"}


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class FaultProxy(http.server.ThreadingHTTPServer):
    """Forwards to the S3 server; GETs of ``*.warc.gz`` and ``*.arc.gz`` cycle through 503 SlowDown, 500,
    a body cut in half, then a clean answer; every 4th PUT is throttled with a 503."""

    daemon_threads = True

    def __init__(self, upstream_port: int) -> None:
        super().__init__(("127.0.0.1", 0), _ProxyHandler)
        self.upstream_port = upstream_port
        self.faults: Counter[str] = Counter()
        self.lock = threading.Lock()
        self.warc_gets = 0
        self.puts = 0
        # Keys containing "slow-after-cut": the first GET is cut mid-body, then every GET is
        # answered SlowDown for `slow_seconds` (longer than the extraction timeout).
        self.slow_seconds = 0.0
        self.slow_until: float | None = None
        # When set, every other object listing (ListObjectsV2) is answered SlowDown.
        self.throttle_listings = False
        self.listings = 0

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"


class _ProxyHandler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: FaultProxy

    def log_message(self, *args) -> None:  # keep the test output quiet
        pass

    def _error(self, status: int, code: str) -> None:
        body = (f"<?xml version='1.0' encoding='UTF-8'?><Error><Code>{code}</Code>"
                f"<Message>injected</Message></Error>").encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/xml")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _forward(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else None
        fault = None
        with self.server.lock:
            if "always-503" in self.path:
                fault = "slowdown"
            elif self.server.throttle_listings and self.command == "GET" and "list-type=2" in self.path:
                self.server.listings += 1
                fault = "list_slowdown" if self.server.listings % 2 else None
            elif "slow-after-cut" in self.path and self.command == "GET":
                if self.server.slow_until is None:
                    fault = "cut"
                    self.server.slow_until = time.monotonic() + self.server.slow_seconds
                elif time.monotonic() < self.server.slow_until:
                    fault = "slowdown"
            elif self.command == "GET" and (".warc.gz" in self.path or ".arc.gz" in self.path):
                self.server.warc_gets += 1
                fault = [None, "slowdown", "internal", "cut"][self.server.warc_gets % 4]
            elif self.command == "PUT":
                self.server.puts += 1
                fault = "put_slowdown" if self.server.puts % 4 == 0 else None
            if fault:
                self.server.faults[fault] += 1
        if fault in ("slowdown", "put_slowdown", "list_slowdown"):
            return self._error(503, "SlowDown")
        if fault == "internal":
            return self._error(500, "InternalError")
        upstream = http.client.HTTPConnection("127.0.0.1", self.server.upstream_port, timeout=30)
        headers = {k: v for k, v in self.headers.items() if k.lower() != "connection"}
        upstream.request(self.command, self.path, body=body, headers=headers)
        response = upstream.getresponse()
        payload = response.read()
        upstream.close()
        self.send_response(response.status)
        for key, value in response.getheaders():
            if key.lower() not in ("connection", "transfer-encoding", "content-length", "date", "server"):
                self.send_header(key, value)
        # A HEAD answer has no body: its Content-Length is the object's size (pyarrow reads that many bytes)
        self.send_header("Content-Length", response.getheader("Content-Length", "0") if self.command == "HEAD"
                         else str(len(payload)))
        if fault == "cut":
            self.send_header("Connection", "close")
        self.end_headers()
        if self.command == "HEAD":
            return
        if fault == "cut":  # half the body, then drop the connection
            self.wfile.write(payload[: len(payload) // 2])
            self.wfile.flush()
            self.close_connection = True
            self.connection.shutdown(socket.SHUT_RDWR)
            return
        self.wfile.write(payload)

    do_GET = do_PUT = do_POST = do_HEAD = do_DELETE = _forward


@pytest.fixture(scope="module")
def s3_server():
    """moto_server on a free 127.0.0.1 port, with the benchmark WARCs and a manifest uploaded."""
    server = shutil.which("moto_server", path=os.path.dirname(sys.executable)) or shutil.which("moto_server")
    if server is None:
        pytest.skip("moto_server is not installed (pip install 'moto[server]')")
    warcs = [real_warc(*parts) for parts in WARCS]
    port = free_port()
    process = subprocess.Popen([server, "-H", "127.0.0.1", "-p", str(port)],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        endpoint = f"http://127.0.0.1:{port}"
        os.environ.update(CREDENTIALS)
        import boto3

        client = boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1")
        deadline = time.monotonic() + 30
        while True:
            try:
                client.list_buckets()
                break
            except Exception:
                if time.monotonic() > deadline or process.poll() is not None:
                    raise
                time.sleep(0.3)
        client.create_bucket(Bucket=BUCKET_IN)
        client.create_bucket(Bucket=BUCKET_OUT)
        keys = []
        for path in warcs:
            key = f"crawl-data/TEST/segments/1/warc/{path.name}"
            client.upload_file(str(path), BUCKET_IN, key)
            keys.append(key)
        client.upload_file(str(warcs[-1]), BUCKET_IN, "broken/always-503.warc.gz")
        for crawl in ("TEST", "CC-MAIN-2099-01"):
            client.put_object(Bucket=BUCKET_IN, Key=f"crawl-data/{crawl}/warc.paths.gz",
                              Body=gzip.compress(("\n".join(keys) + "\n").encode()))
        yield endpoint, client, warcs
    finally:
        process.terminate()
        process.wait(timeout=10)


@pytest.fixture
def fault_proxy(s3_server):
    proxy = FaultProxy(int(s3_server[0].rsplit(":", 1)[1]))
    thread = threading.Thread(target=proxy.serve_forever, daemon=True)
    thread.start()
    yield proxy
    proxy.shutdown()
    proxy.server_close()


def test_stream_survives_faults_byte_for_byte(s3_server, fault_proxy):
    """Ranged-GET resume: every WARC read through the faulty proxy equals the file."""
    _, _, warcs = s3_server
    settings = S3Settings(endpoint_url=fault_proxy.url, backoff_base_s=0.01, backoff_max_s=0.05)
    shards = resolve_inputs([f"s3://{BUCKET_IN}/crawl-data/TEST/warc.paths.gz"], settings)
    assert shards == [f"s3://{BUCKET_IN}/crawl-data/TEST/segments/1/warc/{p.name}" for p in warcs]
    for shard, path in zip(shards, warcs):
        with open_stream(shard, settings) as stream:
            assert stream.read() == path.read_bytes()
    assert {"slowdown", "internal", "cut"} <= set(fault_proxy.faults)


def test_a_prefix_and_globs_are_listed_past_one_page_sorted_by_key(s3_server, fault_proxy):
    """1,003 objects under a prefix (more than one 1,000-key page of ListObjectsV2), listed through throttled
    listings: every WARC, sorted, each with the shard key it has when named alone; a glob keeps to one level
    unless it says ``**``."""
    _, client, _ = s3_server
    names = [f"many/seg-{i:04d}.warc.gz" for i in range(1002, -1, -1)]  # uploaded in reverse order
    for key in [*names, "many/sub/deep.warc.gz", "many/README.txt"]:
        client.put_object(Bucket=BUCKET_IN, Key=key, Body=b"")
    settings = S3Settings(endpoint_url=fault_proxy.url, backoff_base_s=0.01, backoff_max_s=0.05)
    fault_proxy.throttle_listings = True
    prefix = resolve_shards([f"s3://{BUCKET_IN}/many/"], settings)
    assert [s.uri for s in prefix] == [f"s3://{BUCKET_IN}/{k}" for k in sorted([*names, "many/sub/deep.warc.gz"])]
    assert fault_proxy.listings >= 4 and fault_proxy.faults["list_slowdown"] >= 2  # two pages, each throttled once
    alone = resolve_shards([f"s3://{BUCKET_IN}/many/seg-0007.warc.gz"], settings)[0]
    assert alone in prefix and alone.key == "many/seg-0007.warc.gz"
    one_level = resolve_inputs([f"s3://{BUCKET_IN}/many/seg-00[0-1]?.warc.gz"], settings)
    assert one_level == [f"s3://{BUCKET_IN}/many/seg-{i:04d}.warc.gz" for i in range(20)]
    deep = resolve_inputs([f"s3://{BUCKET_IN}/many/**/*.warc.gz"], settings)
    assert len(deep) == len(names) + 1 and deep == sorted(deep)
    for spec, message in ((f"s3://{BUCKET_IN}/many/*.arc.gz", "glob matches no objects"),
                          (f"s3://{BUCKET_IN}/nothing-here/", "holds no"),
                          ("s3://no-such-bucket/warcs/", "cannot list (NoSuchBucket)")):
        with pytest.raises(InputError, match=re.escape(message)):
            resolve_shards([spec], settings)


def test_exhausted_retries_fail_the_split_instead_of_marking_it_read(s3_server, fault_proxy):
    """A shard that stays throttled fails its split (no marker; the next run retries it), never a file error."""
    settings = S3Settings(endpoint_url=fault_proxy.url, max_attempts=3, backoff_base_s=0.01, backoff_max_s=0.02)
    uri = f"s3://{BUCKET_IN}/broken/always-503.warc.gz"
    with pytest.raises(RetriesExhausted, match="after 3 attempts"):
        open_stream(uri, settings).read()
    stats = Stats()
    with pytest.raises(ShardReadError, match="after 3 attempts"):
        list(read_pages(Split(uri, 0, 1), InputSettings(), settings, stats))
    assert not stats.file_errors


def test_missing_object_fails_its_split_without_a_marker(s3_server, tmp_path):
    """S3 NoSuchKey: the split fails (no marker is written) and the next run reads it again."""
    endpoint, _, _ = s3_server
    settings = load_settings(None, [f"s3.endpoint_url={endpoint}", "perplexity.enabled=false"])
    split = Split(f"s3://{BUCKET_IN}/crawl-data/TEST/segments/1/warc/missing.warc.gz", 0, 1)
    with pytest.raises(ShardReadError, match="NoSuchKey"):
        run_split(split, settings, str(tmp_path / "out"))
    assert not (tmp_path / "out" / "_markers").exists()


def test_throttling_longer_than_the_extraction_timeout_is_survived(s3_server, fault_proxy, tmp_path):
    """25 s of SlowDown once failed a run: the 10 s per-page guard interrupted the retry sleep.
    Here 3 s of SlowDown after a cut connection, with a 1 s guard, read every record."""
    _, client, warcs = s3_server
    client.upload_file(str(warcs[0]), BUCKET_IN, "slow/slow-after-cut.warc.gz")
    fault_proxy.slow_seconds = 3.0
    common = ["perplexity.enabled=false", "extract.cascade=[resiliparse,conservative]", "extract.timeout_s=1"]
    settings = load_settings(None, [*common, f"s3.endpoint_url={fault_proxy.url}", "s3.backoff_base_s=0.05",
                                    "s3.backoff_max_s=0.2", "s3.max_attempts=400"])
    stats = run_split(Split(f"s3://{BUCKET_IN}/slow/slow-after-cut.warc.gz", 0, 1), settings, str(tmp_path / "s3"))
    reference = run_split(Split(str(warcs[0]), 0, 1), load_settings(None, common), str(tmp_path / "local"))
    assert fault_proxy.faults["cut"] == 1 and fault_proxy.faults["slowdown"] >= 5
    assert stats["records"] == reference["records"] and stats["outcome"] == reference["outcome"]
    assert "error" not in stats["outcome"] and not stats.get("file_errors")


def test_an_arc_file_is_read_from_s3_through_faults(s3_server, fault_proxy, tmp_path):
    """A gzipped ARC written from the bucket's real WARC, read from S3 through throttling, 5xx answers and cut
    bodies: the same records and payloads as from disk."""
    from make_arc import arc_bytes, responses

    _, client, warcs = s3_server
    data = arc_bytes(responses(warcs[0]), "pages.arc.gz", gzipped=True)
    client.put_object(Bucket=BUCKET_IN, Key="arc/pages.arc.gz", Body=data)
    local = tmp_path / "pages.arc.gz"
    local.write_bytes(data)
    settings = load_settings(None, [f"s3.endpoint_url={fault_proxy.url}", "s3.backoff_base_s=0.01",
                                    "s3.backoff_max_s=0.05"])

    def pages(uri: str) -> tuple[list, Stats]:
        stats = Stats()
        split = Split(uri, 0, 1, reader="arc")
        return [(p.record_id, p.url, p.html) for p in read_pages(split, settings.input, settings.s3, stats)], stats

    remote, stats = pages(f"s3://{BUCKET_IN}/arc/pages.arc.gz")
    assert remote == pages(str(local))[0] and stats.counts["records.arc"] == len(remote) > 10
    assert fault_proxy.faults["cut"] + fault_proxy.faults["slowdown"] >= 1 and not stats.file_errors


def run_job(endpoint: str, output: str) -> subprocess.CompletedProcess:
    env = {**os.environ, **CREDENTIALS, "SPARK_LOCAL_IP": "127.0.0.1"}
    command = [sys.executable, "-m", "pipeline.cli", "run",
               "--input", f"s3://{BUCKET_IN}/crawl-data/TEST/warc.paths.gz", "--output", output,
               "--config", str(PROJECT_ROOT / "conf" / "local.yaml"),
               "--set", "spark.master=local[1]", "--set", f"s3.endpoint_url={endpoint}",
               "--set", "s3.backoff_base_s=0.01", "--set", "s3.backoff_max_s=0.05"]
    if not (PROJECT_ROOT / "conf" / "models.yaml").exists():
        command += ["--set", "perplexity.enabled=false"]
    return subprocess.run(command, env=env, cwd=PROJECT_ROOT, capture_output=True, text=True, timeout=600)


def read_output(client, prefix: str) -> tuple[dict, list[str], dict]:
    """The _SUCCESS manifest, every record id in data/, and stats.json of an s3:// output."""
    manifest = json.loads(client.get_object(Bucket=BUCKET_OUT, Key=f"{prefix}/_SUCCESS")["Body"].read())
    listed = {o["Key"][len(prefix) + 1:]: o["Size"]
              for o in client.list_objects_v2(Bucket=BUCKET_OUT, Prefix=f"{prefix}/")["Contents"]}
    for entry in manifest["files"]:
        assert listed[entry["path"]] == entry["size"]
    # and it names every object (listed folder by folder: S3's prefixes and pyarrow's folder markers are not files)
    assert {entry["path"] for entry in manifest["files"]} == {
        key for key in listed if key and not key.startswith("_tmp/") and key != "_SUCCESS" and not key.endswith("/")}
    ids = []
    for entry in manifest["files"]:
        if entry["path"].endswith(".parquet") and entry["path"].startswith("data/"):
            body = client.get_object(Bucket=BUCKET_OUT, Key=f"{prefix}/{entry['path']}")["Body"].read()
            ids.extend(pq.read_table(io.BytesIO(body), columns=["warc_record_id"]).column(0).to_pylist())
    stats = json.loads(client.get_object(Bucket=BUCKET_OUT, Key=f"{prefix}/stats.json")["Body"].read())
    return manifest, ids, stats


def test_job_s3_to_s3_with_faults_loses_and_duplicates_nothing(s3_server, fault_proxy):
    endpoint, client, warcs = s3_server
    if shutil.which("java") is None:
        pytest.skip("Java is needed for Spark")
    clean = run_job(endpoint, f"s3://{BUCKET_OUT}/clean")
    assert clean.returncode == 0, clean.stderr[-3000:]
    faulty = run_job(fault_proxy.url, f"s3://{BUCKET_OUT}/faulty")
    assert faulty.returncode == 0, faulty.stderr[-3000:]
    assert {"slowdown", "internal", "cut", "put_slowdown"} <= set(fault_proxy.faults)

    clean_manifest, clean_ids, clean_stats = read_output(client, "clean")
    faulty_manifest, faulty_ids, faulty_stats = read_output(client, "faulty")
    assert len(faulty_ids) == len(set(faulty_ids)) > 0
    assert sorted(faulty_ids) == sorted(clean_ids)
    assert faulty_stats["records"] == clean_stats["records"]
    assert faulty_stats["splits"]["processed"] == len(warcs)
    assert not faulty_stats.get("file_errors") and not faulty_stats.get("read_errors")
    paths = {entry["path"] for entry in faulty_manifest["files"]}
    assert {"stats.json", "summary.txt"} <= paths
    assert sum(p.startswith("_markers/") for p in paths) == len(warcs)
    assert paths == {entry["path"] for entry in clean_manifest["files"]}
    # The corpus stages ran on the s3:// output, read and written by the tasks, corpus/ before the marker
    corpus = faulty_stats["corpus"]
    assert "skipped" not in corpus and corpus["documents_in"] == len(faulty_ids)
    assert "_corpus/marker.json" in paths
    corpus_ids = []
    for path in sorted(p for p in paths if p.startswith("corpus/") and p.endswith(".parquet")):
        body = client.get_object(Bucket=BUCKET_OUT, Key=f"faulty/{path}")["Body"].read()
        corpus_ids += pq.read_table(io.BytesIO(body), columns=["warc_record_id"]).column(0).to_pylist()
    assert len(corpus_ids) == corpus["documents_out"] > 0 and set(corpus_ids) <= set(faulty_ids)
    same = ("documents_out", "bytes_out", "order")
    assert [corpus[key] for key in same] == [clean_stats["corpus"][key] for key in same]
    # The stages' checkpoints lived in the bucket, under _tmp/corpus/, and are gone once committed.
    assert not client.list_objects_v2(Bucket=BUCKET_OUT, Prefix="faulty/_tmp/corpus/").get("Contents")
    # Credentials never reach a log, the stats or the summary.
    secret = CREDENTIALS["AWS_SECRET_ACCESS_KEY"]
    assert secret not in faulty.stdout + faulty.stderr + json.dumps(faulty_stats)


def test_builds_that_add_to_a_corpus_on_s3_give_the_rows_of_one_build(s3_server, tmp_path):
    """Three nights into an s3:// output, each build adding to the last (its demotions rewrite earlier files in the
    bucket, from the tasks), against one local build over the same shards."""
    from test_incremental import SETTINGS, build, make_nights, outputs

    endpoint, client, _ = s3_server
    if shutil.which("java") is None:
        pytest.skip("Java is needed for Spark")
    (tmp_path / "nights").mkdir()
    plan = make_nights(tmp_path / "nights")
    for path in plan["paths"]:
        client.upload_file(str(path), BUCKET_IN, f"nights/{path.name}")
    env = {**os.environ, **CREDENTIALS, "SPARK_LOCAL_IP": "127.0.0.1"}
    for night in (1, 2, 3):
        inputs = [f"s3://{BUCKET_IN}/nights/night{n}.warc.gz" for n in range(1, night + 1)]
        result = subprocess.run(
            [sys.executable, "-m", "pipeline.cli", "run", "--input", *inputs, "--output", f"s3://{BUCKET_OUT}/nights",
             "--config", str(PROJECT_ROOT / "conf" / "local.yaml"), *SETTINGS, "--set", "spark.master=local[1]",
             "--set", f"s3.endpoint_url={endpoint}", "--set", "s3.backoff_base_s=0.01",
             "--set", "s3.backoff_max_s=0.05"], env=env, cwd=PROJECT_ROOT, capture_output=True, text=True,
            timeout=900)
        assert result.returncode == 0, result.stderr[-3000:]
    stats = json.loads(client.get_object(Bucket=BUCKET_OUT, Key="nights/stats.json")["Body"].read())["corpus"]
    assert (stats["build"], stats["generation"], stats["demoted"]) == ("incremental", 2, 2)
    assert stats["files_rewritten"] >= 1
    local = tmp_path / "local"
    build(plan["paths"], local)
    copy = tmp_path / "copied"
    for item in client.list_objects_v2(Bucket=BUCKET_OUT, Prefix="nights/")["Contents"]:
        relative = item["Key"][len("nights/"):]
        if relative.split("/", 1)[0] in ("corpus", "corpus_dropped", "_corpus") and relative.endswith(".parquet"):
            (copy / relative).parent.mkdir(parents=True, exist_ok=True)
            client.download_file(BUCKET_OUT, item["Key"], str(copy / relative))
    def without_shard_names(found: dict) -> dict:  # warc_filename is the s3:// URI on one side, a path on the other
        return {name: [{k: v for k, v in row.items() if k != "warc_filename"} for row in rows]
                for name, rows in found.items()}

    assert without_shard_names(outputs(copy)) == without_shard_names(outputs(local))
    assert not client.list_objects_v2(Bucket=BUCKET_OUT, Prefix="nights/_tmp/corpus/").get("Contents")


def test_nightly_finds_a_crawl_on_s3(s3_server, tmp_path):
    """``--crawl`` with an s3:// base: the crawl's warc.paths.gz is read from the bucket."""
    endpoint, _, warcs = s3_server
    result = subprocess.run([sys.executable, "-m", "pipeline.cli", "nightly", "--crawl", "CC-MAIN-2099-01",
                             "--base-url", f"s3://{BUCKET_IN}/", "--output", str(tmp_path / "out"),
                             "--set", f"s3.endpoint_url={endpoint}", "--max-shards", "1", "--dry-run"],
                            env={**os.environ, **CREDENTIALS}, cwd=PROJECT_ROOT, capture_output=True, text=True,
                            timeout=120)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].startswith(f"warcplex nightly: {len(warcs)} shards in "
                               f"s3://{BUCKET_IN}/crawl-data/CC-MAIN-2099-01/warc.paths.gz")
    assert lines[1].strip() == f"s3://{BUCKET_IN}/crawl-data/TEST/segments/1/warc/{warcs[0].name}"
