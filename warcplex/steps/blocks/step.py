"""A Dripper-style block stage: HTML -> semantic blocks -> main/other with a small CPU classifier.

:mod:`~warcplex.steps.blocks.parse` cuts the page into blocks, :mod:`~warcplex.steps.blocks.features`
describes them, :mod:`~warcplex.steps.blocks.model` scores them; the kept blocks, in document
order, are the page's text.
"""

from __future__ import annotations

import numpy as np

from warcplex import models
from warcplex.config import ExtractSettings, PerplexitySettings
from warcplex.registry import load_registry
from warcplex.steps.blocks.features import featurize
from warcplex.steps.blocks.parse import Block, parse_blocks
from warcplex.steps.extractors import Extractor, ResiliparseExtractor


class BlocksExtractor(Extractor):
    """Cascade stage ``blocks``: the kept blocks of the page, one per line."""

    name = "blocks"

    def __init__(self, settings: ExtractSettings, perplexity_settings: PerplexitySettings) -> None:
        super().__init__(settings)
        self.primary = ResiliparseExtractor(settings, main_content=True)  # its text is a feature
        self.registry = perplexity_settings.registry  # used even when the sentence filter is off
        self.lm_language = settings.blocks_lm_language

    def language_model(self):
        """The KenLM model of ``extract.blocks_lm_language`` from the registry, if there is one."""
        try:
            entry = load_registry(self.registry).get(self.lm_language)
        except FileNotFoundError:  # no registry yet: the classifier runs without the perplexity feature
            return None
        return models.kenlm_model(entry.path) if entry else None

    def classify(self, html: str) -> tuple[list[Block], np.ndarray]:
        """The page's blocks and each block's main-content probability.

        Raises :class:`PageTooDeep` like the resiliparse stage (its main-content pass is a feature).
        """
        self.primary.check_depth(html)
        blocks = parse_blocks(html)
        if not blocks:
            return blocks, np.zeros(0, dtype=np.float32)
        X, hashed = featurize(blocks, self.primary.plain_text(html), self.language_model())
        return blocks, models.block_model(self.settings.blocks_model).scores(X, hashed)

    def extract(self, html: str) -> str:
        blocks, probs = self.classify(html)
        threshold = models.block_model(self.settings.blocks_model).threshold
        kept = [b.text for b, p in zip(blocks, probs) if p >= threshold]
        self.count("blocks.total", len(blocks))
        self.count("blocks.kept", len(kept))
        return "\n".join(kept)
