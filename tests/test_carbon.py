"""Seed 002's eq. 9 per stage, the snapshot extrapolation, and codecarbon offline."""

from __future__ import annotations

import math

import pytest

from pipeline.analysis.carbon import (carbon_estimate, carbon_report, per_page_spread, snapshot_extrapolation,
                                     start_codecarbon)
from pipeline.config import CarbonSettings


def test_eq9_with_pue():
    carbon = CarbonSettings(grid_intensity_kg_per_kwh=0.341, tdp_watts_per_core=12.5, pue=1.5)
    result = carbon_estimate(7200, carbon)  # two CPU-hours
    assert result["cpu_hours"] == 2
    assert math.isclose(result["kwh"], 2 * 12.5 / 1000 * 1.5)
    assert math.isclose(result["kg_co2"], 2 * 12.5 * 0.341 / 1000 * 1.5)


def test_report_splits_cpu_per_stage_and_keeps_the_rest_as_other():
    carbon = CarbonSettings()
    stats = {"cpu": {"total": 10.0, "resiliparse": 4.0, "perplexity": 3.0, "write": 1.0},
             "records": {"html": 500}}
    report = carbon_report(stats, carbon)
    stages = report["per_stage"]
    assert set(stages) == {"resiliparse", "perplexity", "write", "other"}
    assert math.isclose(stages["other"]["cpu_seconds"], 2.0)
    assert math.isclose(sum(s["kg_co2"] for s in stages.values()), report["kg_co2"])
    assert report["assumptions"]["grid_intensity_kg_per_kwh"] == carbon.grid_intensity_kg_per_kwh
    assert report["snapshot"] is None  # 500 pages in one split: no extrapolation


def split_sums(splits: list[tuple[int, float]]) -> dict[str, float]:
    """The ``split_cpu`` section the split runner adds up, for (pages, CPU seconds) splits."""
    return {"splits": len(splits), "pages": sum(p for p, _ in splits), "cpu": sum(c for _, c in splits),
            "pages_sq": sum(p * p for p, _ in splits), "cpu_sq": sum(c * c for _, c in splits),
            "cpu_pages": sum(p * c for p, c in splits)}


def test_snapshot_extrapolation_with_its_interval_from_the_splits():
    carbon = CarbonSettings(snapshot_pages=3_600_000, dollars_per_core_hour=0.05)
    splits = [(5000, 40.0), (5000, 60.0), (5000, 50.0), (5000, 50.0)]  # 100 pages per CPU-second in all
    snapshot = snapshot_extrapolation(pages=20_000, cpu_seconds=200, carbon=carbon, split_cpu=split_sums(splits))
    assert math.isclose(snapshot["core_hours"], 10)
    assert math.isclose(snapshot["dollars"], 0.5)
    assert math.isclose(snapshot["kg_co2"], carbon_estimate(36_000, carbon)["kg_co2"])
    # CPU per page 0.008, 0.012, 0.010, 0.010 around 0.010: the ratio estimator's standard error by hand
    ratio = 0.01
    se = math.sqrt(sum((c - ratio * p) ** 2 for p, c in splits) / (4 * 3 * 5000 ** 2)) / ratio
    assert math.isclose(per_page_spread(split_sums(splits)), se)
    low, high = snapshot["core_hours_interval"]
    assert math.isclose(low, 10 * (1 - 1.96 * se)) and math.isclose(high, 10 * (1 + 1.96 * se))
    assert low < snapshot["core_hours"] < high
    # equal splits: no spread, a zero-width interval
    even = snapshot_extrapolation(20_000, 200, carbon, split_cpu=split_sums([(10_000, 100.0)] * 2))
    assert even["core_hours_interval"] == [even["core_hours"], even["core_hours"]]
    # below the documented size, or from one split, there is no estimate
    assert snapshot_extrapolation(9_999, 200, carbon, split_cpu=split_sums(splits)) is None
    assert snapshot_extrapolation(20_000, 200, carbon, split_cpu=split_sums([(20_000, 200.0)])) is None
    assert snapshot_extrapolation(pages=0, cpu_seconds=10, carbon=carbon) is None


def test_codecarbon_measures_offline():
    pytest.importorskip("codecarbon")
    assert start_codecarbon(CarbonSettings()) is None
    meter = start_codecarbon(CarbonSettings(codecarbon=True, codecarbon_country="DEU"))
    sum(i * i for i in range(2_000_000))
    measured = meter.stop()
    assert measured["country_iso_code"] == "DEU"
    assert measured["kwh"] > 0 and measured["kg_co2"] > 0 and measured["duration_s"] > 0


def test_the_whole_job_figure_is_the_estimate_each_part_shown_and_start_up_stated():
    carbon = CarbonSettings(snapshot_pages=3_600_000)
    job = {"total": 40.0, "parts": {"driver_jvm": 15.0, "executor_jvms": 10.0, "python_driver": 5.0,
                                    "python_workers": 10.0},
           "start_up": {"python_driver": 1.0, "driver_jvm": 3.0, "python_workers": 6.0, "total": 10.0}}
    stats = {"cpu": {"total": 8.0, "blocks": 6.0}, "records": {"html": 20_000}, "job_cpu": job,
             "split_cpu": split_sums([(10_000, 4.0), (10_000, 4.0)])}
    report = carbon_report(stats, carbon)
    assert report["cpu_seconds"] == 40.0 and math.isclose(report["kg_co2"], carbon_estimate(40, carbon)["kg_co2"])
    assert math.isclose(sum(p["kg_co2"] for p in report["per_part"].values()), report["kg_co2"])
    assert set(report["per_stage"]) == {"blocks", "other"}  # the Python workers' steps, as before
    snapshot = report["snapshot"]
    assert snapshot["pages_per_cpu_second"] == 500 and math.isclose(snapshot["core_hours"], 2)
    assert snapshot["start_up_share"] == 0.25


def test_process_cpu_reads_proc_as_getrusage_does():
    import os
    import resource

    from pipeline.spark.cpu import probe_executor, process_cpu

    sum(i * i for i in range(3_000_000))
    own = process_cpu(os.getpid(), reaped=False)
    usage = resource.getrusage(resource.RUSAGE_SELF)
    assert own is not None and abs(own - usage.ru_utime - usage.ru_stime) < 0.1  # clock ticks against rusage
    assert probe_executor([]) == []  # not a pyspark worker: nothing to probe


@pytest.mark.spark
def test_make_run_counts_the_whole_process_tree(tmp_path):
    """A small run (the 34-page sample with `make run`'s outputs) under an outside measurement of its whole process
    tree (a fresh cgroup, else /proc and the reaped children): the summary's CPU is within 15% of it, and every part
    is there."""
    import json
    import os
    import shutil
    import sys

    from conftest import ROOT, SAMPLE_WARC

    if shutil.which("java") is None:
        pytest.skip("Java is needed for Spark")
    from test_bench import load_cputree

    measure = load_cputree().measure

    out = tmp_path / "out"
    warcplex = os.path.join(os.path.dirname(sys.executable), "warcplex")
    command = [warcplex, "run", "--input", str(SAMPLE_WARC), "--output", str(out), "--config",
               str(ROOT / "conf" / "local.yaml"), "--dropped", str(out / "dropped"), "--sentences",
               str(out / "sentences")]  # `make run`'s outputs (it reads tests/data/stages.warc.gz)
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable, "PYSPARK_DRIVER_PYTHON": sys.executable,
           "SPARK_LOCAL_IP": "127.0.0.1"}
    with open(tmp_path / "log", "w") as log:
        usage = measure(command, env=env, cwd=str(ROOT), stdout=log, stderr=log)
    assert usage.returncode == 0, (tmp_path / "log").read_text()[-2000:]
    stats = json.loads((out / "stats.json").read_text())
    job = stats["job_cpu"]
    assert all(job["parts"][part] > 0 for part in ("driver_jvm", "executor_jvms", "python_driver", "python_workers"))
    assert job["local"] and job["executors_probed"] == 1
    assert 0 < job["start_up"]["total"] < job["total"]
    assert stats["carbon"]["cpu_seconds"] == job["total"]
    summary = (out / "summary.txt").read_text()
    assert f"the whole job's {job['total']:.1f} CPU-s" in summary and f"({job['total']:.1f} CPU-s in all)" in summary
    assert abs(job["total"] - usage.cpu_seconds) <= 0.15 * usage.cpu_seconds, (job, usage)


def test_cleaning_cpu_counts_the_steps_the_run_ran_after_the_cascade():
    """The ``filtered`` link's cleaning is the extraction stages plus every step the run listed after
    ``cascade``, a plug-in step included, per page of the run, for the sampled pages."""
    from pipeline.analysis.index_stats import cleaning_cpu
    stats = {"cpu": {"blocks": 6.0, "langid": 1.0, "my_filter": 2.0, "perplexity": 1.0, "decode": 5.0},
             "records": {"html": 100}}
    costs = cleaning_cpu(stats, ["blocks"], ["langid", "my_filter", "perplexity"], ["main_content", "filtered"], 10)
    assert math.isclose(costs["main_content"], 0.6)
    assert math.isclose(costs["filtered"], 1.0)
