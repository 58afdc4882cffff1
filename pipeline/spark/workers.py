"""Python worker memory: RSS readings and recycling a worker that grew past a ceiling.

Extraction libraries can leak or fragment memory over millions of pages. ``run_split``
checks the worker's RSS between pages; past ``extract.worker_max_rss_mb`` it finishes the
split cleanly and :func:`retire_after_task` makes this PySpark worker decline reuse when the
task ends, through PySpark's own path for it: when the end-of-task handshake fails the
worker answers END_OF_DATA_SECTION instead of END_OF_STREAM, so the JVM does not put it back
in the idle pool, and exits; the next task gets a freshly forked worker. The task itself has
already succeeded by then.
"""

from __future__ import annotations

import os
import resource

_retiring = False


def _status_mb(field: str) -> float | None:
    """A ``kB`` field of ``/proc/self/status`` in MiB, or None where there is none (not Linux)."""
    try:
        with open("/proc/self/status", encoding="ascii") as fh:
            for line in fh:
                if line.startswith(field + ":"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return None


def rss_mb() -> float:
    """Current resident set size of this process in MiB (``VmRSS``)."""
    current = _status_mb("VmRSS")
    return peak_rss_mb() if current is None else current


def peak_rss_mb() -> float:
    """Peak resident set size of this process's own memory in MiB: ``VmHWM``, the high-water mark of its address
    space. Not ``ru_maxrss`` where there is ``VmHWM``: Linux keeps that across ``execve``, so a process started from
    a large one (a test's subprocess of a grown pytest, a command of a large driver) reads its parent's size."""
    peak = _status_mb("VmHWM")
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024 if peak is None else peak


def in_spark_worker() -> bool:
    """True inside a PySpark Python worker running a task."""
    try:
        from pyspark import TaskContext
    except ImportError:
        return False
    return TaskContext.get() is not None


def retire_after_task() -> bool:
    """Make this PySpark worker exit instead of being reused once the current task ends.

    Returns False (and does nothing) outside a Spark task.
    """
    global _retiring
    if not in_spark_worker():
        return False
    if _retiring:
        return True
    from pyspark.messages.spark_message_receiver import SparkMessageReceiver

    def decline_reuse(self) -> None:
        raise RuntimeError(f"warcplex: worker pid {os.getpid()} retired (RSS ceiling); not reused")

    # Only this forked worker process is patched; it exits right after the handshake.
    SparkMessageReceiver.get_finish_signal_from_stream = decline_reuse
    _retiring = True
    return True
