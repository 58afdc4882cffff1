"""Rewrite tests/golden/sample.json: the pinned output of the bundled sample through the split runner.

Run it only when a change of behaviour is meant, and say in the commit why the output changed:

    .venv/bin/python tests/make_golden.py
"""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path

from golden_digest import GOLDEN_FILE, sample_run

SAMPLE = Path(__file__).resolve().parent / "data" / "sample.warc.gz"


def main() -> int:
    with tempfile.TemporaryDirectory() as work:
        digest = sample_run(SAMPLE, Path(work))
    GOLDEN_FILE.parent.mkdir(parents=True, exist_ok=True)
    GOLDEN_FILE.write_text(json.dumps(digest, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    print(f"{GOLDEN_FILE}: {len(digest['data'])} rows, {len(digest['sentences'])} sentences", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
