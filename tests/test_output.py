"""Parquet output: deterministic names, tmp-then-rename, markers, and resume skipping."""

from __future__ import annotations

import json
import os

import pyarrow as pa
import pyarrow.dataset as ds
import pytest

from conftest import SAMPLE_WARC
from pipeline.config import S3Settings, load_settings
from pipeline.writing.output import OutputTarget, SplitWriter, json_chunks
from pipeline.spark.runner import run_split
from pipeline.reading.shards import Split

SCHEMA = pa.schema([("id", pa.string()), ("n", pa.int32())])


def files_under(root) -> list[str]:
    return sorted(os.path.relpath(os.path.join(d, f), root) for d, _, fs in os.walk(root) for f in fs)


def test_split_writer_commits_per_language_files_atomically(tmp_path):
    target = OutputTarget(str(tmp_path), S3Settings())
    writer = SplitWriter(target, "shard-abc-000of002", SCHEMA, "zstd")
    for n, lang in enumerate(["en", "de", "en", "ja"]):
        writer.add(lang, {"id": f"r{n}", "n": n})
    # nothing in the dataset until commit
    assert not any("language=" in f and not f.startswith("_tmp/") for f in files_under(tmp_path))
    written = writer.commit()
    assert [w.rsplit("/", 2)[-2:] for w in written] == [
        [f"language={lang}", "part-shard-abc-000of002.parquet"] for lang in ("de", "en", "ja")]
    assert files_under(tmp_path) == written  # _tmp/ cleaned up
    dataset_dir = tmp_path / os.path.dirname(os.path.dirname(written[0]))
    table = ds.dataset(str(dataset_dir), format="parquet").to_table()
    assert sorted(zip(table["id"].to_pylist(), table["language"].to_pylist())) == [
        ("r0", "en"), ("r1", "de"), ("r2", "en"), ("r3", "ja")]


def test_split_writer_puts_each_files_text_bytes_in_its_footer(tmp_path):
    """A file with a ``text`` column says that column's UTF-8 bytes in its footer (the corpus stages count a
    build's input from the footers instead of reading the text); a file without one says nothing."""
    import pyarrow.parquet as pq

    from pipeline.writing.output import TEXT_BYTES_KEY

    target = OutputTarget(str(tmp_path), S3Settings())
    texts = {"en": ["The cat sat.", None, "x" * 5000], "de": ["Grüße aus Köln", "ß"], "ja": ["日本語の文"]}
    writer = SplitWriter(target, "s-000of001", pa.schema([("id", pa.string()), ("text", pa.string())]), "zstd")
    for language, values in texts.items():
        for n, text in enumerate(values * 1500):  # several row groups (ROW_GROUP_ROWS)
            writer.add(language, {"id": f"{language}{n}", "text": text})
    for relative in writer.commit():
        language = relative.split("language=")[1].split("/")[0]
        expected = 1500 * sum(len(text.encode("utf-8")) for text in texts[language] if text is not None)
        assert pq.ParquetFile(tmp_path / relative).metadata.metadata[TEXT_BYTES_KEY] == str(expected).encode()
    plain = SplitWriter(OutputTarget(str(tmp_path / "other"), S3Settings()), "s-000of001", SCHEMA, "none")
    plain.add("en", {"id": "r", "n": 1})
    (written,) = plain.commit()
    assert TEXT_BYTES_KEY not in pq.ParquetFile(tmp_path / "other" / written).metadata.metadata


def test_rewriting_a_split_replaces_its_files(tmp_path):
    target = OutputTarget(str(tmp_path), S3Settings())
    first = SplitWriter(target, "s-000of001", SCHEMA, "snappy")
    first.add("en", {"id": "old", "n": 1})
    [written] = first.commit()
    # a killed run leaves a half-written tmp file behind; the rerun clears it
    (tmp_path / "_tmp" / "s-000of001").mkdir(parents=True)
    (tmp_path / "_tmp" / "s-000of001" / "junk").write_bytes(b"partial")
    second = SplitWriter(target, "s-000of001", SCHEMA, "none")
    second.add("en", {"id": "new", "n": 2})
    assert second.commit() == [written]
    table = ds.dataset(str(tmp_path / written), format="parquet").to_table()
    assert table["id"].to_pylist() == ["new"]
    assert not (tmp_path / "_tmp" / "s-000of001").exists()


def test_markers_and_small_files(tmp_path):
    target = OutputTarget(str(tmp_path), S3Settings())
    assert target.read_marker("x") is None and target.markers() == {}
    target.write_marker("x", {"records": {"read": 3}})
    target.write_marker("y", {"records": {"read": 5}})
    assert target.read_marker("x") == {"records": {"read": 3}}
    assert target.markers() == {"x": {"records": {"read": 3}}, "y": {"records": {"read": 5}}}
    target.write_bytes("sub/summary.txt", b"hello")
    assert target.read_bytes("sub/summary.txt") == b"hello" and target.exists("sub/summary.txt")
    assert not any(f.endswith(".tmp") for f in files_under(tmp_path))


class CountingListings:
    """An OutputTarget's filesystem that records how many entries each listing returned."""

    def __init__(self, fs) -> None:
        self.fs, self.sizes = fs, []

    def get_file_info(self, selector):
        found = self.fs.get_file_info(selector)
        if isinstance(found, list):
            self.sizes.append(len(found))
        return found

    def __getattr__(self, name):
        return getattr(self.fs, name)


def test_success_manifest_names_every_file_listing_one_folder_at_a_time(tmp_path):
    """_SUCCESS lists every committed file with its size, but the driver never holds more than one folder's listing:
    at a snapshot's size the output has a file per split and language (millions), a folder one per split."""
    target = OutputTarget(str(tmp_path), S3Settings())
    for split in range(6):
        writer = SplitWriter(target, f"s-{split:03d}of006", SCHEMA, "none")
        for n, lang in enumerate(["de", "en", "fr", "ja"]):
            writer.add(lang, {"id": f"r{split}.{n}", "n": n})
        writer.commit()
        target.write_marker(f"s-{split:03d}of006", {"records": {"read": 4}})
    target.write_bytes("stats.json", b"{}")
    (tmp_path / "_tmp" / "left").mkdir(parents=True)
    (tmp_path / "_tmp" / "left" / "half.parquet").write_bytes(b"partial")
    target.fs = listings = CountingListings(target.fs)
    summary = target.publish_success()
    manifest = json.loads((tmp_path / "_SUCCESS").read_text())
    on_disk = [f for f in files_under(tmp_path) if not f.startswith("_tmp/") and f != "_SUCCESS"]
    assert len(on_disk) == 6 * 4 + 6 + 1
    assert sorted(entry["path"] for entry in manifest["files"]) == on_disk
    assert all(entry["size"] == (tmp_path / entry["path"]).stat().st_size for entry in manifest["files"])
    assert manifest["file_count"] == summary["file_count"] == len(on_disk)
    assert manifest["total_bytes"] == summary["total_bytes"] == sum((tmp_path / f).stat().st_size for f in on_disk)
    assert max(listings.sizes) <= 6  # a language's folder (6 splits) or _markers/, never the 31 files at once
    assert target.list_files("data/language=en") == [
        (f"data/language=en/part-s-{split:03d}of006.parquet", (tmp_path / "data" / "language=en" /
                                                                 f"part-s-{split:03d}of006.parquet").stat().st_size)
        for split in range(6)]


def test_json_in_pieces_is_json_dumps_exactly(tmp_path):
    """A list of millions (the corpus stages' files) is hashed and written in pieces; the bytes stay json.dumps's, so
    a build's fingerprint does not change."""
    files = [(f"data/language={lang}/part-s{n}.parquet", n * 7) for lang in ("de", "é", "zh") for n in range(7)]
    for value in ({"files": files, "basis": "ab12", "index_sample": None}, {"generation": 3, "files": files},
                  {"b": {"z": [1, {"y": 2, "x": [None, 1.5]}], "a": []}, "a": "\u2028 \"q\""}, [], {}, files[:1]):
        for batch in (1, 2, 5, 10_000):
            assert "".join(json_chunks(value, batch)) == json.dumps(value, sort_keys=True)
    target = OutputTarget(str(tmp_path), S3Settings())
    target.write_json("_corpus/inputs.json", {"generation": 3, "files": files})
    assert json.loads((tmp_path / "_corpus" / "inputs.json").read_text()) == {
        "generation": 3, "files": [list(f) for f in files]}


@pytest.fixture
def fast_settings():
    return load_settings(None, ["perplexity.enabled=false"])


def test_run_split_resumes_from_its_marker(tmp_path, fast_settings):
    split = Split(str(SAMPLE_WARC), 0, 1)
    out = str(tmp_path / "out")
    first = run_split(split, fast_settings, out)
    marker = tmp_path / "out" / "_markers" / f"{split.split_id}.json"
    parquet = sorted((tmp_path / "out").glob("**/language=*/*.parquet"))
    assert marker.exists() and parquet
    stamps = [p.stat().st_mtime_ns for p in parquet]
    again = run_split(split, fast_settings, out)
    assert again["splits"]["resumed"] == 1
    assert again["records"] == first["records"] and again["outcome"] == first["outcome"]
    assert [p.stat().st_mtime_ns for p in parquet] == stamps  # nothing rewritten

    no_resume = fast_settings.model_copy(update={"output": fast_settings.output.model_copy(update={"resume": False})})
    redone = run_split(split, no_resume, out)
    assert "resumed" not in redone.get("splits", {})
    assert redone["records"] == first["records"]
    assert sorted((tmp_path / "out").glob("**/language=*/*.parquet")) == parquet


def test_warc_date_is_a_utc_timestamp_from_every_form_a_crawl_writes():
    import datetime as dt

    from pipeline.writing.rows import warc_timestamp

    utc = dt.timezone.utc
    assert warc_timestamp("2024-05-20T09:00:37Z") == dt.datetime(2024, 5, 20, 9, 0, 37, tzinfo=utc)
    assert warc_timestamp("2024-05-20T09:00:37.250Z") == dt.datetime(2024, 5, 20, 9, 0, 37, 250000, tzinfo=utc)
    assert warc_timestamp("20080430204825") == dt.datetime(2008, 4, 30, 20, 48, 25, tzinfo=utc)  # ARC
    # ClueWeb09 (tests/data/other-real): the 294th day of 2008, at UTC-7
    assert warc_timestamp("2008-10-294T05:21:46-0700") == dt.datetime(2008, 10, 20, 12, 21, 46, tzinfo=utc)
    assert warc_timestamp("2020-08-03") == dt.datetime(2020, 8, 3, tzinfo=utc)  # no time: midnight UTC
    assert warc_timestamp("") is None and warc_timestamp("yesterday") is None
