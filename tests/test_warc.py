"""WARC reading: split planning at gzip member boundaries, every bench file, HTML detection, skip counters."""

from __future__ import annotations

import csv
import io
from collections import Counter
from pathlib import Path

import pytest
from warcio.archiveiterator import ArchiveIterator as WarcioIterator
from warcio.warcwriter import WARCWriter

from conftest import DATA, REAL_WARCS, SAMPLE_WARC, bench_file, real_warc, write_warc
from pipeline.config import InputSettings, S3Settings
from pipeline.stats import Stats
from pipeline.reading.reader import plan_splits, read_pages
from pipeline.reading.shards import Shard, Split, shard_key
from pipeline.reading.warc import _is_member_start

S3 = S3Settings()


def splits_of(uri: str, settings: InputSettings, parallelism: int) -> list[Split]:
    """The splits the job plans for the file at ``uri`` (by the reader its name chooses)."""
    return plan_splits([Shard(uri, shard_key(uri))], settings, S3, parallelism)


def read_split(split: Split, settings: InputSettings | None = None) -> tuple[list, Stats]:
    stats = Stats()
    pages = list(read_pages(split, settings or InputSettings(), S3, stats))
    return pages, stats


def warcio_counts(path: Path) -> Counter:
    """Record types as an independent parser (warcio) sees them."""
    with open(path, "rb") as fh:
        return Counter(record.rec_type for record in WarcioIterator(fh))


def skipped(stats: Stats) -> float:
    return sum(v for k, v in stats.counts.items() if k.startswith("skip."))


# --- the bundled sample -------------------------------------------------------------------


def test_sample_script_reproduces_the_committed_sample_byte_for_byte(tmp_path):
    import make_sample_warc

    out = tmp_path / "sample.warc.gz"
    make_sample_warc.build(out)
    assert out.read_bytes() == SAMPLE_WARC.read_bytes()
    assert SAMPLE_WARC.stat().st_size <= 300 * 1024


def test_sample_skips_and_counts_every_kind_of_non_page_record():
    pages, stats = read_split(Split(str(SAMPLE_WARC), 0, 1))
    c = stats.counts
    types = warcio_counts(SAMPLE_WARC)
    assert c["records.read"] == sum(types.values())
    assert c["skip.not_response.warcinfo"] == types["warcinfo"] == 1
    assert c["skip.not_response.request"] == types["request"]
    assert c["skip.not_response.metadata"] == types["metadata"]
    assert c["skip.not_response.revisit"] == types["revisit"] == 1
    assert c["skip.not_html"] == 2  # the JPEG and robots.txt
    assert c["skip.http_status.3xx"] == 1
    assert c["skip.empty_payload"] == 1
    assert c["records.read"] == skipped(stats) + c["records.html"]
    assert c["records.html"] == len(pages) == types["response"] - 4
    urls = {p.url for p in pages}
    assert not any(u.endswith(("robots.txt", ".jpg", "/empty")) or u.startswith("http://") for u in urls)


def test_pages_carry_record_metadata():
    pages, _ = read_split(Split(str(SAMPLE_WARC), 0, 1))
    with open(SAMPLE_WARC, "rb") as fh:
        responses = {r.rec_headers.get_header("WARC-Target-URI"): r.rec_headers
                     for r in WarcioIterator(fh) if r.rec_type == "response"}
    for page in pages:
        headers = responses[page.url]
        assert page.record_id == headers.get_header("WARC-Record-ID")
        assert page.warc_date == headers.get_header("WARC-Date")
        assert page.html.lstrip().startswith(b"<!DOCTYPE html>")
    lying = next(p for p in pages if p.url == "https://elmstreet-cafe.example/news/ten-years")
    assert lying.http_charset.lower() == "utf-8"
    with pytest.raises(UnicodeDecodeError):
        lying.html.decode("utf-8")


# --- HTML detection -----------------------------------------------------------------------


@pytest.mark.parametrize("ctype, identified, is_html", [
    ("text/html", None, True),
    ("text/html; charset=ISO-8859-1", None, True),
    ("TEXT/HTML;charset=utf-8", None, True),
    ("application/xhtml+xml", None, True),
    ("application/octet-stream", "text/html", True),  # the identified type wins ...
    ("text/html", "application/pdf", False),  # ... both ways
    ("text/plain", None, False),
    ("image/jpeg", None, False),
    (None, None, False),
])
def test_html_is_judged_by_identified_type_else_content_type(tmp_path, ctype, identified, is_html):
    path = tmp_path / "t.warc.gz"
    write_warc(path, [("200 OK", ctype, identified, b"<html><body><p>Hello there.</p></body></html>")])
    pages, stats = read_split(Split(str(path), 0, 1))
    assert len(pages) == int(is_html)
    assert stats.counts["skip.not_html"] == int(not is_html)


def test_status_size_and_empty_payload_skips(tmp_path):
    path = tmp_path / "t.warc.gz"
    page = b"<html><body><p>" + b"word " * 100 + b"</p></body></html>"
    write_warc(path, [("404 Not Found", "text/html", None, page), ("500 Oops", "text/html", None, page),
                      ("200 OK", "text/html", None, page), ("200 OK", "text/html", None, b" \r\n "),
                      ("200 OK", "text/html", None, b"<p>short</p>")])
    pages, stats = read_split(Split(str(path), 0, 1), InputSettings(max_html_bytes=200))
    assert [p.html for p in pages] == [b"<p>short</p>"]
    assert stats.counts["skip.http_status.4xx"] == 1
    assert stats.counts["skip.http_status.5xx"] == 1
    assert stats.counts["skip.too_large"] == 1
    assert stats.counts["skip.empty_payload"] == 1


# --- split planning -----------------------------------------------------------------------


def test_remote_plain_or_single_shards_are_one_split(tmp_path):
    plain = tmp_path / "plain.warc"
    plain.write_bytes(b"WARC/1.0\r\n" * 1000)
    settings = InputSettings(splits_per_shard=4, min_split_bytes=1)
    assert splits_of("s3://bucket/key.warc.gz", settings, 8) == [Split("s3://bucket/key.warc.gz", 0, 1)]
    assert splits_of(str(plain), settings, 8) == [Split(str(plain), 0, 1)]
    assert len(splits_of(str(SAMPLE_WARC), InputSettings(splits_per_shard=1, min_split_bytes=1), 8)) == 1
    # a shard smaller than min_split_bytes is not cut
    assert len(splits_of(str(SAMPLE_WARC), InputSettings(splits_per_shard=4), 8)) == 1


def test_split_ids_are_deterministic_and_distinct():
    splits = splits_of(str(SAMPLE_WARC), InputSettings(splits_per_shard=3, min_split_bytes=1), 8)
    again = splits_of(str(SAMPLE_WARC), InputSettings(splits_per_shard=3, min_split_bytes=1), 8)
    assert [s.split_id for s in splits] == [s.split_id for s in again]
    assert len({s.split_id for s in splits}) == len(splits) == 3
    assert all(s.split_id.startswith("sample.warc.gz-") for s in splits)


def check_splits_cover_shard(path: Path, splits: list[Split], whole: Stats, whole_ids: list[str]) -> None:
    with open(path, "rb") as fh:
        for split in splits[1:]:
            fh.seek(split.start)
            assert _is_member_start(fh.read(4096)), f"split {split.index} starts inside a gzip member"
    assert [s.start for s in splits] == sorted({s.start for s in splits})
    assert all(a.end == b.start for a, b in zip(splits, splits[1:])) and splits[-1].end is None
    ids: list[str] = []
    total = Stats()
    for split in splits:
        pages, stats = read_split(split)
        assert stats.counts["records.html"] > 0
        ids += [p.record_id for p in pages]
        total.merge(stats)
    assert ids == whole_ids  # every page exactly once, in order
    assert total.counts == whole.counts
    assert not total.file_errors


def test_sample_splits_cover_every_record_once():
    splits = splits_of(str(SAMPLE_WARC), InputSettings(splits_per_shard=5, min_split_bytes=1), 2)
    assert len(splits) == 5
    pages, whole = read_split(Split(str(SAMPLE_WARC), 0, 1))
    check_splits_cover_shard(SAMPLE_WARC, splits, whole, [p.record_id for p in pages])


@pytest.fixture(scope="module")
def bench_dev_whole():
    path = bench_file("warc", "bench-dev.warc.gz")
    pages, stats = read_split(Split(str(path), 0, 1))
    return path, [p.record_id for p in pages], stats


def test_bench_dev_splits_cover_every_record_exactly_once(bench_dev_whole):
    path, whole_ids, whole = bench_dev_whole
    splits = splits_of(str(path), InputSettings(splits_per_shard=4, min_split_bytes=1 << 20), 2)
    assert len(splits) == 4
    check_splits_cover_shard(path, splits, whole, whole_ids)


def test_bench_dev_pages_match_its_index(bench_dev_whole):
    _, whole_ids, stats = bench_dev_whole
    with open(bench_file("warc", "bench-dev.index.tsv"), newline="") as fh:
        index = [row["response_record_id"] for row in csv.DictReader(fh, delimiter="\t")]
    assert whole_ids == index
    assert stats.counts["records.read"] == skipped(stats) + stats.counts["records.html"]
    assert not stats.file_errors


# --- every real WARC in tests/data ---------------------------------------------------------

@pytest.mark.parametrize("name", [p.relative_to(DATA).as_posix() for p in REAL_WARCS])
def test_reads_every_real_warc_like_warcio_does(name):
    path = DATA / name
    pages, stats = read_split(Split(str(path), 0, 1))
    types = warcio_counts(path)
    assert not stats.file_errors
    assert stats.counts["records.read"] == sum(types.values())
    assert stats.counts["records.read"] == skipped(stats) + stats.counts["records.html"] + stats.counts["records.wet"]
    for kind, count in types.items():
        if kind not in ("response", "conversion"):
            assert stats.counts[f"skip.not_response.{kind}"] == count
    assert len(pages) == stats.counts["records.html"] + stats.counts["records.wet"]
    assert stats.counts["records.html"] <= types["response"] and stats.counts["records.wet"] == types["conversion"]
    assert all(p.record_id and p.url and p.html for p in pages)


def test_clueweb09_quirk_file_yields_its_29_html_responses(clueweb_quirk_warc):
    pages, stats = read_split(Split(str(clueweb_quirk_warc), 0, 1))
    assert len(pages) == 29
    assert stats.counts["skip.not_response.warcinfo"] == 1
    assert all(p.url.startswith("http") and not p.url.startswith("<") for p in pages)
    assert len({p.record_id for p in pages}) == 29


# --- a WARC inside a record ---------------------------------------------------------------


def write_nested_warc(path: Path, inner: list[Path], pages_between: int = 6) -> None:
    """Plain HTML pages, and responses whose body is a whole gzipped WARC file (one per ``inner``)."""
    with open(path, "wb") as fh:
        writer = WARCWriter(fh, gzip=True)
        for n, inner_path in enumerate([None, *inner]):
            for k in range(pages_between):
                body = (f"<html><body><p>Outer page {n}-{k}. " + "Words of the outer file. " * 40
                        + "</p></body></html>").encode()
                block = f"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: {len(body)}\r\n\r\n".encode()
                writer.write_record(writer.create_warc_record(f"https://outer.example/{n}/{k}", "response",
                                                              payload=io.BytesIO(block + body),
                                                              length=len(block) + len(body)))
            if inner_path is not None:
                body = inner_path.read_bytes()
                block = (f"HTTP/1.1 200 OK\r\nContent-Type: application/warc\r\nContent-Length: {len(body)}\r\n\r\n"
                         .encode() + body)
                writer.write_record(writer.create_warc_record(f"https://outer.example/{inner_path.name}", "response",
                                                              payload=io.BytesIO(block), length=len(block)))


def test_splits_never_start_inside_a_warc_stored_in_a_record(tmp_path):
    """A gzipped WARC as a record's payload shows its gzip members verbatim in the outer file
    (deflate stores incompressible data): no split may start there and read phantom records."""
    small = real_warc("cc-genuine", "CC-MAIN-2024-22.whirlwind.warc.gz")  # within one 64 KiB stored block
    large = real_warc("cc-genuine", "CC-MAIN-2020-34.sample-from-resiliparse-tests.warc.gz")
    path = tmp_path / "nested.warc.gz"
    write_nested_warc(path, [small, large, small])
    outer = path.read_bytes()
    inner_bytes = large.read_bytes()
    verbatim = [i for i in range(len(inner_bytes) - 64) if inner_bytes[i:i + 3] == b"\x1f\x8b\x08"
                and inner_bytes[i:i + 64] in outer]
    assert verbatim  # inner gzip members really appear verbatim in the outer file
    pages, whole = read_split(Split(str(path), 0, 1))
    inner_ids = {p.record_id for inner in (small, large) for p in read_split(Split(str(inner), 0, 1))[0]}
    assert not inner_ids & {p.record_id for p in pages}
    for wanted in (2, 3, 5, 8, 13, 32):
        splits = splits_of(str(path), InputSettings(splits_per_shard=wanted, min_split_bytes=1), 2)
        ids, total = [], Stats()
        for split in splits:
            split_pages, stats = read_split(split)
            ids += [p.record_id for p in split_pages]
            total.merge(stats)
        assert ids == [p.record_id for p in pages], wanted  # no phantom, none lost, in order
        assert total.counts == whole.counts, wanted
        assert not total.file_errors
