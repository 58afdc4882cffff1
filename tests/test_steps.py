"""The step interface: the loop built from ``pipeline.steps``, and a step added in one file plus one config line."""

from __future__ import annotations

import gzip

import pyarrow.dataset as ds
import pytest

from conftest import SAMPLE_WARC, bench_file, write_warc
from pipeline.config import ConfigError, load_settings
from pipeline.document import Document
from pipeline.document import Page
from pipeline.reading.shards import Split
from pipeline.spark.runner import run_split
from pipeline.steps.base import Filter
from pipeline.steps.cascade import Cascade, filtered_too_much
from pipeline.steps.loop import StepLoop, build_steps, step_class
from pipeline.steps.min_words import MinWords
from pipeline.steps.mojibake import repaired_lines

WITH_MIN_WORDS = ["pipeline.steps=[decode, cascade, langid, sentences, perplexity, min_words]",
                  "pipeline.options={min_words: {min_words: 120}}"]


def test_the_default_pipeline_is_the_configured_step_list():
    steps = build_steps(load_settings(None))
    assert [s.name for s in steps] == ["decode", "cascade"]
    cascade = steps[1]
    assert isinstance(cascade, Cascade) and cascade.fallback is filtered_too_much
    assert [s.name for s in cascade.then] == ["mojibake", "langid", "sentences", "perplexity"]
    assert [s.name for s in cascade.extractors] == load_settings(None).extract.cascade


def test_an_unknown_step_is_a_config_error():
    with pytest.raises(ConfigError, match="no step 'nonesuch'"):
        step_class("nonesuch")
    assert step_class("min_words") is MinWords


def test_min_words_step_runs_in_the_real_loop_over_the_sample_warc(tmp_path):
    """One config line adds the step: run_split over the bundled WARC drops the short pages with their reason."""
    baseline = run_split(Split(str(SAMPLE_WARC), 0, 1), load_settings(None), str(tmp_path / "base"))
    stats = run_split(Split(str(SAMPLE_WARC), 0, 1), load_settings(None, WITH_MIN_WORDS), str(tmp_path / "out"))
    dropped = stats["outcome"]["too_few_words"]
    assert dropped > 0
    assert stats["outcome"]["kept"] + dropped == baseline["outcome"]["kept"]
    rows = ds.dataset(str(tmp_path / "out" / "data")).to_table().to_pylist()
    assert len(rows) == stats["outcome"]["kept"]
    assert all(len(row["text"].split()) >= 120 for row in rows)
    assert stats["cpu"]["min_words"] >= 0


def test_a_filter_step_counts_its_drop_reason_on_the_document():
    class NoNumbers(Filter):
        name = "no_numbers"

        def filter(self, doc: Document) -> bool | tuple[bool, str]:
            return not any(c.isdigit() for c in doc.text), "has_numbers"

    step = NoNumbers()
    page = Page("<urn:x>", "http://example.org/", "", b"", None)
    assert step(Document(page, text="no digits here")) is not None
    doc = Document(page, text="room 101")
    assert step(doc) is None and doc.outcome == "has_numbers"
    assert "cpu.no_numbers" in step.stats.counts


def test_the_loop_reports_where_each_page_ended():
    loop = StepLoop(load_settings(None, ["langid.enabled=false", "perplexity.enabled=false",
                                         "extract.cascade=[resiliparse]"]))
    page = Page("<urn:x>", "http://example.org/", "", b"<html><body><nav>x</nav></body></html>", "utf-8")
    doc = loop.process(page)
    assert doc.outcome == "empty_extraction" and doc.fallback_reason == "resiliparse_empty"


def test_the_loop_settles_the_heap_after_windows_one_two_four_and_eight(tmp_path, monkeypatch):
    """run_split over the bundled WARC, 4 pages a window (34 pages, 9 windows): what is alive after the
    process's 1st, 2nd, 4th and 8th windows moves to the collector's permanent generation, after a full
    collection each time; the rows written are those of a run that never does."""
    import gc

    from pipeline.steps import loop as loop_module

    settings = load_settings(None, ["extract.prepare_window=4"])
    split = Split(str(SAMPLE_WARC), 0, 1)
    events: list[str] = []
    collect, freeze = gc.collect, gc.freeze
    monkeypatch.setattr(loop_module, "_windows_run", 0)
    monkeypatch.setattr(gc, "collect", lambda *a: events.append("collect") or collect(*a))
    monkeypatch.setattr(gc, "freeze", lambda: events.append(f"freeze {loop_module._windows_run}") or freeze())
    try:
        stats = run_split(split, settings, str(tmp_path / "settled"))
        assert gc.get_freeze_count() > 0
    finally:
        gc.unfreeze()
    assert stats["records"]["html"] == 34
    assert events == ["collect", "freeze 1", "collect", "freeze 2", "collect", "freeze 4", "collect", "freeze 8"]
    monkeypatch.setattr(loop_module, "settle_heap", lambda: None)
    run_split(split, settings, str(tmp_path / "plain"))

    def rows(name: str) -> list[dict]:
        table = ds.dataset(str(tmp_path / name / "data")).to_table()
        return sorted(table.to_pylist(), key=lambda row: row["warc_record_id"])

    assert rows("settled") == rows("plain") and len(rows("plain")) > 20


# Real modern pages (WCXB dev) whose UTF-8 text was encoded twice before they were written: each declares UTF-8 and
# writes `isnâ€™t` (`itâs` where the cp1252 byte has no character), `KevlarÂ®`.
MOJIBAKE_PAGES = {"wcxb-dev-4188": ("it’s a critical component", "itâ"),
                  "wcxb-dev-2362": ("isn’t just", "isnâ€™t"),
                  "wcxb-dev-0588": ("Made with Kevlar®", "KevlarÂ®")}


def test_text_encoded_twice_is_repaired_line_by_line_and_clean_lines_are_left_as_they_are():
    text = ("Israelâ€™s top tier\nA clean line: café, naïve, 1½ hours\nÂ£790million takeover in 2005\n"
            "Hauptstraße 3, 30 € – “quoted”")
    repaired, changed = repaired_lines(text)
    assert repaired.split("\n") == ["Israel’s top tier", "A clean line: café, naïve, 1½ hours",
                                    "£790million takeover in 2005", "Hauptstraße 3, 30 € – “quoted”"]
    assert changed == 2 and repaired.count("\n") == text.count("\n")
    # legitimate text with the same characters side by side (`é’`, `Ã` before a capital, `Ẩn —`) is left alone
    for clean in ("Nothing suspect here: café", "l’été’s café’s menu", "SÃO PAULO — ÓTIMO", "Ông Đỗ Văn Ẩn — Hà Nội",
                  "Ôté ‘x’", "Dès 5 € – prix"):
        assert repaired_lines(clean) == (clean, 0)


def test_the_mojibake_step_repairs_real_pages_in_the_real_loop(tmp_path):
    """run_split over a WARC of three real pages whose text was encoded twice: the default steps write the text as
    it reads (and count the pages), the same run without the step writes the mojibake."""
    folder = bench_file("data-wcxb", "wcxb", "pages")
    write_warc(tmp_path / "mojibake.warc.gz",
               [("200 OK", "text/html; charset=utf-8", None, gzip.decompress((folder / f"{i}.html.gz").read_bytes()))
                for i in MOJIBAKE_PAGES])
    split = Split(str(tmp_path / "mojibake.warc.gz"), 0, 1)
    without = ["pipeline.steps=[decode, cascade, langid, sentences, perplexity]"]
    texts, stats = {}, {}
    for name, overrides in (("default", []), ("without", without)):
        stats[name] = run_split(split, load_settings(None, overrides), str(tmp_path / name))
        assert stats[name]["outcome"]["kept"] == len(MOJIBAKE_PAGES)
        texts[name] = [row["text"] for row in ds.dataset(str(tmp_path / name / "data")).to_table().to_pylist()]
    assert stats["default"]["stage"]["mojibake"]["pages"] == len(MOJIBAKE_PAGES)
    assert "mojibake" not in stats["without"].get("stage", {})
    for clean, broken in MOJIBAKE_PAGES.values():
        assert sum(clean in t for t in texts["default"]) == 1 and not any(broken in t for t in texts["default"])
        assert any(broken in t for t in texts["without"]) and not any(clean in t for t in texts["without"])


def test_the_mojibake_step_repairs_the_rows_comments_too(tmp_path):
    """A real review page (WCXB dev) whose reader comments were encoded twice: the row's comments column reads
    `“one of these simpler programs”`, counted as comment lines; without the step it holds the mojibake."""
    page = gzip.decompress(bench_file("data-wcxb", "wcxb", "pages", "wcxb-dev-4656.html.gz").read_bytes())
    write_warc(tmp_path / "comments.warc.gz", [("200 OK", "text/html; charset=utf-8", None, page)])
    split = Split(str(tmp_path / "comments.warc.gz"), 0, 1)
    without = ["pipeline.steps=[decode, cascade, langid, sentences, perplexity]"]
    comments, stats = {}, {}
    for name, overrides in (("default", []), ("without", without)):
        stats[name] = run_split(split, load_settings(None, overrides), str(tmp_path / name))
        rows = ds.dataset(str(tmp_path / name / "data")).to_table().to_pylist()
        assert len(rows) == 1
        comments[name] = rows[0]["comments"] or ""
    assert "“one of these simpler programs”" in comments["default"] and "â\x80\x9c" not in comments["default"]
    assert "â\x80\x9cone of these simpler programsâ\x80\x9d" in comments["without"]
    assert stats["default"]["stage"]["mojibake"]["comment_lines"] >= 1
