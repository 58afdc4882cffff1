"""LM text normalisation: one function for training and scoring."""

from __future__ import annotations

import ast
import json

import pytest

from conftest import ROOT
from pipeline import perplexity_rule as perplexity_step
from pipeline.lm_text import NORMALIZATION_VERSION, lm_line, lm_tokens, normalize_for_lm


@pytest.mark.parametrize("text, expected", [
    ("The Old Mill Bridge, built in 1784.", "the old mill bridge , built in 0000 ."),
    ("ＦＵＬＬ－ｗｉｄｔｈ １２３", "full - width 000"),  # NFKC first
    ("Grüße aus Köln!", "grüße aus köln !"),
    ("「川沿いの散歩」です。", "「 川 沿 い の 散 歩 」 で す 。"),  # CJK: one token per character
    ("Я люблю старый мост.", "я люблю старый мост ."),
    ("  tabs\tand\nnewlines  ", "tabs and newlines"),
    ("", ""),
])
def test_normalize_for_lm(text, expected):
    assert normalize_for_lm(text) == expected
    assert lm_tokens(text) == expected.split()


def test_normalisation_is_idempotent():
    text = "Ｍｒ. O'Brien paid £4.50 for 2 coffees — “very good”, he said; 東京へ行きました。"
    once = normalize_for_lm(text)
    assert normalize_for_lm(once) == once


def test_the_scorer_uses_the_shared_tokenizer():
    assert perplexity_step.lm_line is lm_line
    assert lm_line("Built in 1784, «ＡＢ»") == ("built in 0000 , « ab »", 7)


TRAINING_CODE = [ROOT / "lm_models" / "train.py", ROOT / "lm_models" / "corpora.py"]


@pytest.mark.parametrize("path", TRAINING_CODE, ids=lambda p: p.name)
def test_training_code_imports_the_shared_normalisation(path):
    if not path.exists():
        pytest.skip(f"{path} not present yet")
    tree = ast.parse(path.read_text(encoding="utf-8"))
    imported = {(node.module, alias.name) for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)
                for alias in node.names}
    # The normalisation itself, or the scorer's perplexity, which applies it.
    assert imported & {("pipeline.lm_text", "normalize_for_lm"), ("pipeline.perplexity_rule", "perplexity")}
    defined = {node.name for node in ast.walk(tree) if isinstance(node, ast.FunctionDef)}
    assert not defined & {"normalize_for_lm", "lm_tokens"}, "training code must not redefine the normalisation"


def test_shipped_models_were_trained_with_this_normalisation_version():
    cards = sorted((ROOT / "lm_models").glob("*/card.json"))
    if not cards:
        pytest.skip("no model cards in lm_models/ yet")
    for card in cards:
        meta = json.loads(card.read_text(encoding="utf-8"))
        assert meta["normalization_version"] == NORMALIZATION_VERSION, card
