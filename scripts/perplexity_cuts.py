"""Fixed perplexity-bucket cuts (``corpus.quality.perplexity_cuts``) from finished runs' pages.

    python scripts/perplexity_cuts.py OUTPUT [OUTPUT ...] [--min-pages 20] [--percentiles 33.3 66.7]

Reads ``perplexity_median`` and ``language`` of every page in each OUTPUT's ``data/`` and prints, as the YAML
mapping the setting takes, each language's percentiles (cc_net's thirds by default) where it has at least
``--min-pages`` scored pages. The cuts shipped in conf/nightly.yaml were made with it (the command is there).
"""

from __future__ import annotations

import argparse
from collections import defaultdict
from pathlib import Path

import numpy as np
import pyarrow.dataset as ds


def cuts(outputs: list[Path], min_pages: int, percentiles: tuple[float, float]) -> dict[str, tuple[float, float]]:
    scores: dict[str, list[float]] = defaultdict(list)
    for output in outputs:
        # partitioning=None: the language is read from inside the files
        table = ds.dataset(output / "data", format="parquet", partitioning=None).to_table(
            columns=["language", "perplexity_median"])
        for language, score in zip(table.column("language").to_pylist(),
                                   table.column("perplexity_median").to_pylist()):
            if language and score is not None:
                scores[language].append(score)
    return {language: tuple(round(float(v), 1) for v in np.percentile(values, percentiles))
            for language, values in sorted(scores.items()) if len(values) >= min_pages}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("outputs", nargs="+", type=Path, help="finished run output directories")
    parser.add_argument("--min-pages", type=int, default=20, help="scored pages a language needs (default 20)")
    parser.add_argument("--percentiles", type=float, nargs=2, default=(33.3, 66.7), help="default 33.3 66.7")
    args = parser.parse_args()
    found = cuts(args.outputs, args.min_pages, tuple(args.percentiles))
    print("perplexity_cuts:")
    for language, (head, middle) in found.items():
        print(f"  {language}: [{head}, {middle}]")


if __name__ == "__main__":
    main()
