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
from pipeline.reading.reader import pages_read

log = logging.getLogger("warcplex")


def carbon_estimate(cpu_seconds: float, carbon: CarbonSettings) -> dict[str, float]:
    """Eq. 9 for ``cpu_seconds`` of CPU: CPU-hours, kWh and kg CO2."""
    cpu_hours = cpu_seconds / 3600
    kwh = cpu_hours * carbon.tdp_watts_per_core / 1000 * carbon.pue
    return {"cpu_hours": cpu_hours, "kwh": kwh, "kg_co2": kwh * carbon.grid_intensity_kg_per_kwh}


# The snapshot extrapolation needs at least this many measured pages, in at least SNAPSHOT_MIN_SPLITS splits (whose
# spread gives its interval); below, there is none (docs/guide.md, "The carbon estimate").
SNAPSHOT_MIN_PAGES = 10_000
SNAPSHOT_MIN_SPLITS = 2
Z_95 = 1.96


def per_page_spread(split_cpu: dict[str, float]) -> float | None:
    """The relative standard error of CPU per page across splits (the ratio estimator Σcpu/Σpages over the splits
    as a sample), from the sums each split adds (``split_cpu``: ``splits``, ``pages``, ``cpu``, ``pages_sq``,
    ``cpu_sq``, ``cpu_pages``); None with fewer than two splits."""
    n = split_cpu.get("splits", 0)
    pages, cpu = split_cpu.get("pages", 0.0), split_cpu.get("cpu", 0.0)
    if n < 2 or pages <= 0 or cpu <= 0:
        return None
    ratio = cpu / pages
    residuals = split_cpu["cpu_sq"] - 2 * ratio * split_cpu["cpu_pages"] + ratio ** 2 * split_cpu["pages_sq"]
    variance = max(residuals, 0.0) / (n * (n - 1) * (pages / n) ** 2)
    return variance ** 0.5 / ratio


def snapshot_extrapolation(pages: int, cpu_seconds: float, carbon: CarbonSettings, start_up_seconds: float = 0.0,
                           split_cpu: dict[str, float] | None = None) -> dict[str, Any] | None:
    """Core-hours, dollars and kg CO2 to clean ``carbon.snapshot_pages`` pages at this run's pages per CPU-second
    of the whole job, with a 95% interval from the spread of CPU per page across the run's splits
    (:func:`per_page_spread`); None below :data:`SNAPSHOT_MIN_PAGES` pages or :data:`SNAPSHOT_MIN_SPLITS` splits.
    ``start_up_seconds`` of the CPU is the run's fixed cost, stated as its share."""
    spread = per_page_spread(split_cpu or {})
    if pages < SNAPSHOT_MIN_PAGES or cpu_seconds <= 0 or spread is None:
        return None
    rate = pages / cpu_seconds
    estimate = carbon_estimate(carbon.snapshot_pages / rate, carbon)
    low, high = max(0.0, 1 - Z_95 * spread), 1 + Z_95 * spread
    return {
        "pages": carbon.snapshot_pages,
        "measured_pages": pages,
        "splits": int((split_cpu or {}).get("splits", 0)),
        "pages_per_cpu_second": rate,
        "interval": "95%, from the spread of CPU per page across the run's splits",
        "relative_half_width": Z_95 * spread,
        "core_hours": estimate["cpu_hours"],
        "core_hours_interval": [estimate["cpu_hours"] * low, estimate["cpu_hours"] * high],
        "dollars": estimate["cpu_hours"] * carbon.dollars_per_core_hour,
        "dollars_interval": [estimate["cpu_hours"] * carbon.dollars_per_core_hour * f for f in (low, high)],
        "kwh": estimate["kwh"],
        "kg_co2": estimate["kg_co2"],
        "kg_co2_interval": [estimate["kg_co2"] * low, estimate["kg_co2"] * high],
        "start_up_cpu_seconds": start_up_seconds,
        "start_up_share": start_up_seconds / cpu_seconds,
    }


def carbon_report(stats: dict[str, Any], carbon: CarbonSettings) -> dict[str, Any]:
    """The ``carbon`` section of stats.json: totals, per part and per stage, snapshot and every assumption."""
    cpu = stats.get("cpu", {})
    workers = float(cpu.get("total", 0.0))
    job = stats.get("job_cpu") or {}
    total = float(job.get("total") or workers)
    # the pages this run processed (a resumed split's pages are not in this run's CPU)
    pages = int(job["pages"] if "pages" in job else pages_read(stats.get("records", {})))
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
        "snapshot": snapshot_extrapolation(pages, total, carbon, start_up if job else 0.0, stats.get("split_cpu")),
    }


def carbon_summary_lines(stats: dict[str, Any]) -> list[str]:
    """summary.txt's lines of ``stats["carbon"]``: the run's one CO2 figure (eq. 9 of the whole job's CPU) with its
    parts, and the snapshot extrapolation with its interval, or why there is none."""
    carbon = stats.get("carbon", {})
    lines = []
    if carbon:
        per_part = carbon.get("per_part", {})
        parts = ", ".join(f"{name.replace('_', ' ')} {per_part[name]['cpu_seconds']:.1f} s "
                          f"{per_part[name]['kg_co2'] * 1000:.4f} g" for name in
                          ("driver_jvm", "executor_jvms", "python_driver", "python_workers") if name in per_part)
        lines.append(f"  CO2 (eq. 9, C_e {carbon['grid_intensity_kg_per_kwh']} kg/kWh): {carbon['kg_co2'] * 1000:.4f} g "
                     f"for the whole job's {carbon['cpu_seconds']:.1f} CPU-s" + (f": {parts}" if parts else ""))
    if not carbon:
        return lines
    snapshot = carbon.get("snapshot")
    if snapshot:
        low, high = snapshot["core_hours_interval"]
        co2_low, co2_high = snapshot["kg_co2_interval"]
        lines.append(f"  one snapshot ({snapshot['pages']:,} pages, from {snapshot['measured_pages']:,} pages in "
                     f"{snapshot['splits']} splits; 95% interval): {snapshot['core_hours']:,.0f} core-hours "
                     f"({low:,.0f}-{high:,.0f}), ${snapshot['dollars']:,.0f}, {snapshot['kg_co2']:,.0f} kg CO2 "
                     f"({co2_low:,.0f}-{co2_high:,.0f}); {100 * snapshot['start_up_share']:.0f}% of the measured CPU "
                     "is start-up")
    else:
        pages = (stats.get("job_cpu") or {}).get("pages", pages_read(stats.get("records", {})))
        lines.append(f"  one snapshot: not estimated from {pages:,} pages in {stats['run']['splits']} split(s) "
                     f"(it needs {SNAPSHOT_MIN_PAGES:,} pages in {SNAPSHOT_MIN_SPLITS} splits or more)")
    return lines


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
