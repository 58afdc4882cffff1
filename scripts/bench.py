#!/usr/bin/env python3
"""Throughput benchmark: what a user pays, in CPU seconds over the whole process tree.

    python scripts/bench.py [--warc ../shared/bench/warc/bench-dev.warc.gz] [--scale 5] [--repeats 3]
                            [--systems floor,default,primary,datatrove] [--fixed-cost]

Every run is a separate command measured by scripts/cputree.py: its CPU is read from a fresh
cgroup it starts in (else from the reaped children with this process as subreaper), so the
JVM, the Python driver, the pyspark daemon and every Python worker are counted. Systems:

  floor      FastWARC + resiliparse main content in one plain Python process (the physical floor)
  default    `warcplex run --config conf/local.yaml`: the default cascade, local Spark, all cores
  primary    the same with `--set extract.cascade=[resiliparse,conservative]`
  datatrove  the datatrove FineWeb-style peer (scripts/bench_datatrove.py) in its own virtualenv,
             build/datatrove-venv (`make bench` builds it): WarcReader, Trafilatura, fastText LID
             on the local lid.176.ftz, a KenLM sentence filter on lm_models/en, ParquetWriter

on two inputs: the bench WARC, and the same WARC concatenated ``--scale`` times (built once
under build/bench/, every copy after the first with record ids of its own, so warcplex's record-id
dedup processes the copies as new pages, as datatrove does; the corpus's exact dedup then keeps one
copy of each page), where start-up costs are amortised as on real shards. Runs alternate
between systems (the order rotates every round) and each figure is the median of ``--repeats``
runs, because the machine may be shared. Printed: pages per CPU-second and per wall second,
ratios to the floor and to datatrove, CPU by role (JVM, driver, Python workers; sampled) and
by warcplex stage (stats.json ``cpu.*``), peak RSS per Python worker, and the load average.
All figures also go to build/bench/results.json.

``--fixed-cost`` instead measures a small run (the 34-page sample with `make run`'s outputs) ``--repeats``
times: the fixed cost of one small run.

A benchmark, not a test: it asserts nothing and only prints figures.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import sys
import tempfile
import uuid
import zlib
from dataclasses import asdict
from pathlib import Path

from cputree import measure  # scripts/, this script's own directory

ROOT = Path(__file__).resolve().parent.parent

DEFAULT_WARC = ROOT.parent / "shared" / "bench" / "warc" / "bench-dev.warc.gz"
SAMPLE_WARC = ROOT / "tests" / "data" / "sample.warc.gz"
BUILD = ROOT / "build" / "bench"
DATATROVE_PYTHON = ROOT / "build" / "datatrove-venv" / "bin" / "python"
CORES = os.cpu_count() or 1
SYSTEMS = ("floor", "default", "primary", "datatrove")
LABELS = {
    "floor": "floor: FastWARC + resiliparse main content, 1 process",
    "default": f"warcplex default cascade, local[{CORES}]",
    "primary": "warcplex primary path [resiliparse, conservative]",
    "datatrove": "datatrove FineWeb-style peer",
}
PRIMARY = "extract.cascade=[resiliparse,conservative]"


def floor(path: str) -> int:
    """FastWARC + resiliparse main content over every HTML response: the pages processed."""
    from fastwarc.warc import ArchiveIterator, WarcRecordType
    from resiliparse.extract.html2text import extract_plain_text
    from resiliparse.parse.encoding import bytes_to_str, detect_encoding
    from resiliparse.parse.html import HTMLTree

    pages = 0
    with open(path, "rb") as fh:
        for record in ArchiveIterator(fh, record_types=WarcRecordType.response, parse_http=True):
            if "html" not in (record.http_content_type or "").lower():
                continue
            payload = record.reader.read()
            html = bytes_to_str(payload, detect_encoding(payload),
                                fallback_encodings=[record.http_charset or "utf-8", "cp1252"])
            extract_plain_text(HTMLTree.parse(html), preserve_formatting=True, main_content=True)
            pages += 1
    return pages


def lid_model_path() -> str:
    from pipeline.model_cache import default_lid_model_path

    return default_lid_model_path()


def english_kenlm() -> str:
    from pipeline.config import resolve_path
    from pipeline.model_registry import load_registry

    return str(resolve_path(load_registry(str(ROOT / "conf" / "models.yaml"))["en"].path))


_UUID = re.compile(rb"urn:uuid:([0-9a-fA-F-]{36})")


def _records(data: bytes):
    """The uncompressed content of each gzip member of ``data`` (one WARC record each)."""
    view, start = memoryview(data), 0
    while start < len(data):
        unpacker, parts, fed = zlib.decompressobj(wbits=31), [], start
        while not unpacker.eof and fed < len(data):
            chunk = view[fed:fed + (1 << 16)]
            parts.append(unpacker.decompress(chunk))
            fed += len(chunk)
        yield b"".join(parts)
        start = fed - len(unpacker.unused_data)


def _renamed_ids(record: bytes, copy: int) -> bytes:
    """A WARC record, gzipped, whose header's record ids (its own, and those it refers to) are those of copy
    ``copy``: the same length, so nothing else changes."""
    end = record.index(b"\r\n\r\n")
    header = _UUID.sub(lambda m: b"urn:uuid:" + str(uuid.uuid5(uuid.UUID(int=copy), m.group(1).decode())).encode(),
                       record[:end])
    packer = zlib.compressobj(6, zlib.DEFLATED, 31)
    return packer.compress(header + record[end:]) + packer.flush()


def scaled_input(warc: Path, scale: int, work: Path) -> Path:
    """``warc`` concatenated ``scale`` times, built once under ``work``: every copy after the first has record ids
    of its own (as the records of another shard would), so the job's record-id dedup keeps them all."""
    target = work / f"{warc.name.removesuffix('.warc.gz')}-x{scale}.warc.gz"
    stamp = target.with_suffix(".json")
    source = {"source": str(warc.resolve()), "size": warc.stat().st_size, "scale": scale, "ids": "uuid5 per copy"}
    if not target.exists() or not stamp.exists() or json.loads(stamp.read_text()) != source:
        work.mkdir(parents=True, exist_ok=True)
        partial = target.with_suffix(".partial")
        data = warc.read_bytes()
        with open(partial, "wb") as out:
            out.write(data)
            for copy in range(1, scale):
                for record in _records(data):
                    out.write(_renamed_ids(record, copy))
        partial.rename(target)
        stamp.write_text(json.dumps(source))
    return target


def warc_folder(warc: Path, work: Path) -> Path:
    """A folder holding only ``warc`` (a symlink): datatrove reads folders, one task per file."""
    folder = work / "datatrove-in" / warc.name.removesuffix(".warc.gz")
    folder.mkdir(parents=True, exist_ok=True)
    link = folder / warc.name
    if not link.exists():
        link.symlink_to(warc.resolve())
    return folder


WARCPLEX_SETS: list[str] = []  # --set KEY=VALUE of the command line, for the warcplex runs


def command(system: str, warc: Path, out: Path, work: Path, fixed_cost: bool = False) -> list[str]:
    if system == "floor":
        return [sys.executable, __file__, "--floor-only", str(warc)]
    if system in ("default", "primary"):
        cmd = [sys.executable, "-m", "pipeline.cli", "run", "--input", str(warc), "--output", str(out / "out"),
               "--config", "conf/local.yaml"]
        if fixed_cost:  # the outputs `make run` asks for
            cmd += ["--dropped", str(out / "out" / "dropped"), "--sentences", str(out / "out" / "sentences")]
        cmd += ["--set", PRIMARY] if system == "primary" else []
        return cmd + [arg for setting in WARCPLEX_SETS for arg in ("--set", setting)]
    if system == "datatrove":
        return [str(DATATROVE_PYTHON), str(ROOT / "scripts" / "bench_datatrove.py"),
                "--input", str(warc_folder(warc, work)), "--output", str(out / "out"), "--lid", lid_model_path(), "--kenlm", english_kenlm()]
    raise ValueError(system)


def run_once(system: str, warc: Path, work: Path, fixed_cost: bool = False) -> dict:
    """One measured run: whole-tree usage, pages, and warcplex's own stage CPU."""
    # PYTHONPATH: the driver and its Spark workers import warcplex from this checkout.
    pythonpath = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p)
    env = dict(os.environ, PYTHONPATH=pythonpath, SPARK_LOCAL_IP=os.environ.get("SPARK_LOCAL_IP", "127.0.0.1"),
               PYSPARK_PYTHON=os.environ.get("PYSPARK_PYTHON", sys.executable),
               PYSPARK_DRIVER_PYTHON=os.environ.get("PYSPARK_DRIVER_PYTHON", sys.executable))
    with tempfile.TemporaryDirectory(prefix=f"bench-{system}-") as tmp:
        out = Path(tmp)
        cmd = command(system, warc, out, work, fixed_cost)
        with open(out / "stdout", "wb") as stdout, open(out / "stderr", "wb") as stderr:
            usage = measure(cmd, env=env, cwd=str(ROOT), stdout=stdout, stderr=stderr)
        if usage.returncode != 0:
            tail = (out / "stderr").read_text(errors="replace")[-2000:]
            raise SystemExit(f"bench: {system} failed with status {usage.returncode}:\n{tail}")
        result = {"system": system, "usage": asdict(usage)}
        if system == "floor":
            result["pages"] = json.loads((out / "stdout").read_text())["pages"]
        elif system == "datatrove":
            steps = json.loads((out / "stdout").read_text().strip().splitlines()[-1])["stats"]
            reader = steps[0]["stats"]
            result["pages"] = reader["documents"]["total"]
            result["stages"] = {step["name"]: round(step["time_stats"]["total"], 2)
                                for step in steps if step.get("time_stats")}
            # documents the extractor's per-document wall-clock timeout dropped (more on a loaded machine)
            result["extraction_timeouts"] = sum(step["stats"].get("timeout", 0) for step in steps)
        else:
            stats = json.loads((out / "out" / "stats.json").read_text())
            result["pages"] = stats["records"]["html"]
            result["stages"] = stats.get("cpu", {})
            result["rss_reported_mb"] = stats.get("rss", {}).get("max_mb", {})
            result["splits"] = stats["run"]["splits"]
            corpus = stats.get("corpus") or {}  # the corpus stages run on the driver after the splits
            result["corpus_wall"] = {name: corpus["stages"][name]["wall_seconds"] for name in corpus.get("order", [])}
    return result


def median(values: list[float]) -> float:
    return statistics.median(values) if values else float("nan")


def summarise(runs: list[dict]) -> dict:
    """Medians over the runs of one system on one input."""
    cpu = [r["usage"]["cpu_seconds"] for r in runs]
    wall = [r["usage"]["wall_seconds"] for r in runs]
    pages = runs[0]["pages"]
    roles = sorted({role for r in runs for role in r["usage"]["by_role"]})
    stages = sorted({key for r in runs for key in r.get("stages", {})})
    corpus = list(runs[0].get("corpus_wall", {}))
    return {
        "runs": len(runs),
        "pages": pages,
        "cpu_seconds": median(cpu),
        "cpu_seconds_range": [min(cpu), max(cpu)],
        "wall_seconds": median(wall),
        "pages_per_cpu_second": median([r["pages"] / c for r, c in zip(runs, cpu)]),
        "pages_per_second": median([r["pages"] / w for r, w in zip(runs, wall)]),
        "by_role": {role: median([r["usage"]["by_role"].get(role, 0.0) for r in runs]) for role in roles},
        "stages": {key: median([r.get("stages", {}).get(key, 0.0) for r in runs]) for key in stages},
        "corpus_wall": {key: median([r.get("corpus_wall", {}).get(key, 0.0) for r in runs]) for key in corpus},
        "worker_peak_rss_mb": max((mb for r in runs for mb in r["usage"]["worker_peak_rss_mb"]), default=None),
        "workers_seen": median([len(r["usage"]["worker_peak_rss_mb"]) for r in runs]),
        "load_average": median([r["usage"]["load_average"] for r in runs]),
        "extraction_timeouts": median([r.get("extraction_timeouts", 0) for r in runs]),
        "method": runs[0]["usage"]["method"],
        "rusage_cpu_seconds": median([r["usage"]["rusage_cpu_seconds"] for r in runs]),
    }


def print_table(name: str, summary: dict[str, dict]) -> None:
    floor_rate = summary.get("floor", {}).get("pages_per_cpu_second")
    peer_rate = summary.get("datatrove", {}).get("pages_per_cpu_second")
    print(f"\n== {name}")
    print(f"  {'run':<52} {'pages':>6} {'CPU s':>8} {'wall s':>7} {'pages/CPU-s':>11} {'pages/s':>8} "
          f"{'/floor':>7} {'/datatrove':>10} {'load':>5}")
    for system, s in summary.items():
        to_floor = f"{s['pages_per_cpu_second'] / floor_rate:.3f}" if floor_rate else "-"
        to_peer = f"{s['pages_per_cpu_second'] / peer_rate:.2f}x" if peer_rate else "-"
        print(f"  {LABELS[system]:<52} {s['pages']:>6} {s['cpu_seconds']:>8.1f} {s['wall_seconds']:>7.1f} "
              f"{s['pages_per_cpu_second']:>11.1f} {s['pages_per_second']:>8.1f} {to_floor:>7} {to_peer:>10} "
              f"{s['load_average']:>5.1f}")
    for system, s in summary.items():
        lo, hi = s["cpu_seconds_range"]
        roles = ", ".join(f"{k} {v:.1f}" for k, v in s["by_role"].items())
        print(f"  {system}: {s['runs']} runs, CPU {lo:.1f}-{hi:.1f} s ({s['method']}; reaped-children rusage "
              f"{s['rusage_cpu_seconds']:.1f}); sampled by role: {roles}")
        if s["stages"]:
            top = sorted(s["stages"].items(), key=lambda kv: -kv[1])
            print(f"    stages (CPU s{', Python workers' if system != 'datatrove' else ', step time'}): "
                  + ", ".join(f"{k} {v:.1f}" for k, v in top if v >= 0.05))
        if s.get("corpus_wall"):
            print("    corpus stages (Spark wall time on the driver, ms/page): "
                  + ", ".join(f"{k} {1000 * v / max(1, s['pages']):.2f}" for k, v in s["corpus_wall"].items()))
        if s["extraction_timeouts"]:
            print(f"    documents dropped by the extractor's 1 s wall-clock timeout: {s['extraction_timeouts']:.0f}")
        if s["worker_peak_rss_mb"] is not None:
            print(f"    peak RSS per Python worker: max {s['worker_peak_rss_mb']:.0f} MiB "
                  f"({s['workers_seen']:.0f} worker processes seen per run)")


def fixed_cost(repeats: int, work: Path, results: Path) -> int:
    print(f"fixed cost: a small run on {SAMPLE_WARC.relative_to(ROOT)} with `make run`'s outputs, {repeats} runs, "
          f"load {os.getloadavg()[0]:.1f}")
    runs = []
    for i in range(repeats):
        run = run_once("default", SAMPLE_WARC, work, fixed_cost=True)
        u = run["usage"]
        print(f"  run {i + 1}: {run['pages']} pages, CPU {u['cpu_seconds']:.2f} s, wall {u['wall_seconds']:.1f} s, "
              + ", ".join(f"{k} {v:.2f}" for k, v in u["by_role"].items()) + f", load {u['load_average']:.1f}",
              flush=True)
        runs.append(run)
    s = summarise(runs)
    print(f"  median: CPU {s['cpu_seconds']:.2f} s (whole tree, {s['method']}), wall {s['wall_seconds']:.1f} s; "
          + ", ".join(f"{k} {v:.2f}" for k, v in s["by_role"].items())
          + f"; Python-worker stage CPU {s['stages'].get('total', 0):.2f} s")
    results.parent.mkdir(parents=True, exist_ok=True)
    results.write_text(json.dumps({"runs": runs, "summary": s}, indent=2))
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--warc", type=Path, default=DEFAULT_WARC)
    parser.add_argument("--scale", type=int, default=5, help="the larger input is the WARC this many times (1: skip)")
    parser.add_argument("--repeats", type=int, default=3,
                        help="runs per system and input (median; 0: only the larger input, with --scaled-repeats)")
    parser.add_argument("--scaled-repeats", type=int, help="runs on the larger input (default: --repeats)")
    parser.add_argument("--systems", default=",".join(SYSTEMS), help="comma-separated subset of " + ",".join(SYSTEMS))
    parser.add_argument("--fixed-cost", action="store_true", help="measure a small run (the 34-page sample) instead")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", dest="sets",
                        help="passed to the warcplex runs, e.g. corpus.enabled=false (the page pipeline alone)")
    parser.add_argument("--work", type=Path, default=BUILD, help="where the scaled input and datatrove's "
                        "input folders go (default build/bench)")
    parser.add_argument("--results", type=Path, help="where to write every run as JSON "
                        "(default build/bench/results.json, or fixed-cost.json)")
    parser.add_argument("--floor-only", metavar="WARC", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    WARCPLEX_SETS.extend(args.sets)
    if args.floor_only:
        print(json.dumps({"pages": floor(args.floor_only)}))
        return 0
    args.warc = args.warc.resolve()  # relative to the caller's directory, not ROOT
    args.results = args.results.resolve() if args.results else None
    args.work = args.work.resolve()
    os.chdir(ROOT)
    if args.fixed_cost:
        return fixed_cost(args.repeats, args.work, args.results or args.work / "fixed-cost.json")
    systems = [s for s in args.systems.split(",") if s]
    unknown = set(systems) - set(SYSTEMS)
    if unknown or not systems:
        print(f"bench: error: --systems: unknown {sorted(unknown)}; choose from {','.join(SYSTEMS)}", file=sys.stderr)
        return 2
    if not args.warc.exists():
        print(f"bench: error: {args.warc} not found", file=sys.stderr)
        return 2
    if "datatrove" in systems and not DATATROVE_PYTHON.exists():
        print(f"bench: error: {DATATROVE_PYTHON} missing (`make bench` builds it)", file=sys.stderr)
        return 2
    inputs = [(args.warc.name, args.warc, args.repeats)] if args.repeats > 0 else []  # 0: the larger input only
    if args.scale > 1:
        inputs.append((f"{args.warc.name} x{args.scale}", scaled_input(args.warc, args.scale, args.work),
                       args.scaled_repeats or args.repeats))
    print(f"bench: {CORES} cores, load average {'/'.join(f'{x:.1f}' for x in os.getloadavg())} at start "
          f"(a shared machine inflates wall time, and CPU time somewhat); systems {','.join(systems)}")
    results = {"cores": CORES, "inputs": {}}
    for name, warc, repeats in inputs:
        runs: dict[str, list[dict]] = {s: [] for s in systems}
        for round_ in range(repeats):
            order = systems[round_ % len(systems):] + systems[:round_ % len(systems)]
            for system in order:
                run = run_once(system, warc, args.work)
                u = run["usage"]
                print(f"  [{name} round {round_ + 1}/{repeats}] {system}: {run['pages']} pages, CPU "
                      f"{u['cpu_seconds']:.1f} s, wall {u['wall_seconds']:.1f} s, "
                      f"{run['pages'] / u['cpu_seconds']:.1f} pages/CPU-s, load {u['load_average']:.1f}", flush=True)
                if run.get("stages"):  # warcplex's CPU by stage (stats.json cpu.*), as each run ends
                    print("    stages: " + ", ".join(f"{k} {v:.1f}" for k, v in sorted(
                        run["stages"].items(), key=lambda kv: -kv[1]) if isinstance(v, (int, float))), flush=True)
                runs[system].append(run)
        summary = {s: summarise(r) for s, r in runs.items()}
        print_table(f"{name} ({warc.stat().st_size / 1e6:.1f} MB compressed)", summary)
        results["inputs"][name] = {"path": str(warc), "summary": summary, "runs": runs}
    print(f"\n  load average at the end: {'/'.join(f'{x:.1f}' for x in os.getloadavg())} on {CORES} cores")
    target = args.results or args.work / "results.json"
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(json.dumps(results, indent=2))
    print(f"  all runs: {target}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
