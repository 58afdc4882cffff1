"""Issue 11.5: WET input goes through LID, sentences and the filter; WAT input and page-less input say so."""

from __future__ import annotations

import gzip
import shutil

import pyarrow.dataset as ds
import pytest

from conftest import real_warc, write_warc
from pipeline.cli import main as cli_main
from pipeline.config import load_settings
from pipeline.document import visible_lines
from pipeline.reading.reader import read_pages
from pipeline.reading.shards import Split
from pipeline.spark.runner import run_split
from pipeline.stats import Stats

WET = ("cc-genuine", "CC-MAIN-2024-22.whirlwind.warc.wet.gz")
WAT = ("cc-genuine", "CC-MAIN-2024-22.whirlwind.warc.wat.gz")


def test_wet_conversion_records_are_cleaned_like_pages(tmp_path):
    wet = real_warc(*WET)
    sentences = tmp_path / "sentences"
    settings = load_settings("conf/local.yaml", [f"output.sentences={sentences}"])
    stats = run_split(Split(str(wet), 0, 1), settings, str(tmp_path / "out"), str(tmp_path / "dropped"))
    counts = Stats.from_dict(stats).counts
    skipped = sum(v for k, v in counts.items() if k.startswith("skip."))
    assert counts["records.read"] == skipped + counts["records.wet"] + counts.get("records.html", 0)
    assert counts["records.wet"] == 1 and counts["skip.not_response.warcinfo"] == 1
    assert counts["records.wet"] == sum(v for k, v in counts.items() if k.startswith("outcome."))
    [row] = ds.dataset(str(tmp_path / "out" / "data")).to_table().to_pylist()
    [page] = list(read_pages(Split(str(wet), 0, 1), settings.input, settings.s3, Stats()))
    assert page.kind == "wet"
    # the WET text as written: its blank and white-space-only lines closed up (visible_lines)
    assert row["extractor"] == "wet" and row["text_bytes_raw"] == len(visible_lines(page.html.decode("utf-8")).encode())
    # language ID, the sentence split and the filter ran on the WET text: it is Spanish-like, scored
    # by the es model, and the dropped sentences are cut out of the WET text
    assert row["language"] == "es" and row["n_sentences"] > 10
    scored = ds.dataset(str(sentences)).to_table().to_pylist()
    assert len(scored) == row["n_sentences"] and all(s["perplexity"] is not None for s in scored)
    dropped = ds.dataset(str(tmp_path / "dropped")).to_table().to_pylist()
    assert dropped and all(d["extractor"] == "wet" for d in dropped)
    assert row["n_sentences_kept"] == row["n_sentences"] - len(dropped)
    assert row["text_bytes_clean"] < row["text_bytes_raw"]
    text = page.html.decode("utf-8")
    assert all(line in text.splitlines() for line in row["text"].splitlines())


def test_wat_input_is_refused_in_one_line(tmp_path, capsys):
    assert cli_main(["run", "--input", str(real_warc(*WAT)), "--output", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "is WAT" in err and "WET" in err
    assert not (tmp_path / "out" / "stats.json").exists()


@pytest.mark.spark
def test_wat_content_under_another_name_ends_with_exit_2(tmp_path, capsys):
    renamed = tmp_path / "segment.warc.gz"
    shutil.copy(real_warc(*WAT), renamed)
    assert cli_main(["run", "--input", str(renamed), "--output", str(tmp_path / "out")]) == 2
    err = [line for line in capsys.readouterr().err.splitlines() if line.startswith("warcplex: error")]
    assert len(err) == 1 and "is WAT" in err[0]


@pytest.mark.spark
def test_a_run_without_html_or_wet_records_says_so(tmp_path, capsys):
    warc = tmp_path / "no-pages.warc.gz"
    write_warc(warc, [("200 OK", "application/pdf", None, b"%PDF-1.4 not a page")])
    assert gzip.decompress(warc.read_bytes()).startswith(b"WARC/")
    assert cli_main(["run", "--input", str(warc), "--output", str(tmp_path / "out")]) == 0
    err = capsys.readouterr().err
    assert "found no HTML response and no WET conversion record in 1 WARC records (skipped: not_html 1)" in err
