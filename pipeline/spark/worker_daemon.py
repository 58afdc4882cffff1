"""The pyspark daemon of the runs ``warcplex`` starts itself (``spark.python.daemon.module``): pyspark's own, except
for the garbage collection it runs in a reused worker after every task.

pyspark's daemon calls ``gc.collect()`` after each task, a full collection that walks every object the worker holds:
pyspark, pyarrow, warcplex, the libraries of the extractors and the models' Python objects, about 70 ms a task here.
A job runs a task per split and the corpus stages a few dozen small ones, so those collections were about 6 of the
43 CPU-seconds of a `warcplex run` on bench dev (py-spy over the whole process tree). Here the daemon collects only
the two younger generations after a task: the cyclic garbage a task leaves is young, and Python's own thresholds
still collect the oldest generation as the worker's heap grows.

The daemon also imports ``pyspark.worker`` before it forks. Spark puts its ``pyspark.zip`` first on the workers'
path, and a module imported from a zip is compiled from source on every import: 0.5 CPU-seconds in each worker
when each imported it after the fork. ``pyspark.worker`` starts no thread and imports neither pyarrow nor pandas,
which pyspark's daemon must not import before a fork.
"""

from __future__ import annotations

import gc

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

if __name__ == "__main__":
    _daemon.manager()
