"""Work the steps share instead of redoing, on real pages and real models: the same outcome, less CPU."""

from __future__ import annotations

from collections import Counter

from conftest import SAMPLE_WARC

from warcplex import models
from warcplex.config import load_settings
from warcplex.reading.warc import Split
from warcplex.spark.runner import run_split
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
