"""warcio at work: ARC input, and warcio as the WARC reader's reader of last resort, on files built from real pages.

The ARC files are written byte by byte (tests/make_arc.py) from the responses of the real Common Crawl and
wget WARCs of ../shared/bench/warc; a WARC of the same HTTP blocks is the reference.
"""

from __future__ import annotations

import gzip
import json
import shutil

import pyarrow.dataset as ds
import pytest

from conftest import real_warc
from test_s3 import s3_server  # noqa: F401 (the moto S3 server fixture)
from make_arc import arc_bytes, responses, warc_bytes
from pipeline.cli import main as cli_main
from pipeline.config import load_settings
from pipeline.reading.reader import ShardReadError, plan_splits, read_pages, reader_for
from pipeline.reading.shards import Shard, Split
from pipeline.reading.warc import _is_member_start
from pipeline.reading.arc import ARC_START
from pipeline.spark.runner import run_split
from pipeline.stats import Stats
from pipeline.writing.output import DATASET_DIR

SOURCES = (("cc-genuine", "CC-MAIN-2020-34.sample-from-resiliparse-tests.warc.gz"),
           ("other-real", "dolma-tests_data_warc_sample-0000.warc.gz"))
SOURCE_COLUMNS = {"warc_record_id", "warc_filename"}


@pytest.fixture(scope="module")
def pages_dir(tmp_path_factory):
    """pages.arc.gz (one gzip member per record), pages.arc and pages.warc.gz of the same real responses."""
    items = [item for parts in SOURCES for item in responses(real_warc(*parts))]
    out = tmp_path_factory.mktemp("arc")
    (out / "pages.arc.gz").write_bytes(arc_bytes(items, "pages.arc.gz", gzipped=True))
    (out / "pages.arc").write_bytes(arc_bytes(items, "pages.arc", gzipped=False))
    (out / "pages.warc.gz").write_bytes(warc_bytes(items))
    return out, items


def rows_by_url(out) -> dict[str, dict]:
    rows = ds.dataset(out / DATASET_DIR, format="parquet").to_table().to_pylist()
    return {row["url"]: row for row in rows}


def read_all(path, settings=None) -> tuple[list, Stats]:
    settings = settings or load_settings(None, [])
    stats = Stats()
    split = Split(str(path), 0, 1, reader=reader_for(str(path)).name)
    return list(read_pages(split, settings.input, settings.s3, stats)), stats


@pytest.mark.parametrize("name", ["pages.arc.gz", "pages.arc"])
def test_an_arc_and_a_warc_of_the_same_pages_give_the_same_rows(pages_dir, tmp_path, name):
    out_dir, items = pages_dir
    settings = load_settings(None, ["index.enabled=false"])
    arc = run_split(Split(str(out_dir / name), 0, 1, reader="arc"), settings, str(tmp_path / "arc"))
    warc = run_split(Split(str(out_dir / "pages.warc.gz"), 0, 1, reader="warc"), settings, str(tmp_path / "warc"))
    assert arc["records"]["arc"] == warc["records"]["html"] == len(items) and "html" not in arc["records"]
    assert arc["records"]["read"] == len(items) + 1 and arc["skip"]["not_response"] == {"warcinfo": 1}
    assert arc["outcome"] == warc["outcome"] and arc["outcome"]["kept"] > 20
    assert arc["payload"] == warc["payload"]
    arc_rows, warc_rows = rows_by_url(tmp_path / "arc"), rows_by_url(tmp_path / "warc")
    assert set(arc_rows) == set(warc_rows)
    for url, row in arc_rows.items():
        assert {k: v for k, v in row.items() if k not in SOURCE_COLUMNS} == \
               {k: v for k, v in warc_rows[url].items() if k not in SOURCE_COLUMNS}, url
        assert row["warc_filename"] == name and row["warc_record_id"].startswith("<urn:uuid:")


def test_arc_record_ids_are_the_same_on_every_read_and_distinct(pages_dir):
    out_dir, items = pages_dir
    first, _ = read_all(out_dir / "pages.arc.gz")
    again, _ = read_all(out_dir / "pages.arc.gz")
    assert [p.record_id for p in first] == [p.record_id for p in again]
    assert len({p.record_id for p in first}) == len(first) == len(items)
    assert [p.kind for p in first] == ["arc"] * len(items)


def test_a_gzipped_arc_is_cut_into_splits_that_read_every_record_once(pages_dir):
    out_dir, items = pages_dir
    path = str(out_dir / "pages.arc.gz")
    settings = load_settings(None, ["input.splits_per_shard=4", "input.min_split_bytes=1"])
    splits = plan_splits([Shard(path, "pages.arc.gz")], settings.input, settings.s3, 4)
    assert len(splits) == 4 and {s.reader for s in splits} == {"arc"}
    ids, read = [], 0
    for split in splits:
        with open(path, "rb") as fh:
            fh.seek(split.start)
            assert _is_member_start(fh.read(4096), ARC_START), split
        stats = Stats()
        ids += [p.record_id for p in read_pages(split, settings.input, settings.s3, stats)]
        read += stats.counts["records.read"]
    whole, _ = read_all(path)
    assert ids == [p.record_id for p in whole] and read == len(items) + 1
    # an uncompressed ARC is one split
    assert len(plan_splits([Shard(str(out_dir / "pages.arc"), "pages.arc")], settings.input, settings.s3, 4)) == 1


def test_damage_in_an_arc_is_counted_and_reading_goes_on(pages_dir, tmp_path):
    out_dir, items = pages_dir
    members = []
    data = (out_dir / "pages.arc.gz").read_bytes()
    while data:  # the file's gzip members
        import zlib
        inflater = zlib.decompressobj(31)
        inflater.decompress(data)
        size = len(data) - len(inflater.unused_data)
        members.append(data[:size])
        data = data[size:]
    broken = members[:5] + [gzip.compress(b"http://broken.example/ 1.2.3.4 2008 text/html notanumber\nxx\n")] + \
        members[5:]
    path = tmp_path / "damaged.arc.gz"
    path.write_bytes(b"".join(broken))
    pages, stats = read_all(path)
    assert len(pages) == len(items) and stats.counts["read_errors.parse"] == 1
    assert stats.counts["read_errors.resynced"] == 1 and str(path) in stats.file_errors
    not_arc = tmp_path / "empty.arc"
    not_arc.write_bytes(b"")
    with pytest.raises(ShardReadError, match="no ARC record found"):  # no record at all: not read (exit 3)
        read_all(not_arc)


def _records_of(path) -> list[bytes]:
    """The uncompressed records of a WARC of one gzip member per record."""
    import zlib
    data, out = path.read_bytes(), []
    while data:
        inflater = zlib.decompressobj(31)
        out.append(inflater.decompress(data))
        data = inflater.unused_data
    return out


@pytest.mark.parametrize("gzipped", [True, False])
def test_warcio_reads_what_fastwarc_rejects_and_counts_what_neither_reads(pages_dir, tmp_path, gzipped):
    """Real records with a lower-case version line, a version line of WARC/2.0 and a Latin-1 byte in the target
    URI, among intact ones: the first and the last are recovered by warcio, the other is counted with its reason,
    none is lost silently; the intact records around them are all read."""
    out_dir, items = pages_dir
    records = _records_of(out_dir / "pages.warc.gz")[:8]
    lower = records[2].replace(b"WARC/1.0\r\n", b"warc/1.0\r\n", 1)
    future = records[4].replace(b"WARC/1.0\r\n", b"WARC/2.0\r\n", 1)
    url = items[6].url.encode()
    latin1 = records[6].replace(b"WARC-Target-URI: " + url, b"WARC-Target-URI: " + url + b"/stra\xdfe", 1)
    damaged = [*records[:2], lower, records[3], future, records[5], latin1, records[7]]
    path = tmp_path / ("damaged.warc.gz" if gzipped else "damaged.warc")
    path.write_bytes(b"".join(gzip.compress(r, mtime=0) if gzipped else r for r in damaged))
    pages, stats = read_all(path)
    urls = [p.url for p in pages]
    counts = stats.counts
    assert counts["read_errors.recovered.version_line"] == 1 and counts["read_errors.recovered.header_bytes"] == 1
    assert counts["read_errors.rejected.version_line"] == 1 and "WARC/2.0" in stats.file_errors[str(path)]
    assert counts["records.read"] == len(damaged) - 1  # every record but the rejected one was read ...
    assert items[2].url in urls and items[4].url not in urls  # ... the lower-case one by warcio
    assert items[6].url + "/straße" in urls  # the Latin-1 byte read as Latin-1, not U+FFFD
    intact = {items[i].url for i in (0, 1, 3, 5, 7)}
    assert intact <= set(urls) and len(urls) == len(set(urls))


@pytest.mark.parametrize("gzipped", [True, False])
def test_a_first_record_fastwarc_rejects_is_read_by_warcio_or_counted(pages_dir, tmp_path, gzipped):
    """The record where reading begins, with a version line FastWARC rejects: warcio reads a lower-case one,
    a WARC/2.0 one is counted with its file named; in an uncompressed file both were lost without a count."""
    out_dir, items = pages_dir
    records = _records_of(out_dir / "pages.warc.gz")[:3]
    for version, recovered in ((b"warc/1.0", True), (b"WARC/2.0", False)):
        first = records[0].replace(b"WARC/1.0\r\n", version + b"\r\n", 1)
        path = tmp_path / f"first-{version[-3:].decode()}.warc{'.gz' if gzipped else ''}"
        path.write_bytes(b"".join(gzip.compress(r, mtime=0) if gzipped else r for r in [first, *records[1:]]))
        pages, stats = read_all(path)
        assert [p.url for p in pages] == [item.url for item in items[:3]][0 if recovered else 1:], version
        key = "recovered" if recovered else "rejected"
        assert stats.counts[f"read_errors.{key}.version_line"] == 1, version
        assert (str(path) in stats.file_errors) is not recovered


@pytest.mark.parametrize("gzipped", [True, False])
def test_bytes_that_are_not_utf8_in_a_record_id_or_date_are_read_as_latin1(pages_dir, tmp_path, gzipped):
    """Real records with a Latin-1 byte in the WARC-Record-ID and in the WARC-Date: FastWARC reads U+FFFD there,
    warcio reads the bytes as Latin-1; both records come out, each counted as recovered, none holds U+FFFD."""
    out_dir, items = pages_dir
    records = _records_of(out_dir / "pages.warc.gz")[:4]
    record_id = records[1].split(b"WARC-Record-ID: ", 1)[1].split(b"\r\n", 1)[0]
    date = records[2].split(b"WARC-Date: ", 1)[1].split(b"\r\n", 1)[0]
    damaged = [records[0], records[1].replace(record_id, record_id[:-1] + b"\xe9>", 1),
               records[2].replace(b"WARC-Date: " + date, b"WARC-Date: " + date[:-1] + b"\xb7Z", 1), records[3]]
    path = tmp_path / ("ids.warc.gz" if gzipped else "ids.warc")
    path.write_bytes(b"".join(gzip.compress(r, mtime=0) if gzipped else r for r in damaged))
    pages, stats = read_all(path)
    assert [p.url for p in pages] == [item.url for item in items[:4]]
    assert stats.counts["read_errors.recovered.header_bytes"] == 2 and "read_errors.header_bytes" not in stats.counts
    assert pages[1].record_id == record_id[:-1].decode() + "\xe9>" and pages[2].warc_date == date[:-1].decode() + "\xb7Z"
    assert not any("\ufffd" in p.record_id + p.url + p.warc_date for p in pages)


@pytest.mark.s3
def test_a_remote_record_with_bytes_that_are_not_utf8_in_its_header_is_kept_and_counted(pages_dir, s3_server):
    """From S3, FastWARC alone reads (no warcio re-read by offset): the record whose record id holds a Latin-1
    byte comes out as FastWARC read it and is counted (``read_errors.header_bytes``), the others untouched."""
    from test_s3 import BUCKET_IN

    out_dir, items = pages_dir
    records = _records_of(out_dir / "pages.warc.gz")[:3]
    record_id = records[1].split(b"WARC-Record-ID: ", 1)[1].split(b"\r\n", 1)[0]
    damaged = [records[0], records[1].replace(record_id, record_id[:-1] + b"\xe9>", 1), records[2]]
    endpoint, client, _ = s3_server
    client.put_object(Bucket=BUCKET_IN, Key="damaged/ids.warc.gz", Body=b"".join(gzip.compress(r, mtime=0) for r in damaged))
    settings = load_settings(None, [f"s3.endpoint_url={endpoint}"])
    pages, stats = read_all(f"s3://{BUCKET_IN}/damaged/ids.warc.gz", settings)
    assert [p.url for p in pages] == [item.url for item in items[:3]]
    assert stats.counts["read_errors.header_bytes"] == 1 and "read_errors.recovered.header_bytes" not in stats.counts
    assert "\ufffd" in pages[1].record_id and "\ufffd" not in pages[0].record_id + pages[2].record_id


def test_strictness_changes_nothing_on_real_warcs():
    """The real WARCs read strictly (with warcio behind) give the records the lenient read gave: every one of them."""
    from fastwarc.warc import ArchiveIterator

    for parts in (*SOURCES, ("other-real", "clueweb09-ja.quirk.from-resiliparse-tests.warc.gz"),
                  ("other-real", "dolma-tests_data_warc_sample-0001.warc.gz")):
        path = real_warc(*parts)
        with open(path, "rb") as fh:
            lenient = [r.record_id for r in ArchiveIterator(fh, parse_http=False, quirks_mode=True)]
        pages, stats = read_all(path)
        assert stats.counts["records.read"] == len(lenient) and "read_errors" not in stats.to_dict(), parts


@pytest.mark.spark
def test_arc_files_through_spark_from_a_manifest(pages_dir, tmp_path):
    """A manifest listing a gzipped ARC, the same records as a plain ARC, and the WARC: every page counted by its
    kind; the plain ARC's records have the gzipped one's ids, so they are counted as duplicates, not read twice;
    the ARC pages' texts are the WARC pages'."""
    if shutil.which("java") is None:
        pytest.skip("Java is needed for Spark")
    out_dir, items = pages_dir
    manifest = out_dir / "arc.paths"
    manifest.write_text("pages.arc.gz\npages.arc\npages.warc.gz\n")
    out = tmp_path / "out"
    status = cli_main(["run", "--input", str(manifest), "--output", str(out), "--set", "spark.master=local[2]",
                       "--set", "input.splits_per_shard=2", "--set", "input.min_split_bytes=1",
                       "--set", "corpus.enabled=false"])
    assert status == 0
    stats = json.loads((out / "stats.json").read_text())
    assert stats["records"]["arc"] == stats["records"]["html"] == len(items)
    assert stats["skip"]["duplicate_record_id"] == len(items)
    assert stats["run"]["splits"] == 5  # the gzipped ARC and the WARC in two, the plain ARC whole
    rows = ds.dataset(out / DATASET_DIR, format="parquet").to_table().to_pylist()
    texts: dict[str, list[str]] = {}
    for row in rows:
        texts.setdefault(row["url"], []).append(row["text"])
    assert all(len(t) == 2 and t[0] == t[1] for t in texts.values())
    assert {row["warc_filename"] for row in rows} == {"pages.arc.gz", "pages.warc.gz"}  # the first listed keeps an id
    assert "ARC pages: " in (out / "summary.txt").read_text()
