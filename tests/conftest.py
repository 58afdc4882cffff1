"""Shared fixtures: paths to the real benchmark WARCs in ../shared/bench (skipped when absent)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
BENCH = ROOT.parent / "shared" / "bench"
WARC_DIR = BENCH / "warc"
SAMPLE_WARC = ROOT / "data" / "sample" / "sample.warc.gz"

os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")


def bench_file(*parts: str) -> Path:
    """A file under ../shared/bench, or skip the test with the reason."""
    path = BENCH.joinpath(*parts)
    if not path.exists():
        pytest.skip(f"{path} not present (../shared/bench is needed for this test)")
    return path


@pytest.fixture
def cc_genuine_warc() -> Path:
    return bench_file("warc", "cc-genuine", "CC-MAIN-2020-34.sample-from-resiliparse-tests.warc.gz")


@pytest.fixture
def clueweb_quirk_warc() -> Path:
    return bench_file("warc", "other-real", "clueweb09-ja.quirk.from-resiliparse-tests.warc.gz")


@pytest.fixture
def bench_dev_warc() -> Path:
    return bench_file("warc", "bench-dev.warc.gz")
