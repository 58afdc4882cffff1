"""The job's whole CPU: every process a run starts, each part shown (``stats.json`` → ``job_cpu``).

The per-stage CPU of the steps (``cpu.<stage>``) is the Python workers' time inside the split tasks;
a run also spends CPU in the driver JVM, the executor JVMs, the Python driver and the Python
workers outside those tasks (start-up, imports, the corpus stages' Python functions). The parts:

- ``driver_jvm``: the driver JVM process (``/proc``: all its threads, and the children it reaped,
  such as spark-submit's launcher JVM), less the executor's part when the executor lives in it
  (``local[*]``);
- ``executor_jvms``: the executor JVM processes, read on each executor by a probe task at the end of
  the job; in ``local[*]``, and where no probe could read one, Spark's task metrics
  (``executorCpuTime + executorDeserializeCpuTime`` of every stage), shown as ``executor_tasks``;
- ``python_workers``: on each executor, the pyspark daemons its JVM started, each with the workers it
  reaped and those still running (``/proc``, read by the same probe);
- ``python_driver``: this process (``getrusage``, itself and the children it reaped), read last.

``start_up`` is the part spent before the first page: the Python driver and the driver JVM until the
SparkContext is up, each Python worker until its first split starts and its models' loading
(``cpu_start_up`` of the split tasks), and each pyspark daemon's own CPU (what it imports before it forks the
workers, ``pipeline/spark/worker_daemon.py``). ``corpus`` is what the whole job spent during the corpus stages
(the same reading taken after the split tasks and at the end). What runs after the last reading
(stopping Spark, writing the files) is not counted.
Without ``/proc`` (not Linux) the process parts are missing and ``method`` says so.
"""

from __future__ import annotations

import os
import resource
import socket
import time
from typing import Any, Iterable

CLOCK_TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
PARTS = ("driver_jvm", "executor_jvms", "python_driver", "python_workers")


def _stat(pid: int) -> list[str] | None:
    """The fields of ``/proc/<pid>/stat`` after the command name (field 3 is index 0)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            raw = fh.read()
    except OSError:
        return None
    return raw[raw.rfind(b")") + 2:].decode("ascii", "replace").split()


def process_cpu(pid: int, reaped: bool = True) -> float | None:
    """CPU seconds of a live process (user + system), with those of the children it reaped when ``reaped``."""
    fields = _stat(pid)
    if fields is None:
        return None
    ticks = int(fields[11]) + int(fields[12]) + ((int(fields[13]) + int(fields[14])) if reaped else 0)
    return ticks / CLOCK_TICKS


def _children() -> dict[int, list[int]]:
    """Every live process's children, from ``/proc``."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            fields = _stat(int(entry))
            if fields is not None:
                children.setdefault(int(fields[1]), []).append(int(entry))
    return children


def _cmdline(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as fh:
            return fh.read().replace(b"\0", b" ").decode("utf-8", "replace")
    except OSError:
        return ""


def python_driver_cpu() -> float:
    """This process's CPU and that of the children it reaped."""
    own, reaped = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + reaped.ru_utime + reaped.ru_stime


def probe_executor(_: Iterable) -> Iterable[dict[str, Any]]:
    """On a Python worker: its executor's JVM and Python CPU so far, from ``/proc`` (nothing when unreadable).

    The worker's parent is the pyspark daemon, whose parent is the executor JVM; every daemon that JVM
    started is counted with the workers it reaped and the workers still running."""
    daemon = os.getppid()
    daemon_fields = _stat(daemon)
    if daemon_fields is None or "pyspark" not in _cmdline(daemon):
        return []
    jvm = int(daemon_fields[1])
    jvm_fields = _stat(jvm)
    if jvm_fields is None:
        return []
    children = _children()
    python = daemons = 0.0
    for pid in children.get(jvm, []):
        if "pyspark" in _cmdline(pid):
            python += (process_cpu(pid) or 0.0) + sum(process_cpu(worker) or 0.0 for worker in children.get(pid, []))
            daemons += process_cpu(pid, reaped=False) or 0.0
    return [{"host": socket.gethostname(), "jvm_pid": jvm, "jvm_started": int(jvm_fields[19]),
             "jvm": process_cpu(jvm) or 0.0, "python_workers": python, "daemons": daemons}]


def task_metrics_cpu(sc) -> float:
    """Spark's task metrics over every stage of the application: ``executorCpuTime`` plus
    ``executorDeserializeCpuTime``, in seconds (the executor JVMs' task threads)."""
    gateway = sc._gateway
    stages = sc._jsc.sc().statusStore().stageList(None, False, False, gateway.new_array(gateway.jvm.double, 0), None)
    total, iterator = 0, stages.iterator()
    while iterator.hasNext():
        stage = iterator.next()
        total += stage.executorCpuTime() + stage.executorDeserializeCpuTime()
    return total / 1e9


class JobCpu:
    """The whole CPU of one run, read in three moments: the SparkContext up, the Spark work done, the end."""

    def __init__(self, sc) -> None:
        self.host = socket.gethostname()
        self.jvm_pid: int | None = None
        try:
            self.jvm_pid = int(sc._jvm.java.lang.ProcessHandle.current().pid())
        except Exception:  # a JVM without ProcessHandle, or no gateway (never in a supported Spark)
            pass
        self.readable = self.jvm_pid is not None and process_cpu(self.jvm_pid) is not None
        self.start_up = {"python_driver": python_driver_cpu(),
                         "driver_jvm": process_cpu(self.jvm_pid) if self.readable else None}
        self.spark: dict[str, Any] = {}
        self.pages_done: dict[str, Any] = {}

    def read_spark(self, sc, parallelism: int) -> None:
        """After the last Spark job, before the context stops: the JVMs, the task metrics and, by a probe task
        on each executor, the executors' JVM and Python processes."""
        self.spark = self._read(sc, parallelism)

    def read_pages_done(self, sc, parallelism: int) -> None:
        """The same reading after the split tasks, before the corpus stages: the difference to the last reading
        is what the corpus stages cost (``corpus`` in :meth:`section`)."""
        self.pages_done = self._read(sc, parallelism)

    def _read(self, sc, parallelism: int) -> dict[str, Any]:
        tasks = task_metrics_cpu(sc)
        jvm = process_cpu(self.jvm_pid) if self.readable else None
        probes: dict[tuple, dict[str, Any]] = {}
        slots = max(2, 2 * parallelism)
        try:
            for found in sc.parallelize(range(slots), slots).mapPartitions(probe_executor).collect():
                key = (found["host"], found["jvm_pid"], found["jvm_started"])
                if key not in probes or found["jvm"] + found["python_workers"] > \
                        probes[key]["jvm"] + probes[key]["python_workers"]:
                    probes[key] = found
        except Exception:  # an executor without /proc: the task metrics stand alone
            probes = {}
        local = [p for p in probes.values() if p["host"] == self.host and p["jvm_pid"] == self.jvm_pid]
        remote = [p for p in probes.values() if p not in local]
        return {
            "executor_tasks": tasks,
            "executors_probed": len(probes),
            "local": bool(local) or self.jvm_pid is None,
            "driver_jvm": None if jvm is None else max(0.0, jvm - (tasks if local else 0.0)),
            "executor_jvms": tasks if local or not remote else sum(p["jvm"] for p in remote),
            "python_workers": sum(p["python_workers"] for p in probes.values()) if probes else None,
            "daemons": sum(p["daemons"] for p in probes.values()) if probes else None,
            "python_driver": python_driver_cpu(),
        }

    def section(self, worker_start_up: float, python_workers_in_tasks: float) -> dict[str, Any]:
        """The ``job_cpu`` section: each part, the total and the start-up share. ``worker_start_up``: the
        Python workers' CPU before their first split (from the split tasks), to which the pyspark daemons' own CPU
        is added (read after the split tasks, where the corpus stages follow them); ``python_workers_in_tasks``:
        the tasks' own CPU (``cpu.total``), the Python workers' part when no probe read them."""
        parts = {
            "driver_jvm": self.spark.get("driver_jvm"),
            "executor_jvms": self.spark.get("executor_jvms"),
            "python_workers": self.spark.get("python_workers"),
            "python_driver": python_driver_cpu(),
        }
        methods = {
            "driver_jvm": "/proc of the driver JVM (threads and reaped children)"
                          + (", less the local executor's task metrics" if self.spark.get("local") else ""),
            "executor_jvms": "Spark task metrics (executorCpuTime + executorDeserializeCpuTime)"
                             if self.spark.get("local") or not self.spark.get("executors_probed")
                             else "/proc of each executor JVM, read by a probe task",
            "python_workers": "/proc of each executor's pyspark daemons, their reaped and running workers",
            "python_driver": "getrusage of the Python driver (itself and reaped children)",
        }
        if parts["python_workers"] is None:
            parts["python_workers"] = python_workers_in_tasks
            methods["python_workers"] = "the split tasks' own process_time (no /proc on the executors)"
        if parts["driver_jvm"] is None:
            methods["driver_jvm"] = "not readable (no /proc): left out"
        daemons = (self.pages_done or self.spark).get("daemons") or 0.0
        start_up = {"python_driver": self.start_up["python_driver"], "driver_jvm": self.start_up["driver_jvm"],
                    "python_workers": worker_start_up + daemons}
        total = sum(v for v in parts.values() if v is not None)
        start_total = sum(v for v in start_up.values() if v is not None)
        corpus = None
        if self.pages_done and self.spark:
            corpus = sum((self.spark[k] or 0.0) - (self.pages_done[k] or 0.0) for k in PARTS)
        return {
            "total": round(total, 3),
            "corpus": None if corpus is None else round(corpus, 3),
            "parts": {k: None if v is None else round(v, 3) for k, v in parts.items()},
            "executor_tasks": round(self.spark.get("executor_tasks", 0.0), 3),
            "executors_probed": self.spark.get("executors_probed", 0),
            "local": self.spark.get("local", False),
            "start_up": {**{k: None if v is None else round(v, 3) for k, v in start_up.items()},
                         "total": round(start_total, 3)},
            "method": methods,
            "measured_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        }


def pages_per_cpu_second(section: dict[str, Any] | None) -> float | None:
    """The run's pages per CPU-second: the pages this run processed (``job_cpu.pages``; a resumed split's are not
    this run's) over the whole job's CPU (``job_cpu.total``, every process). The one definition of the figure, in
    stats.json (``run.pages_per_cpu_second``), the summary, the report and the snapshot extrapolation."""
    pages, total = (section or {}).get("pages"), (section or {}).get("total")
    return round(pages / total, 2) if pages and total else None


def refresh_python_driver(section: dict[str, Any]) -> dict[str, Any]:
    """``section`` with the Python driver's part read again now (after the driver's own analysis)."""
    if not section or "parts" not in section:
        return section
    parts = {**section["parts"], "python_driver": round(python_driver_cpu(), 3)}
    return {**section, "parts": parts, "total": round(sum(v for v in parts.values() if v is not None), 3)}


_FIRST_TASK_DONE = False


def worker_start_up() -> float:
    """In a Python worker: its CPU before its first split task (0 for every later task, and outside Spark)."""
    global _FIRST_TASK_DONE
    from pipeline.spark.workers import in_spark_worker

    if _FIRST_TASK_DONE or not in_spark_worker():
        return 0.0
    _FIRST_TASK_DONE = True
    return time.process_time()
