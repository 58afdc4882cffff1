"""Input resolution: files, directories, globs, warc.paths(.gz) manifests, URLs, and errors."""

from __future__ import annotations

import gzip
import os

import pytest

from pipeline.config import S3Settings
from pipeline.reading.sources import InputError, is_manifest, open_stream, resolve_inputs, split_s3_uri

S3 = S3Settings()


@pytest.fixture
def shards(tmp_path):
    """A directory tree with WARC files and a non-WARC file."""
    (tmp_path / "crawl" / "sub").mkdir(parents=True)
    paths = {}
    for rel in ("crawl/a.warc.gz", "crawl/b.warc", "crawl/sub/c.warc.gz"):
        path = tmp_path / rel
        path.write_bytes(b"WARC/1.1\r\n")
        paths[rel] = str(path)
    (tmp_path / "crawl" / "notes.md").write_text("not a warc")
    return tmp_path, paths


def test_a_file_resolves_to_its_absolute_path(shards, monkeypatch):
    root, paths = shards
    monkeypatch.chdir(root)
    assert resolve_inputs(["crawl/a.warc.gz"], S3) == [paths["crawl/a.warc.gz"]]


def test_a_directory_yields_its_warc_files_recursively_sorted(shards):
    root, paths = shards
    assert resolve_inputs([str(root / "crawl")], S3) == [
        paths["crawl/a.warc.gz"], paths["crawl/b.warc"], paths["crawl/sub/c.warc.gz"]]


def test_a_glob_expands_and_duplicates_are_dropped(shards):
    root, paths = shards
    found = resolve_inputs([str(root / "crawl" / "*.gz"), paths["crawl/a.warc.gz"], str(root / "crawl/**/*.warc.gz")],
                           S3)
    assert found == [paths["crawl/a.warc.gz"], paths["crawl/sub/c.warc.gz"]]


def test_remote_specs_pass_through_unchanged():
    specs = ["s3://commoncrawl/crawl-data/x.warc.gz", "https://data.commoncrawl.org/crawl-data/y.warc.gz"]
    assert resolve_inputs(specs, S3) == specs


def _manifest_lines() -> list[str]:
    return ["# a comment", "crawl-data/CC-MAIN-2024-22/segments/1/warc/one.warc.gz", "",
            "  crawl-data/CC-MAIN-2024-22/segments/2/warc/two.warc.gz  ", "s3://other-bucket/three.warc.gz"]


@pytest.mark.parametrize("name", ["warc.paths", "warc.paths.gz"])
def test_manifest_paths_resolve_against_the_base_url(tmp_path, name):
    text = "\n".join(_manifest_lines()) + "\n"
    manifest = tmp_path / name
    manifest.write_bytes(gzip.compress(text.encode()) if name.endswith(".gz") else text.encode())
    assert resolve_inputs([str(manifest)], S3, base_url="https://data.commoncrawl.org/") == [
        "https://data.commoncrawl.org/crawl-data/CC-MAIN-2024-22/segments/1/warc/one.warc.gz",
        "https://data.commoncrawl.org/crawl-data/CC-MAIN-2024-22/segments/2/warc/two.warc.gz",
        "s3://other-bucket/three.warc.gz",
    ]
    assert resolve_inputs([str(manifest)], S3, base_url="s3://commoncrawl")[0] == \
        "s3://commoncrawl/crawl-data/CC-MAIN-2024-22/segments/1/warc/one.warc.gz"


def test_manifest_without_base_url_resolves_next_to_itself(shards):
    root, paths = shards
    manifest = root / "warc.paths"
    manifest.write_text(f"crawl/a.warc.gz\n{paths['crawl/b.warc']}\n")
    assert resolve_inputs([str(manifest)], S3) == [paths["crawl/a.warc.gz"], paths["crawl/b.warc"]]


def test_manifest_names_are_recognised():
    assert is_manifest("s3://commoncrawl/crawl-data/CC-MAIN-2024-22/warc.paths.gz")
    assert is_manifest("lists/warc.paths")
    assert not is_manifest("CC-MAIN-20240522.warc.gz")


@pytest.mark.parametrize("spec, message", [
    ("nowhere/missing.warc.gz", "no such file"),
    ("nowhere/*.warc.gz", "glob matches no files"),
    ("nowhere/warc.paths.gz", "manifest not found"),
])
def test_missing_inputs_raise_one_line_errors(tmp_path, spec, message):
    with pytest.raises(InputError, match=message) as err:
        resolve_inputs([str(tmp_path / spec)], S3)
    assert "\n" not in str(err.value) and str(tmp_path) in str(err.value)


def test_a_directory_without_warcs_is_an_error(tmp_path):
    (tmp_path / "readme.txt").write_text("x")
    with pytest.raises(InputError, match="holds no"):
        resolve_inputs([str(tmp_path)], S3)


def test_a_corrupt_gzip_manifest_is_an_input_error(tmp_path):
    manifest = tmp_path / "warc.paths.gz"
    manifest.write_bytes(b"this is not gzip")
    with pytest.raises(InputError, match="cannot read manifest"):
        resolve_inputs([str(manifest)], S3)


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads files regardless of permissions")
def test_an_unreadable_file_is_an_error(tmp_path):
    path = tmp_path / "locked.warc.gz"
    path.write_bytes(b"x")
    path.chmod(0)
    with pytest.raises(InputError, match="not readable"):
        resolve_inputs([str(path)], S3)


def test_bad_s3_uri_is_rejected():
    assert split_s3_uri("s3://bucket/a/b.warc.gz") == ("bucket", "a/b.warc.gz")
    with pytest.raises(InputError, match="expected s3://bucket/key"):
        split_s3_uri("s3://bucket-only")


def test_local_streams_open_as_binary_files(shards):
    _, paths = shards
    with open_stream(paths["crawl/b.warc"], S3) as stream:
        assert stream.read() == b"WARC/1.1\r\n"
