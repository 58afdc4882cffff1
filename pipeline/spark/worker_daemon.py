"""The pyspark daemon of the runs ``warcplex`` starts itself (``spark.python.daemon.module``): pyspark's own, except
for the garbage collection it runs in a reused worker after every task and what it imports before it forks one.

pyspark's daemon calls ``gc.collect()`` after each task, a full collection that walks every object the worker holds:
pyspark, pyarrow, warcplex, the libraries of the extractors and the models' Python objects, about 70 ms a task here.
A job runs a task per split and the corpus stages a few dozen small ones, so those collections were about 6 of the
43 CPU-seconds of a `warcplex run` on bench dev (py-spy over the whole process tree). Here the daemon collects only
the two younger generations after a task: the cyclic garbage a task leaves is young, and Python's own thresholds
still collect the oldest generation as the worker's heap grows.

The daemon also imports, once, before it forks, what every worker would import after the fork:

- ``pyspark.worker``. Spark puts its ``pyspark.zip`` first on the workers' path, and a module imported from a zip is
  compiled from source on every import: 0.5 CPU-seconds in each worker.
- warcplex's task code (:data:`TASK_MODULES`): the page pipeline and the corpus stages with their libraries, and
  pandas, which pyarrow imports the first time it converts Python values: about 0.85 CPU-seconds in each worker, and a
  run has a few workers an executor (docs/efficiency.md gives the measurement).

pyspark's own daemon imports nothing before it forks, "so that no thread is spawned before we fork". Importing these
starts one thread, jemalloc's background thread (pyarrow's allocator; OpenBLAS starts none under the
``OMP_NUM_THREADS=1`` Spark gives the daemon). It is idle at a fork, and the jemalloc and Arrow in pyarrow register
fork handlers (``pthread_atfork``). The imports are then frozen out of the collector (``gc.freeze``),
so that a worker's collections do not walk them. A module that cannot be imported here is left to
the workers, whose task then reports the error.
"""

from __future__ import annotations

import gc
import importlib

import pyspark.daemon as _daemon
import pyspark.worker  # noqa: F401  (inherited by every worker the daemon forks)


class _YoungCollection:
    """Stands in for the ``gc`` module inside ``pyspark.daemon``: ``collect()`` with no generation collects the
    younger two; everything else is ``gc``'s."""

    @staticmethod
    def collect(generation: int = 1) -> int:
        return gc.collect(min(generation, 1))

    def __getattr__(self, name: str):
        return getattr(gc, name)


_daemon.gc = _YoungCollection()

# What a worker imports for its tasks: the page pipeline's (pipeline.spark.job imports the steps), the corpus stages',
# pandas (pyarrow imports it when it first converts Python values) and trafilatura (the default cascade's fallback).
TASK_MODULES = ("pipeline.spark.job", "pipeline.corpus.builder", "pandas", "trafilatura")


def import_task_modules() -> None:
    """Import :data:`TASK_MODULES` into the daemon, then freeze them out of the collector."""
    for name in TASK_MODULES:
        try:
            importlib.import_module(name)
        except Exception:  # noqa: BLE001  (the workers import it again, and their task says why it fails)
            pass
    gc.collect()
    gc.freeze()


if __name__ == "__main__":
    import_task_modules()
    _daemon.manager()
