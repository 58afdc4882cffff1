"""The extraction cascade: fallbacks with their reasons, and the per-record time guard."""

from __future__ import annotations

import json
import re
import time
from pathlib import Path

import pytest

from pipeline.config import load_settings
from pipeline.steps.loop import StepLoop
from pipeline.document import Page

ROOT = Path(__file__).resolve().parent.parent
ARTICLE = ("<html><body><nav><a href='/'>Home</a></nav><article>"
           + "".join(f"<p>The harbour town rebuilt its old stone bridge in spring number {i}, "
                     "and the people walked across it every evening.</p>" for i in range(6))
           + "</article></body></html>")
NAV_ONLY = "<html><body><nav><a href='/'>Home</a> <a href='/about'>About us and more</a></nav></body></html>"


def page(html: str, record_id: str = "<urn:uuid:test>") -> Page:
    return Page(record_id, "http://example.org/", "2024-01-01T00:00:00Z", html.encode("utf-8"), "utf-8")


def cleaner(*overrides: str) -> StepLoop:
    return StepLoop(load_settings(None, ["langid.enabled=false", *overrides]))


def pathological_html() -> str:
    """1 MB of 20,000 empty div pairs around one sentence: readability-lxml needs seconds, resiliparse 0.1 s."""
    return ("<html><body>" + "<div class='a'><div class='b'><i></i></div></div>" * 20000
            + "<p>The real words of the page are here.</p></body></html>")


def test_primary_output_is_used_without_fallback():
    cleaned = cleaner("perplexity.enabled=false", "extract.cascade=[resiliparse, conservative]").process(page(ARTICLE))
    assert (cleaned.outcome, cleaned.extractor, cleaned.fallback_reason) == ("kept", "resiliparse", None)
    assert "stone bridge" in cleaned.clean_text and "Home" not in cleaned.clean_text


def test_empty_primary_falls_back_with_reason():
    c = cleaner("perplexity.enabled=false", "extract.cascade=[resiliparse, conservative]")
    cleaned = c.process(page(NAV_ONLY))
    assert (cleaned.outcome, cleaned.extractor, cleaned.fallback_reason) == \
        ("kept", "conservative", "resiliparse_empty")
    assert cleaned.clean_text == "Home About us and more"
    assert c.step("resiliparse").stats.to_dict()["stage"]["resiliparse"]["empty"] == 1


def test_error_falls_back_to_next_stage(tmp_path):
    broken = tmp_path / "blocks_model.json"
    broken.write_text('{"dense_names": ["other"], "hash_dim": 1}')
    c = cleaner("perplexity.enabled=false", "extract.cascade=[blocks, resiliparse]", f"extract.blocks_model={broken}")
    cleaned = c.process(page(ARTICLE))
    assert (cleaned.outcome, cleaned.extractor, cleaned.fallback_reason) == ("kept", "resiliparse", "blocks_error")
    assert c.step("blocks").stats.to_dict()["stage"]["blocks"]["error"]["ValueError"] == 1
    assert "stone bridge" in cleaned.clean_text


def test_every_stage_empty_is_counted_as_empty_extraction():
    cleaned = cleaner("perplexity.enabled=false", "extract.cascade=[resiliparse]").process(page(NAV_ONLY))
    assert (cleaned.outcome, cleaned.extractor, cleaned.fallback_reason) == \
        ("empty_extraction", None, "resiliparse_empty")


def test_filter_removing_too_much_falls_back_to_unfiltered_conservative():
    if not (ROOT / "conf" / "models.yaml").exists():
        pytest.skip("conf/models.yaml (the English KenLM model) is not built yet")
    c = cleaner("perplexity.threshold=1.5", "extract.max_removed_share=0.5",
                "extract.cascade=[resiliparse, trafilatura, conservative]", "langid.enabled=true")
    cleaned = c.process(page(ARTICLE))
    assert cleaned.outcome == "kept" and cleaned.extractor == "conservative"
    assert cleaned.fallback_reason.startswith("resiliparse_filtered_")
    assert all(s.kept and s.perplexity is None for s in cleaned.sentences)
    assert "stone bridge" in cleaned.clean_text


def test_conservative_as_the_first_stage_is_filtered():
    """`extract.cascade=[conservative]` is the paper's all-text mode: the threshold applies to it."""
    if not (ROOT / "conf" / "models.yaml").exists():
        pytest.skip("conf/models.yaml (the English KenLM model) is not built yet")
    c = cleaner("perplexity.threshold=1.5", "extract.cascade=[conservative]", "langid.enabled=true")
    cleaned = c.process(page(ARTICLE))
    assert cleaned.extractor == "conservative" and not cleaned.unfiltered
    assert all(s.perplexity is not None for s in cleaned.sentences if s.n_tokens)
    assert not any(s.kept for s in cleaned.sentences if s.n_tokens)


def test_time_guard_skips_a_pathological_page_to_the_next_stage():
    c = cleaner("perplexity.enabled=false", "extract.cascade=[readability, conservative]", "extract.timeout_s=0.5")
    results = list(c.run([page(pathological_html(), "<urn:uuid:slow>"), page(ARTICLE, "<urn:uuid:fine>")]))
    slow, fine = results
    assert (slow.outcome, slow.extractor, slow.fallback_reason) == ("kept", "conservative", "readability_timeout")
    assert c.step("readability").stats.to_dict()["stage"]["readability"]["error"]["timeout"] == 1
    # the next page gets a fresh time limit and the normal path
    assert (fine.outcome, fine.extractor, fine.fallback_reason) == ("kept", "readability", None)


def test_time_guard_counts_a_page_no_stage_finishes_as_error_timeout():
    c = cleaner("perplexity.enabled=false", "extract.cascade=[readability]", "extract.timeout_s=0.5")
    (slow,) = list(c.run([page(pathological_html())]))
    assert slow.outcome == "error.timeout" and slow.fallback_reason == "readability_timeout"


def test_the_callers_work_on_each_document_is_not_under_the_time_guard():
    """The guards watch the cleaning thread only: a caller slower than the time limit and its grace period (a
    slow S3 write) gets every document, where it used to be interrupted itself and lose the task."""
    c = cleaner("perplexity.enabled=false", "extract.cascade=[resiliparse, conservative]", "extract.timeout_s=0.5")
    outcomes = []
    for doc in c.run([page(ARTICLE, f"<urn:uuid:{i}>") for i in range(2)]):
        time.sleep(1.2)
        outcomes.append((doc.page.record_id, doc.outcome))
    assert outcomes == [("<urn:uuid:0>", "kept"), ("<urn:uuid:1>", "kept")]


def test_a_guard_interrupt_between_the_stages_ends_its_window_as_errors_not_the_run(monkeypatch):
    """An interrupt that lands outside every stage's handler (between them) cannot be given to one page: each page
    of its window is counted as an error, and the next window runs."""
    from resiliparse.process_guard import ExecutionTimeout

    c = cleaner("perplexity.enabled=false", "extract.cascade=[resiliparse, conservative]", "extract.prepare_window=2")
    real, calls = c.process_window, []

    def interrupted_once(pages):
        calls.append(len(pages))
        if len(calls) == 1:
            raise ExecutionTimeout()
        return real(pages)

    monkeypatch.setattr(c, "process_window", interrupted_once)
    docs = list(c.run([page(ARTICLE, f"<urn:uuid:{i}>") for i in range(3)]))
    assert [(d.page.record_id, d.outcome) for d in docs] == [
        ("<urn:uuid:0>", "error.timeout"), ("<urn:uuid:1>", "error.timeout"), ("<urn:uuid:2>", "kept")]
    assert calls == [2, 1]


def test_block_output_much_shorter_than_resiliparse_falls_back_with_its_evidence(tmp_path):
    from pipeline.steps.blocks.model import block_model
    from pipeline.steps.blocks.model import MODEL_PATH

    settings = ["perplexity.enabled=false", "extract.cascade=[blocks, resiliparse]"]
    packaged = cleaner(*settings).process(page(ARTICLE))
    assert (packaged.extractor, packaged.fallback_reason) == ("blocks", None)
    assert 0 < block_model().fallback_min_share < 1
    # the same model asking for more words than resiliparse found: the block output is incomplete
    data = json.loads(MODEL_PATH.read_text())
    data["fallback_min_share"] = 1.5
    strict = tmp_path / "blocks_model.json"
    strict.write_text(json.dumps(data))
    c = cleaner(*settings, f"extract.blocks_model={strict}")
    cleaned = c.process(page(ARTICLE))
    assert cleaned.extractor == "resiliparse" and re.fullmatch(r"blocks_short_\d+of\d+", cleaned.fallback_reason)
    kept, found = map(int, re.findall(r"\d+", cleaned.fallback_reason))
    assert 0 < kept < 1.5 * found and found >= 20
    assert c.step("blocks").stats.to_dict()["stage"]["blocks"]["short"] == 1
    # the last stage of a cascade is never refused for being short
    last = cleaner("perplexity.enabled=false", "extract.cascade=[blocks]", f"extract.blocks_model={strict}")
    assert last.process(page(ARTICLE)).fallback_reason is None
    # with trafilatura in the cascade, a short block output goes there, past resiliparse
    c = cleaner("perplexity.enabled=false", "extract.cascade=[blocks, resiliparse, trafilatura, conservative]",
                f"extract.blocks_model={strict}")
    skipped = c.process(page(ARTICLE))
    assert skipped.extractor == "trafilatura" and re.fullmatch(r"blocks_short_\d+of\d+", skipped.fallback_reason)
    assert "stone bridge" in skipped.clean_text
    assert c.step("resiliparse").stats.to_dict()["stage"]["resiliparse"]["skipped"] == 1


SIGNED_ARTICLE = ("<html><body><nav><a href='/'>Home</a></nav><article><h1>The old stone bridge</h1>"
                  + "".join(f"<p>The harbour town rebuilt its old stone bridge in spring number {i}, "
                            "and the people walked across it every evening.</p>" for i in range(6))
                  + "<ul><li>Share this</li><li>Print</li><li>Related: bridges of the north</li></ul>"
                  "<p>Posted by admin at 10:42</p></article>"
                  "<footer>Copyright 2024 Example Ltd. All rights reserved.</footer></body></html>")


def test_filter_leaves_lines_the_block_classifier_is_sure_of_to_it():
    """Each line of the block stage carries its probability to the filter; lines at or above
    ``perplexity.protect_min_prob`` face only ``protect_factor`` times the threshold, the others the rule,
    with the rule named in the reason."""
    if not (ROOT / "conf" / "models.yaml").exists():
        pytest.skip("conf/models.yaml (the English KenLM model) is not built yet")
    settings = ["perplexity.threshold=1.5", "extract.max_removed_share=1.0", "extract.cascade=[blocks, conservative]",
                "langid.enabled=true"]
    judged = cleaner(*settings, "perplexity.protect_min_prob=2").process(page(SIGNED_ARTICLE))  # every line judged
    assert judged.extractor == "blocks" and len(judged.blocks.line_probs) == len(judged.text.split("\n"))
    assert all(s.block_prob is not None and not s.kept for s in judged.sentences)  # every line scores above 1.5
    assert {s.reason for s in judged.sentences} == {"perplexity:line/context@1.5"}
    sure = min(s.block_prob for s in judged.sentences if "harbour town" in s.text)
    signature = next(s for s in judged.sentences if s.text.startswith("Posted by"))
    assert signature.block_prob < sure  # the classifier is less sure of the signature line than of the prose
    c = cleaner(*settings, f"perplexity.protect_min_prob={sure}", "perplexity.protect_factor=.inf")
    protected = c.process(page(SIGNED_ARTICLE))
    assert [s.kept for s in protected.sentences] == [s.block_prob >= sure for s in protected.sentences]
    assert "harbour town" in protected.clean_text and "Posted by" not in protected.clean_text
    counts = c.step("perplexity").stats.to_dict()["stage"]["perplexity"]
    assert counts["sentences_protected"] == sum(s.kept for s in protected.sentences) > 0
    # a bar of once the threshold, without the length scale: every line scores above 1.5, the sure ones go too
    barred = cleaner(*settings, f"perplexity.protect_min_prob={sure}", "perplexity.protect_factor=1").process(
        page(SIGNED_ARTICLE))
    assert not any(s.kept for s in barred.sentences)


def test_protect_regions_keeps_the_lines_of_a_kept_repeated_region():
    """With ``perplexity.protect_regions`` the block stage tells which lines lie in a repeated region it mostly
    kept (here the article's seven paragraphs under one parent), and the filter spares them; without it the
    stage does not compute that evidence."""
    if not (ROOT / "conf" / "models.yaml").exists():
        pytest.skip("conf/models.yaml (the English KenLM model) is not built yet")
    settings = ["perplexity.threshold=1.5", "perplexity.protect_min_prob=2", "perplexity.protect_factor=.inf",
                "extract.max_removed_share=1.0", "extract.cascade=[blocks, conservative]", "langid.enabled=true"]
    plain = cleaner(*settings).process(page(SIGNED_ARTICLE))
    assert plain.blocks.line_regions is None and not any(s.in_region for s in plain.sentences)
    assert not any(s.kept for s in plain.sentences if "harbour town" in s.text)  # all score above 1.5
    regions = cleaner(*settings, "perplexity.protect_regions=true").process(page(SIGNED_ARTICLE))
    assert len(regions.blocks.line_regions) == len(regions.text.split("\n"))
    assert [s.text for s in regions.sentences] == [s.text for s in plain.sentences]
    # kept: what the rule kept anyway (unscored short lines) and the region's lines
    assert [s.kept for s in regions.sentences] == [p.kept or s.in_region for p, s in zip(plain.sentences,
                                                                                            regions.sentences)]
    spared = [s.text for s in regions.sentences if s.in_region]
    assert len(spared) == 7 and all("harbour town" in text for text in spared[:6])
    assert spared[6] == "Posted by admin at 10:42" and regions.sentences[0].text == "The old stone bridge"
    assert not regions.sentences[0].in_region


def test_block_stage_overrules_a_filter_that_would_empty_it():
    """A filter removing more than ``extract.max_removed_share`` of the block stage's text does not pass the page
    on: the stage's text is kept unfiltered and the decision is the row's fallback_reason; other stages fall back."""
    if not (ROOT / "conf" / "models.yaml").exists():
        pytest.skip("conf/models.yaml (the English KenLM model) is not built yet")
    settings = ["perplexity.threshold=1.5", "perplexity.protect_min_prob=2", "extract.max_removed_share=0.5",
                "langid.enabled=true"]
    c = cleaner(*settings, "extract.cascade=[blocks, resiliparse]")
    kept = c.process(page(SIGNED_ARTICLE))
    n = len(kept.sentences)
    assert (kept.outcome, kept.extractor, kept.fallback_reason) == ("kept", "blocks", f"blocks_kept_filtered_{n}of{n}")
    assert all(s.kept and s.reason is None and s.perplexity > 1.5 for s in kept.sentences)  # scores stay
    assert "harbour town" in kept.clean_text and "Posted by" in kept.clean_text
    assert c.step("blocks").stats.to_dict()["stage"]["blocks"]["filter_overruled"] == 1
    moved = cleaner(*settings, "extract.cascade=[resiliparse, blocks]").process(page(SIGNED_ARTICLE))
    assert moved.extractor == "blocks" and moved.fallback_reason.startswith("resiliparse_filtered_")


def cleaned_rows(loop: StepLoop, pages: list[Page]) -> list[tuple]:
    """What the loop made of each page, in order: everything a row and the sentence table are made of."""
    return [(d.page.record_id, d.outcome, d.extractor, d.fallback_reason, d.text, d.clean_text, d.blocks.line_probs if d.blocks is not None else None,
             [(s.text, s.kept, s.perplexity, s.reason) for s in d.sentences]) for d in loop.run(pages)]


def counters(loop: StepLoop) -> dict:
    merged = {}
    for step in loop.all_steps:
        for key, value in step.stats.counts.items():
            if not key.startswith("cpu."):
                merged[key] = merged.get(key, 0) + value
    return merged


def sample_pages(limit: int) -> list[Page]:
    from conftest import SAMPLE_WARC, bench_file
    from pipeline.reading.reader import read_pages
    from pipeline.reading.shards import Split
    from pipeline.stats import Stats

    settings = load_settings(None, [])
    pages = []
    for path in (SAMPLE_WARC, bench_file("warc", "bench-dev.warc.gz")):
        pages += [p for p in read_pages(Split(str(path), 0, 1), settings.input, settings.s3, Stats()) if p.kind == "html"]
    return pages[:limit]


def test_a_window_of_pages_gives_what_one_page_at_a_time_gives(monkeypatch):
    """The loop gathers extract.prepare_window pages and the block stage classifies them phase by phase:
    the same rows, sentences and counters as page by page, on real pages with a too-deep one and an
    unreadable one among them."""
    from pipeline.steps.blocks.extractor import BlocksExtractor

    pages = sample_pages(150)
    pages[7] = page("<html><body>" + "<div>" * 60 + "deep" + "</div>" * 60 + "</body></html>", "<urn:deep>")
    pages[8] = page("\x00\x01 <<<", "<urn:junk>")
    windows = []
    classified = BlocksExtractor._classified
    monkeypatch.setattr(BlocksExtractor, "_classified", lambda self, htmls: windows.append(len(htmls)) or classified(self, htmls))
    base = ["langid.enabled=true", "extract.max_main_content_depth=50"]
    one, many = cleaner(*base, "extract.prepare_window=1"), cleaner(*base, "extract.prepare_window=32")
    assert cleaned_rows(one, pages) == cleaned_rows(many, pages)
    assert counters(one) == counters(many) and counters(many)["stage.blocks.error.PageTooDeep"] >= 1
    assert max(windows) == 32  # the window was prepared at once ...
    assert windows.count(1) >= len(pages)  # ... and page by page for the loop of one


def test_a_guard_interrupt_while_preparing_falls_back_for_that_page_only(monkeypatch):
    """A page whose preparation hits the time guard falls to the next stage as it would alone
    (``blocks_timeout``); the other pages of the window keep their block text."""
    from resiliparse.process_guard import ExecutionTimeout

    from pipeline.steps.blocks import extractor as blocks_step

    parse = blocks_step.parse_page

    def slow_on_the_second(html: str, *args):
        if "number 1," in html and "second" in html:
            raise ExecutionTimeout("simulated")
        return parse(html, *args)

    monkeypatch.setattr(blocks_step, "parse_page", slow_on_the_second)
    pages = [page(ARTICLE, "<urn:1>"), page(ARTICLE.replace("<article>", "<article><h1>second</h1>"), "<urn:2>"),
             page(ARTICLE, "<urn:3>")]
    loop = cleaner("perplexity.enabled=false", "extract.cascade=[blocks, resiliparse]", "extract.prepare_window=3")
    cleaned = list(loop.run(pages))
    assert [(d.outcome, d.extractor, d.fallback_reason) for d in cleaned] == [
        ("kept", "blocks", None), ("kept", "resiliparse", "blocks_timeout"), ("kept", "blocks", None)]
    assert loop.step("blocks").stats.to_dict()["stage"]["blocks"]["error"]["timeout"] == 1


def test_the_steps_after_the_cascade_run_step_by_step_over_a_window_and_each_page_ends_as_alone(monkeypatch):
    """Cascade.run_window: every page's language, then every page's sentences, then the filter over the window; a
    page the fallback rule rejects goes on to the next stage alone, a page no stage extracts is dropped, and a guard
    interrupt in a step ends that page only, each as page by page."""
    from resiliparse.process_guard import ExecutionTimeout

    from pipeline.steps.langid import LanguageIdentifier
    from pipeline.steps.sentences import SentenceSplitter

    calls = []
    identify, split = LanguageIdentifier.run, SentenceSplitter.run

    def identify_logged(self, doc):
        calls.append(("langid", doc.page.record_id))
        if "timeout" in doc.page.record_id:
            raise ExecutionTimeout("simulated")
        return identify(self, doc)

    monkeypatch.setattr(LanguageIdentifier, "run", identify_logged)
    monkeypatch.setattr(SentenceSplitter, "run", lambda self, doc: calls.append(("sentences", doc.page.record_id))
                        or split(self, doc))
    second = ARTICLE.replace("<article>", "<article><h1>The second page</h1>")
    pages = [page(ARTICLE, "<urn:kept>"), page(second, "<urn:falls>"), page(NAV_ONLY, "<urn:empty>"),
             page(ARTICLE, "<urn:timeout>")]

    def run(window: int) -> list[tuple]:
        loop = cleaner("langid.enabled=true", "perplexity.enabled=false", f"extract.prepare_window={window}",
                       "extract.cascade=[resiliparse, conservative]")
        cascade = loop.steps[loop.cascade_at]
        cascade.fallback = lambda doc, settings: ("filtered_1of1" if doc.extractor == "resiliparse"
                                                  and "second page" in doc.text else None)
        calls.clear()
        return cleaned_rows(loop, pages)

    alone = run(1)
    windowed = run(4)
    assert windowed == alone
    assert [row[1:4] for row in windowed] == [
        ("kept", "resiliparse", None), ("kept", "conservative", "resiliparse_filtered_1of1"),
        ("kept", "conservative", "resiliparse_empty"), ("error.timeout", None, None)]
    assert calls[:4] == [("langid", "<urn:kept>"), ("langid", "<urn:falls>"), ("langid", "<urn:empty>"),
                         ("langid", "<urn:timeout>")]  # the window's languages first, then its sentences
    assert calls[4:7] == [("sentences", "<urn:kept>"), ("sentences", "<urn:falls>"), ("sentences", "<urn:empty>")]
