"""Work the steps share instead of redoing, on real pages and real models: the same outcome, less CPU."""

from __future__ import annotations

from collections import Counter

import pytest
from conftest import SAMPLE_WARC

from warcplex import models
from warcplex.config import load_settings
from warcplex.document import Document
from warcplex.reading.warc import Split, iter_pages
from warcplex.spark.runner import run_split
from warcplex.stats import Stats
from warcplex.steps.loop import StepLoop
from warcplex.steps.perplexity import PerplexityFilter
from warcplex.steps import perplexity as perplexity_module
from warcplex.steps.blocks import features
from warcplex.steps.blocks import model as block_model_module


LOAD_KENLM = models._load_kenlm


class CountingModel:
    """A real KenLM model that counts the lines it scores."""

    def __init__(self, path: str) -> None:
        self.path, self.model, self.scored = path, LOAD_KENLM(path), 0

    def score(self, line: str, bos: bool = True, eos: bool = True) -> float:
        self.scored += 1
        return self.model.score(line, bos=bos, eos=eos)


def test_the_filter_reuses_the_block_stages_kenlm_scores(tmp_path, monkeypatch):
    """The block stage's pinned model and the registry's entry for the same file are one object, so a
    sentence equal to a block the block stage scored on the page is not scored again."""
    loaded: list[CountingModel] = []

    def load(path: str) -> CountingModel:
        loaded.append(CountingModel(path))
        return loaded[-1]

    monkeypatch.setattr(models, "_load_kenlm", load)
    monkeypatch.setattr(models, "_CACHE", {})
    monkeypatch.setattr(block_model_module, "_VERIFIED", {})
    monkeypatch.setattr(perplexity_module, "_SCORED", {})
    asked: dict[str, set] = {"blocks": set(), "filter": set()}
    real = perplexity_module.perplexity

    def asking(stage: str):
        def scored(model, text: str) -> tuple[float, int]:
            asked[stage].add((model, text))
            return real(model, text)
        return scored

    monkeypatch.setattr(features, "perplexity", asking("blocks"))
    monkeypatch.setattr(perplexity_module, "perplexity", asking("filter"))
    stats = run_split(Split(str(SAMPLE_WARC), 0, 1), load_settings(None), str(tmp_path / "out"))
    assert stats["outcome"]["kept"] > 0
    assert max(Counter(m.path for m in loaded).values()) == 1  # each file loaded once
    assert len(asked["blocks"] | asked["filter"]) < perplexity_module.SCORED_CACHE_SIZE  # nothing evicted
    shared = asked["blocks"] & asked["filter"]
    assert len(shared) >= 10, "sentences equal to scored blocks, under the same model object"
    # every text was scored once per model, those both stages asked for included
    assert sum(m.scored for m in loaded) == len(asked["blocks"] | asked["filter"])


@pytest.fixture(scope="module")
def scored_pages() -> list[Document]:
    """The sample WARC's kept pages through the default steps: real blocks, real KenLM scores."""
    loop = StepLoop(load_settings(None))
    pages = iter_pages(Split(str(SAMPLE_WARC), 0, 1), loop.settings.input, loop.settings.s3, Stats())
    docs = [doc for doc in loop.run(pages) if doc.outcome == "kept" and doc.sentences]
    assert sum(1 for doc in docs if doc.extractor == "blocks") >= 10
    return docs


def test_window_scores_are_the_pooled_windows_bit_for_bit(scored_pages):
    """``with_neighbours`` computes each unit's terms once; its scores equal :func:`pooled` of each window."""
    settings = load_settings(None).perplexity
    checked = 0
    for doc in scored_pages:
        units = perplexity_module.judgement(doc.sentences, settings).judged
        for i, (unit, score) in enumerate(zip(units, perplexity_module.with_neighbours(units, settings.window_tokens))):
            if unit.perplexity is None:
                assert score is unit
                continue
            members, lo, hi = [unit], i - 1, i + 1
            while sum(u.n_tokens for u in members) < settings.window_tokens and (lo >= 0 or hi < len(units)):
                members += [units[j] for j in (lo, hi) if 0 <= j < len(units)]
                lo, hi = lo - 1, hi + 1
            assert score == perplexity_module.pooled(members)
            checked += 1
    assert checked >= 100


def test_one_judgement_serves_the_protected_and_unprotected_masks(scored_pages):
    """The filter judges a page once and decides twice (the unprotected mask counts ``sentences_protected``):
    the same masks as judging afresh, at the registry's threshold and at a tenth of it."""
    settings = load_settings(None).perplexity
    entries = [(doc, PerplexityFilter(settings).entry(doc.language_code)) for doc in scored_pages]
    saved = 0
    for doc, entry in ((doc, entry) for doc, entry in entries if entry is not None):
        judged = perplexity_module.judgement(doc.sentences, settings)
        for threshold in (entry.threshold_for(settings), entry.threshold_for(settings) / 10):
            masks = [perplexity_module.kept_mask(doc.sentences, threshold, settings, protect, judged)
                     for protect in (True, False)]
            assert masks == [perplexity_module.kept_mask(doc.sentences, threshold, settings, protect)
                             for protect in (True, False)]
            saved += sum(k and not u for k, u in zip(*masks))
    assert saved > 0, "some lines kept only because the block stage was sure of them"
