"""CO2 and cost of a run: seed 002's eq. 9 for the whole job and per part, the snapshot extrapolation, codecarbon.

Eq. 9 (seed 002): kg CO2 = CPU-hours x TDP (W) x C_e (kg/kWh) / 1000, here times PUE. The CPU
time is the whole job's (``job_cpu``, :mod:`pipeline.spark.cpu`: the driver JVM, the executor
JVMs, the Python driver and the Python workers), each part also estimated alone; per stage, the
Python workers' own ``time.process_time`` in each step (``cpu.<stage>``). ``codecarbon``
(optional, ``carbon.codecarbon: true``) measures the whole machine during the run instead, with
OfflineEmissionsTracker and a country code: no network.
"""

from __future__ import annotations

import logging
from typing import Any

from pipeline.config import CarbonSettings, ConfigError

log = logging.getLogger("warcplex")


def carbon_estimate(cpu_seconds: float, carbon: CarbonSettings) -> dict[str, float]:
    """Eq. 9 for ``cpu_seconds`` of CPU: CPU-hours, kWh and kg CO2."""
    cpu_hours = cpu_seconds / 3600
    kwh = cpu_hours * carbon.tdp_watts_per_core / 1000 * carbon.pue
    return {"cpu_hours": cpu_hours, "kwh": kwh, "kg_co2": kwh * carbon.grid_intensity_kg_per_kwh}


# An extrapolation from fewer measured pages than this is labelled rough (summary, report).
ROUGH_BELOW_PAGES = 10_000


def snapshot_extrapolation(pages: int, cpu_seconds: float, carbon: CarbonSettings,
                           start_up_seconds: float = 0.0) -> dict[str, Any] | None:
    """Core-hours, dollars and kg CO2 to clean ``carbon.snapshot_pages`` pages at this run's pages per CPU-second
    of the whole job; ``start_up_seconds`` of that CPU is the run's fixed cost (start-up), paid once per run
    and not per page: stated with its share, and the extrapolation without it."""
    if not pages or cpu_seconds <= 0:
        return None
    rate = pages / cpu_seconds
    estimate = carbon_estimate(carbon.snapshot_pages / rate, carbon)
    variable = cpu_seconds - start_up_seconds
    without = carbon_estimate(carbon.snapshot_pages * variable / pages, carbon) if variable > 0 else None
    return {
        "pages": carbon.snapshot_pages,
        "measured_pages": pages,
        "rough": pages < ROUGH_BELOW_PAGES,
        "pages_per_cpu_second": rate,
        "core_hours": estimate["cpu_hours"],
        "dollars": estimate["cpu_hours"] * carbon.dollars_per_core_hour,
        "kwh": estimate["kwh"],
        "kg_co2": estimate["kg_co2"],
        "start_up_cpu_seconds": start_up_seconds,
        "start_up_share": start_up_seconds / cpu_seconds,
        "core_hours_without_start_up": without["cpu_hours"] if without else None,
        "kg_co2_without_start_up": without["kg_co2"] if without else None,
    }


def carbon_report(stats: dict[str, Any], carbon: CarbonSettings) -> dict[str, Any]:
    """The ``carbon`` section of stats.json: totals, per part and per stage, snapshot and every assumption."""
    cpu = stats.get("cpu", {})
    workers = float(cpu.get("total", 0.0))
    job = stats.get("job_cpu") or {}
    total = float(job.get("total") or workers)
    pages = int(stats.get("records", {}).get("html", 0))
    per_stage = {}
    for stage, seconds in sorted(cpu.items()):
        if stage != "total" and isinstance(seconds, (int, float)):
            per_stage[stage] = {"cpu_seconds": float(seconds), **carbon_estimate(float(seconds), carbon)}
    staged = sum(v["cpu_seconds"] for v in per_stage.values())
    if workers > staged:
        # Reading and parsing WARC records, splitting and bookkeeping outside any stage.
        rest = workers - staged
        per_stage["other"] = {"cpu_seconds": rest, **carbon_estimate(rest, carbon)}
    per_part = {part: {"cpu_seconds": float(seconds), **carbon_estimate(float(seconds), carbon)}
                for part, seconds in (job.get("parts") or {}).items() if seconds is not None}
    start_up = float((job.get("start_up") or {}).get("total") or 0.0)
    return {
        "method": "eq9",
        **carbon.model_dump(mode="json"),
        "assumptions": {
            "formula": "kg CO2 = CPU-hours x TDP per core (W) x grid intensity (kg/kWh) / 1000 x PUE",
            "cpu_time": ("the whole job (job_cpu): driver JVM, executor JVMs, Python driver, Python workers; "
                         "per stage: the Python workers' process_time in each step" if job else
                         "Python workers' process_time per stage, summed over tasks (no whole-job figure)"),
            "grid_intensity_kg_per_kwh": carbon.grid_intensity_kg_per_kwh,
            "tdp_watts_per_core": carbon.tdp_watts_per_core,
            "pue": carbon.pue,
            "dollars_per_core_hour": carbon.dollars_per_core_hour,
            "snapshot_pages": carbon.snapshot_pages,
        },
        **carbon_estimate(total, carbon),
        "cpu_seconds": total,
        "per_part": per_part,
        "per_stage": per_stage,
        "snapshot": snapshot_extrapolation(pages, total, carbon, start_up if job else 0.0),
    }


class CodecarbonMeter:
    """codecarbon's OfflineEmissionsTracker around a run (no network; country-level grid intensity)."""

    def __init__(self, carbon: CarbonSettings) -> None:
        from codecarbon import OfflineEmissionsTracker

        self.tracker = OfflineEmissionsTracker(country_iso_code=carbon.codecarbon_country, output_methods=[],
                                               log_level="error", tracking_mode="machine")
        self.tracker.start()

    def stop(self) -> dict[str, Any]:
        """Stop measuring; return what codecarbon measured (kg CO2, kWh, duration, power)."""
        kg = self.tracker.stop()
        data = self.tracker.final_emissions_data
        return {
            "kg_co2": float(kg or 0.0),
            "kwh": float(data.energy_consumed),
            "cpu_kwh": float(data.cpu_energy),
            "ram_kwh": float(data.ram_energy),
            "duration_s": float(data.duration),
            "cpu_power_w": float(data.cpu_power),
            "country_iso_code": data.country_iso_code,
            "cpu_model": data.cpu_model,
            "tracking_mode": "machine",
        }


def start_codecarbon(carbon: CarbonSettings) -> CodecarbonMeter | None:
    """A running meter when ``carbon.codecarbon`` is on, else None; a missing package is one clear error."""
    if not carbon.codecarbon:
        return None
    try:
        return CodecarbonMeter(carbon)
    except ImportError:
        raise ConfigError("carbon.codecarbon is on but the codecarbon package is not installed "
                         "(pip install codecarbon)") from None
