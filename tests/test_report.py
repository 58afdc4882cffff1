"""One real Spark run with sentence scores: the index chain and its search side, `warcplex sweep`, report.html
in Chromium."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pyarrow.dataset as ds
import pytest

from pipeline.cli import main as cli_main
from pipeline.analysis.carbon import carbon_estimate
from pipeline.config import PROJECT_ROOT, CarbonSettings, PerplexitySettings, S3Settings
from pipeline.analysis.index_stats import _analyzer, load_scored_pages, page_queries
from pipeline.writing.index_sample import read_index_sample, sample_key
from pipeline.analysis.sweep import sweep
from conftest import real_warc

pytestmark = [pytest.mark.spark]

WARC = ("cc-genuine", "CC-MAIN-2020-34.sample-from-resiliparse-tests.warc.gz")


@pytest.fixture(scope="module")
def run_output(tmp_path_factory) -> tuple[Path, dict]:
    """`warcplex run` in local[1] Spark on a real Common Crawl WARC, with the sentence side output."""
    warc = real_warc(*WARC)
    if not (PROJECT_ROOT / "conf" / "models.yaml").exists():
        pytest.skip("conf/models.yaml (the shipped KenLM registry) is missing")
    if shutil.which("java") is None:
        pytest.skip("Java is needed for Spark")
    out = tmp_path_factory.mktemp("report") / "out"
    status = cli_main(["run", "--input", str(warc), "--output", str(out),
                       "--config", str(PROJECT_ROOT / "conf" / "local.yaml"), "--set", "spark.master=local[1]",
                       "--sentences", str(out / "sentences"),
                       "--set", "index.sample_share=1"])  # every page a candidate: the tests check the whole sample
    assert status == 0
    return out, json.loads((out / "stats.json").read_text())


def test_sentence_side_output_rebuilds_the_cleaned_text_but_its_spacing(run_output):
    """The stored text is the extracted text cut (its own spacing); the side output rebuilds the same words."""
    out, stats = run_output
    pages = load_scored_pages(str(out / "sentences"), S3Settings())
    table = ds.dataset(sorted(str(f) for f in out.glob("data/language=*/part-*.parquet")),
                       format="parquet").to_table(columns=["warc_record_id", "text"])
    texts = dict(zip(table.column("warc_record_id").to_pylist(), table.column("text").to_pylist()))
    assert len(pages) == stats["outcome"]["kept"] + stats["outcome"].get("empty_after_filter", 0)
    for page in pages:
        cleaned = page.text(lambda s: s.kept)
        assert "".join(texts.get(page.record_id, "").split()) == "".join(cleaned.split())
    assert sum(len(p.sentences) for p in pages) == stats["sentences"]["total"]


def test_index_statistics_match_the_tokens_of_the_text(run_output):
    """The sample's main-content and filtered texts are the sentence side output's, rejoined; each link's
    vocabulary and postings are those of tantivy's analyzer over its texts."""
    out, stats = run_output
    index = stats["index"]
    assert index["engine"] == "tantivy" and index["pages"] == stats["outcome"]["kept"]
    sampled, drawn = read_index_sample(str(out), S3Settings(), 0)
    assert drawn["exact"] and drawn["pages"] == index["pages"] == index["sample"]["of_pages"]
    scored = {p.record_id: p for p in load_scored_pages(str(out / "sentences"), S3Settings())}
    analyzer = _analyzer()
    for side, text_of, rebuilt in (("raw", lambda p: p.main_content, lambda p: p.text()),
                                   ("clean", lambda p: p.filtered, lambda p: p.text(lambda s: s.kept))):
        assert all(text_of(p) == rebuilt(scored[p.record_id]) for p in sampled)
        docs = [set(analyzer.analyze(text_of(p))) for p in sampled]
        assert index[side]["vocabulary"] == len(set().union(*docs))
        assert index[side]["postings"] == sum(len(d) for d in docs)
        assert index[side]["index_bytes"] > 0
    assert index["clean"]["postings"] <= index["raw"]["postings"]
    assert index["ratio"]["index_bytes"] == index["clean"]["index_bytes"] / index["raw"]["index_bytes"]
    assert index["queries"]["count"] == len(page_queries([p.main_content for p in sampled], 50, 3, 4)) > 0
    assert index["queries"]["raw_ms_per_query"] > 0 and index["queries"]["clean_ms_per_query"] > 0


def test_index_chain_from_visible_text_to_the_last_corpus_stage(run_output):
    """Each link is a real tantivy index of the same pages: tag-stripped, main content, filtered, each corpus stage."""
    out, stats = run_output
    chain = {link["step"]: link for link in stats["index"]["chain"]}
    assert list(chain) == ["visible", "main_content", "filtered",
                           *[f"corpus.{name}" for name in stats["corpus"]["order"]]]
    assert "chain_missing" not in stats["index"]
    analyzer = _analyzer()
    visible = [page.visible for page in read_index_sample(str(out), S3Settings(), 0)[0]]
    assert len(visible) == stats["index"]["pages"]
    docs = [set(analyzer.analyze(text)) for text in visible if text]
    assert chain["visible"]["postings"] == sum(len(d) for d in docs)
    assert chain["visible"]["bytes_text"] == sum(len(text.encode()) for text in visible)
    # all the page's visible text is more than its main content, and the filter only removes
    assert chain["visible"]["tokens"] > chain["main_content"]["tokens"] >= chain["filtered"]["tokens"]
    assert chain["visible"]["share_of_first"]["index_bytes"] == 1.0
    assert chain["main_content"]["index_bytes"] == stats["index"]["raw"]["index_bytes"]
    # the last corpus stage's link indexes exactly the corpus/ texts of the sampled pages
    corpus = ds.dataset(out / "corpus").to_table(columns=["text"]).column("text").to_pylist()
    last = chain[f"corpus.{stats['corpus']['order'][-1]}"]
    assert last["documents"] == len(corpus) == stats["corpus"]["documents_out"]
    assert last["bytes_text"] == sum(len(t.encode()) for t in corpus)
    assert last["postings"] == sum(len(set(analyzer.analyze(t))) for t in corpus)
    assert stats["cpu"]["visible_text"] > 0


def test_the_search_side_is_eq9_of_the_measured_query_cpu_and_cleaning(run_output):
    """Every link: query CPU measured with its spread over repeated passes, CO2 per million queries by eq. 9, and
    break-even = (its cleaning + its index build - the visible index's build) / (the visible link's CO2 per query -
    its own) where the query CPU differs by more than the spread, else none; in stats, summary and report."""
    out, stats = run_output
    carbon = CarbonSettings(**stats["run"]["config"]["carbon"])
    chain = stats["index"]["chain"]
    first = chain[0]
    assert first["step"] == "visible" and first["breakeven_queries"] is None
    for link in chain:
        assert link["query_cpu_seconds"] > 0 and link["build_cpu_seconds"] > 0
        assert link["kg_co2_per_million_queries"] == carbon_estimate(link["query_cpu_seconds"] * 1e6, carbon)["kg_co2"]
        if link is first:
            continue
        assert 0 < link["cleaning_cpu_seconds"]
        saving = (first["kg_co2_per_million_queries"] - link["kg_co2_per_million_queries"]) / 1e6
        cost = link["kg_co2_cleaning"] + link["kg_co2_build"] - first["kg_co2_build"]
        spread = max(link["query_cpu_spread_seconds"], first["query_cpu_spread_seconds"])
        measurable = abs(first["query_cpu_seconds"] - link["query_cpu_seconds"]) > spread
        assert link["query_difference_measurable"] == measurable
        assert link["breakeven_queries"] == (round(cost / saving) if saving > 0 and measurable else None)
    # cleaning up to a later link costs at least as much as up to an earlier one
    cleaning = [link["cleaning_cpu_seconds"] for link in chain[1:]]
    assert cleaning == sorted(cleaning)
    assert "search side (" in (out / "summary.txt").read_text()
    page = (out / "report.html").read_text()
    assert "Search side" in page and "g CO2 per 1M queries" in page and "break-even (queries)" in page


def test_index_sample_is_deterministic_and_sized(run_output):
    out, _ = run_output
    first, drawn = read_index_sample(str(out), S3Settings(), 5)
    again, _ = read_index_sample(str(out), S3Settings(), 5)
    assert [p.record_id for p in first] == [p.record_id for p in again] and len(first) == drawn["pages"] == 5
    assert [p.record_id for p in first] == sorted((p.record_id for p in first), key=sample_key)
    assert len(page_queries([p.main_content for p in first], 3, 2, 4)) <= 3


def test_a_per_split_sample_is_the_global_one_while_no_full_split_could_hide_a_smaller_key(tmp_path):
    """Splits keep their smallest keys; the driver takes the smallest of all and says whether a split that kept
    its most could have held more of them."""
    from pipeline.config import ExtractSettings
    from pipeline.document import Document, Page, Sentence
    from pipeline.stats import Stats
    from pipeline.writing.output import OutputTarget
    from pipeline.writing.index_sample import IndexSample, per_split_pages

    assert per_split_pages(2000, 100_000) == 2 and per_split_pages(0, 10) == 0  # the quotas: tests/test_index_sample.py
    ids = [f"<urn:uuid:{i}>" for i in range(40)]
    target = OutputTarget(str(tmp_path), S3Settings())
    for split, members in (("a", ids[:30]), ("b", ids[30:])):
        sample = IndexSample(4, ExtractSettings(), visible_text=False)
        for record_id in members:
            doc = Document(Page(record_id, "http://x/", "", b"", None), sentences=[Sentence("words here")])
            sample.offer(doc, Stats())
        assert len(sample) == 4
        sample.write(target, split, "zstd")
    best = sorted(ids, key=sample_key)
    exact = {}
    for size in range(1, 9):
        pages, drawn = read_index_sample(str(tmp_path), S3Settings(), size, per_split=4)
        chosen = [p.record_id for p in pages]
        assert chosen == sorted(chosen, key=sample_key) and drawn["candidates"] == 8
        exact[size] = drawn["exact"]
        if drawn["exact"]:  # said exact only when the pages are the smallest keys of all 40
            assert chosen == best[:size], size
    assert exact[1] and exact[4]  # each split holds its 4 smallest: the 4 smallest of all are among them
    assert not exact[8]  # split a kept 4 of its 30 pages: 8 candidates cannot stand for the 8 smallest


def test_sweep_is_monotone_and_bounded_by_raw(run_output):
    out, stats = run_output
    pages = load_scored_pages(str(out / "sentences"), S3Settings())
    scores = [s.perplexity for p in pages for s in p.sentences if s.perplexity is not None]
    rows = sweep(pages, [min(scores) / 2, 500, 2000, max(scores) * 2], PerplexitySettings(min_tokens=1))
    raw, *by_threshold, run = rows
    assert raw["threshold"] == "raw" and run["threshold"] == "run"
    kept = [r["sentences_kept"] for r in by_threshold]
    postings = [r["postings"] for r in by_threshold]
    assert kept == sorted(kept) and postings == sorted(postings)
    unscored = sum(1 for p in pages for s in p.sentences if s.perplexity is None)
    assert by_threshold[0]["sentences_kept"] == unscored
    assert by_threshold[-1]["sentences_kept"] == raw["sentences_kept"] == stats["sentences"]["total"]
    assert by_threshold[-1]["postings"] == raw["postings"]
    assert run["sentences_kept"] == stats["sentences"]["kept"]


def test_sweep_and_report_commands(run_output, capsys):
    out, _ = run_output
    assert cli_main(["sweep", "--output", str(out), "--thresholds", "300,1000,3000"]) == 0
    printed = capsys.readouterr().out
    assert "| 1000 |" in printed and "| raw |" in printed
    result = json.loads((out / "sweep.json").read_text())
    assert [r["threshold"] for r in result["rows"]] == ["raw", "300", "1000", "3000", "run"]
    assert cli_main(["report", str(out)]) == 0
    assert "Threshold sweep" in (out / "report.html").read_text()
    assert cli_main(["sweep", "--output", str(out), "--thresholds", "abc"]) == 2
    assert "expected comma-separated numbers" in capsys.readouterr().err


def _chromium() -> str:
    for name in ("chromium", "chromium-browser"):
        if shutil.which(name):
            return shutil.which(name)
    pytest.skip("chromium is not installed (`make test` installs it)")


CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update", "--disable-sync",
                  "--hide-scrollbars"]

# Marks the body once every image has decoded, with how many have a natural width.
IMAGE_PROBE = """<script>
window.addEventListener('load', () => {
  const images = Array.from(document.images);
  const loaded = images.filter(img => img.complete && img.naturalWidth > 0).length;
  document.body.setAttribute('data-images', loaded + '/' + images.length);
});
</script>"""


@pytest.mark.browser
def test_report_renders_in_headless_chromium(run_output, tmp_path):
    out, _ = run_output
    chromium = _chromium()
    page = (out / "report.html").read_text()
    images = page.count("<img ")
    assert images >= 4 and "data:image/png;base64," in page
    assert "src='http" not in page and "<link" not in page  # self-contained
    probe = tmp_path / "probe.html"
    probe.write_text(page.replace("</body>", IMAGE_PROBE + "</body>"))
    common = [chromium, *CHROMIUM_FLAGS, f"--user-data-dir={tmp_path / 'profile'}"]
    dom = subprocess.run([*common, "--virtual-time-budget=5000", "--dump-dom", probe.as_uri()],
                         capture_output=True, text=True, timeout=120).stdout
    assert f'data-images="{images}/{images}"' in dom
    shot = tmp_path / "report.png"
    subprocess.run([*common, "--window-size=1200,2400", f"--screenshot={shot}", (out / "report.html").as_uri()],
                   capture_output=True, timeout=120, check=True)
    import matplotlib.image

    pixels = matplotlib.image.imread(shot)[..., :3]
    non_white = (pixels.min(axis=2) < 0.9).mean()
    coloured = ((pixels.max(axis=2) - pixels.min(axis=2)) > 0.2).mean()
    assert non_white > 0.02, "screenshot is (almost) blank"
    assert coloured > 0.005, "no chart colours in the screenshot"
