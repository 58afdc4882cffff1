"""The corpus stages through local Spark on real WARC records: repeated lines, exact and near
duplicates with their keeper, two nights without duplicates, a rerun that is skipped, and the
quality signals on known text."""

from __future__ import annotations

import hashlib
import io
import json
import os
import shutil
import subprocess
import sys
import uuid
from pathlib import Path

import pyarrow as pa
import pyarrow.dataset as ds
import pytest
from warcio.archiveiterator import ArchiveIterator
from warcio.statusandheaders import StatusAndHeaders
from warcio.warcwriter import WARCWriter

from conftest import real_warc
from pipeline.cli import main as cli_main
from pipeline.config import PROJECT_ROOT
from pipeline.corpus.folders import Tally

CC = ("cc-genuine", "CC-MAIN-2020-34.sample-from-resiliparse-tests.warc.gz")
WIKI = ("cc-genuine", "CC-MAIN-2024-22.whirlwind.warc.gz")
SITE = ("other-real", "clueweb09-ja.quirk.from-resiliparse-tests.warc.gz")


def responses(path: Path) -> list[tuple[dict, bytes, bytes]]:
    """(WARC headers, HTTP header block, payload) of every response record."""
    found = []
    with open(path, "rb") as fh:
        for record in ArchiveIterator(fh):
            if record.rec_type != "response":
                continue
            headers = dict(record.rec_headers.headers)
            http = record.http_headers
            found.append((headers, http, record.content_stream().read()))
    return found


def write_response(writer: WARCWriter, uri: str, date: str, http: StatusAndHeaders, payload: bytes) -> str:
    record_id = f"<urn:uuid:{uuid.uuid4()}>"
    headers = StatusAndHeaders(http.statusline, [(k, v) for k, v in http.headers if k.lower() not in
                                                 ("content-length", "transfer-encoding", "content-encoding")],
                               protocol=http.protocol)
    record = writer.create_warc_record(uri, "response", payload=io.BytesIO(payload), http_headers=headers,
                                       warc_headers_dict={"WARC-Record-ID": record_id, "WARC-Date": date})
    writer.write_record(record)
    return record_id


@pytest.fixture(scope="module")
def nights(tmp_path_factory) -> dict:
    """Two shards built from real records: night 1 holds the originals (the 29 ClueWeb09 pages are one
    shop site), night 2 copies of night-1 pages (exact, one dated earlier) and a near copy."""
    folder = tmp_path_factory.mktemp("warcs")
    cc, wiki, site = (responses(real_warc(*parts)) for parts in (CC, WIKI, SITE))
    plan: dict = {"night1": folder / "night1.warc.gz", "night2": folder / "night2.warc.gz", "ids": {}}
    with open(plan["night1"], "wb") as out:
        writer = WARCWriter(out, gzip=True)
        for headers, http, payload in cc + wiki + site:
            rid = write_response(writer, headers["WARC-Target-URI"], headers["WARC-Date"], http, payload)
            plan["ids"][headers["WARC-Target-URI"]] = rid
    later_uri, earlier_uri = cc[2][0]["WARC-Target-URI"], cc[5][0]["WARC-Target-URI"]
    wiki_headers, wiki_http, wiki_payload = wiki[0]
    with open(plan["night2"], "wb") as out:
        writer = WARCWriter(out, gzip=True)
        plan["later_copy"] = write_response(writer, later_uri, "2021-01-01T00:00:00Z", cc[2][1], cc[2][2])
        plan["earlier_copy"] = write_response(writer, earlier_uri, "2019-01-01T00:00:00Z", cc[5][1], cc[5][2])
        # the same article under another URL a year later with one word changed (about 5 of 270 shingles)
        assert b"proceso de cambio" in wiki_payload
        near = wiki_payload.replace(b"proceso de cambio", b"proceso de cambeo", 1)
        plan["near_copy"] = write_response(writer, wiki_headers["WARC-Target-URI"] + "?mirror=1",
                                           "2025-01-01T00:00:00Z", wiki_http, near)
    plan["later_uri"], plan["earlier_uri"], plan["wiki_uri"] = later_uri, earlier_uri, wiki_headers["WARC-Target-URI"]
    return plan


def run_arguments(inputs: list[Path], out: Path, *extra: str) -> list[str]:
    return ["run", "--input", *map(str, inputs), "--output", str(out),
            "--config", str(PROJECT_ROOT / "conf" / "local.yaml"), "--set", "spark.master=local[2]",
            "--set", "index.enabled=false", "--set", "corpus.dedup.near=true",
            "--set", "corpus.repeated_lines.enabled=true", *extra]


def run(inputs: list[Path], out: Path, *extra: str) -> dict:
    assert cli_main(run_arguments(inputs, out, *extra)) == 0
    return json.loads((out / "stats.json").read_text())


def run_apart(inputs: list[Path], out: Path, *extra: str) -> dict:
    """:func:`run` in a process of its own: its Spark properties apply whatever context this one has running."""
    subprocess.run([sys.executable, "-m", "pipeline.cli", *run_arguments(inputs, out, *extra)], check=True,
                   cwd=PROJECT_ROOT, env={**os.environ, "SPARK_LOCAL_IP": "127.0.0.1"}, stdout=subprocess.DEVNULL)
    return json.loads((out / "stats.json").read_text())


def rows(path: Path) -> list[dict]:
    return ds.dataset(path).to_table().to_pylist() if path.exists() else []


def digests(folder: Path) -> dict[str, str]:
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.fixture(scope="module")
def built(nights, tmp_path_factory) -> dict:
    if shutil.which("java") is None:
        pytest.skip("Java is needed for Spark")
    out = tmp_path_factory.mktemp("corpus") / "out"
    first = run([nights["night1"]], out)
    night1 = {"stats": first, "corpus": rows(out / "corpus"), "lines": rows(out / "corpus_dropped" / "lines"),
              "documents": rows(out / "corpus_dropped" / "documents")}
    second = run([nights["night1"], nights["night2"]], out)
    night2 = {"stats": second, "corpus": rows(out / "corpus"), "documents": rows(out / "corpus_dropped" / "documents"),
              "data": rows(out / "data"), "digests": digests(out / "corpus")}
    third = run([nights["night1"], nights["night2"]], out)
    rerun = {"stats": third, "digests": digests(out / "corpus")}
    return {"night1": night1, "night2": night2, "rerun": rerun, "out": out}


@pytest.mark.spark
def test_repeated_lines_removed_with_reason(built):
    night1 = built["night1"]
    removed = night1["lines"]
    assert removed and {r["reason"] for r in removed} == {"repeated_line"}
    # the shop's template lines ("アイテム詳細情報", item details) repeat on its pages
    assert {r["registered_domain"] for r in removed} == {"uraharajuku.st"}
    assert all(r["docs_domain"] > 3 or r["docs_global"] > 20 for r in removed)
    removed_texts = {r["line"] for r in removed}
    assert not any(line in removed_texts for r in night1["corpus"] for line in r["text"].split("\n"))
    stage = night1["stats"]["corpus"]["stages"]["repeated_lines"]
    assert stage["lines_removed"] == len(removed)
    assert sum(r["lines_removed"] for r in night1["corpus"]) == len(removed) - sum(
        1 for r in removed if r["warc_record_id"] in {d["warc_record_id"] for d in night1["documents"]})


@pytest.mark.spark
def test_duplicates_dropped_with_pointer_to_keeper(built, nights):
    night2 = built["night2"]
    dropped = {r["warc_record_id"]: r for r in night2["documents"]}
    ids = nights["ids"]
    # a later copy points to the night-1 original; an earlier copy becomes the keeper
    assert dropped[nights["later_copy"]]["reason"] == "exact_duplicate"
    assert dropped[nights["later_copy"]]["duplicate_of"] == ids[nights["later_uri"]]
    assert dropped[ids[nights["earlier_uri"]]]["reason"] == "exact_duplicate"
    assert dropped[ids[nights["earlier_uri"]]]["duplicate_of"] == nights["earlier_copy"]
    assert dropped[nights["near_copy"]]["reason"] == "near_duplicate"
    assert dropped[nights["near_copy"]]["duplicate_of"] == ids[nights["wiki_uri"]]
    kept = {r["warc_record_id"] for r in night2["corpus"]}
    assert {nights["earlier_copy"], ids[nights["later_uri"]], ids[nights["wiki_uri"]]} <= kept
    stages = night2["stats"]["corpus"]["stages"]
    assert stages["exact_dedup"]["dropped"]["exact_duplicate"] >= 2
    assert stages["near_dedup"]["dropped"]["near_duplicate"] >= 1


@pytest.mark.spark
def test_second_night_adds_no_duplicates_and_accounts_for_every_document(built):
    night2 = built["night2"]
    ids = [r["warc_record_id"] for r in night2["corpus"]]
    assert len(ids) == len(set(ids))
    texts = [r["text"] for r in night2["corpus"]]
    assert len(texts) == len(set(texts))
    assert set(ids) | {r["warc_record_id"] for r in night2["documents"]} == {r["warc_record_id"] for r in night2["data"]}
    assert not set(ids) & {r["warc_record_id"] for r in night2["documents"]}
    corpus = night2["stats"]["corpus"]
    assert corpus["documents_in"] == len(night2["data"])
    assert corpus["documents_out"] == len(ids)


@pytest.mark.spark
def test_a_shard_read_twice_without_record_id_dedup_keeps_one_document_per_record_id(nights, tmp_path):
    if shutil.which("java") is None:
        pytest.skip("Java is needed for Spark")
    copy = tmp_path / "copy-of-night1.warc.gz"
    shutil.copyfile(nights["night1"], copy)
    out = tmp_path / "out"
    stats = run([nights["night1"], copy], out, "--set", "input.dedup_record_ids=false")
    data, corpus = rows(out / "data"), rows(out / "corpus")
    dropped = rows(out / "corpus_dropped" / "documents")
    ids = {r["warc_record_id"] for r in data}
    assert len(data) == 2 * len(ids)  # the job kept both copies of every page
    assert sorted(r["warc_record_id"] for r in corpus) == sorted({r["warc_record_id"] for r in corpus})
    # every record id is in the corpus once, or dropped by a later stage; the second copies are dropped
    # as repeated record ids, pointing to the id they repeat
    repeated = [r for r in dropped if r["reason"] == "duplicate_record_id"]
    assert len(repeated) == len(ids) and all(r["duplicate_of"] == r["warc_record_id"] for r in repeated)
    later = [r for r in dropped if r["reason"] != "duplicate_record_id"]
    assert {r["warc_record_id"] for r in corpus} | {r["warc_record_id"] for r in later} == ids
    summary = stats["corpus"]
    assert summary["order"][0] == "record_ids"
    assert summary["stages"]["record_ids"]["dropped"] == {"duplicate_record_id": len(ids)}
    assert summary["documents_in"] == len(data)
    assert summary["documents_out"] + sum(s["documents_dropped"] for s in summary["stages"].values()) == len(data)


@pytest.mark.spark
def test_rerun_is_skipped_and_byte_identical(built):
    assert built["rerun"]["stats"]["corpus"]["resumed"] is True
    assert built["rerun"]["digests"] == built["night2"]["digests"]
    assert not (built["out"] / "_tmp" / "corpus").exists()
    manifest = json.loads((built["out"] / "_SUCCESS").read_text())
    assert any(f["path"].startswith("corpus/language=") for f in manifest["files"])


@pytest.mark.spark
def test_quality_columns_present(built):
    row = built["night2"]["corpus"][0]
    for column in ("q_words", "q_mean_word_length", "q_symbol_word_ratio", "q_punctuation_lines",
                   "q_duplicate_lines", "q_duplicate_ngrams", "q_stop_word_share", "q_bullet_lines",
                   "q_ellipsis_lines", "perplexity_bucket", "registered_domain", "lines_removed"):
        assert column in row
    buckets = {r["perplexity_bucket"] for r in built["night2"]["corpus"] if r["language"] == "ja"}
    assert buckets <= {"head", "middle", "tail", None}


@pytest.fixture(scope="module")
def spark():
    if shutil.which("java") is None:
        pytest.skip("Java is needed for Spark")
    from pyspark.sql import SparkSession

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)  # the project's Python, also when run alone
    session = (SparkSession.builder.master("local[1]").appName("test-corpus")
               .config("spark.sql.shuffle.partitions", "2").getOrCreate())
    yield session
    session.stop()


@pytest.mark.spark
def test_a_builds_input_is_counted_from_the_footers_and_the_text_where_a_file_says_nothing(spark, tmp_path):
    """count_folder's rows and text bytes of a data/ folder: a file the run wrote says its text bytes in its footer
    (read there, the text is not), a file of an earlier version says nothing (its text column is read); both are
    counted exactly."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from pipeline.config import S3Settings
    from pipeline.corpus.folders import count_folder
    from pipeline.writing.output import OutputTarget, SplitWriter

    target = OutputTarget(str(tmp_path), S3Settings())
    schema = pa.schema([("warc_record_id", pa.string()), ("text", pa.string())])
    writer = SplitWriter(target, "new-000of001", schema, "zstd")
    for n in range(3000):
        writer.add("de" if n % 3 else "en", {"warc_record_id": f"r{n}", "text": "Grüße " * (n % 7) or None})
    written = writer.commit()
    (tmp_path / "data" / "language=en").mkdir(parents=True, exist_ok=True)
    old = pa.table({"warc_record_id": ["a", "b"], "text": ["Köln", "日本"]})
    pq.write_table(old, tmp_path / "data" / "language=en" / "part-old-000of001.parquet")
    files = [(path, (tmp_path / path).stat().st_size) for path in
             [*written, "data/language=en/part-old-000of001.parquet"]]
    expected = sum(len(("Grüße " * (n % 7)).encode()) for n in range(3000)) + len("Köln日本".encode())
    assert count_folder(spark, str(tmp_path), S3Settings(), files, "text") == (3002, expected)


@pytest.mark.spark
def test_reading_only_some_record_ids_reads_the_other_columns_only_of_row_groups_that_hold_them(spark, tmp_path):
    """The index sample of a build that adds to a corpus is a few thousand record ids among the night's pages: the
    tasks read each row group's ids, and its other columns only where they hold a sampled id. Here the text of the
    first row group is unreadable (its bytes zeroed): a read of ids in the second group alone returns their rows
    whole, and a read of every row still meets the damage."""
    import pyarrow as pa
    import pyarrow.parquet as pq
    from pyspark.sql.types import StringType, StructField, StructType

    from pipeline.config import S3Settings
    from pipeline.corpus.folders import read_folder

    path = tmp_path / "data" / "language=en" / "part-s-000of001.parquet"
    path.parent.mkdir(parents=True)
    table = pa.table({"warc_record_id": [f"r{n:04d}" for n in range(4000)],
                      "text": [f"page {n} " * 20 for n in range(4000)]})
    pq.write_table(table, path, row_group_size=2000, compression="zstd")
    text = pq.ParquetFile(path).metadata.row_group(0).column(1)
    with open(path, "r+b") as handle:  # the first row group's text column chunk, zeroed
        handle.seek(text.dictionary_page_offset if text.has_dictionary_page else text.data_page_offset)
        handle.write(bytes(text.total_compressed_size))
    schema = StructType([StructField("warc_record_id", StringType()), StructField("text", StringType())])
    files = [("data/language=en/part-s-000of001.parquet", path.stat().st_size)]
    rows = read_folder(spark, str(tmp_path), S3Settings(), files, schema,
                       only=("warc_record_id", ["r2001", "r3999", "r9999"])).collect()
    assert sorted((row.warc_record_id, row.text) for row in rows) == [
        ("r2001", "page 2001 " * 20), ("r3999", "page 3999 " * 20)]
    with pytest.raises(Exception):
        read_folder(spark, str(tmp_path), S3Settings(), files, schema).collect()


@pytest.mark.spark
def test_small_language_folders_are_read_by_a_few_tasks_and_a_large_ones_shares_each_by_its_own(spark, tmp_path):
    """A build's reading task costs about a tenth of a CPU-second before it reads a byte, so the shares of small
    language folders are read together: as many tasks as the bytes need at 128 MB a task, at least the cluster's
    cores (one here). Every row is read once. A folder's 128 MB shares stay a task each."""
    import pyarrow as pa
    import pyarrow.parquet as pq
    from pyspark.sql.types import StringType, StructField, StructType

    from pipeline.config import S3Settings
    from pipeline.corpus.folders import TASK_BYTES, count_folder, read_folder, spread
    from pipeline.corpus.input_plan import plan_inputs, share_names
    from pipeline.writing.output import OutputTarget

    ids = []
    for language in ("de", "en", "fr", "ja", "ru"):
        for split in range(2):
            path = tmp_path / "data" / f"language={language}" / f"part-s{split}.parquet"
            path.parent.mkdir(parents=True, exist_ok=True)
            rows = [f"{language}-{split}-{n}" for n in range(30)]
            pq.write_table(pa.table({"warc_record_id": rows, "text": [f"text of {r}" for r in rows]}), path)
            ids += rows
    target = OutputTarget(str(tmp_path), S3Settings())
    folders = plan_inputs(spark, target, S3Settings(), "_tmp/plan")
    assert [(f.folder, f.files, f.shares) for f in folders] == [(f"language={x}", 2, 1) for x in
                                                                ("de", "en", "fr", "ja", "ru")]
    shares = share_names("_tmp/plan", folders, adding=False)
    schema = StructType([StructField("warc_record_id", StringType()), StructField("text", StringType())])
    frame = read_folder(spark, str(tmp_path), S3Settings(), shares, schema)
    assert frame.rdd.getNumPartitions() == 1
    assert sorted(row.warc_record_id for row in frame.collect()) == sorted(ids)
    assert count_folder(spark, str(tmp_path), S3Settings(), shares, "text")[0] == len(ids)
    # a large folder's shares (about 128 MB each) are not put together; small ones beside them are
    assert spread([TASK_BYTES] * 3 + [1 << 20] * 4 + [TASK_BYTES], 2) == [[0], [1], [2], [3, 4, 5, 6], [7]]
    assert spread([1 << 20] * 17, 2) == [list(range(8)), list(range(8, 17))]


KNOWN = "The cat sat on the mat.\n- one two\n- one two\nWait…"


def known_docs(spark, *texts: str):
    rows = [(f"<urn:uuid:{i}>", f"http://www.example.co.uk/{i}", "2024-01-01T00:00:00Z", "en", text, 100.0 * (i + 1),
             "www.example.co.uk", "example.co.uk") for i, text in enumerate(texts)]
    return spark.createDataFrame(rows, "warc_record_id string, url string, warc_date string, language string, "
                                 "text string, perplexity_median double, host string, registered_domain string")


@pytest.mark.spark
def test_quality_signals_on_known_text(spark):
    from stop_words import get_stop_words

    from pipeline.config import QualitySettings
    from pipeline.corpus.stages import Quality

    result = Quality(QualitySettings(ngram_words=2)).apply(known_docs(spark, KNOWN))
    row = result.docs.first().asDict()
    assert row["q_words"] == 13 and row["q_lines"] == 4
    assert row["q_mean_word_length"] == pytest.approx(37 / 13)
    assert row["q_symbol_word_ratio"] == pytest.approx(1 / 13)  # the one ellipsis
    assert row["q_punctuation_lines"] == pytest.approx(2 / 4)
    assert row["q_bullet_lines"] == pytest.approx(2 / 4)
    assert row["q_ellipsis_lines"] == pytest.approx(1 / 4)
    assert row["q_duplicate_lines"] == pytest.approx(1 / 4)
    assert row["q_duplicate_ngrams"] == pytest.approx(2 / 12)  # "- one", "one two" twice among 12 bigrams
    stop = set(get_stop_words("en"))
    expected = sum(w in stop for w in "the cat sat on the mat one two one two wait".split())
    assert row["q_stop_words"] == expected and row["q_stop_word_share"] == pytest.approx(expected / 13)
    assert row["perplexity_bucket"] == "head"
    assert result.dropped_docs is None  # filters are off by default: nothing can be dropped


def test_normalisation_of_lines_and_texts():
    from pipeline.corpus.normalize import normalized_lines, normalized_text, text_hash

    text = "Héllo, WORLD 1984!!\n\n  --- \n😀x𝟗y ١٢\tΟΔΟΣ\x1cend\u00a0 "
    # lower case, every decimal digit (any script) to 0, punctuation and symbols (emoji too) removed,
    # White_Space collapsed; \x1c is not white space; final sigma lower-cased as such
    assert normalized_lines(text) == ["héllo world 0000", "", "", "x0y 00 οδος\x1cend"]
    assert normalized_text(text) == "héllo world 0000\nx0y 00 οδος\x1cend"
    assert text_hash("The cat - sat.\n\nOn 3 mats!") == text_hash("the CAT sat\non 7 mats")
    assert text_hash("the cat sat") != text_hash("the cat\nsat")


def test_signal_definitions_on_edge_cases():
    from stop_words import get_stop_words

    from pipeline.corpus.characters import words
    from pipeline.corpus.signals import SIGNAL_COLUMNS, document_signals

    assert words("a\x1cb  c\u00a0d\u3000e") == ["a\x1cb", "c", "d", "e"]  # Unicode White_Space only
    signal = dict(zip([name for name, _ in SIGNAL_COLUMNS],
                      document_signals("Done.\u00a0\nDone. \r\nYes!\u2028\n— item\n(The) -- end", "en", 3)))
    assert signal["q_lines"] == 5 and signal["q_words"] == 8
    # a mark followed by ASCII whitespace or a final line separator ends a line; a no-break space does not
    assert signal["q_punctuation_lines"] == pytest.approx(2 / 5)
    assert signal["q_bullet_lines"] == pytest.approx(1 / 5)
    stop = set(get_stop_words("en"))  # tokens are matched without leading and trailing punctuation
    assert "the" in stop and signal["q_stop_words"] == sum(w in stop for w in ["done", "done", "yes", "item", "the", "end"])
    assert signal["q_duplicate_ngrams"] == 0.0
    short = dict(zip([name for name, _ in SIGNAL_COLUMNS], document_signals("word word", "xx", 5)))
    assert short["q_duplicate_ngrams"] == 0.0 and short["q_stop_words"] is None and short["q_stop_word_share"] is None
    repeated = dict(zip([name for name, _ in SIGNAL_COLUMNS], document_signals("a b a b a b", "en", 2)))
    assert repeated["q_duplicate_ngrams"] == pytest.approx(3 / 5)  # "a b" x3, "b a" x2 among 5 bigrams


@pytest.mark.spark
def test_quality_filters_and_blocklist(spark, tmp_path):
    from pipeline.config import QualitySettings
    from pipeline.corpus.stages import Quality

    blocklist = tmp_path / "blocked.txt"
    blocklist.write_text("# spam hosts\nexample.co.uk\n")
    long_text = "The and " + " ".join(hashlib.md5(str(i).encode()).hexdigest()[:6] for i in range(60)) + "."
    docs = known_docs(spark, KNOWN, long_text)
    filtered = Quality(QualitySettings(filters=True)).apply(docs)
    assert {r.reason for r in filtered.dropped_docs.collect()} == {"quality.min_words"}
    assert [r.q_words for r in filtered.docs.collect()] == [62]
    blocked = Quality(QualitySettings(url_blocklist=str(blocklist))).apply(docs)
    assert {r.reason for r in blocked.dropped_docs.collect()} == {"url_blocklist"}
    assert blocked.docs.count() == 0


def test_missing_blocklist_is_a_one_line_error(tmp_path, capsys):
    status = cli_main(["run", "--input", str(real_warc(*CC)), "--output", str(tmp_path / "o"),
                       "--set", f"corpus.quality.url_blocklist={tmp_path / 'missing.txt'}"])
    assert status == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "corpus.quality.url_blocklist" in err and "no such file" in err


@pytest.mark.parametrize("host, domain", [
    ("www.bbc.co.uk", "bbc.co.uk"), ("news.bbc.co.uk", "bbc.co.uk"), ("a.b.github.io", "b.github.io"),
    ("WWW.Example.COM.", "example.com"), ("192.168.0.1", "192.168.0.1"), ("localhost", "localhost"), (None, None),
])
def test_registered_domain_from_the_bundled_suffix_list(host, domain):
    from pipeline.corpus.lists import registered_domain

    assert registered_domain(host) == domain


def test_the_input_gets_each_urls_host_and_registered_domain_in_the_reading_task():
    import pyarrow as pa

    from pipeline.corpus.lists import url_host, with_domain_columns

    assert url_host("https://User@WWW.BBC.co.uk:8443/a?b#c") == "www.bbc.co.uk"
    assert url_host("http://[2001:DB8::1]:80/x") == "[2001:db8::1]" and url_host("http://[::1/x") is None
    assert url_host("mailto:someone@example.com") is None and url_host(None) is None and url_host("") is None
    batch = pa.RecordBatch.from_arrays([pa.array(["r1", "r2", "r3", "r4"]),
                                        pa.array(["https://news.bbc.co.uk/x", "http://192.168.0.1/", "no url", None])],
                                       names=["warc_record_id", "url"])
    out = with_domain_columns(batch)
    assert out.schema.names == ["host", "warc_record_id", "url", "registered_domain", "lines_removed"]
    assert out.column(0).to_pylist() == ["news.bbc.co.uk", "192.168.0.1", None, None]
    assert out.column(3).to_pylist() == ["bbc.co.uk", "192.168.0.1", "", ""]
    assert out.column(4).to_pylist() == [0, 0, 0, 0]


@pytest.mark.spark
def test_repeated_lines_counts_documents_per_domain_and_keeps_lines_without_letters(spark):
    from pyspark.sql import functions as F

    from pipeline.config import RepeatedLinesSettings
    from pipeline.corpus.stages import RepeatedLines

    names = ["alpha", "beta", "gamma", "delta", "epsilon"]  # not numbers: digits are normalised to 0
    texts = [f"The story of {name}.\nAdvertisement\n1992\nAdvertisement" for name in names]
    docs = known_docs(spark, *texts).withColumn("lines_removed", F.lit(0))
    result = RepeatedLines(RepeatedLinesSettings(max_docs_domain=3, max_docs_global=0)).apply(docs)
    kept = {r.warc_record_id: r for r in result.docs.collect()}
    assert len(kept) == 5
    for i in range(5):
        assert kept[f"<urn:uuid:{i}>"].text == f"The story of {names[i]}.\n1992"
        assert kept[f"<urn:uuid:{i}>"].lines_removed == 2  # both copies of the line in the document
    removed = result.dropped_lines.collect()
    assert {(r.line, r.reason, r.docs_domain) for r in removed} == {("Advertisement", "repeated_line", 5)}
    assert len(removed) == 10
    # five documents are not more than five: nothing goes with a threshold of 5
    loose = RepeatedLines(RepeatedLinesSettings(max_docs_domain=5, max_docs_global=0)).apply(docs)
    assert loose.dropped_lines.count() == 0


@pytest.mark.spark
def test_minhash_estimates_jaccard_and_near_dedup_keeps_the_first(spark):
    from pyspark.sql import functions as F

    from pipeline.config import DedupSettings
    from pipeline.corpus.stages import NearDedup

    words = [hashlib.md5(str(i).encode()).hexdigest()[:7] for i in range(120)]
    first = " ".join(words[:100])
    second = " ".join(words[:80] + words[100:120])  # 76 shared 5-word shingles of 116: Jaccard 0.655
    docs = known_docs(spark, first, second).withColumn("warc_filename", F.lit("shard.warc.gz"))
    stage = NearDedup(DedupSettings(near=True, near_threshold=0.5))
    a, b = (row._sig for row in stage._signatures(docs).orderBy("_order").collect())
    assert len(a) == 100
    assert sum(x == y for x, y in zip(a, b)) / 100 == pytest.approx(76 / 116, abs=0.15)
    dropped = stage.apply(docs).dropped_docs.collect()
    assert [(r.warc_record_id, r.reason, r.duplicate_of) for r in dropped] == [
        ("<urn:uuid:1>", "near_duplicate", "<urn:uuid:0>")]
    assert NearDedup(DedupSettings(near=True, near_threshold=0.9)).apply(docs).dropped_docs.count() == 0



@pytest.mark.spark
def test_a_build_stopped_before_its_commit_resumes_from_checkpoints_of_what_was_dropped(nights, tmp_path, monkeypatch):
    """exact_dedup only removes documents: its checkpoint holds the dropped ones, not the corpus's text again; the
    last stage, quality without filters, is run by the final write and has none. The resumed build's rows are
    those of a build that was never stopped."""
    if shutil.which("java") is None:
        pytest.skip("Java is needed for Spark")
    from pipeline.corpus.builder import CorpusBuilder

    inputs = [nights["night1"], nights["night2"]]
    default_stages = ("--set", "corpus.dedup.near=false", "--set", "corpus.repeated_lines.enabled=false")
    straight, stopped = tmp_path / "straight", tmp_path / "stopped"
    run(inputs, straight, *default_stages)

    def stop(*_args, **_kwargs):
        raise RuntimeError("stopped before the commit")

    with monkeypatch.context() as patch:
        patch.setattr(CorpusBuilder, "_commit", stop)
        try:
            status = run(inputs, stopped, *default_stages)
        except (RuntimeError, AssertionError) as exc:  # raised, or an exit status other than 0
            status = exc
        assert not isinstance(status, dict)
    (work,) = (stopped / "_tmp" / "corpus").iterdir()
    assert sorted(p.name for p in work.iterdir()) == ["0-input", "1-exact_dedup", "final", "plan"]
    assert {p.name for p in (work / "1-exact_dedup").iterdir()} == {"_DONE.json", "dropped_docs"}
    assert {r["reason"] for r in rows(work / "1-exact_dedup" / "dropped_docs")} == {"exact_duplicate"}
    resumed = run(inputs, stopped, *default_stages)
    assert resumed["corpus"]["stages"]["quality"]["with_final_write"] is True
    assert resumed["corpus"]["documents_out"] == len(rows(straight / "corpus"))
    for folder in ("corpus", "corpus_dropped/documents"):
        def key(row):
            return row["warc_record_id"]
        assert sorted(rows(stopped / folder), key=key) == sorted(rows(straight / folder), key=key), folder


@pytest.mark.spark
def test_a_stage_that_drops_nothing_checkpoints_nothing_and_the_build_goes_on(tmp_path):
    """exact_dedup over pages without a duplicate writes no file at all; the build reads its input on."""
    if shutil.which("java") is None:
        pytest.skip("Java is needed for Spark")
    out = tmp_path / "out"
    stats = run([real_warc(*CC)], out, "--set", "corpus.dedup.near=false", "--set", "corpus.repeated_lines.enabled=false")
    corpus = stats["corpus"]
    assert corpus["order"] == ["exact_dedup", "quality"]
    assert corpus["stages"]["exact_dedup"]["documents_dropped"] == 0
    assert corpus["documents_out"] == len(rows(out / "data")) == len(rows(out / "corpus")) > 0


def planned_reads(events: Path) -> list[tuple[list[list[str]], str]]:
    """Per SQL query the run planned (from Spark's event log), the output columns of each of its reads of our
    folders (a reading task's MapInArrow over the shares), and its plan."""
    plans = []
    for log in (p for p in events.rglob("events_*") if p.is_file()):
        for line in log.read_text().splitlines():
            event = json.loads(line)
            if not event["Event"].endswith("SQLExecutionStart"):
                continue
            reads = []
            for node in event["physicalPlanDescription"].split("\n\n"):
                if "MapInArrow" in node and "Input [1]: [share#" in node:
                    output = node.split("Arguments:", 1)[1].split("[", 1)[1].split("]", 1)[0]
                    reads.append([column.split("#")[0] for column in output.split(", ")])
            plans.append((reads, event["physicalPlanDescription"]))
    return plans


def data_reads(events: Path) -> list[list[str]]:
    """The output columns of each read of data/ (with the ``registered_domain`` its reading task adds)."""
    return [names for reads, _ in planned_reads(events) for names in reads if "registered_domain" in names]


@pytest.mark.spark
def test_the_default_stages_hand_data_text_to_spark_only_for_the_final_write(nights, tmp_path):
    """exact_dedup's keys are made by the tasks that read data/ (the text does not leave them) and carry what its
    dropped rows give, the quality signals are computed by the tasks that read data/ for the final write, and the
    percentiles read three columns: of data/'s reads, only the final write's hands Spark the documents' text."""
    if shutil.which("java") is None:
        pytest.skip("Java is needed for Spark")
    out, events = tmp_path / "out", tmp_path / "events"
    events.mkdir()
    stats = run_apart([nights["night1"], nights["night2"]], out, "--set", "corpus.dedup.near=false",
                      "--set", "corpus.repeated_lines.enabled=false", "--set", "spark.conf.spark.eventLog.enabled=true",
                      "--set", "spark.conf.spark.eventLog.compress=false",
                      "--set", f"spark.conf.spark.eventLog.dir=file://{events}")
    corpus = stats["corpus"]
    assert corpus["order"] == ["exact_dedup", "quality"]
    dropped = rows(out / "corpus_dropped" / "documents")
    assert corpus["stages"]["exact_dedup"]["dropped"] == {"exact_duplicate": len(dropped)}
    data = {row["warc_record_id"]: row for row in rows(out / "data")}
    assert {row["warc_record_id"] for row in dropped} >= {nights["later_copy"], nights["ids"][nights["earlier_uri"]]}
    for row in dropped:  # the row's columns are its document's, from the keys
        page = data[row["warc_record_id"]]
        assert (row["url"], row["text_bytes"]) == (page["url"], len(page["text"].encode("utf-8")))
    assert {row["perplexity_bucket"] for row in rows(out / "corpus")} >= {"head", "tail"}
    reads = data_reads(events)
    assert [names for names in reads if "text" in names] == [names for names in reads if "q_words" in names]
    assert sum("text" in names for names in reads) == 1  # the final write's, with the quality signals
    assert sum("_normalized" in names and "text" not in names for names in reads) == 1  # exact_dedup's keys
    # the dropped documents' counts by reason come from the tasks that wrote them: no query reads them back alone
    assert not [plan for reads, plan in planned_reads(events)
                if "Aggregate" in plan and reads and all("reason" in names for names in reads)]


def test_the_writing_tasks_tally_their_rows_by_reason_and_the_marked_ids_among_them():
    tally = Tally("reason", "text_bytes", "warc_record_id", frozenset({"b", "z"}))
    first, second = {"by": {}, "marked": []}, {"by": {}, "marked": []}
    tally.add(first, pa.table({"warc_record_id": ["a", "b"], "reason": ["x", "y"], "text_bytes": [3, 4]}))
    tally.add(first, pa.table({"warc_record_id": ["c"], "reason": ["x"], "text_bytes": [None]}))
    tally.add(second, pa.table({"warc_record_id": ["z", "d"], "reason": ["y", "y"], "text_bytes": [1, 2]}))
    files = [{"tally": json.dumps(first)}, {"tally": json.dumps(second)}]
    assert Tally.merged(files) == {"by": {"x": [2, 3], "y": [3, 7]}, "marked": ["b", "z"]}
