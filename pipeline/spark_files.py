"""The files Spark shipped to this executor (``spark-submit --files``, ``SparkContext.addFile``), found by name."""

from __future__ import annotations

import os


def shipped_copy(name: str) -> str | None:
    """The copy of the file ``name`` that Spark shipped to this executor, if any (None on the driver and outside Spark)."""
    try:
        from pyspark.files import SparkFiles
    except ImportError:
        return None
    root = getattr(SparkFiles, "_root_directory", None)
    if getattr(SparkFiles, "_is_running_on_worker", False) and root:
        candidate = os.path.join(root, name)
        if os.path.exists(candidate):
            return candidate
    return None
