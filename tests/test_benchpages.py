"""scripts/benchpages.py: the bench's dev pages, their one held-out split and the bench's own scorer."""

from __future__ import annotations

import hashlib

from benchpages import HELDOUT_RULE, dev_items, is_heldout, page_bytes, scorer
from conftest import bench_file

from pipeline.steps.blocks.model import MODEL_PATH


def test_the_split_is_the_rule_it_names():
    ids = [f"page-{n}" for n in range(2000)]
    held = [i for i in ids if is_heldout(i)]
    assert held == [i for i in ids if eval(HELDOUT_RULE, {"md5": lambda s: hashlib.md5(s.encode())}, {"page_id": i})]
    assert 0.27 < len(held) / len(ids) < 0.33


def test_the_block_model_was_fitted_outside_the_split():
    """The ids scripts/train_blocks.py recorded as held out beside the shipped model are this split's full-text pages."""
    bench = bench_file("data").parent
    items = dev_items(bench)
    recorded = set((MODEL_PATH.parent / "blocks_heldout_ids.txt").read_text().split())
    assert recorded == {i["id"] for i in items if i["set"] != "snippets" and is_heldout(i["id"])}
    assert {i["set"] for i in items} == {"data", "wcxb", "ml", "snippets"}


def test_pages_and_truth_are_read_and_scored_by_the_bench_scorer():
    bench = bench_file("score.py").parent
    item = next(i for i in dev_items(bench) if i["set"] == "wcxb")
    html = page_bytes(item["html"])
    assert html.lstrip()[:1] == b"<"
    truth = open(item["truth"], encoding="utf-8").read()
    assert scorer(bench).score_pair(truth, truth)["rouge5_f"] == 1.0
    assert scorer(bench) is scorer(bench)  # loaded once
