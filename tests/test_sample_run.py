"""`make run` itself on its bundled sample (tests/data/stages.warc.gz): every stage visibly acts, the summary says only
what the run supports and ends with the report and a `warcplex explain` command that works, and each recipe of
docs/output.md ("Reading the output") runs against the output and reads what the run wrote."""

from __future__ import annotations

import html
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pyarrow.dataset as ds
import pyarrow.parquet as pq
import pytest

from conftest import ROOT

pytestmark = pytest.mark.spark


@pytest.fixture(scope="module")
def make_run(tmp_path_factory) -> Path:
    """The directory in which `make run OUT=out` ran (its output is ``out/`` there, as the recipes expect)."""
    if shutil.which("java") is None:
        pytest.skip("Java is needed for Spark")
    if shutil.which("make") is None:
        pytest.skip("make is needed")
    work = tmp_path_factory.mktemp("make-run")
    env = {**os.environ, "PYTHON": sys.executable}
    result = subprocess.run(["make", "-s", "-C", str(ROOT), "run", f"OUT={work / 'out'}"], env=env,
                            capture_output=True, text=True, timeout=900)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    (work / "make-run.log").write_text(result.stdout, encoding="utf-8")
    (work / "make-run.err").write_text(result.stderr, encoding="utf-8")
    return work


def _stats(work: Path) -> dict:
    return json.loads((work / "out" / "stats.json").read_text(encoding="utf-8"))


def test_every_stage_acts_on_the_sample(make_run):
    out = make_run / "out"
    stats = _stats(make_run)
    # boilerplate blocks removed by the block stage
    blocks = stats["stage"]["blocks"]["blocks"]
    assert 0 < blocks["kept"] < blocks["total"]
    # lines the perplexity rule dropped, each written to out/dropped/ with its perplexity and reason
    dropped = ds.dataset(out / "dropped", format="parquet").to_table().to_pylist()
    filtered = sum(v.get("sentences_filtered", 0) for v in stats["lang"].values())
    assert filtered > 0 and len(dropped) == filtered
    assert all(row["reason"].startswith("perplexity") and row["perplexity"] > 0 for row in dropped)
    rows = ds.dataset(out / "data", format="parquet").to_table().to_pylist()
    # a page that fell back from the block stage to a later one
    fallen = [r for r in rows if r["fallback_reason"]]
    assert fallen and all(r["extractor"] != "blocks" for r in fallen) and sum(stats["fallback"].values()) == len(fallen)
    # a page whose reader comments are in their own column, not in its text
    commented = [r for r in rows if r["comments"]]
    assert commented and all(r["comments"] not in r["text"] for r in commented)
    # an exact and a near duplicate removed by the corpus stages
    corpus = stats["corpus"]["stages"]
    assert corpus["exact_dedup"]["dropped"].get("exact_duplicate", 0) >= 1
    assert corpus["near_dedup"]["dropped"].get("near_duplicate", 0) >= 1
    removed = ds.dataset(out / "corpus_dropped" / "documents", format="parquet").to_table().to_pylist()
    assert {r["reason"] for r in removed} == {"exact_duplicate", "near_duplicate"}
    assert all(r["duplicate_of"] for r in removed)
    # a page in a language without a model: kept, its sentences unscored
    unmodelled = [lang for lang, v in stats["coverage"].items() if v["model"] is None and v["pages_kept"]]
    assert unmodelled and all(stats["coverage"][lang]["sentences_scored"] == 0 for lang in unmodelled)
    # page types known
    assert {r["page_type"] for r in rows} & {"article", "collection", "listing", "service", "product", "forum",
                                              "documentation"}


def test_the_summary_ends_with_the_report_and_an_explain_command_that_works(make_run):
    out = make_run / "out"
    summary = (out / "summary.txt").read_text(encoding="utf-8").splitlines()
    printed = make_run.joinpath("make-run.log").read_text(encoding="utf-8").splitlines()
    assert printed[-2:] == summary[-2:]  # the last lines `make run` prints
    assert summary[-2] == f"  next: open {out}/report.html (charts, every stage's counts)" and (out / "report.html").exists()
    command = summary[-1].split(": ", 1)[1]
    assert command.startswith("warcplex explain --from-output ")
    argv = shlex.split(command)
    warcplex = os.path.join(os.path.dirname(sys.executable), "warcplex")
    # from where `make run` ran (the output records its inputs as given: tests/data/stages.warc.gz)
    result = subprocess.run([warcplex, *argv[1:]], capture_output=True, text=True, cwd=ROOT, timeout=600)
    assert result.returncode == 0, result.stderr[-2000:]
    explained = out / "explain-one"
    pages = [p for p in explained.glob("*.html") if p.name != "index.html"]
    record_id = argv[argv.index("--record-id") + 1]
    assert len(pages) == 1 and html.escape(record_id) in pages[0].read_text(encoding="utf-8")


def test_spark_warns_of_nothing_that_is_not_about_the_run(make_run):
    """Spark's warnings that every run would print and that say nothing about it (session.QUIET_LOGGERS: a
    checkpointed plan whose columns changed only in nullability, a plan's text truncated in a log line) are not
    printed; its others are (the log level stays WARN)."""
    printed = make_run.joinpath("make-run.err").read_text(encoding="utf-8")
    assert "Setting default log level to \"WARN\"" in printed
    assert [line for line in printed.splitlines() if " WARN LogicalRDD" in line or " WARN SparkStringUtils" in line] == []


def test_the_summary_states_only_what_the_run_supports(make_run):
    out = make_run / "out"
    stats = _stats(make_run)
    summary = (out / "summary.txt").read_text(encoding="utf-8")
    pages = stats["records"]["html"]
    # one pages-per-CPU-second: the whole job's, in stats.json, the summary and the report
    rate = stats["run"]["pages_per_cpu_second"]
    assert stats["job_cpu"]["pages"] == pages and rate == round(pages / stats["job_cpu"]["total"], 2)
    assert f"{rate:.2f} pages per CPU-second" in summary
    assert re.search(rf"pages per CPU-second \(the whole job\)</td><td>{rate:,.2f}<", (out / "report.html").read_text())
    # one CO2 figure for the job, with its parts adding up to it
    carbon = stats["carbon"]
    co2_lines = [line for line in summary.splitlines() if "g CO2" in line or " g " in line]
    assert len(co2_lines) == 1 and f"{carbon['kg_co2'] * 1000:.4f} g for the whole job's" in co2_lines[0]
    assert abs(sum(p["kg_co2"] for p in carbon["per_part"].values()) - carbon["kg_co2"]) < 1e-9
    # 45 pages in one split: no snapshot extrapolation, and the summary says why
    assert carbon["snapshot"] is None and "one snapshot: not estimated from" in summary
    # a payback only where the query CPU difference exceeds the measured spread
    for link in stats["index"]["chain"][1:]:
        spread = max(link["query_cpu_spread_seconds"], stats["index"]["chain"][0]["query_cpu_spread_seconds"])
        difference = abs(link["query_cpu_seconds"] - stats["index"]["chain"][0]["query_cpu_seconds"])
        assert link["query_difference_measurable"] == (difference > spread)
        line = next(line for line in summary.splitlines() if line.startswith(f"    {link['step']}: "))
        if not link["query_difference_measurable"]:
            assert link["breakeven_queries"] is None and "not measurable at this size" in line
        else:
            assert "not measurable" not in line


def test_every_file_holds_language_and_warc_date_is_a_timestamp(make_run):
    out = make_run / "out"
    for folder in ("data", "corpus", "corpus_dropped/documents", "dropped", "sentences"):
        files = sorted((out / folder).glob("language=*/*.parquet"))
        assert files, folder
        for path in files:
            table = pq.read_table(path)
            assert set(table.column("language").to_pylist()) == {path.parent.name.split("=", 1)[1]}, path
    for folder in ("data", "corpus"):
        schema = pq.read_schema(next((out / folder).glob("language=*/*.parquet")))
        assert str(schema.field("warc_date").type) == "timestamp[us, tz=UTC]"


def _recipes() -> dict[str, str]:
    """The Python blocks of docs/output.md's "Reading the output", by the library each imports first."""
    text = (ROOT / "docs" / "output.md").read_text(encoding="utf-8")
    section = text[text.index("## Reading the output"):]
    section = section[:section.index("\n## ", 1)]
    blocks = re.findall(r"```python\n(.*?)```", section, re.S)
    return {re.search(r"^(?:from|import) (\w+)", block, re.M).group(1): block for block in blocks}


def test_the_recipes_are_the_four_promised():
    assert set(_recipes()) == {"datasets", "duckdb", "pandas", "pyspark"}


@pytest.mark.parametrize("library", ["datasets", "duckdb", "pandas", "pyspark"])
def test_each_recipe_reads_what_the_run_wrote(make_run, library, tmp_path):
    pytest.importorskip(library)
    stats = _stats(make_run)
    documents = stats["corpus"]["documents_out"]
    english = pq.ParquetDataset(make_run / "out" / "corpus" / "language=en").read().num_rows
    env = {**os.environ, "HF_HOME": str(tmp_path / "hf"), "HF_DATASETS_OFFLINE": "1",
           "PYSPARK_PYTHON": sys.executable, "PYSPARK_DRIVER_PYTHON": sys.executable}
    result = subprocess.run([sys.executable, "-c", _recipes()[library]], cwd=make_run, env=env, capture_output=True,
                            text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    printed = result.stdout.strip().splitlines()[-1]
    print(f"{library}: {printed}")  # the recipe's output, for the record (pytest -s)
    if library == "datasets":
        assert printed == f"{documents} Value('string') Value('timestamp[us, tz=UTC]')"
    elif library == "duckdb":
        counts = dict(re.findall(r"\('(\w+)', (\d+), datetime\.date", printed))
        assert sum(map(int, counts.values())) == documents and int(counts["en"]) == english
    elif library == "pandas":
        assert printed.startswith(f"{documents} datetime64[us, UTC] {{'en': {english},")
    else:
        assert printed == f"{documents} timestamp {english}"
