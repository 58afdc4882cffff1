"""The cost curve of `warcplex run` as the input grows (`make bench-scale`; a script, not a test).

    python scripts/bench_scale.py [--points 1x,5x,15x,15x-40,shards-2000] [--work build/bench-scale]
                                  [--plot docs/bench-scale.png] [--results build/bench-scale/results.json]

Points (bench dev is ../shared/bench/warc/bench-dev.warc.gz, 3,206 HTML pages, 63 MB):

- ``1x``, ``5x``, ``15x``: bench dev, and bench dev concatenated 5 and 15 times (each copy with record ids of its
  own, scripts/bench.py's scaled_input); 15x is one gzipped WARC of about 1 GB, the size of a Common Crawl shard;
- ``15x-40``: the same 15x pages cut into 40 shards at gzip member boundaries;
- ``shards-2000``: bench dev cut into 2,000 small shards, run once, then run again on the same output (every split
  resumed from its marker: the time a rerun takes to skip them).

Each point is one `warcplex run --config conf/local.yaml` (local[*], the shipped defaults), measured over its
whole process tree (scripts/cputree.py: CPU from a cgroup, peak RSS per role from /proc). Printed: pages, wall,
whole-tree CPU, pages per CPU-second, the peak RSS of the Python driver, the JVM and the largest Python worker, and
the driver's CPU (driver JVM + Python driver, from stats.json job_cpu) per shard. The inputs are built once under
``--work``.
"""

from __future__ import annotations

import argparse
import bisect
import json
import os
import sys
import tempfile
import zlib
from dataclasses import asdict
from pathlib import Path

from bench import scaled_input  # scripts/, this script's own directory
from cputree import measure
ROOT = Path(__file__).resolve().parent.parent

BENCH_WARC = ROOT.parent / "shared" / "bench" / "warc" / "bench-dev.warc.gz"
POINTS = ("1x", "5x", "15x", "15x-40", "shards-2000")


def member_starts(data: bytes) -> list[int]:
    """The offsets of the gzip members of ``data`` (one WARC record each, as Common Crawl writes them)."""
    view, start, starts = memoryview(data), 0, []
    while start < len(data):
        starts.append(start)
        inflater, fed = zlib.decompressobj(wbits=31), start
        while not inflater.eof and fed < len(data):
            chunk = view[fed:fed + (1 << 16)]
            inflater.decompress(chunk)
            fed += len(chunk)
        start = fed - len(inflater.unused_data)
    return starts


def cut(warc: Path, count: int, folder: Path) -> Path:
    """``warc`` cut into ``count`` shards at gzip member boundaries (built once): of about equal size for a few
    shards, of about equal record counts for many."""
    stamp = folder / "source.json"
    source = {"source": str(warc), "size": warc.stat().st_size, "count": count}
    if stamp.exists() and json.loads(stamp.read_text()) == source:
        return folder
    folder.mkdir(parents=True, exist_ok=True)
    for old in folder.glob("*.warc.gz"):
        old.unlink()
    data = warc.read_bytes()
    starts = member_starts(data)
    if count <= 40:  # of about equal size
        bounds = sorted({starts[min(bisect.bisect_left(starts, len(data) * i // count), len(starts) - 1)]
                         for i in range(count)})
    else:  # of about equal record counts: exactly ``count`` shards of a few records
        bounds = [starts[len(starts) * i // count] for i in range(count)]
    for index, (begin, end) in enumerate(zip(bounds, [*bounds[1:], len(data)])):
        (folder / f"shard-{index:05d}.warc.gz").write_bytes(data[begin:end])
    stamp.write_text(json.dumps(source))
    return folder


def input_of(point: str, work: Path) -> Path:
    if point == "1x":
        return BENCH_WARC
    if point in ("5x", "15x"):
        return scaled_input(BENCH_WARC, int(point[:-1]), work)
    if point == "15x-40":
        return cut(scaled_input(BENCH_WARC, 15, work), 40, work / "15x-40")
    if point == "shards-2000":
        return cut(BENCH_WARC, 2000, work / "shards-2000")
    raise ValueError(point)


def run(input_path: Path, out: Path, log: Path) -> dict:
    """One measured `warcplex run` (``out`` kept: a second call resumes it)."""
    env = dict(os.environ, PYTHONPATH=str(ROOT), SPARK_LOCAL_IP=os.environ.get("SPARK_LOCAL_IP", "127.0.0.1"),
               PYSPARK_PYTHON=os.environ.get("PYSPARK_PYTHON", sys.executable),
               PYSPARK_DRIVER_PYTHON=os.environ.get("PYSPARK_DRIVER_PYTHON", sys.executable))
    cmd = [sys.executable, "-m", "pipeline.cli", "run", "--input", str(input_path), "--output", str(out),
           "--config", "conf/local.yaml"]
    with open(log, "ab") as handle:
        usage = measure(cmd, env=env, cwd=str(ROOT), stdout=handle, stderr=handle)
    if usage.returncode != 0:
        raise SystemExit(f"bench_scale: {input_path} failed with status {usage.returncode}; see {log}")
    stats = json.loads((out / "stats.json").read_text())
    parts = stats.get("job_cpu", {}).get("parts", {})
    pages = int(stats["records"].get("html", 0))
    splits = stats["run"]["splits"]
    driver = (parts.get("driver_jvm") or 0) + (parts.get("python_driver") or 0)
    return {"pages": pages, "splits": splits, "shards": len(stats["run"]["inputs"]) if input_path.is_file() else None,
            "resumed": stats["run"]["splits_resumed"], "wall_s": usage.wall_seconds, "cpu_s": usage.cpu_seconds,
            "cpu_method": usage.method, "pages_per_cpu_s": round(pages / usage.cpu_seconds, 2) if pages else None,
            "peak_rss_mb": usage.peak_rss_mb, "worker_peak_rss_mb": max(usage.worker_peak_rss_mb, default=None),
            "driver_cpu_s": round(driver, 2), "job_cpu_parts": parts,
            "corpus_wall_s": (stats.get("corpus") or {}).get("wall_seconds"), "load": usage.load_average,
            "usage": asdict(usage)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--points", default=",".join(POINTS), help=f"comma-separated, of {', '.join(POINTS)}")
    parser.add_argument("--work", type=Path, default=ROOT / "build" / "bench-scale")
    parser.add_argument("--results", type=Path, help="JSON of every run (default WORK/results.json)")
    parser.add_argument("--plot", type=Path, help="draw pages per CPU-second and peak RSS against pages here (PNG)")
    args = parser.parse_args(argv)
    points = [p for p in args.points.split(",") if p]
    unknown = sorted(set(points) - set(POINTS))
    if unknown:
        parser.error(f"unknown points: {', '.join(unknown)}")
    if not BENCH_WARC.exists():
        raise SystemExit(f"bench_scale: {BENCH_WARC} is missing (../shared/bench)")
    args.work.mkdir(parents=True, exist_ok=True)
    results_path = args.results or args.work / "results.json"
    results = json.loads(results_path.read_text()) if results_path.exists() else {}
    for point in points:
        source = input_of(point, args.work)
        print(f"{point}: {source} (load {os.getloadavg()[0]:.1f})", flush=True)
        with tempfile.TemporaryDirectory(prefix=f"bench-scale-{point}-", dir=args.work) as tmp:
            out, log = Path(tmp) / "out", args.work / f"{point}.log"
            log.write_bytes(b"")
            entry = {"first": run(source, out, log)}
            if point == "shards-2000":
                entry["rerun"] = run(source, out, log)
        results[point] = entry
        results_path.write_text(json.dumps(results, indent=1, sort_keys=True))
        first = entry["first"]
        print(f"  {first['pages']} pages, {first['splits']} splits: wall {first['wall_s']:.0f} s, CPU "
              f"{first['cpu_s']:.0f} s, {first['pages_per_cpu_s']} pages/CPU-s, peak RSS {first['peak_rss_mb']}, "
              f"driver CPU {first['driver_cpu_s']:.1f} s", flush=True)
        if "rerun" in entry:
            rerun = entry["rerun"]
            print(f"  rerun (all {rerun['resumed']} splits resumed): wall {rerun['wall_s']:.0f} s, "
                  f"CPU {rerun['cpu_s']:.0f} s", flush=True)
    print_table(results)
    if args.plot:
        plot(results, args.plot)
    return 0


def print_table(results: dict) -> None:
    print("\n| point | pages | splits | wall s | whole-tree CPU s | pages/CPU-s | driver CPU s (per split) "
          "| peak RSS MB: Python driver / JVM / largest Python worker |")
    print("|---|---:|---:|---:|---:|---:|---:|---|")
    for point in POINTS:
        if point not in results:
            continue
        for kind, r in results[point].items():
            rss = r["peak_rss_mb"]
            name = point if kind == "first" else f"{point}, rerun"
            print(f"| {name} | {r['pages']:,} | {r['splits']:,} | {r['wall_s']:.0f} | {r['cpu_s']:.0f} "
                  f"| {r['pages_per_cpu_s'] if kind == 'first' else '-'} "
                  f"| {r['driver_cpu_s']:.1f} ({1000 * r['driver_cpu_s'] / r['splits']:.1f} ms) "
                  f"| {rss.get('driver', '-')} / {rss.get('jvm', '-')} / {rss.get('python_workers', '-')} |")


def plot(results: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    shown = [(p, results[p]["first"]) for p in ("1x", "5x", "15x", "15x-40") if p in results]
    fig, (speed, memory) = plt.subplots(1, 2, figsize=(10, 4))
    for point, r in shown:
        speed.scatter(r["pages"], r["pages_per_cpu_s"], color="black")
        speed.annotate(point, (r["pages"], r["pages_per_cpu_s"]))
        for role, marker, color in (("driver", "o", "tab:blue"), ("jvm", "s", "tab:orange"),
                                    ("python_workers", "^", "tab:green")):
            if role in r["peak_rss_mb"]:
                memory.scatter(r["pages"], r["peak_rss_mb"][role], marker=marker, color=color,
                               label=role if point == shown[0][0] else None)
    speed.set(xlabel="HTML pages", ylabel="pages per whole-tree CPU-second", xscale="log", ylim=(0, None))
    memory.set(xlabel="HTML pages", ylabel="peak RSS (MB)", xscale="log", ylim=(0, None))
    memory.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    print(f"plot: {path}")


if __name__ == "__main__":
    sys.exit(main())
