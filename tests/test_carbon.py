"""Seed 002's eq. 9 per stage, the snapshot extrapolation, and codecarbon offline."""

from __future__ import annotations

import math

import pytest

from pipeline.analysis.carbon import carbon_estimate, carbon_report, snapshot_extrapolation, start_codecarbon
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
    assert report["snapshot"]["pages_per_cpu_second"] == 50


def test_snapshot_extrapolation():
    carbon = CarbonSettings(snapshot_pages=3_600_000, dollars_per_core_hour=0.05)
    snapshot = snapshot_extrapolation(pages=1000, cpu_seconds=10, carbon=carbon)  # 100 pages per CPU-second
    assert math.isclose(snapshot["core_hours"], 10)
    assert math.isclose(snapshot["dollars"], 0.5)
    assert math.isclose(snapshot["kg_co2"], carbon_estimate(36_000, carbon)["kg_co2"])
    assert snapshot_extrapolation(pages=0, cpu_seconds=10, carbon=carbon) is None


def test_codecarbon_measures_offline():
    pytest.importorskip("codecarbon")
    assert start_codecarbon(CarbonSettings()) is None
    meter = start_codecarbon(CarbonSettings(codecarbon=True, codecarbon_country="DEU"))
    sum(i * i for i in range(2_000_000))
    measured = meter.stop()
    assert measured["country_iso_code"] == "DEU"
    assert measured["kwh"] > 0 and measured["kg_co2"] > 0 and measured["duration_s"] > 0
