"""scripts/benchpages.py: the bench's dev pages, their one held-out split and the bench's own scorer."""

from __future__ import annotations

import hashlib

from benchpages import HELDOUT_RULE, damaged_truth, dev_items, is_heldout, page_bytes, scorer, word_prf
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


def test_a_truth_that_splits_the_pages_words_is_told_damaged():
    """europa's press releases write accented letters in their own <B> elements; a truth made with a space between
    inline elements splits the words a browser shows whole, and a Greek one spells them letter by letter."""
    html = ("<html><body><p><b>Le Pr</b><b>ésident</b> a re<b>çu</b> une d<b>él</b><b>égation</b> du Haut "
            "Commissariat pour les R<b>éfugi</b><b>és</b> et les Europ<b>éens</b> .</p></body></html>")
    split = "Le Pr ésident a re çu une d él égation du Haut Commissariat pour les R éfugi és et les Europ éens ."
    assert damaged_truth(split, html)
    assert not damaged_truth("Le Président a reçu une délégation du Haut Commissariat pour les Réfugiés et les Européens .",
                             html)
    assert not damaged_truth(split)  # without the page, only the letter-by-letter rule
    assert damaged_truth("Η Ε π ι τ ρ ο π ή ε γ κ ρ ί ν ε ι")
    # a grid of products: "T-Shirt" and "slim" are cells the page's text joins, not a word split in two
    grid = "<html><body><div>T-Shirt</div><div>slim</div><div>T-Shirt</div><div>regular</div></body></html>"
    assert not damaged_truth("T-Shirt slim T-Shirt regular", grid)


def test_wcxb_word_metric_compares_bags_of_lower_cased_word_runs():
    """WCXB's metric: ``\\w+`` runs, lower-cased, as multisets; punctuation and white space are no words."""
    assert word_prf("Hello, hello WORLD!", "hello world hello") == (1.0, 1.0, 1.0)
    precision, recall, f1 = word_prf("the cat sat sat", "The cat sat on-the mat")  # 3 of 4 kept, 3 of 6 recalled
    assert (precision, recall) == (0.75, 0.5) and abs(f1 - 0.6) < 1e-12
    assert word_prf("", "") == (1.0, 1.0, 1.0)
    assert word_prf("menu", "") == (0.0, 1.0, 0.0) and word_prf("", "text") == (0.0, 0.0, 0.0)
    assert word_prf("naïve café_au_lait", "NAÏVE café_au_lait")[2] == 1.0  # \w is Unicode's, and keeps underscores
