"""Shared fixtures: the real WARCs shipped in tests/data (origins and licences in tests/data/README.md), and paths
into ../shared/bench for the bench-scale tests (skipped when it is absent)."""

from __future__ import annotations

import io
import os
from pathlib import Path

import pytest
from warcio.warcwriter import WARCWriter

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "tests" / "data"
SAMPLE_WARC = DATA / "sample.warc.gz"
# Real crawls: cc-genuine/ (Common Crawl's WARC, WAT and WET files), other-real/ (ClueWeb09, wget).
REAL_WARCS = sorted((DATA / "cc-genuine").glob("*.gz")) + sorted((DATA / "other-real").glob("*.gz"))
BENCH = ROOT.parent / "shared" / "bench"

os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")

# A tiny hand-written KenLM model (ARPA) and two sentences whose scores are computed by hand.
TINY_ARPA = """\\data\\
ngram 1=6
ngram 2=4

\\1-grams:
-1.0\t<unk>\t0
-99\t<s>\t-0.5
-1.0\t</s>\t0
-0.5\tthe\t-0.3
-0.7\tcat\t-0.2
-0.8\tsat\t-0.1

\\2-grams:
-0.2\t<s> the
-0.3\tthe cat
-0.25\tcat sat
-0.1\tsat </s>

\\end\\
"""

# log10 P by hand: "the cat sat" = P(the|<s>) P(cat|the) P(sat|cat) P(</s>|sat) = -0.2 -0.3 -0.25 -0.1
GOOD, GOOD_LOG10, GOOD_WORDS = "The cat sat", -0.85, 3
# "cat , the" ("," is <unk>) backs off at every step:
# (bo(<s>) + P(cat)) + (bo(cat) + P(<unk>)) + (bo(<unk>) + P(the)) + (bo(the) + P(</s>))
BAD, BAD_LOG10, BAD_WORDS = "Cat, the", (-0.5 - 0.7) + (-0.2 - 1.0) + (0 - 0.5) + (-0.3 - 1.0), 3


def write_warc(path: Path, responses: list[tuple[str, str | None, str | None, bytes]]) -> None:
    """Responses as (status, Content-Type, WARC-Identified-Payload-Type, body), one gzip member each."""
    with open(path, "wb") as fh:
        writer = WARCWriter(fh, gzip=True)
        for n, (status, ctype, identified, body) in enumerate(responses):
            head = f"HTTP/1.1 {status}\r\n" + (f"Content-Type: {ctype}\r\n" if ctype else "")
            block = (head + f"Content-Length: {len(body)}\r\n\r\n").encode() + body
            headers = {"WARC-Identified-Payload-Type": identified} if identified else {}
            writer.write_record(writer.create_warc_record(f"https://t.example/{n}", "response",
                                                          payload=io.BytesIO(block), length=len(block),
                                                          warc_headers_dict=headers))


def real_warc(folder: str, name: str) -> Path:
    """A real WARC (or WAT, WET) file shipped in tests/data/``folder``/ (``cc-genuine`` or ``other-real``)."""
    path = DATA / folder / name
    assert path.is_file(), f"{path} is missing from the checkout (tests/data/README.md lists the files)"
    return path


def bench_file(*parts: str) -> Path:
    """A file under ../shared/bench, or skip the test with the reason."""
    path = BENCH.joinpath(*parts)
    if not path.exists():
        pytest.skip(f"{path} not present (../shared/bench is needed for this test)")
    return path


@pytest.fixture
def cc_genuine_warc() -> Path:
    return real_warc("cc-genuine", "CC-MAIN-2020-34.sample-from-resiliparse-tests.warc.gz")


@pytest.fixture
def clueweb_quirk_warc() -> Path:
    return real_warc("other-real", "clueweb09-ja.quirk.from-resiliparse-tests.warc.gz")


@pytest.fixture
def bench_dev_warc() -> Path:
    return bench_file("warc", "bench-dev.warc.gz")
