"""Gradient-boosted trees (sklearn HistGradientBoosting, exported by ``scripts/train_blocks.py``) evaluated by the
compiled module (``pipeline/_native/trees.pyx``): the block classifier's two ensembles and the page type model's."""

from __future__ import annotations

import numpy as np

from pipeline import _native

_trees = _native.compiled("trees")  # the compiled tree ensembles (pipeline/_native/trees.pyx)


class TreeEnsemble:
    """Gradient-boosted trees (sklearn HistGradientBoosting, exported by scripts/train_blocks.py), re-laid as complete
    binary trees (:func:`_complete_trees`) and walked one level per step."""

    def __init__(self, trees: dict) -> None:
        self.baseline = float(trees["baseline"])
        self.depth = int(trees["depth"])
        self.feature, self.cut, self.value = _complete_trees(trees, self.depth)

    def raw(self, D: np.ndarray) -> np.ndarray:
        """The ensemble's log-odds for each row of ``D`` (float64)."""
        return _trees.tree_raw(np.ascontiguousarray(D, dtype=np.float64), self.feature, self.cut, self.value,
                               self.baseline, self.depth)


def _complete_trees(trees: dict, depth: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Re-lay fitted trees as complete binary trees of ``depth`` levels (children of k at 2k+1, 2k+2).

    A leaf above the last level becomes a split that always goes left (cut +inf), so every
    path has ``depth`` steps and no child index has to be looked up. Returns per tree the
    split feature and cut of the ``2**depth - 1`` inner nodes and the values of the ``2**depth``
    leaves.
    """
    inner, leaves = 2 ** depth - 1, 2 ** depth
    feature = np.zeros((len(trees["feature"]), inner), dtype=np.intp)
    cut = np.full((len(trees["feature"]), inner), np.inf)
    value = np.zeros((len(trees["feature"]), leaves))
    for t, (feat, thr, left, right, val) in enumerate(zip(trees["feature"], trees["threshold"], trees["left"],
                                                          trees["right"], trees["value"])):
        pending = [(0, 0, 0)]  # (fitted node, complete-tree position, level)
        while pending:
            fitted, position, level = pending.pop()
            is_leaf = left[fitted] == fitted
            if level == depth:
                value[t, position - inner] = val[fitted]
                continue
            if is_leaf:
                pending.append((fitted, 2 * position + 1, level + 1))
                pending.append((fitted, 2 * position + 2, level + 1))  # never reached (cut is +inf)
            else:
                feature[t, position], cut[t, position] = feat[fitted], thr[fitted]
                pending.append((left[fitted], 2 * position + 1, level + 1))
                pending.append((right[fitted], 2 * position + 2, level + 1))
    return feature, cut, value

