"""Ten nights of equal size: the corpus stages' CPU of a nightly build, incremental or not (`make bench-nights`; a
script that prints figures, not a test: it asserts nothing about times).

    python scripts/bench_nights.py [--nights 10] [--duplicates 6] [--pages 3206] [--cuts '{en: [300.0, 1500.0]}']
                                   [--work build/bench-nights] [--results WORK/results.json] [--skip-full] [--reuse]

Inputs, built under ``--work`` (rebuilt on every call unless ``--reuse`` finds them built with the same options):
bench dev (../shared/bench/warc/bench-dev.warc.gz, 3,206 HTML pages, each a request, response and metadata record,
one gzip member each), or its first ``--pages``, cut into ``--nights`` shards ``nights/night-XX.warc.gz`` and a
manifest ``nights/nights.paths`` listing them (absolute paths, in night order). Every shard starts with bench dev's
warcinfo record and holds the same number of pages, P + D (D = ``--duplicates``):

- the original pages, copied byte for byte in bench dev's order: P of them in every night but the first, which gets
  P + D (P = (pages - D) // nights; the last (pages - D) % nights pages are left out);
- in every night k >= 2, D copies of pages of earlier nights (the request, response and metadata records, rewritten
  with warcio): each with fresh WARC-Record-IDs (and WARC-Concurrent-To pointing at them), the same URL and
  the same payload; the first ceil(D/2) dated one day EARLIER than the original (the copy becomes the kept one of
  the exact duplicates, which demotes the earlier night's document), the others one day LATER (dropped as exact
  duplicates). The pages copied are drawn without replacement (no page is copied twice) with a fixed seed, and the
  new ids come from the same generator, so the inputs are the same bytes on every run.

Runs, each a subprocess of the project's environment (``.venv/bin/warcplex``, SPARK_LOCAL_IP=127.0.0.1,
PYSPARK_PYTHON=.venv/bin/python), measured over its whole process tree (scripts/cputree.py), all with
``--config conf/nightly.yaml --set spark.master=local[2]`` (and ``--set corpus.quality.perplexity_cuts=CUTS`` with
``--cuts``; by default the preset's cuts):

1. incremental: ``warcplex nightly --manifest MANIFEST --output WORK/out-incremental --max-shards 1``, once per
   night (each processes the next shard, then builds the corpus);
2. not incremental (``--skip-full`` skips it): the same nights into WORK/out-full with
   ``--set corpus.incremental=false``;
3. from scratch: one ``warcplex run --input MANIFEST --output WORK/out-scratch`` over all the nights.

After each night, from the output's stats.json: ``job_cpu.corpus`` (the whole job's CPU during the corpus stages),
and from ``corpus``: build, generation, documents_new, demoted, files_rewritten, documents_out, full_reason ("-"
where a key is missing); with the whole-tree CPU and the wall time of the command.

Printed: a table per night (pages new, documents new, corpus documents, corpus CPU of the incremental build and its
ratio to night 1, the same of the non-incremental build, demoted documents, files rewritten), a table of wall and
whole-tree CPU, then the comparison of the incremental corpus (and the non-incremental one) with the one built from
scratch: every column of corpus/ and of corpus_dropped/documents/, row by row by warc_record_id ("rows equal: yes"
or the counts of ids on one side only and of ids whose columns differ, with a few examples). Every figure is saved
to ``--results``.
"""

from __future__ import annotations

import argparse
import io
import json
import math
import os
import random
import shutil
import sys
import uuid
import zlib
from dataclasses import asdict
from datetime import datetime, timedelta
from pathlib import Path

from bench_scale import member_starts  # scripts/, this script's own directory
from cputree import measure

ROOT = Path(__file__).resolve().parent.parent

BENCH_WARC = ROOT.parent / "shared" / "bench" / "warc" / "bench-dev.warc.gz"
WARCPLEX = ROOT / ".venv" / "bin" / "warcplex"
VENV_PYTHON = ROOT / ".venv" / "bin" / "python"
CONFIG = "conf/nightly.yaml"
SEED = 20240610
INPUT_VERSION = 1  # bump when the way the inputs are built changes
CORPUS_KEYS = ("build", "generation", "documents_new", "demoted", "files_rewritten", "documents_out", "full_reason")


# --- inputs ---------------------------------------------------------------------------------------------------

def members(data: bytes):
    """(start, end) of each gzip member of ``data`` (one WARC record each, as Common Crawl writes them)."""
    starts = member_starts(data)
    return zip(starts, starts[1:] + [len(data)])


def record_type(member: bytes) -> str:
    """The WARC-Type of a gzip member's record (from its header only)."""
    inflater = zlib.decompressobj(wbits=31)
    head = inflater.decompress(member, 1 << 16)
    header = head[:head.find(b"\r\n\r\n")].decode("utf-8", "replace")
    for line in header.split("\r\n"):
        name, _, value = line.partition(":")
        if name.strip().lower() == "warc-type":
            return value.strip()
    raise ValueError("a WARC record without WARC-Type")


def pages_of(data: bytes) -> tuple[tuple[int, int], list[list[tuple[int, int]]]]:
    """bench dev's warcinfo member and its pages, each the (start, end) of its members: a request, its response and
    the response's metadata (a new page starts at a request, or at a response when the page has one already)."""
    warcinfo, pages = None, []
    current: list[tuple[int, int]] = []
    has_response = False
    for start, end in members(data):
        kind = record_type(data[start:end])
        if kind == "warcinfo" and warcinfo is None and not pages and not current:
            warcinfo = (start, end)
            continue
        if kind == "request" or (kind == "response" and has_response) or not current:
            if current:
                pages.append(current)
            current, has_response = [], False
        current.append((start, end))
        has_response = has_response or kind == "response"
    if current:
        pages.append(current)
    if warcinfo is None:
        raise SystemExit(f"bench_nights: {BENCH_WARC} does not start with a warcinfo record")
    return warcinfo, pages


def shifted_date(value: str, days: int) -> str:
    """A WARC-Date ``days`` days later (earlier when negative), in the same form (``Z``, fraction kept)."""
    moved = datetime.fromisoformat(value.replace("Z", "+00:00")) + timedelta(days=days)
    return moved.isoformat().replace("+00:00", "Z")


def page_copy(raw: bytes, days: int, rng: random.Random) -> bytes:
    """The records of one page (gzipped WARC records ``raw``) rewritten with warcio: fresh record ids (and the
    WARC-Concurrent-To that name them), WARC-Date moved by ``days``; URL, HTTP headers and payload kept byte for
    byte (the blocks are not parsed, so their digests stay right)."""
    from warcio.archiveiterator import ArchiveIterator
    from warcio.recordloader import ArcWarcRecord
    from warcio.warcwriter import WARCWriter

    renamed: dict[str, str] = {}
    out = io.BytesIO()
    writer = WARCWriter(out, gzip=True)
    for record in ArchiveIterator(io.BytesIO(raw), no_record_parse=True):
        headers = record.rec_headers
        block = record.raw_stream.read()
        old = headers.get_header("WARC-Record-ID")
        renamed[old] = f"<urn:uuid:{uuid.UUID(int=rng.getrandbits(128), version=4)}>"
        headers.replace_header("WARC-Record-ID", renamed[old])
        concurrent = headers.get_header("WARC-Concurrent-To")
        if concurrent in renamed:
            headers.replace_header("WARC-Concurrent-To", renamed[concurrent])
        headers.replace_header("WARC-Date", shifted_date(headers.get_header("WARC-Date"), days))
        writer.write_record(ArcWarcRecord("warc", record.rec_type, headers, io.BytesIO(block), None, None,
                                          len(block)))
    return out.getvalue()


def response_info(raw: bytes) -> dict:
    """URL, WARC-Date and record id of the response among one page's records."""
    from warcio.archiveiterator import ArchiveIterator

    for record in ArchiveIterator(io.BytesIO(raw), no_record_parse=True):
        if record.rec_type == "response":
            h = record.rec_headers
            return {"url": h.get_header("WARC-Target-URI"), "date": h.get_header("WARC-Date"),
                    "record_id": h.get_header("WARC-Record-ID")}
    return {}


def build_inputs(work: Path, nights: int, duplicates: int, pages_wanted: int | None, reuse: bool) -> dict:
    """The nights' shards and manifest under ``work/nights`` (see the module docstring); returns their plan."""
    folder = work / "nights"
    stamp = folder / "inputs.json"
    source = {"source": str(BENCH_WARC), "size": BENCH_WARC.stat().st_size, "nights": nights,
              "duplicates": duplicates, "pages": pages_wanted, "seed": SEED, "version": INPUT_VERSION}
    if reuse and stamp.exists():
        built = json.loads(stamp.read_text())
        if built.get("source") == source and all(Path(p).exists() for p in built["shards"]):
            print(f"inputs: reused {folder}", flush=True)
            return built
        print("inputs: built with other options; building them again", flush=True)
    if folder.exists():
        shutil.rmtree(folder)
    folder.mkdir(parents=True)
    data = BENCH_WARC.read_bytes()
    (info_start, info_end), pages = pages_of(data)
    total = len(pages) if pages_wanted is None else min(pages_wanted, len(pages))
    per_night = (total - duplicates) // nights
    if per_night < 1 or per_night + duplicates < duplicates * 1 or duplicates < 0:
        raise SystemExit(f"bench_nights: {total} pages are too few for {nights} nights of {duplicates} duplicates")
    # Night 1: P + D originals; night k >= 2: the next P originals.
    bounds = [0, per_night + duplicates]
    for _ in range(1, nights):
        bounds.append(bounds[-1] + per_night)
    rng = random.Random(SEED)
    copied: set[int] = set()
    plan = {"source": source, "pages_total": total, "pages_used": bounds[-1], "pages_per_night": per_night + duplicates,
            "originals_per_night": [], "shards": [], "copies": [], "records_per_night": []}
    earlier_count = (duplicates + 1) // 2
    for night in range(nights):
        originals = range(bounds[night], bounds[night + 1])
        parts = [data[info_start:info_end]]
        for index in originals:
            parts += [data[start:end] for start, end in pages[index]]
        records = 1 + sum(len(pages[index]) for index in originals)
        if night > 0:
            candidates = [i for i in range(bounds[night]) if i not in copied]
            if len(candidates) < duplicates:
                raise SystemExit(f"bench_nights: too few earlier pages to copy {duplicates} into night {night + 1}")
            chosen = rng.sample(candidates, duplicates)
            for position, index in enumerate(chosen):
                copied.add(index)
                days = -1 if position < earlier_count else 1
                raw = b"".join(data[start:end] for start, end in pages[index])
                copy = page_copy(raw, days, rng)
                parts.append(copy)
                records += len(pages[index])
                original_night = next(n for n in range(nights) if bounds[n] <= index < bounds[n + 1]) + 1
                plan["copies"].append({"night": night + 1, "page": index, "of_night": original_night,
                                       "days": days, "original": response_info(raw), "copy": response_info(copy)})
        shard = folder / f"night-{night + 1:02d}.warc.gz"
        shard.write_bytes(b"".join(parts))
        plan["shards"].append(str(shard.resolve()))
        plan["originals_per_night"].append(len(originals))
        plan["records_per_night"].append(records)
    manifest = folder / "nights.paths"  # *.paths: a manifest to `warcplex nightly --manifest` and `run --input`
    manifest.write_text("".join(f"{path}\n" for path in plan["shards"]))
    plan["manifest"] = str(manifest.resolve())
    stamp.write_text(json.dumps(plan, indent=1))
    print(f"inputs: {nights} nights of {per_night + duplicates} pages ({plan['records_per_night'][0]} records) "
          f"in {folder}; {bounds[-1]} of {total} pages used, {len(plan['copies'])} copies", flush=True)
    return plan


# --- runs -----------------------------------------------------------------------------------------------------

def environment() -> dict[str, str]:
    return dict(os.environ, SPARK_LOCAL_IP="127.0.0.1", PYSPARK_PYTHON=str(VENV_PYTHON),
                PYSPARK_DRIVER_PYTHON=str(VENV_PYTHON))


def common_sets(cuts: str | None) -> list[str]:
    sets = ["spark.master=local[2]"] + ([f"corpus.quality.perplexity_cuts={cuts}"] if cuts else [])
    return [arg for assignment in sets for arg in ("--set", assignment)]


def measured(cmd: list[str], out: Path, log: Path) -> dict:
    """One measured command; its figures with those of ``out``'s stats.json."""
    with open(log, "ab") as handle:
        handle.write(("$ " + " ".join(cmd) + "\n").encode())
        handle.flush()
        usage = measure(cmd, env=environment(), cwd=str(ROOT), stdout=handle, stderr=handle)
    if usage.returncode != 0:
        raise SystemExit(f"bench_nights: `{' '.join(cmd[1:3])}` failed with status {usage.returncode}; see {log}")
    stats = json.loads((out / "stats.json").read_text())
    job_cpu = stats.get("job_cpu") or {}
    corpus = stats.get("corpus") or {}
    return {"wall_s": usage.wall_seconds, "cpu_s": usage.cpu_seconds, "cpu_method": usage.method,
            "corpus_cpu_s": job_cpu.get("corpus"), "job_cpu_total_s": job_cpu.get("total"),
            "pages_new": job_cpu.get("pages"), "job_cpu_keys": sorted(job_cpu),
            "corpus": {key: corpus.get(key) for key in CORPUS_KEYS},
            "corpus_keys": sorted(corpus), "corpus_wall_s": corpus.get("wall_seconds"),
            "corpus_resumed": corpus.get("resumed"), "load": usage.load_average, "usage": asdict(usage)}


def nightly(manifest: str, out: Path, nights: int, sets: list[str], label: str, logs: Path) -> list[dict]:
    """``nights`` runs of `warcplex nightly`, one shard each, into a fresh ``out``."""
    if out.exists():
        shutil.rmtree(out)
    rows = []
    for night in range(1, nights + 1):
        log = logs / f"{label}-night-{night:02d}.log"
        log.write_bytes(b"")
        cmd = [str(WARCPLEX), "nightly", "--manifest", manifest, "--output", str(out), "--max-shards", "1",
               "--config", CONFIG, *sets]
        print(f"{label} night {night} (load {os.getloadavg()[0]:.1f}) ...", end=" ", flush=True)
        row = {"night": night, **measured(cmd, out, log)}
        rows.append(row)
        warn_layout(row, label)
        c = row["corpus"]
        print(f"wall {row['wall_s']:.0f} s, CPU {row['cpu_s']:.0f} s, corpus CPU {fmt(row['corpus_cpu_s'], 1)} s; "
              f"build {fmt(c['build'])}, generation {fmt(c['generation'])}, new {fmt(c['documents_new'])}, "
              f"demoted {fmt(c['demoted'])}, rewritten {fmt(c['files_rewritten'])}, documents "
              f"{fmt(c['documents_out'])}" + (f", full because: {c['full_reason']}" if c.get("full_reason") else ""),
              flush=True)
    return rows


_WARNED: set[str] = set()


def warn_layout(row: dict, label: str) -> None:
    """Say once what stats.json holds when ``job_cpu.corpus`` or the corpus keys are not there."""
    if row["corpus_cpu_s"] is None and "job_cpu" not in _WARNED:
        _WARNED.add("job_cpu")
        print(f"\n  note ({label}): stats.json job_cpu has no 'corpus' figure; its keys: {row['job_cpu_keys']}",
              flush=True)
    missing = [k for k in CORPUS_KEYS if k != "full_reason" and row["corpus"].get(k) is None]
    if missing and "corpus" not in _WARNED:
        _WARNED.add("corpus")
        print(f"\n  note ({label}): stats.json corpus lacks {', '.join(missing)}; its keys: {row['corpus_keys']}",
              flush=True)


def scratch(manifest: str, out: Path, sets: list[str], logs: Path) -> dict:
    if out.exists():
        shutil.rmtree(out)
    log = logs / "scratch.log"
    log.write_bytes(b"")
    cmd = [str(WARCPLEX), "run", "--input", manifest, "--output", str(out), "--config", CONFIG, *sets]
    print(f"from scratch (load {os.getloadavg()[0]:.1f}) ...", end=" ", flush=True)
    row = measured(cmd, out, log)
    print(f"wall {row['wall_s']:.0f} s, CPU {row['cpu_s']:.0f} s, corpus CPU {fmt(row['corpus_cpu_s'], 1)} s, "
          f"documents {fmt(row['corpus']['documents_out'])}", flush=True)
    return row


# --- comparison -----------------------------------------------------------------------------------------------

def read_rows(folder: Path) -> tuple[dict[str, dict], list[str], int]:
    """The rows of a Parquet folder by warc_record_id, its columns, and how many ids were seen more than once.
    The in-file ``language`` column is used: no hive partitioning is applied to ``language=xx/``."""
    import pyarrow as pa
    import pyarrow.dataset as ds
    import pyarrow.parquet as pq

    if not folder.exists():
        return {}, [], 0
    files = sorted(ds.dataset(str(folder), format="parquet").files)
    tables = [pq.ParquetFile(path).read() for path in files]
    if not tables:
        return {}, [], 0
    table = pa.concat_tables(tables, promote_options="permissive")
    table = table.sort_by("warc_record_id")
    rows, repeated = {}, 0
    for row in table.to_pylist():
        if row["warc_record_id"] in rows:
            repeated += 1
        rows[row["warc_record_id"]] = row
    return rows, table.column_names, repeated


def same(a, b) -> bool:
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    return a == b


def compare(left: Path, right: Path, examples: int = 3) -> dict:
    """Every column of the rows of ``left`` and ``right`` (Parquet folders), by warc_record_id."""
    a, columns_a, repeated_a = read_rows(left)
    b, columns_b, repeated_b = read_rows(right)
    only_a, only_b = sorted(a.keys() - b.keys()), sorted(b.keys() - a.keys())
    columns = [c for c in columns_a if c in set(columns_b)]
    differing: dict[str, list[str]] = {}
    for key in sorted(a.keys() & b.keys()):
        cols = [c for c in columns if not same(a[key].get(c), b[key].get(c))]
        if cols:
            differing[key] = cols
    by_column: dict[str, int] = {}
    for cols in differing.values():
        for c in cols:
            by_column[c] = by_column.get(c, 0) + 1
    result = {
        "rows": [len(a), len(b)], "only_left": len(only_a), "only_right": len(only_b),
        "columns_only_left": sorted(set(columns_a) - set(columns_b)),
        "columns_only_right": sorted(set(columns_b) - set(columns_a)),
        "repeated_ids": [repeated_a, repeated_b], "differing": len(differing), "differing_by_column": by_column,
        "examples_only_left": only_a[:examples], "examples_only_right": only_b[:examples],
        "examples_differing": [{"warc_record_id": key, "columns": cols,
                                "values": {c: [short(a[key].get(c)), short(b[key].get(c))] for c in cols[:4]}}
                               for key, cols in list(differing.items())[:examples]],
    }
    result["equal"] = not (only_a or only_b or differing or result["columns_only_left"]
                           or result["columns_only_right"] or repeated_a or repeated_b)
    return result


def short(value, limit: int = 80):
    text = value if isinstance(value, (int, float, bool, type(None))) else str(value)
    return text[:limit] + "..." if isinstance(text, str) and len(text) > limit else text


def print_comparison(name: str, result: dict) -> None:
    if result["equal"]:
        print(f"{name}: rows equal: yes ({result['rows'][0]:,} rows)")
        return
    print(f"{name}: rows equal: NO ({result['rows'][0]:,} rows against {result['rows'][1]:,}): "
          f"{result['only_left']} ids only on the left, {result['only_right']} only on the right, "
          f"{result['differing']} ids with differing columns {result['differing_by_column']}")
    if result["columns_only_left"] or result["columns_only_right"]:
        print(f"  columns only left {result['columns_only_left']}, only right {result['columns_only_right']}")
    if any(result["repeated_ids"]):
        print(f"  ids seen more than once: {result['repeated_ids'][0]} left, {result['repeated_ids'][1]} right")
    for key in result["examples_only_left"]:
        print(f"  only left: {key}")
    for key in result["examples_only_right"]:
        print(f"  only right: {key}")
    for example in result["examples_differing"]:
        print(f"  differs: {example['warc_record_id']}: {example['values']}")


def comparisons(left: Path, right: Path) -> dict:
    return {"corpus": compare(left / "corpus", right / "corpus"),
            "corpus_dropped/documents": compare(left / "corpus_dropped" / "documents",
                                                right / "corpus_dropped" / "documents")}


# --- printing -------------------------------------------------------------------------------------------------

def fmt(value, digits: int | None = None) -> str:
    if value is None:
        return "-"
    if digits is not None and isinstance(value, (int, float)):
        return f"{value:,.{digits}f}"
    return f"{value:,}" if isinstance(value, int) and not isinstance(value, bool) else str(value)


def ratio(value, first) -> str:
    return f"{value / first:.2f}" if value is not None and first else "-"


def print_tables(results: dict) -> None:
    inc, full = results.get("incremental", []), results.get("full", [])
    first_inc = inc[0]["corpus_cpu_s"] if inc else None
    first_full = full[0]["corpus_cpu_s"] if full else None
    print("\n| night | pages new | documents new | corpus documents | build | corpus CPU s, incremental | x night 1 "
          "| corpus CPU s, not incremental | x night 1 | demoted | files rewritten |")
    print("|---:|---:|---:|---:|---|---:|---:|---:|---:|---:|---:|")
    for index, row in enumerate(inc):
        other = full[index] if index < len(full) else {}
        c = row["corpus"]
        print(f"| {row['night']} | {fmt(row['pages_new'])} | {fmt(c['documents_new'])} | {fmt(c['documents_out'])} "
              f"| {fmt(c['build'])} | {fmt(row['corpus_cpu_s'], 1)} | {ratio(row['corpus_cpu_s'], first_inc)} "
              f"| {fmt(other.get('corpus_cpu_s'), 1)} | {ratio(other.get('corpus_cpu_s'), first_full)} "
              f"| {fmt(c['demoted'])} | {fmt(c['files_rewritten'])} |")
    reasons = {row["night"]: row["corpus"]["full_reason"] for row in inc if row["corpus"].get("full_reason")}
    for night, reason in reasons.items():
        print(f"night {night}, incremental run built in full: {reason}")
    print("\n| night | wall s, incremental | whole-tree CPU s, incremental | wall s, not incremental "
          "| whole-tree CPU s, not incremental |")
    print("|---:|---:|---:|---:|---:|")
    for index, row in enumerate(inc):
        other = full[index] if index < len(full) else {}
        print(f"| {row['night']} | {row['wall_s']:.0f} | {row['cpu_s']:.0f} | {fmt(other.get('wall_s'), 0)} "
              f"| {fmt(other.get('cpu_s'), 0)} |")
    if "scratch" in results:
        s = results["scratch"]
        print(f"| from scratch, all nights | {s['wall_s']:.0f} | {s['cpu_s']:.0f} (corpus "
              f"{fmt(s['corpus_cpu_s'], 1)}) | | |")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--nights", type=int, default=10, help="nights (shards) to build (default 10)")
    parser.add_argument("--duplicates", type=int, default=6,
                        help="copies of earlier nights' pages in every night after the first (default 6)")
    parser.add_argument("--pages", type=int, help="use only bench dev's first N pages (default all 3,206)")
    parser.add_argument("--cuts", default=None,
                        help="corpus.quality.perplexity_cuts, a YAML flow mapping (default: the preset's)")
    parser.add_argument("--work", type=Path, default=ROOT / "build" / "bench-nights")
    parser.add_argument("--results", type=Path, help="JSON of every figure (default WORK/results.json)")
    parser.add_argument("--skip-full", action="store_true", help="skip the non-incremental nights")
    parser.add_argument("--reuse", action="store_true", help="keep the inputs when built with the same options")
    args = parser.parse_args(argv)
    if args.nights < 1 or args.duplicates < 0 or (args.pages is not None and args.pages < 1):
        parser.error("--nights and --pages must be at least 1, --duplicates at least 0")
    if not BENCH_WARC.exists():
        raise SystemExit(f"bench_nights: {BENCH_WARC} is missing (../shared/bench)")
    if not WARCPLEX.exists():
        raise SystemExit(f"bench_nights: {WARCPLEX} is missing (make setup)")
    work = args.work.resolve()
    logs = work / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    results_path = args.results or work / "results.json"
    plan = build_inputs(work, args.nights, args.duplicates, args.pages, args.reuse)
    sets = common_sets(args.cuts)
    results: dict = {"options": {"nights": args.nights, "duplicates": args.duplicates, "pages": args.pages,
                                 "cuts": args.cuts, "config": CONFIG, "sets": sets[1::2]},
                     "inputs": {k: plan[k] for k in ("pages_total", "pages_used", "pages_per_night",
                                                     "originals_per_night", "records_per_night", "manifest",
                                                     "copies")}}

    def save() -> None:
        results_path.write_text(json.dumps(results, indent=1, sort_keys=True, default=str))

    outputs = {"incremental": work / "out-incremental", "full": work / "out-full", "scratch": work / "out-scratch"}
    results["incremental"] = nightly(plan["manifest"], outputs["incremental"], args.nights, sets, "incremental", logs)
    save()
    if not args.skip_full:
        results["full"] = nightly(plan["manifest"], outputs["full"], args.nights,
                                  sets + ["--set", "corpus.incremental=false"], "not-incremental", logs)
        save()
    results["scratch"] = scratch(plan["manifest"], outputs["scratch"], sets, logs)
    save()
    print_tables(results)
    print()
    results["comparison"] = {}
    kinds = ["incremental"] + ([] if args.skip_full else ["full"])
    for kind in kinds:
        found = comparisons(outputs[kind], outputs["scratch"])
        results["comparison"][f"{kind} vs scratch"] = found
        for folder, result in found.items():
            print_comparison(f"{kind} vs from scratch, {folder}", result)
    save()
    print(f"\nresults: {results_path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
