"""The index statistics' page sample: each split's quota from the binomial spread of its share, and the visible text
of a candidate taken from the page's one parse (no second tag-stripping pass)."""

from __future__ import annotations

import math

import numpy as np
from block_fixtures import warc_pages
from conftest import SAMPLE_WARC

from pipeline.config import load_settings
from pipeline.document import Page
from pipeline.stats import Stats
from pipeline.steps.loop import StepLoop
from pipeline.writing.sample import IndexSample, per_split_pages


def test_a_splits_quota_is_its_share_plus_four_standard_deviations():
    assert per_split_pages(0, 8) == 0  # every page
    assert per_split_pages(2000, 1) == 2000  # one split holds the whole sample
    assert per_split_pages(2000, 2) == math.ceil(1000 + 4 * math.sqrt(1000 * 0.5)) == 1090
    assert per_split_pages(2000, 100) == math.ceil(20 + 4 * math.sqrt(20 * 0.99)) == 38
    assert per_split_pages(2000, 100_000) == 2  # at least two
    assert per_split_pages(10, 2) == 10  # never more than the sample


def test_the_quota_holds_the_global_sample_of_even_splits_with_high_probability():
    """Random record keys over even splits: the sample (the smallest keys of all) almost never holds more pages of
    one split than its quota, so the driver's sample is exact; and a split keeps little more than its share."""
    rng = np.random.default_rng(0)
    sample, trials, overflows = 2000, 400, 0
    for splits, pages in ((2, 3206), (8, 16_000), (64, 40_000)):
        quota = per_split_pages(sample, splits)
        assert quota < (1.1 if splits == 2 else 2) * sample / splits  # the old quota: ten times the share
        for _ in range(trials):
            keys = rng.random(pages)
            split_of = np.arange(pages) % splits
            chosen = split_of[np.argsort(keys)[:sample]]
            overflows += int(np.bincount(chosen, minlength=splits).max() > quota)
    assert overflows <= 2  # of 1,200 runs (four standard deviations: about 3 in 100,000 a split)


def test_a_candidates_visible_text_comes_from_the_pages_one_parse(monkeypatch):
    """The block stage's parse gives the sample its all-visible text: every block of the page, a line each, the
    excluded parts (footers) too; resiliparse is not run a second time."""
    from resiliparse.parse.html import HTMLTree

    settings = load_settings(None, ["perplexity.enabled=false"])
    loop = StepLoop(settings)
    docs = [loop.process(Page(f"<urn:{i}>", "http://x/", "", html.encode("utf-8"), "utf-8"))
            for i, html in enumerate(warc_pages(SAMPLE_WARC))]
    docs = [doc for doc in docs if doc.outcome in ("kept", "empty_after_filter")]
    parses = []
    real_parse = HTMLTree.parse
    monkeypatch.setattr(HTMLTree, "parse", lambda *a: parses.append(1) or real_parse(*a))
    sample, stats = IndexSample(0, settings.extract), Stats()
    for doc in docs:
        assert sample.offer(doc, stats)
    assert parses == [] and len(sample) == len(docs) > 10
    counted = stats.to_dict()["index_sample"]
    assert counted["visible_extracted"] == len(docs) and "visible_reparsed" not in counted
    rows = {row["warc_record_id"]: row for _, row in sample._heap}
    for doc in docs:
        visible = rows[doc.page.record_id]["visible"]
        assert all(line in visible for line in doc.text.splitlines())  # the main content is visible text
        assert all(block.text.split()[0] in visible for block in doc.blocks.blocks if block.text.strip())
        assert len(visible) >= len(doc.text)


def test_the_sample_is_the_share_of_pages_below_its_key_bound_whatever_the_splits(tmp_path):
    """A page is a candidate when its key is below the share's bound: about that share of 20,000 pages, the same
    pages however they are split, and the driver's sample is the smallest keys of them."""
    from pipeline.config import ExtractSettings, S3Settings
    from pipeline.document import Document, Sentence
    from pipeline.writing.output import OutputTarget
    from pipeline.writing.sample import read_index_sample, sample_key, share_bound

    ids = [f"<urn:uuid:{i}>" for i in range(20_000)]
    bound = share_bound(0.05)
    below = {i for i in ids if sample_key(i) < bound}
    assert 0.045 < len(below) / len(ids) < 0.055 and share_bound(1.0) is None
    taken = {}
    for splits in (1, 3):
        target = OutputTarget(str(tmp_path / f"s{splits}"), S3Settings())
        taken[splits] = set()
        for split in range(splits):
            sample = IndexSample(0, ExtractSettings(), visible_text=False, share=0.05)
            for record_id in ids[split::splits]:
                doc = Document(Page(record_id, "http://x/", "", b"", None), sentences=[Sentence("words here")])
                if sample.offer(doc, Stats()):
                    taken[splits].add(record_id)
            sample.write(target, f"split{split}", "zstd")
        pages, drawn = read_index_sample(str(tmp_path / f"s{splits}"), S3Settings(), 500)
        assert [p.record_id for p in pages] == sorted(below, key=sample_key)[:500] and drawn["exact"]
    assert taken[1] == taken[3] == below
