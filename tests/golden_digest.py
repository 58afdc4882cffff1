"""Digests that pin a run's output: one per Parquet row, and the stats without timings.

Used by tests/test_golden.py and tests/make_golden.py (which rewrites the golden file when
a change of behaviour is meant).
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

import pyarrow.dataset as ds

# Stats sections and keys that measure time, memory or the process, not the output.
TIMING_SECTIONS = ("cpu", "cpu_start_up", "job_cpu", "wall", "rss", "model_loads", "carbon", "workers", "split_cpu")
TIMING_RUN_KEYS = ("wall_seconds", "pages_per_second", "pages_per_cpu_second", "output", "inputs", "config",
                   "files")
TIMING_INDEX_KEYS = ("driver_cpu_seconds", "source")
TIMING_QUERY_KEYS = ("clean_ms_per_query", "raw_ms_per_query", "speedup")
# Each chain link's timings and what is computed from them.
TIMING_LINK_KEYS = ("build_cpu_seconds", "cleaning_cpu_seconds", "query_cpu_seconds", "query_wall_seconds",
                    "query_speedup", "kg_co2_build", "kg_co2_per_million_queries", "kg_co2_cleaning",
                    "breakeven_queries", "query_cpu_spread_seconds", "query_difference_measurable")


def row_digests(root: Path) -> list[str]:
    """The sorted sha256 of every row (all columns, JSON) of the Parquet dataset under ``root``."""
    if not root.exists():
        return []
    dataset = ds.dataset(str(root), format="parquet", exclude_invalid_files=True)
    digests = []
    for row in dataset.to_table().to_pylist():
        data = json.dumps(row, sort_keys=True, ensure_ascii=False, default=str)
        digests.append(hashlib.sha256(data.encode("utf-8")).hexdigest())
    return sorted(digests)


def timing_free(stats: dict[str, Any]) -> dict[str, Any]:
    """``stats`` without the sections and keys that depend on timing, paths or the process."""
    result = {k: v for k, v in stats.items() if k not in TIMING_SECTIONS}
    if "run" in result:
        result["run"] = {k: v for k, v in result["run"].items() if k not in TIMING_RUN_KEYS}
    if "index" in result:
        index = {k: v for k, v in result["index"].items() if k not in TIMING_INDEX_KEYS}
        if "queries" in index:
            index["queries"] = {k: v for k, v in index["queries"].items() if k not in TIMING_QUERY_KEYS}
        if "chain" in index:
            index["chain"] = [{k: v for k, v in link.items() if k not in TIMING_LINK_KEYS} for link in index["chain"]]
        result["index"] = index
    return result


def output_digest(output: Path, side_outputs: dict[str, Path] | None = None) -> dict[str, Any]:
    """Row digests of ``output/data`` and the side outputs, and the timing-free stats.json."""
    result: dict[str, Any] = {"data": row_digests(output / "data")}
    for name, path in (side_outputs or {}).items():
        result[name] = row_digests(path)
    stats_file = output / "stats.json"
    if stats_file.exists():
        result["stats"] = timing_free(json.loads(stats_file.read_text(encoding="utf-8")))
    return result


GOLDEN_FILE = Path(__file__).resolve().parent / "golden" / "sample.json"


def sample_run(sample: Path, work: Path) -> dict[str, Any]:
    """The bundled sample WARC through the split runner with ``conf/local.yaml``, all side outputs on."""
    from pipeline.config import load_settings
    from pipeline.reading.shards import Split
    from pipeline.spark.runner import run_split

    sides = {"dropped": work / "dropped", "sentences": work / "sentences"}
    settings = load_settings("conf/local.yaml", [f"output.sentences={sides['sentences']}", "output.resume=false"])
    # relative to the checkout (the working directory, as for conf/local.yaml): the rows'
    # warc_filename must not depend on where the project is checked out
    stats = run_split(Split(os.path.relpath(sample), 0, 1), settings, str(work / "out"), str(sides["dropped"]))
    result = output_digest(work / "out", sides)
    result["stats"] = timing_free(stats)
    return result
