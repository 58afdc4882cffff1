"""Bad input: a generated corpus of damaged WARCs through real local Spark, and bounded memory."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pyarrow.dataset as ds
import pytest

from conftest import ROOT
from pipeline.cli import main as cli_main
from pipeline.config import InputSettings, S3Settings
from pipeline.writing.output import DATASET_DIR
from pipeline.stats import Stats
from pipeline.reading.reader import plan_splits, read_pages
from pipeline.reading.shards import Shard, Split, shard_key

import make_fuzz_corpus

pytestmark = [pytest.mark.spark, pytest.mark.slow]

# Damage that loses bytes the reader must report per file.
REPORTED_KINDS = {"truncated_member", "truncated_file", "garbage_between", "not_warc"}


def splits_of(uri: str, settings: InputSettings, parallelism: int) -> list[Split]:
    """The splits the job plans for the file at ``uri`` (by the reader its name chooses)."""
    return plan_splits([Shard(uri, shard_key(uri))], settings, S3Settings(), parallelism)


def need_spark_and_models() -> None:
    if shutil.which("java") is None:
        pytest.skip("Java is needed for Spark")
    if not (ROOT / "conf" / "models.yaml").exists():
        pytest.skip("conf/models.yaml (the shipped KenLM registry) is missing")


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> tuple[Path, list[dict]]:
    out = tmp_path_factory.mktemp("fuzz")
    return out, make_fuzz_corpus.generate(out, count=224, seed=7)  # seeded by the real WARCs in tests/data


@pytest.fixture(scope="module")
def fuzz_run(corpus, tmp_path_factory) -> tuple[Path, dict]:
    need_spark_and_models()
    corpus_dir, manifest = corpus
    out = tmp_path_factory.mktemp("fuzz-run") / "out"
    status = cli_main(["run", "--input", *(str(corpus_dir / m["file"]) for m in manifest), "--output", str(out),
                       "--set", "spark.master=local[2]"])
    # 3: the files with no record at all (not a WARC, empty) could not be read; a failed task would fail the
    # job (local mode allows no task retries)
    assert status == 3
    return out, json.loads((out / "stats.json").read_text())


def unread(stats: dict) -> set[str]:
    """The shards the run could not read at all (no marker; the next run retries them)."""
    return {path for path, error in stats.get("file_errors", {}).items() if error.startswith("not read")}


def marker(out: Path, path: Path) -> dict:
    return json.loads((out / "_markers" / f"{Split(str(path), 0, 1).split_id}.json").read_text())


def test_corpus_covers_every_kind_of_damage(corpus):
    corpus_dir, manifest = corpus
    kinds = Counter(m["kind"] for m in manifest)
    assert len(manifest) >= 200
    assert set(kinds) == set(make_fuzz_corpus.KINDS) | {"big_page", "encoded_payload", "real_page_trap"}
    big = corpus_dir / next(m["file"] for m in manifest if m["kind"] == "big_page")
    assert big.stat().st_size < 20 * 1024 * 1024  # stored compressed
    assert any(m["kind"] == "nested_html" and "100000 nested" in m["note"] for m in manifest)


def test_every_record_is_accounted_for(corpus, fuzz_run):
    corpus_dir, manifest = corpus
    out, stats = fuzz_run
    counts = Stats.from_dict(stats).counts
    skipped = sum(v for k, v in counts.items() if k.startswith("skip."))
    outcomes = sum(v for k, v in counts.items() if k.startswith("outcome."))
    assert counts["records.read"] == skipped + counts["records.html"]
    assert counts["records.html"] == outcomes
    failed = unread(stats)
    assert counts["splits.processed"] + counts["splits.failed"] == len(manifest) and len(failed) == counts["splits.failed"]
    assert not any(k.startswith("outcome.error") for k in counts)
    assert counts["skip.too_large"] >= 1  # the 50 MB page
    assert counts["skip.binary_payload"] >= 1
    assert counts["stage.resiliparse.error.PageTooDeep"] >= 1
    for entry in manifest:  # every undamaged record of every file is read back
        if str(corpus_dir / entry["file"]) in failed:
            assert entry["intact"] == 0 and entry["kind"] in ("not_warc", "empty"), entry
            continue
        per_file = Stats.from_dict(marker(out, corpus_dir / entry["file"])).counts
        assert per_file["records.read"] >= entry["intact"], entry


def test_a_warc_inside_a_record_never_yields_phantom_records(corpus):
    """Split planning on files whose record holds a gzipped WARC: every split reads only outer records."""
    corpus_dir, manifest = corpus
    nested = [m for m in manifest if m["kind"] == "warc_in_record"]
    assert nested
    for entry in nested:
        path = corpus_dir / entry["file"]
        whole = Stats()
        ids = [p.record_id for p in read_pages(Split(str(path), 0, 1), InputSettings(), S3Settings(), whole)]
        assert whole.counts["records.read"] == entry["intact"], entry
        splits = splits_of(str(path), InputSettings(splits_per_shard=8, min_split_bytes=1), 2)
        assert len(splits) > 1
        parts: set[str] = set()
        read = 0
        for split in splits:
            stats = Stats()
            parts |= {p.record_id for p in read_pages(split, InputSettings(), S3Settings(), stats)}
            read += stats.counts["records.read"]
        # (the seed records repeat, so a page may come twice: compare records read and the id sets)
        assert read == entry["intact"] and parts == set(ids), entry


def test_unreadable_parts_are_reported_per_file(corpus, fuzz_run):
    corpus_dir, manifest = corpus
    out, stats = fuzz_run
    errors = stats["file_errors"]
    for entry in manifest:
        path = str(corpus_dir / entry["file"])
        if entry["kind"] in REPORTED_KINDS or entry["note"] == "empty (zero)":
            assert path in errors, entry
        if entry["kind"] == "not_warc" or entry["note"] == "empty (zero)":  # no record: not read at all, exit 3
            assert errors[path].startswith("not read, retried by the next run: "), entry
            assert "no WARC record found" in errors[path] or "empty file" in errors[path], entry
        if entry["kind"] in {"intact", "lying_charset", "big_page", "duplicated_header"}:
            assert path not in errors, (entry, errors.get(path))
    read_errors = stats["read_errors"]
    assert all(read_errors[kind] >= 1 for kind in ("truncated", "trailing_bytes", "swallowed"))
    assert read_errors["resynced"] >= 1


def test_damaged_pages_come_out_right(fuzz_run):
    out, stats = fuzz_run
    rows = ds.dataset(out / DATASET_DIR, format="parquet").to_table().to_pylist()
    by_url: dict[str, list[dict]] = {}
    for row in rows:
        by_url.setdefault(row["url"], []).append(row)
    # Lying charsets: the text is decoded by content, not by the declared UTF-8.
    assert any("天気" in r["text"] for r in by_url["http://fuzz.example/shift_jis"])
    assert all("\ufffd" not in r["text"] for url in ("http://fuzz.example/cp1252", "http://fuzz.example/shift_jis")
               for r in by_url.get(url, []))
    # Binary labelled text/html never becomes text; deep nesting falls back to the conservative stage.
    assert not any(url.endswith(("/png", "/random", "/pdf", "/nul")) for url in by_url)
    assert {r["extractor"] for r in by_url["http://fuzz.example/nested"]} == {"conservative"}


def test_coded_and_charset_trap_pages_come_out_whole(corpus, fuzz_run):
    """Every HTTP coding decodes and every charset trap keeps its text; bad bodies are counted skips."""
    _, manifest = corpus
    out, stats = fuzz_run
    cases = make_fuzz_corpus.encoded_payload_cases()
    written = {n for m in manifest if m["kind"] == "encoded_payload" for n in m["note"].split(": ")[1].split(", ")}
    assert written == set(cases)
    rows = ds.dataset(out / DATASET_DIR, format="parquet").to_table().to_pylist()
    texts: dict[str, list[str]] = {}
    for row in rows:
        texts.setdefault(row["url"], []).append(row["text"])
    for name, (_, _, _, word) in cases.items():
        url = f"http://fuzz.example/enc/{name}"
        if word is None:
            assert url not in texts, name
            continue
        assert texts.get(url) and all(word in t and "Ã" not in t and "\x00" not in t for t in texts[url]), name
    skipped = stats["skip"]["payload"]
    assert skipped["gzip"] >= 1 and skipped["too_large"] >= 1 and skipped["unsupported_coding"] >= 1
    assert stats["payload"]["dechunked"] >= 1 and stats["payload"]["crawler_decoded"] >= 1


def test_real_pages_whose_bytes_lie_come_out_right(corpus, fuzz_run):
    """The real-page traps: a code page labelled Latin-1 in header and meta reads in its own alphabet
    (counted ``stage.decode.relabelled``), CESU-8 surrogates as the characters they encode (``cesu8``);
    character references and surrogate bytes that name no character are removed, never U+FFFD, and counted
    (``stage.decode.removed.<reason>``)."""
    from pipeline.reading.decode import reads_as_mojibake

    _, manifest = corpus
    out, stats = fuzz_run
    traps = {m["note"].split(":")[0]: m for m in manifest if m["kind"] == "real_page_trap" and "url" in m}
    assert set(traps) == {"code_page_as_latin1", "cesu8", *make_fuzz_corpus.BAD_BYTES}
    rows = ds.dataset(out / DATASET_DIR, format="parquet").to_table().to_pylist()
    for name, entry in traps.items():
        texts = [r["text"] for r in rows if r["url"] == entry["url"]]
        assert texts, name
        for text in texts:
            assert not reads_as_mojibake(text) and "í ½" not in text, name
            assert entry["word"] in text if entry["word"] else \
                sum(ch.isalpha() and ord(ch) > 0x24F for ch in text) >= 100, name
            assert "\ufffd" not in text, name
    decoded = stats["stage"]["decode"]
    assert decoded["relabelled"] >= 1 and decoded["cesu8"] >= 1
    assert decoded["removed"]["reference"] >= 5 * 5 and decoded["removed"]["surrogate"] >= 2 * 5  # 5 paragraphs


def test_damaged_record_headers_are_read_by_warcio_or_counted(corpus, fuzz_run):
    """Real records whose WARC header FastWARC rejects or misreads: warcio reads the lower-case version line and
    the Latin-1 bytes of a target URI and a record id (their pages come out), the WARC/2.0 record is counted
    with its reason and its file named; nothing is lost silently."""
    corpus_dir, manifest = corpus
    out, stats = fuzz_run
    entry = next(m for m in manifest if m["note"].startswith("damaged_headers"))
    urls = {r["url"] for r in ds.dataset(out / DATASET_DIR, format="parquet")
            .to_table(columns=["url"]).to_pylist()}
    assert set(entry["recovered"]) <= urls and not set(entry["rejected"]) & urls
    per_file = Stats.from_dict(marker(out, corpus_dir / entry["file"])).counts
    assert per_file["read_errors.recovered.version_line"] == 1 and per_file["read_errors.recovered.header_bytes"] == 2
    assert per_file["read_errors.rejected.version_line"] == 1
    assert "WARC/2.0" in stats["file_errors"][str(corpus_dir / entry["file"])]


def run_python(code: str) -> dict:
    """Run ``code`` in a fresh interpreter (its own peak RSS); it prints one JSON object."""
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_50mb_page_extracts_in_bounded_memory(corpus, tmp_path):
    need_spark_and_models()
    corpus_dir, manifest = corpus
    big = corpus_dir / next(m["file"] for m in manifest if m["kind"] == "big_page")
    result = run_python(f"""
import json
from pipeline.config import load_settings
from pipeline.spark.runner import run_split
from pipeline.reading.shards import Split
from pipeline.spark.workers import peak_rss_mb, rss_mb
settings = load_settings(None, ["input.max_html_bytes=67108864", "extract.timeout_s=600"])
stats = run_split(Split({str(big)!r}, 0, 1), settings, {str(tmp_path / 'out')!r})
print(json.dumps({{"stats": stats, "peak": peak_rss_mb(), "after": rss_mb()}}))
""")
    stats = result["stats"]
    assert stats["records"]["html"] == stats["outcome"]["kept"] == 3
    assert "skip" not in stats or "too_large" not in stats["skip"]
    # A 50 MB page: DOM plus text, far below the 1 GB worker budget (models are mmapped). The time guard is
    # set out of reach: on a loaded machine it could interrupt a stage, and the next stage's DOM would then be
    # measured beside the interrupted one's (what the page costs, not what a timeout costs, is measured here).
    assert result["peak"] < 1024, result["peak"]


def test_long_run_memory_does_not_grow(cc_genuine_warc, tmp_path):
    need_spark_and_models()
    result = run_python(f"""
import json
from pipeline.config import load_settings
from pipeline.spark.runner import run_split
from pipeline.reading.shards import Split
from pipeline.spark.workers import rss_mb
settings = load_settings(None, ["output.resume=false"])
rss, pages = [], 0
for i in range(24):
    stats = run_split(Split({str(cc_genuine_warc)!r}, 0, 1), settings, {str(tmp_path / 'out')!r})
    pages += stats["records"]["html"]
    rss.append(rss_mb())
print(json.dumps({{"rss": rss, "pages": pages}}))
""")
    rss = result["rss"]
    assert result["pages"] >= 24 * 10
    # After warm-up (models loaded, allocator pools filled) the worker stays flat.
    assert rss[-1] - rss[3] < 40, rss


def test_worker_past_rss_ceiling_is_recycled(cc_genuine_warc, clueweb_quirk_warc, tmp_path):
    """With a 1 MiB ceiling every task retires its worker: each split runs in a new process, none fails."""
    need_spark_and_models()
    inputs = [cc_genuine_warc, clueweb_quirk_warc, cc_genuine_warc.parent / "CC-MAIN-2024-22.whirlwind.warc.gz"]
    out = tmp_path / "out"
    status = cli_main(["run", "--input", *map(str, inputs), "--output", str(out),
                       "--set", "spark.master=local[1]", "--set", "extract.worker_max_rss_mb=1",
                       "--set", "perplexity.enabled=false"])
    assert status == 0
    stats = json.loads((out / "stats.json").read_text())
    assert stats["splits"]["processed"] == 3
    assert stats["workers"]["retired"] == 3
    assert len(stats["rss"]["max_mb"]) == 3  # three distinct worker pids


def test_worker_reused_below_ceiling(cc_genuine_warc, clueweb_quirk_warc, tmp_path):
    need_spark_and_models()
    out = tmp_path / "out"
    # two --input flags: both count (argparse's default kept only the last one)
    status = cli_main(["run", "--input", str(cc_genuine_warc), "--input", str(clueweb_quirk_warc), "--output", str(out),
                       "--set", "spark.master=local[1]", "--set", "perplexity.enabled=false",
                       "--set", "spark.conf={spark.python.worker.reuse: 'true'}"])
    assert status == 0
    stats = json.loads((out / "stats.json").read_text())
    assert stats["splits"]["processed"] == 2
    assert "workers" not in stats
    assert len(stats["rss"]["max_mb"]) == 1
    assert 0 < max(stats["rss"]["max_mb"].values()) < 1024


def test_max_counters_merge_by_maximum():
    stats = Stats()
    for peak in (300.0, 250.0, 410.5, 120.0):
        split = Stats()
        split.set_max("rss.max_mb.pid7", peak)
        split.add("splits.processed")
        stats.merge(Stats.from_dict(split.to_dict()))
    assert stats.counts["rss.max_mb.pid7"] == 410.5
    assert stats.counts["splits.processed"] == 4
    with pytest.raises(ValueError):
        stats.set_max("rss.peak", 1.0)


def test_peak_rss_is_the_processs_own_not_its_parents():
    """A process started from a large one reads its own peak: ``ru_maxrss`` survives ``execve`` on Linux and would
    report the parent's size (the 50 MB page test's subprocess, started from a pytest grown over the suite)."""
    ballast = bytearray(300 * 1024 * 1024)
    for i in range(0, len(ballast), 4096):
        ballast[i] = 1
    code = "from pipeline.spark.workers import peak_rss_mb; print(peak_rss_mb())"
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert float(done.stdout.strip().splitlines()[-1]) < 250  # its own imports, far below the parent's 300 MB ballast
    del ballast
