"""Incremental corpus builds through local Spark on real WARC records: three nights, each adding to the last,
give the same rows, counts and index sample as one build over the same shards, including a text whose earliest
copy arrives on a later night (the earlier keeper is demoted, and later again re-pointed); a build killed after
its rewrite resumes to the same rows; a stage that cannot be incremental makes the build read all of data/ and
say why."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pyarrow.dataset as ds
import pytest
from warcio.warcwriter import WARCWriter

from conftest import real_warc
from pipeline.cli import main as cli_main
from pipeline.config import PROJECT_ROOT
from test_corpus import CC, SITE, WIKI, responses, write_response
from test_nightly import wait_gone

pytestmark = pytest.mark.spark

# Every stage on that can be incremental: exact duplicates, quality signals and filters with fixed buckets.
SETTINGS = ["--set", "spark.master=local[2]", "--set", "index.sample_share=1",
            "--set", "corpus.quality.filters=true", "--set", "corpus.quality.min_words=10",
            "--set", "corpus.quality.perplexity_cuts={en: [300.0, 3000.0], es: [500.0, 5000.0], ja: [50, 500]}"]


@pytest.fixture(scope="module")
def shards(tmp_path_factory) -> dict:
    if shutil.which("java") is None:
        pytest.skip("Java is needed for Spark")
    return make_nights(tmp_path_factory.mktemp("nights"))


def make_nights(folder: Path) -> dict:
    """Night 1: real pages. Night 2: a later copy of one (a duplicate), earlier copies of two others (they become
    the keepers), three new pages. Night 3: an even earlier copy of night 2's keeper's text, two new pages."""
    cc, wiki, site = (responses(real_warc(*parts)) for parts in (CC, WIKI, SITE))
    plan: dict = {"ids": {}}
    paths = [folder / f"night{n}.warc.gz" for n in (1, 2, 3)]
    with open(paths[0], "wb") as out:
        writer = WARCWriter(out, gzip=True)
        for headers, http, payload in cc[:6] + wiki + site:
            plan["ids"][headers["WARC-Target-URI"]] = write_response(writer, headers["WARC-Target-URI"],
                                                                     headers["WARC-Date"], http, payload)
    with open(paths[1], "wb") as out:
        writer = WARCWriter(out, gzip=True)
        plan["later"] = write_response(writer, cc[1][0]["WARC-Target-URI"], "2021-01-01T00:00:00Z", *cc[1][1:])
        plan["earlier"] = write_response(writer, cc[3][0]["WARC-Target-URI"], "2019-01-01T00:00:00Z", *cc[3][1:])
        # a page the quality rules drop: its row in corpus_dropped changes reason when an earlier copy comes
        plan["earlier_dropped"] = write_response(writer, cc[5][0]["WARC-Target-URI"], "2019-01-01T00:00:00Z",
                                                 *cc[5][1:])
        for headers, http, payload in cc[6:9]:
            plan["ids"][headers["WARC-Target-URI"]] = write_response(writer, headers["WARC-Target-URI"],
                                                                     headers["WARC-Date"], http, payload)
    with open(paths[2], "wb") as out:
        writer = WARCWriter(out, gzip=True)
        plan["earliest"] = write_response(writer, cc[3][0]["WARC-Target-URI"] + "#again", "2018-01-01T00:00:00Z",
                                          *cc[3][1:])
        for headers, http, payload in cc[9:11]:
            plan["ids"][headers["WARC-Target-URI"]] = write_response(writer, headers["WARC-Target-URI"],
                                                                     headers["WARC-Date"], http, payload)
    plan["paths"], plan["original"] = paths, plan["ids"][cc[3][0]["WARC-Target-URI"]]
    plan["later_of"] = plan["ids"][cc[1][0]["WARC-Target-URI"]]
    plan["dropped_original"] = plan["ids"][cc[5][0]["WARC-Target-URI"]]
    return plan


def build(inputs: list[Path], out: Path, *extra: str) -> dict:
    status = cli_main(["run", "--input", *map(str, inputs), "--output", str(out),
                       "--config", str(PROJECT_ROOT / "conf" / "local.yaml"), *SETTINGS, *extra])
    assert status == 0
    return json.loads((out / "stats.json").read_text())


def rows(path: Path, key: tuple[str, ...] = ("warc_record_id",)) -> list[dict]:
    if not path.exists():
        return []
    # partitioning=None: the language is read from inside the files, as every reader of one file sees it
    table = ds.dataset(path, format="parquet", partitioning=None).to_table()
    return sorted(table.to_pylist(), key=lambda row: tuple(row[k] for k in key))


def outputs(out: Path) -> dict:
    return {"corpus": rows(out / "corpus"), "documents": rows(out / "corpus_dropped" / "documents"),
            "sample": rows(out / "_corpus" / "index_sample", ("stage", "warc_record_id"))}


COUNTS = ("documents_in", "documents_out", "bytes_in", "bytes_out", "documents_dropped", "dropped")


def counts(corpus: dict) -> dict:
    return {"documents_in": corpus["documents_in"], "documents_out": corpus["documents_out"],
            "bytes_in": corpus["bytes_in"], "bytes_out": corpus["bytes_out"],
            "stages": {name: {key: stage.get(key) for key in COUNTS} for name, stage in corpus["stages"].items()}}


@pytest.fixture(scope="module")
def nightly(shards, tmp_path_factory) -> dict:
    out = tmp_path_factory.mktemp("incremental") / "out"
    paths = shards["paths"]
    found = {"out": out, "stats": [], "outputs": []}
    for night in range(1, 4):
        found["stats"].append(build(paths[:night], out)["corpus"])
        found["outputs"].append(outputs(out))
    return found


@pytest.fixture(scope="module")
def scratch(shards, tmp_path_factory) -> dict:
    found = {"stats": [], "outputs": []}
    for night in (2, 3):
        out = tmp_path_factory.mktemp(f"scratch{night}") / "out"
        found["stats"].append(build(shards["paths"][:night], out)["corpus"])
        found["outputs"].append(outputs(out))
    return found


def test_each_night_reads_only_its_new_pages(nightly):
    first, second, third = nightly["stats"]
    assert (first["build"], first["generation"]) == ("full", 0) and "full_reason" not in first
    assert (second["build"], second["generation"], third["build"], third["generation"]) == \
        ("incremental", 1, "incremental", 2)
    assert second["documents_new"] == 6 and third["documents_new"] == 3
    assert third["documents_in"] == second["documents_in"] + 3
    assert second["stages"]["exact_dedup"]["documents_processed"] == 6
    assert second["documents_in"] == first["documents_in"] + 6
    # the builds' own files sit side by side; the earlier ones are kept
    names = {p.name.split("-")[1] for p in (nightly["out"] / "corpus").rglob("*.parquet")}
    assert names == {"g00000", "g00001", "g00002"}
    assert not (nightly["out"] / "_tmp" / "corpus").exists()


def test_an_earlier_copy_on_a_later_night_takes_the_keepers_place(nightly, shards):
    night1, night2, night3 = nightly["outputs"]
    original, earlier, earliest = shards["original"], shards["earlier"], shards["earliest"]
    assert original in {r["warc_record_id"] for r in night1["corpus"]}
    dropped1 = {r["warc_record_id"]: r for r in night1["documents"]}
    assert dropped1[shards["dropped_original"]]["reason"].startswith("quality.")
    dropped2 = {r["warc_record_id"]: r for r in night2["documents"]}
    assert (dropped2[original]["reason"], dropped2[original]["duplicate_of"]) == ("exact_duplicate", earlier)
    assert earlier in {r["warc_record_id"] for r in night2["corpus"]}
    assert dropped2[shards["later"]]["duplicate_of"] == shards["later_of"]
    assert dropped2[shards["dropped_original"]]["reason"] == "exact_duplicate"
    assert dropped2[shards["dropped_original"]]["duplicate_of"] == shards["earlier_dropped"]
    # night 3: the even earlier copy keeps the text; both earlier copies point at it
    dropped3 = {r["warc_record_id"]: r for r in night3["documents"]}
    assert dropped3[earlier]["duplicate_of"] == earliest and dropped3[original]["duplicate_of"] == earliest
    assert nightly["stats"][1]["demoted"] == 2 and nightly["stats"][2]["demoted"] == 2
    assert nightly["stats"][1]["files_rewritten"] >= 2  # the night-1 corpus file and its dropped documents


def test_the_same_rows_counts_and_sample_as_one_build_over_the_same_shards(nightly, scratch):
    for incremental, whole, stats, whole_stats in zip(nightly["outputs"][1:], scratch["outputs"],
                                                      nightly["stats"][1:], scratch["stats"]):
        assert whole_stats["build"] == "full"
        assert incremental["corpus"] and incremental["documents"] and incremental["sample"]
        for name in ("corpus", "documents", "sample"):
            assert incremental[name] == whole[name], name
        assert counts(stats) == counts(whole_stats)


def test_a_stage_that_needs_the_whole_corpus_reads_all_of_data_and_says_why(shards, tmp_path):
    out = tmp_path / "out"
    build(shards["paths"][:1], out, "--set", "corpus.dedup.near=true")
    second = build(shards["paths"][:2], out, "--set", "corpus.dedup.near=true")["corpus"]
    assert second["build"] == "full" and second["documents_new"] == second["documents_in"]
    assert second["full_reason"].startswith("near_dedup: a new document can join clusters")
    summary = (out / "summary.txt").read_text()
    assert "read all of data/" in summary and "near_dedup" in summary


def test_a_build_killed_after_its_rewrite_resumes_to_the_same_rows(shards, nightly, tmp_path):
    out = tmp_path / "out"
    build(shards["paths"][:1], out)
    command = [sys.executable, "-m", "pipeline.cli", "run", "--input", *map(str, shards["paths"][:2]),
               "--output", str(out), "--config", str(PROJECT_ROOT / "conf" / "local.yaml"), *SETTINGS]
    env = {**os.environ, "SPARK_LOCAL_IP": "127.0.0.1"}
    driver = subprocess.Popen(command, env=env, cwd=PROJECT_ROOT, stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL, start_new_session=True)
    deadline = time.monotonic() + 300
    while not list((out / "_tmp" / "corpus").glob("*/rewrite/_DONE.json")):
        assert driver.poll() is None, "the build ended before it could be killed"
        assert time.monotonic() < deadline, "the rewrite did not finish in time"
        time.sleep(0.05)
    os.kill(driver.pid, signal.SIGKILL)
    driver.wait()
    wait_gone(driver.pid)
    assert (out / "_corpus" / "marker.json").exists()  # the commit had not begun: night 1 is still whole
    again = build(shards["paths"][:2], out)["corpus"]
    assert again["build"] == "incremental" and again["demoted"] == 2
    assert outputs(out) == nightly["outputs"][1]
    assert counts(again) == counts(nightly["stats"][1])


def test_the_driver_lists_no_data_file_and_an_earlier_versions_list_is_taken_over(shards, nightly, scratch, tmp_path,
                                                                                   monkeypatch):
    """A snapshot's data/ holds millions of files: the tasks list, compare and plan a language folder each, and the
    driver lists only data/'s folders (no listing of data/ or its folders runs in the driver's process). An output
    whose last build kept its list as one ``_corpus/inputs.json`` (versions before 2026-12) is taken over: the next
    night adds to it, with the rows a build over the same shards makes, and the list is kept a folder a file."""
    import pyarrow.parquet as pq

    from pipeline.corpus.builder import CorpusBuilder
    from pipeline.writing.output import OutputTarget

    out = tmp_path / "out"
    build(shards["paths"][:1], out)
    inputs = out / "_corpus" / "inputs"
    listed = sorted([path, size] for file in inputs.glob("*.parquet")
                    for path, size in zip(*pq.read_table(file, columns=["path", "size"]).to_pydict().values()))
    assert listed and all(path.startswith("data/language=") for path, _ in listed)
    shutil.rmtree(inputs)
    (out / "_corpus" / "inputs.json").write_text(json.dumps({"files": listed, "generation": 0}))
    walked: list[str] = []
    building: list[bool] = []
    walk, run_stages = OutputTarget.walk_files, CorpusBuilder.run

    def recording(self, under=""):
        if building:  # the corpus build's listings (the job's _SUCCESS names every file of the output after it)
            walked.append(under)
        return walk(self, under)

    def corpus_build(self):
        building.append(True)
        try:
            return run_stages(self)
        finally:
            building.clear()

    monkeypatch.setattr(OutputTarget, "walk_files", recording)
    monkeypatch.setattr(CorpusBuilder, "run", corpus_build)
    second = build(shards["paths"][:2], out)["corpus"]
    assert not [under for under in walked if under in ("", "data") or under.startswith("data/")], walked
    assert (second["build"], second["generation"], second["documents_new"]) == ("incremental", 1, 6)
    assert not (out / "_corpus" / "inputs.json").exists() and sorted(p.name for p in inputs.iterdir()) == sorted(
        f"{p.name}.parquet" for p in (out / "data").iterdir())
    assert outputs(out)["corpus"] == scratch["outputs"][0]["corpus"]
    # the same shards again, after a marker of another fingerprint (an earlier version's): nothing is built again
    before = outputs(out)
    marker = json.loads((out / "_corpus" / "marker.json").read_text())
    (out / "_corpus" / "marker.json").write_text(json.dumps({**marker, "fingerprint": "an earlier version's"}))
    again = build(shards["paths"][:2], out)["corpus"]
    assert again["resumed"] is True and again["generation"] == 1
    assert outputs(out) == before and not (out / "_tmp" / "corpus").exists()
