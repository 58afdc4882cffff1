"""The block stage on the real pages of tests/data gives the frozen blocks, structure candidates, feature matrices and
probabilities of tests/data/block-features (tests/block_fixtures.py rewrites them when a change is meant)."""

from __future__ import annotations

import numpy as np
import pytest
from block_fixtures import _json, current, load

from pipeline._native.columns import dense_names


@pytest.fixture(scope="module")
def pages():
    return current(), load()


def test_the_real_pages_are_the_frozen_ones(pages):
    got, want = pages
    assert sorted(got) == sorted(want)
    assert sum(len(page.get("blocks", ())) for page in want.values()) > 5000


def test_every_page_parses_into_the_frozen_blocks_and_candidates(pages):
    got, want = pages
    for key, page in want.items():
        assert bool(got[key].get("too_deep")) == bool(page.get("too_deep")), key
        if not page.get("too_deep"):
            assert _json(got[key]["blocks"]) == page["blocks"], key
            assert _json(got[key]["nodes"]) == page["nodes"], key


def test_every_page_has_the_frozen_features_column_by_column(pages):
    got, want = pages
    names = dense_names()
    for key, page in want.items():
        if page.get("too_deep"):
            continue
        X, frozen = got[key]["X"], page["X"]
        assert X.shape == frozen.shape, key
        differs = [names[j] for j in range(X.shape[1]) if not np.array_equal(X[:, j], frozen[:, j], equal_nan=True)]
        assert differs == [], f"{key}: columns {differs} differ from the frozen matrix"
        assert got[key]["hashed"] == page["hashed"], key


def test_every_page_has_the_frozen_probabilities(pages):
    got, want = pages
    for key, page in want.items():
        if not page.get("too_deep"):
            np.testing.assert_array_equal(got[key]["probs"], page["probs"], err_msg=key)
