"""`make bench`'s measuring: whole-process-tree CPU (scripts/cputree.py) and the script on a tiny input.

Figures are never asserted (the machine may be shared); what is checked is that CPU spent in
children, in orphans reparented away from their parent and in the JVM is counted at all.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
import textwrap

import pytest

from conftest import ROOT

SCRIPTS = ROOT / "scripts"


def load_cputree():
    spec = importlib.util.spec_from_file_location("cputree", SCRIPTS / "cputree.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules["cputree"] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


# A parent that burns 0.2 s of CPU after its child, which starts a grandchild and exits at once:
# the grandchild, orphaned, burns 0.3 s after its parent is gone.
TREE = textwrap.dedent("""
    import subprocess, sys, time
    def burn(seconds):
        start = time.process_time()
        while time.process_time() - start < seconds:
            pass
    role = sys.argv[1] if len(sys.argv) > 1 else "parent"
    if role == "grandchild":
        time.sleep(0.3)
        burn(0.3)
    elif role == "child":
        subprocess.Popen([sys.executable, __file__, "grandchild"])
    else:
        subprocess.run([sys.executable, __file__, "child"], check=True)
        burn(0.2)
""")


@pytest.mark.parametrize("cgroups", [True, False], ids=["cgroup-if-possible", "rusage-subreaper"])
def test_tree_cpu_counts_children_and_orphans(tmp_path, monkeypatch, cgroups):
    cputree = load_cputree()
    roots = cputree._cgroup_roots()
    if not cgroups:
        monkeypatch.setattr(cputree, "_cgroup_roots", lambda: [])
    script = tmp_path / "tree.py"
    script.write_text(TREE)
    usage = cputree.measure([sys.executable, str(script)], interval=0.05)
    assert usage.returncode == 0
    assert usage.cpu_seconds >= 0.5  # 0.2 s parent + 0.3 s orphaned grandchild (+ interpreter start-ups)
    assert usage.rusage_cpu_seconds >= 0.5  # the orphan was reaped here, as subreaper
    if not cgroups:
        assert usage.method in ("rusage+subreaper", "proc-sampling")
    assert usage.by_role.get("driver", 0) > 0
    assert not [group for _, root in roots for group in root.glob(f"cputree-{os.getpid()}-*")]  # removed


@pytest.mark.spark
def test_bench_script_runs_on_the_sample(tmp_path):
    if shutil.which("java") is None:
        pytest.skip("Java is needed for Spark")
    systems = ["floor", "primary"]
    if (ROOT / "build" / "datatrove-venv" / "bin" / "python").exists():
        systems.append("datatrove")
    results = tmp_path / "results.json"
    proc = subprocess.run([sys.executable, str(SCRIPTS / "bench.py"), "--warc", str(ROOT / "tests" / "data" /
                           "sample.warc.gz"), "--scale", "2", "--repeats", "1", "--systems", ",".join(systems),
                           "--work", str(tmp_path / "work"), "--results", str(results)],
                          capture_output=True, text=True, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "pages/CPU-s" in proc.stdout and "load average" in proc.stdout
    inputs = json.loads(results.read_text())["inputs"]
    summary, doubled = inputs["sample.warc.gz"]["summary"], inputs["sample.warc.gz x2"]["summary"]
    assert set(summary) == set(doubled) == set(systems)
    for system in systems:
        assert summary[system]["pages"] > 0 and summary[system]["cpu_seconds"] > 0
        # the copy has record ids of its own: warcplex's record-id dedup (on, as users run it) reads it whole
        assert doubled[system]["pages"] == 2 * summary[system]["pages"]
    primary = summary["primary"]
    assert primary["by_role"].get("jvm", 0) > 0  # the JVM is counted, not only the Python workers
    assert primary["by_role"].get("python_workers", 0) > 0
    assert primary["stages"]["total"] > 0  # warcplex's own per-stage CPU (stats.json cpu.*)
    assert primary["worker_peak_rss_mb"] > 0


SESSION = textwrap.dedent("""
    import json
    from pipeline.config import load_settings
    from pipeline.spark.session import spark_session
    settings = load_settings(None, ["spark.master=local[1]", "spark.conf.spark.ui.enabled=true"])
    spark = spark_session(settings)  # a SparkSession on spark_context(), the job's own context
    sc = spark.sparkContext
    jvm_args = list(sc._jvm.java.lang.management.ManagementFactory.getRuntimeMXBean().getInputArguments())
    print(json.dumps({"conf": dict(sc.getConf().getAll()), "jvm_args": jvm_args,
                      "squares": sc.parallelize(range(3), 1).map(lambda x: x * x).collect()}))
    spark.stop()
""")


@pytest.mark.spark
def test_local_session_has_batch_settings_and_config_wins(tmp_path):
    if shutil.which("java") is None:
        pytest.skip("Java is needed for Spark")
    env = {k: v for k, v in os.environ.items() if k != "SPARK_LAUNCHER_OPTS"}
    proc = subprocess.run([sys.executable, "-c", SESSION], capture_output=True, text=True, cwd=tmp_path, env=env)
    assert proc.returncode == 0, proc.stderr[-2000:]
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    conf = result["conf"]
    assert conf["spark.ui.enabled"] == "true"  # --set wins over the batch default
    assert conf["spark.python.worker.reuse"] == "true"
    assert "-XX:TieredStopAtLevel=1" in result["jvm_args"] and "-XX:+UseSerialGC" in result["jvm_args"]
    assert result["squares"] == [0, 1, 4]


POOLS = textwrap.dedent("""
    import json, os
    import pyarrow as pa
    from pipeline.config import load_settings
    from pipeline.spark.session import ONE_WORKER_POOL, spark_context, sql_session

    def daemon(_):
        yield os.getppid()  # a Python worker's parent is the daemon that forked it

    def daemon_batches(batches):
        for _ in batches:
            pass
        yield pa.RecordBatch.from_pydict({"daemon": [os.getppid()]})

    sc = spark_context(load_settings(None, ["spark.master=local[1]"]))
    spark = sql_session(sc)
    pipeline = sc.parallelize([0], 1).mapPartitions(daemon).collect()[0]
    corpus = spark.range(1, numPartitions=1).mapInArrow(daemon_batches, "daemon long").collect()[0].daemon
    spark.conf.set(ONE_WORKER_POOL[0], "true")  # Spark's default
    default = spark.range(1, numPartitions=1).mapInArrow(daemon_batches, "daemon long").collect()[0].daemon
    print(json.dumps({"pipeline": pipeline, "corpus": corpus, "default": default}))
    sc.stop()
""")


@pytest.mark.spark
def test_the_corpus_stages_python_udfs_run_in_the_page_pipelines_worker_pool(tmp_path):
    """An RDD task (the page pipeline) and a mapInArrow task (the corpus stages) on one session get workers of one
    daemon; with Spark's default simplified tracebacks the UDF's workers come from a second daemon."""
    if shutil.which("java") is None:
        pytest.skip("Java is needed for Spark")
    proc = subprocess.run([sys.executable, "-c", POOLS], capture_output=True, text=True, cwd=tmp_path, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    daemons = json.loads(proc.stdout.strip().splitlines()[-1])
    assert daemons["corpus"] == daemons["pipeline"]
    assert daemons["default"] != daemons["pipeline"]
