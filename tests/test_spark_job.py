"""End to end in local Spark on real WARC bytes: Parquet, stats accounting, models loaded once per worker."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pyarrow.dataset as ds
import pytest
from fastwarc.warc import ArchiveIterator, WarcRecordType
from resiliparse.parse.encoding import detect_encoding
from resiliparse.parse.html import HTMLTree

from pipeline.cli import main as cli_main
from pipeline.config import PROJECT_ROOT, load_settings
from pipeline.reading import reader
from pipeline.reading.shards import Split
from pipeline.stats import Stats
from pipeline.steps.blocks.page_type import PAGE_TYPES, UNKNOWN
from conftest import real_warc

pytestmark = [pytest.mark.spark]

REAL_WARCS = [("cc-genuine", "CC-MAIN-2020-34.sample-from-resiliparse-tests.warc.gz"),
              ("cc-genuine", "CC-MAIN-2024-22.whirlwind.warc.gz"),
              ("other-real", "clueweb09-ja.quirk.from-resiliparse-tests.warc.gz"),
              ("other-real", "dolma-tests_data_warc_sample-0000.warc.gz"),
              ("other-real", "dolma-tests_data_warc_sample-0001.warc.gz")]


def response_ids(path: Path) -> set[str]:
    with open(path, "rb") as fh:
        return {r.record_id for r in ArchiveIterator(fh, record_types=WarcRecordType.response)}


@pytest.fixture(scope="module")
def spark_run(tmp_path_factory) -> tuple[Path, dict, list[Path]]:
    """One local[1] run over five real WARCs (five tasks reusing one Python worker)."""
    if not (PROJECT_ROOT / "conf" / "models.yaml").exists():
        pytest.skip("conf/models.yaml (the shipped KenLM registry) is missing")
    if shutil.which("java") is None:
        pytest.skip("Java is needed for Spark")
    inputs = [real_warc(*parts) for parts in REAL_WARCS]
    out = tmp_path_factory.mktemp("spark") / "out"
    status = cli_main(["run", "--input", *map(str, inputs), "--output", str(out),
                       "--config", str(PROJECT_ROOT / "conf" / "local.yaml"),
                       "--set", "spark.master=local[1]", "--dropped", str(out / "dropped")])
    assert status == 0
    return out, json.loads((out / "stats.json").read_text()), inputs


def test_every_record_is_accounted_for(spark_run):
    out, stats, inputs = spark_run
    counts = Stats.from_dict(stats).counts
    skipped = sum(v for k, v in counts.items() if k.startswith("skip."))
    outcomes = sum(v for k, v in counts.items() if k.startswith("outcome."))
    assert counts["records.read"] == skipped + counts["records.html"]
    assert counts["records.html"] == outcomes
    assert counts["records.html"] == sum(len(response_ids(p)) for p in inputs)
    assert counts["splits.processed"] == len(inputs)
    assert not stats.get("file_errors")


def test_parquet_rows_match_response_records(spark_run):
    out, stats, inputs = spark_run
    table = ds.dataset(out / "data", format="parquet").to_table()
    expected = {"warc_record_id", "url", "warc_date", "language", "language_score", "text", "n_sentences",
                "n_sentences_kept", "perplexity_median", "extractor", "html_bytes", "text_bytes_raw",
                "text_bytes_clean", "fallback_reason", "page_type", "title"}
    assert expected <= set(table.schema.names)
    ids = table.column("warc_record_id").to_pylist()
    assert len(ids) == len(set(ids)) == stats["outcome"]["kept"]
    assert set(ids) <= set().union(*(response_ids(p) for p in inputs))
    rows = table.to_pylist()
    assert all(r["text"] and r["text_bytes_clean"] == len(r["text"].encode()) for r in rows)
    assert all(r["n_sentences_kept"] <= r["n_sentences"] for r in rows)
    languages = Counter(r["language"] for r in rows)
    assert {"ja", "en"} <= set(languages)  # ClueWeb09 Japanese pages, English CC/dolma pages
    english = [r for r in rows if r["language"] == "en"]
    assert any(r["perplexity_median"] is not None for r in english)
    assert (out / "summary.txt").read_text().startswith("warcplex:")
    types = Counter(r["page_type"] for r in rows if r["page_type"] is not None)  # pages the block stage read
    assert types and set(types) <= {*PAGE_TYPES, UNKNOWN}
    assert all(n <= stats["page_type"][t] for t, n in types.items())  # kept pages by type (before the corpus stages)


def test_each_row_has_its_pages_title_as_another_parser_reads_it(spark_run):
    """A page the block stage read has its ``title`` column: its title element as lexbor (resiliparse's HTML5 parser,
    not the stage's libxml2) reads it from the record's bytes, white space collapsed; a Japanese shop's titles too."""
    out, _, inputs = spark_run
    settings = load_settings(None, [])
    payloads = {page.record_id: page.html for path in inputs  # the payloads as the run read them (ClueWeb09's quirks)
                for page in reader.read_pages(Split(str(path), 0, 1), settings.input, settings.s3, Stats())}
    rows = ds.dataset(out / "data", format="parquet").to_table().to_pylist()
    read = [r for r in rows if r["page_type"] is not None]
    assert len(read) > 20
    for row in read:
        body = payloads[row["warc_record_id"]]
        title = HTMLTree.parse_from_bytes(body, detect_encoding(body)).title
        assert row["title"] == (" ".join((title or "").split()) or None), row["url"]
    titled = [r["title"] for r in read if r["title"]]
    assert len(titled) > 20 and any(re.search(r"[\u3040-\u30ff\u4e00-\u9fff]", t) for t in titled)


def test_dropped_sentences_side_output_has_scores_and_reasons(spark_run):
    out, stats, _ = spark_run
    dropped = ds.dataset(out / "dropped", format="parquet").to_table().to_pylist()
    assert len(dropped) == stats["sentences"]["total"] - stats["sentences"]["kept"]
    assert dropped, "real pages have boilerplate sentences above the threshold"
    # the unit and the part of the rule that dropped the line, with the threshold that applied
    assert all(re.fullmatch(r"perplexity:line/(context|length|neighbours|protected)@[\d.]+", r["reason"])
               and r["perplexity"] > 0 for r in dropped)


def test_each_worker_loads_each_model_once(spark_run):
    """Five tasks ran in one reused Python worker: every model was opened once in that process."""
    _, stats, inputs = spark_run
    loads = stats["model_loads"]
    assert len(loads) < len(inputs)
    for pid, per_model in loads.items():
        assert per_model and all(count == 1 for count in per_model.values()), (pid, per_model)
    loaded = set().union(*(m.keys() for m in loads.values()))
    assert any(name.startswith("kenlm:") for name in loaded)
    assert any(name.startswith("fasttext:") for name in loaded)


def test_rerun_skips_finished_splits_and_keeps_files(spark_run, tmp_path):
    out, _, inputs = spark_run
    before = {p: p.read_bytes() for p in out.rglob("*.parquet")}
    status = cli_main(["run", "--input", *map(str, inputs), "--output", str(out),
                       "--set", "spark.master=local[1]"])
    assert status == 0
    stats = json.loads((out / "stats.json").read_text())
    assert stats["run"]["splits_resumed"] == len(inputs)
    assert {p: p.read_bytes() for p in out.rglob("*.parquet")} == before


def test_a_run_uses_a_context_already_running_in_its_process_says_which_settings_miss_it_and_leaves_it_running(
        spark_run, tmp_path, capsys):
    """A notebook's or an earlier caller's SparkContext: Spark reads its settings only when a context starts, so the
    run names the ones it could not apply, in one line, and does not stop a context it did not start."""
    from pyspark import SparkConf, SparkContext

    _, _, inputs = spark_run
    sc = SparkContext(conf=SparkConf().setMaster("local[1]").setAppName("owner"))
    try:
        capsys.readouterr()
        status = cli_main(["run", "--input", str(inputs[0]), "--output", str(tmp_path / "out"),
                           "--config", str(PROJECT_ROOT / "conf" / "local.yaml"), "--set", "spark.master=local[2]",
                           "--set", "spark.conf.spark.eventLog.enabled=true", "--set", "index.enabled=false"])
        assert status == 0
        said = [line for line in capsys.readouterr().err.splitlines() if "already running" in line]
        assert len(said) == 1, said
        named = said[0].split(" without ", 1)[1].split(", ")  # and whatever else the owner's context set otherwise
        assert named[0] == "spark.master" and "spark.conf.spark.eventLog.enabled" in named, said
        assert json.loads((tmp_path / "out" / "stats.json").read_text())["records"]["html"] > 0
        assert SparkContext._active_spark_context is sc and sc.parallelize([1, 2]).sum() == 3
    finally:
        sc.stop()


# counters that measure time and memory, not what was read and written
MEASURED = ("cpu.", "cpu_start_up.", "model_loads.", "rss.", "split_cpu.", "stage.", "wall.")


def test_many_splits_are_merged_on_the_executors_to_the_same_stats(spark_run, tmp_path, monkeypatch):
    """Above job.TREE_MERGE_FROM splits the executors merge the splits' stats in a tree (the driver holds about the
    square root of their number); the run's stats are those of the driver's own merge."""
    from pipeline.spark import job

    _, stats, inputs = spark_run
    monkeypatch.setattr(job, "TREE_MERGE_FROM", 1)
    assert job.tree_depth(len(inputs)) == 2
    out = tmp_path / "out"
    status = cli_main(["run", "--input", *map(str, inputs), "--output", str(out),
                       "--config", str(PROJECT_ROOT / "conf" / "local.yaml"), "--set", "spark.master=local[2]"])
    assert status == 0
    tree = json.loads((out / "stats.json").read_text())

    def read_and_written(s: dict) -> dict:
        counts = Stats.from_dict({k: v for k, v in s.items() if k not in ("run", "job_cpu", "index", "carbon",
                                                                          "corpus", "coverage")}).counts
        return {k: v for k, v in counts.items() if not k.startswith(MEASURED)}

    markers = Stats()  # each split's own stats, in its completion marker
    for marker in sorted((out / "_markers").glob("*.json")):
        markers.merge(Stats.from_dict(json.loads(marker.read_text())))
    assert read_and_written(tree) == read_and_written(markers.to_dict()) == read_and_written(stats)
    assert tree["run"]["splits"] == len(inputs) and tree["coverage"] == stats["coverage"]
    assert tree["job_cpu"]["pages"] == tree["records"]["html"] == markers.counts["records.html"] > 0


@pytest.mark.parametrize("argv, message", [
    (["run", "--input", "/nonexistent/x.warc.gz", "--output", "o"], "no such file"),
    (["run", "--input", "README.md", "--output", "o", "--set", "perplexity.nope=1"], "unknown key"),
    (["run", "--input", "README.md", "--output", "o", "--set", "extract.timeout_s=-1"], "extract.timeout_s"),
])
def test_user_errors_are_one_line(argv, message, capsys, monkeypatch):
    monkeypatch.chdir(PROJECT_ROOT)
    assert cli_main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("warcplex: error:") and message in err and "\n" not in err


def test_a_spark_property_spark_refuses_when_a_task_reads_it_is_one_line_and_exit_2(tmp_path):
    """Spark reads some properties only in a task (``spark.python.worker.reuse``): its refusal ends the run with one
    line of ours last and exit 2, not a Java trace and exit 1; the same output then runs with the value mended."""
    sample = real_warc(*REAL_WARCS[1])
    command = [sys.executable, "-m", "pipeline.cli", "run", "--input", str(sample), "--output", str(tmp_path / "o"),
               "--set", "spark.master=local[1]", "--set", "corpus.enabled=false", "--set", "index.enabled=false"]
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable}
    refused = subprocess.run([*command, "--set", "spark.conf.spark.python.worker.reuse=maybe"], cwd=tmp_path,
                             capture_output=True, text=True, timeout=600, env=env)
    assert refused.returncode == 2, refused.stderr[-2000:]
    last = refused.stderr.strip().splitlines()[-1]
    assert last == ("warcplex: error: Spark refused a property (spark.conf): The value 'maybe' in the config "
                    "\"spark.python.worker.reuse\" is invalid. It should be a/an 'boolean' value."), last
    mended = subprocess.run([*command, "--set", "spark.conf.spark.python.worker.reuse=true"], cwd=tmp_path,
                            capture_output=True, text=True, timeout=600, env=env)
    assert mended.returncode == 0, mended.stderr[-2000:]


def test_missing_java_is_one_line(capsys, monkeypatch, tmp_path):
    monkeypatch.chdir(PROJECT_ROOT)
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.delenv("JAVA_HOME", raising=False)
    monkeypatch.delenv("PYSPARK_GATEWAY_PORT", raising=False)
    sample = real_warc(*REAL_WARCS[1])
    assert cli_main(["run", "--input", str(sample), "--output", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("warcplex: error: Java not found") and "\n" not in err
