"""The output is pinned: the bundled sample through the split runner gives the golden rows and stats.

A change that alters the output on purpose regenerates the file (``python tests/make_golden.py``)
and says why in its commit.
"""

from __future__ import annotations

import json

from conftest import SAMPLE_WARC
from golden_digest import GOLDEN_FILE, sample_run


def test_the_sample_run_matches_the_golden_file(tmp_path):
    golden = json.loads(GOLDEN_FILE.read_text(encoding="utf-8"))
    digest = json.loads(json.dumps(sample_run(SAMPLE_WARC, tmp_path), sort_keys=True))
    assert len(digest["data"]) == len(golden["data"]) > 0
    for part in ("data", "dropped", "sentences"):
        assert digest[part] == golden[part], f"{part} rows changed: run tests/make_golden.py if that is meant"
    assert digest["stats"] == golden["stats"]
