"""HTTP payload decoding and charset detection on real bytes, through the real WARC reader.

Each case is a WARC response record written here with a real coded body (chunked, gzip,
deflate in both forms, br, zstd; UTF-16 without a BOM, bogus labels, stray bytes, NULs,
surrogates), read back by ``iter_pages`` and cleaned by ``run_split``; the real wget WARC of
../shared/bench shows the chunk-size corruption gone, and two real bench pages their text.
"""

from __future__ import annotations

import gzip
import json
import shutil
import zlib

import brotli
import pyarrow.dataset as ds
import pytest

import make_fuzz_corpus
from make_fuzz_corpus import chunked, deflate_raw, zstd
from conftest import bench_file, real_warc
from pipeline.cli import main as cli_main
from pipeline.config import load_settings
from pipeline.reading.decode import decode_html, utf16_without_bom
from pipeline.reading.payload import Codings, PayloadError, decode_payload
from pipeline.reading import reader
from pipeline.reading.shards import Split
from pipeline.spark.runner import run_split
from pipeline.stats import Stats
from pipeline.writing.output import DATASET_DIR

GERMAN = make_fuzz_corpus.GERMAN
PAGE = ("<!doctype html><html><head><meta charset=\"utf-8\"><title>Brücken</title></head><body><article>"
        + "".join(f"<p>{GERMAN} Absatz {i}.</p>\n" for i in range(40)) + "</article></body></html>").encode()


# name -> (extra HTTP headers, stored body); each decodes to PAGE.
CODED = {
    "chunked": ("Transfer-Encoding: chunked\r\n", chunked(PAGE)),
    "gzip": ("Content-Encoding: gzip\r\n", gzip.compress(PAGE)),
    "x-gzip": ("Content-Encoding: x-gzip\r\n", gzip.compress(PAGE)),
    "chunked_gzip": ("Content-Encoding: gzip\r\nTransfer-Encoding: chunked\r\n", chunked(gzip.compress(PAGE), 333)),
    "deflate_zlib": ("Content-Encoding: deflate\r\n", zlib.compress(PAGE)),
    "deflate_raw": ("Content-Encoding: deflate\r\n", deflate_raw(PAGE)),
    "br": ("Content-Encoding: br\r\n", brotli.compress(PAGE)),
    "zstd": ("Content-Encoding: zstd\r\n", zstd(PAGE)),
    "gzip_then_br": ("Content-Encoding: gzip, br\r\n", brotli.compress(gzip.compress(PAGE))),
    # Common Crawl decoded the body and renamed the headers: nothing to undo.
    "cc_renamed": ("X-Crawler-Content-Encoding: gzip\r\nX-Crawler-Transfer-Encoding: chunked\r\n", PAGE),
    # ClueWeb09 kept the header on a body it stored decoded.
    "stale_header": ("Content-Encoding: gzip\r\n", PAGE),
}


def write_warc(path, records: list[tuple[str, str, bytes]], content_type: str = "text/html") -> None:
    """One gzip member per response record (as Common Crawl writes them)."""
    import random
    rng = random.Random(1)
    members = []
    for url, extra, body in records:
        head = make_fuzz_corpus.http_head(content_type, extra)
        members.append(make_fuzz_corpus.member(make_fuzz_corpus.new_record(url, head, body, rng).to_bytes()))
    path.write_bytes(b"".join(members))


def read_pages(path, settings=None):
    settings = settings or load_settings(None, [])
    stats = Stats()
    pages = {p.url: p for p in reader.read_pages(Split(str(path), 0, 1), settings.input, settings.s3, stats)}
    return pages, stats.counts


def test_every_coding_decodes_through_the_warc_reader(tmp_path):
    path = tmp_path / "coded.warc.gz"
    write_warc(path, [(f"http://t.example/{name}", extra, body) for name, (extra, body) in CODED.items()])
    pages, counts = read_pages(path)
    assert counts["records.read"] == counts["records.html"] == len(CODED)
    for name in CODED:
        assert pages[f"http://t.example/{name}"].html == PAGE, name
    assert counts["payload.dechunked"] == 2
    assert counts["payload.decoded.gzip"] == 4  # gzip, x-gzip, chunked_gzip, gzip_then_br
    assert counts["payload.decoded.deflate"] == 2 and counts["payload.decoded.zstd"] == 1
    assert counts["payload.decoded.br"] == 2
    assert counts["payload.crawler_decoded"] == 1 and counts["payload.already_decoded.gzip"] == 1
    assert not any(k.startswith("skip.") for k in counts)


def test_bad_bodies_are_counted_skips_and_cut_streams_keep_their_head(tmp_path):
    settings = load_settings(None, ["input.max_html_bytes=1000000"])
    bomb = gzip.compress(b"<html>" + b" " * 3_000_000)
    cut_gzip = gzip.compress(PAGE)[:len(gzip.compress(PAGE)) // 2]
    cut_chunked = chunked(PAGE)[:len(PAGE) // 2]
    records = [("http://t.example/corrupt_gzip", "Content-Encoding: gzip\r\n", b"\x1f\x8b\x08\x00garbage" * 50),
               ("http://t.example/corrupt_br", "Content-Encoding: br\r\n", bytes(range(200, 256)) * 20),
               ("http://t.example/compress", "Content-Encoding: compress\r\n", PAGE),
               ("http://t.example/bomb", "Content-Encoding: gzip\r\n", bomb),
               ("http://t.example/bad_chunk", "Transfer-Encoding: chunked\r\n", b"ffff\r\n<html>short"),
               ("http://t.example/cut_gzip", "Content-Encoding: gzip\r\n", cut_gzip),
               ("http://t.example/cut_chunked", "Transfer-Encoding: chunked\r\n", cut_chunked),
               ("http://t.example/empty_chunked", "Transfer-Encoding: chunked\r\n", b"0\r\n\r\n")]
    path = tmp_path / "bad.warc.gz"
    write_warc(path, records)
    pages, counts = read_pages(path, settings)
    assert counts["skip.payload.gzip"] == 1 and counts["skip.payload.br"] == 1
    assert counts["skip.payload.unsupported_coding"] == 1 and counts["skip.payload.too_large"] == 1
    assert counts["skip.payload.chunked"] == 1 and counts["skip.empty_payload"] == 1
    assert set(pages) == {"http://t.example/cut_gzip", "http://t.example/cut_chunked"}
    for page in pages.values():
        assert PAGE.startswith(page.html) and len(page.html) > 100
    assert counts["payload.truncated.gzip"] == counts["payload.truncated.chunked"] == 1
    skipped = sum(v for k, v in counts.items() if k.startswith("skip."))
    assert counts["records.read"] == skipped + counts["records.html"] == len(records)


def test_codings_from_headers_honour_crawler_renames():
    assert Codings.from_headers({"Content-Encoding": "GZIP, identity", "Transfer-Encoding": "chunked"}) == \
        Codings(("chunked",), ("gzip",), False)
    renamed = Codings.from_headers({"Content-Encoding": "gzip", "X-Crawler-Content-Encoding": "gzip"})
    assert renamed.content == () and renamed.crawler_decoded
    with pytest.raises(PayloadError) as failure:
        decode_payload(PAGE, Codings(content=("sdch",)), 1 << 20)
    assert failure.value.reason == "unsupported_coding"


# --- charset -------------------------------------------------------------------------------

UTF8_STRAY = ("<html><head><meta charset=\"utf-8\"></head><body><p>Standardausführung, weiß, "
              + GERMAN + "</p><p>Preis: 12\x9f €</p></body></html>")


def stray_byte_page() -> bytes:
    """A UTF-8 page with one byte that is invalid UTF-8 (a cp1252 'Ÿ' pasted into it)."""
    return UTF8_STRAY.replace("\x9f", "@").encode("utf-8").replace(b"@", b"\x9f")


def test_one_bad_byte_keeps_a_utf8_page_utf8():
    text = decode_html(stray_byte_page(), "iso-8859-1")
    assert "Standardausführung, weiß" in text and GERMAN in text
    assert "Ã" not in text and text.count("\ufffd") == 1


@pytest.mark.parametrize("label", ["none", "x-user-defined", "garbage!!", "utf-16", "", None])
def test_bogus_labels_never_raise(label):
    assert "Standardausführung" in decode_html(stray_byte_page(), label)
    cp1252 = f"<html><meta charset=\"{label}\"><p>{GERMAN}</p></html>".encode("cp1252")
    assert GERMAN in decode_html(cp1252, label)


@pytest.mark.parametrize("codec", ["utf-16-le", "utf-16-be"])
def test_utf16_without_bom_is_text(codec):
    html = PAGE.decode().replace("utf-8", "utf-16").encode(codec)
    assert utf16_without_bom(html) == codec
    assert decode_html(html, None) == PAGE.decode().replace("utf-8", "utf-16")


def test_nul_and_surrogate_bytes_are_removed_and_garble_nothing():
    nul = PAGE.replace(b"Absatz 3.", b"Absatz\x00 3.")
    assert decode_html(nul) == PAGE.decode()
    surrogate = PAGE.replace(b"Absatz 5.", b"Absatz \xed\xa0\x80 5.")  # UTF-8 of a lone surrogate
    text = decode_html(surrogate)
    assert GERMAN in text and "Absatz 39." in text and "Ã" not in text and "\ufffd" not in text
    text.encode("utf-8")  # no lone surrogate survives


CHARSET_CASES = {
    "utf16le_nobom": ("text/html", PAGE.decode().replace("utf-8", "utf-16").encode("utf-16-le")),
    "utf16be_nobom": ("text/html", PAGE.decode().replace("utf-8", "utf-16").encode("utf-16-be")),
    "stray_byte_latin1_label": ("text/html; charset=iso-8859-1", stray_byte_page()),
    "bogus_none": ("text/html; charset=none", stray_byte_page()),
    "bogus_user_defined": ("text/html; charset=x-user-defined", stray_byte_page()),
    "nul": ("text/html; charset=utf-8", PAGE.replace(b"Absatz 3.", b"Absatz\x00 3.")),
    "surrogate": ("text/html; charset=utf-8", PAGE.replace(b"Absatz 5.", b"Absatz \xed\xa0\x80 5.")),
}


def test_charset_cases_through_run_split(tmp_path):
    """The split runner (reader, decoding, cascade, Parquet) keeps each page whole and readable."""
    path = tmp_path / "charsets.warc.gz"
    import random
    rng = random.Random(3)
    members = [make_fuzz_corpus.member(make_fuzz_corpus.new_record(
        f"http://t.example/{name}", make_fuzz_corpus.http_head(ctype), body, rng).to_bytes())
        for name, (ctype, body) in CHARSET_CASES.items()]
    path.write_bytes(b"".join(members))
    settings = load_settings(None, ["perplexity.enabled=false"])
    stats = run_split(Split(str(path), 0, 1), settings, str(tmp_path / "out"))
    assert stats["records"]["html"] == stats["outcome"]["kept"] == len(CHARSET_CASES)
    assert "error" not in stats["outcome"]
    rows = {r["url"]: r["text"] for r in ds.dataset(tmp_path / "out" / DATASET_DIR, format="parquet",
                                                    partitioning="hive").to_table().to_pylist()}
    for name in CHARSET_CASES:
        text = rows[f"http://t.example/{name}"]
        assert GERMAN.split(";")[0] in text and "Ã" not in text, (name, text[:200])
    assert "Standardausführung, weiß" in rows["http://t.example/bogus_none"]
    assert "Absatz 39." in rows["http://t.example/nul"] and "Absatz 39." in rows["http://t.example/surrogate"]


# --- real pages ----------------------------------------------------------------------------


def test_wget_chunked_bodies_lose_their_chunk_sizes(tmp_path):
    """dolma's wget WARC keeps chunked bodies: the sizes no longer land inside words."""
    texts = {}
    for name in ("dolma-tests_data_warc_sample-0000.warc.gz", "dolma-tests_data_warc_sample-0001.warc.gz"):
        path = real_warc("other-real", name)
        out = tmp_path / name
        stats = run_split(Split(str(path), 0, 1), load_settings(None, ["perplexity.enabled=false"]), str(out))
        assert stats["payload"]["dechunked"] >= 2 and "payload" not in stats.get("skip", {})
        for row in ds.dataset(out / DATASET_DIR, format="parquet", partitioning="hive").to_table().to_pylist():
            texts[row["url"]] = row["text"]
    wipo = next(t for u, t in texts.items() if "cc-at-wipo" in u)
    assert "digital environment" in wipo and "1e31" not in wipo
    amy = texts["https://amyxzhang.wordpress.com/"]
    assert "interviewees" in amy and "7ff7" not in amy


@pytest.mark.parametrize("dataset, page_id, word", [("trafilatura-eval", "trafilatura-79b898ae4e46", "Standardausführung"),
                                                    ("trafilatura-eval", "trafilatura-8ac98318e6db", "So schön winterlich"),
                                                    ("dragnet", "dragnet-T2", "Voces (en español)")])
def test_bench_pages_with_a_stray_byte_stay_utf8(dataset, page_id, word):
    """Real pages, UTF-8 with 1-3 invalid bytes, that the detector-first rule made cp1252 mojibake."""
    html = gzip.decompress(bench_file("data", dataset, "pages", f"{page_id}.html.gz").read_bytes())
    text = decode_html(html)
    assert text == html.decode("utf-8", "replace")
    assert word in text and "Ã" not in text


@pytest.mark.spark
def test_local_spark_run_decodes_every_case(tmp_path):
    """End to end in local Spark: coded bodies and charset traps of one WARC become whole rows."""
    if shutil.which("java") is None:
        pytest.skip("Java is needed for Spark")
    import random
    rng = random.Random(5)
    cases = {f"http://t.example/coded/{name}": ("text/html", extra, body) for name, (extra, body) in CODED.items()}
    cases |= {f"http://t.example/charset/{name}": (ctype, "", body) for name, (ctype, body) in CHARSET_CASES.items()}
    path = tmp_path / "cases.warc.gz"
    path.write_bytes(b"".join(make_fuzz_corpus.member(make_fuzz_corpus.new_record(
        url, make_fuzz_corpus.http_head(ctype, extra), body, rng).to_bytes()) for url, (ctype, extra, body) in cases.items()))
    out = tmp_path / "out"
    status = cli_main(["run", "--input", str(path), "--output", str(out), "--set", "spark.master=local[1]",
                       "--set", "perplexity.enabled=false"])
    assert status == 0
    stats = json.loads((out / "stats.json").read_text())
    assert stats["records"]["read"] == stats["records"]["html"] == stats["outcome"]["kept"] == len(cases)
    assert stats["payload"]["dechunked"] == 2 and stats["payload"]["crawler_decoded"] == 1
    rows = {r["url"]: r["text"] for r in ds.dataset(out / DATASET_DIR, format="parquet",
                                                    partitioning="hive").to_table().to_pylist()}
    assert set(rows) == set(cases)
    for url, text in rows.items():
        assert GERMAN.split(";")[0] in text and "Ã" not in text and "\x00" not in text, url


def alphabet_letters(text: str) -> int:
    """Letters beyond Latin-1 (Cyrillic, Greek, ...)."""
    return sum(1 for ch in text if ch.isalpha() and ord(ch) > 0x24F)


def latin1_letters(text: str) -> int:
    """Accented Latin-1 letters: what another alphabet's bytes read as Latin-1 come out as."""
    return sum(1 for ch in text if "\u00c0" <= ch <= "\u00ff" and ch.isalpha())


def test_real_pages_whose_bytes_lie_are_read_as_what_they_are(tmp_path):
    """Real crawl pages (the fuzz corpus's traps): a cp1251 page whose HTTP header and meta both say Latin-1
    came out as "Î êîìïàíèè - Ñòðàòåãèÿ" and was identified as another language; a UTF-8 page with emoji in
    CESU-8 came out as cp1252 ("í ½í¸€" for each). Now: the page's own alphabet, the emoji, the lone
    surrogate removed, each counted. The bad-bytes traps (character references to NUL, to surrogates, past
    U+10FFFF, lone surrogate bytes after every paragraph of a real page) gave a U+FFFD for each: now the
    page's text exactly, each removed character counted under its reason."""
    import random

    from pipeline.reading.decode import reads_as_mojibake

    records = make_fuzz_corpus.load_records(make_fuzz_corpus.DEFAULT_SEEDS)  # the real WARCs in tests/data
    traps = make_fuzz_corpus.real_page_traps(make_fuzz_corpus.Corpus(records, random.Random(1)))
    assert set(traps) == {"code_page_as_latin1", "cesu8", *make_fuzz_corpus.BAD_BYTES}
    record = next(r for r in make_fuzz_corpus.responses(records)
                  if r.header(b"WARC-Target-URI") == b"<https://soldaini.net/lineage/>")
    clean_url = "http://fuzz.example/real/clean"  # the bad-bytes traps' real page as it is
    path = tmp_path / "traps.warc.gz"
    path.write_bytes(b"".join(make_fuzz_corpus.member(record.to_bytes()) for record, _, _ in traps.values())
                     + make_fuzz_corpus.member(make_fuzz_corpus._with_block(record, clean_url, record.block).to_bytes()))
    stats = run_split(Split(str(path), 0, 1), load_settings(None, ["index.enabled=false"]), str(tmp_path / "out"))
    assert stats["outcome"]["kept"] == len(traps) + 1
    decoded = stats["stage"]["decode"]
    assert decoded["relabelled"] == decoded["cesu8"] == 1
    assert decoded["relabelled_to"] == {"cp1251": 1}
    rows = {r["url"]: r for r in ds.dataset(tmp_path / "out" / DATASET_DIR, format="parquet",
                                            partitioning="hive").to_table().to_pylist()}
    for name, (_, url, word) in traps.items():
        text = rows[url]["text"]
        assert not reads_as_mojibake(text) and "í ½" not in text and "â€" not in text, name
        assert word in text if word else alphabet_letters(text) >= 100 and not latin1_letters(text), name
    assert rows[traps["code_page_as_latin1"][1]]["language"] == "ru"
    cesu = rows[traps["cesu8"][1]]["text"]
    assert cesu.count("\U0001F600") >= 5 and "\ufffd" not in cesu
    paragraphs = record.block.count(b"</p>")
    for name in make_fuzz_corpus.BAD_BYTES:
        assert rows[traps[name][1]]["text"] == rows[clean_url]["text"], name
    # per paragraph: one reference to NUL, two to surrogates, two past U+10FFFF; two lone surrogates (and the
    # CESU-8 trap's one)
    assert decoded["removed"] == {"reference": 5 * paragraphs, "surrogate": 2 * paragraphs + 1}
    assert decoded["pages_with_removed"] == len(make_fuzz_corpus.BAD_BYTES) + 1


def test_cesu8_pairs_are_their_characters_and_a_lone_surrogate_is_removed():
    from pipeline.reading.decode import decode

    pair = make_fuzz_corpus._cesu8("\U0001F600")
    assert pair == b"\xed\xa0\xbd\xed\xb8\x80"
    mostly_ascii = b"<p>Caf\xc3\xa9 " + pair + b" and " + pair + b" then \xed\xb0\x80 end</p>"
    decoded = decode(mostly_ascii, "iso-8859-1")
    assert decoded.text == "<p>Café \U0001F600 and \U0001F600 then  end</p>" and decoded.note == "cesu8"
    assert decoded.removed == {"surrogate": 1}
    # many valid multi-byte characters around a lone surrogate (WTF-8): removed, not three replacement characters
    decoded = decode(PAGE.replace(b"Absatz 5.", b"Absatz \xed\xa0\x80 5."))
    assert decoded.text == PAGE.decode().replace("Absatz 5.", "Absatz  5.")
    assert decoded.removed == {"surrogate": 1} and decoded.note is None


@pytest.mark.parametrize("reference, removed", [
    ("&#0;", 1), ("&#x0000;", 1), ("&#0", 1), ("&#xD800;", 1), ("&#xdfff;", 1), ("&#55296;", 1), ("&#57343;", 1),
    ("&#x110000;", 1), ("&#1114112;", 1), ("&#99999999999;", 1), ("&#X0", 1),
    ("&#x10FFFF;", 0), ("&#1114111;", 0), ("&#xE000;", 0), ("&#57344;", 0), ("&#55295;", 0), ("&#x01F600;", 0),
    ("&#x0041;", 0), ("&#39;", 0), ("&#26085;", 0), ("&#x;", 0), ("&#;", 0), ("&amp;#0;", 0)])
def test_references_that_name_no_character_are_removed_and_counted(reference, removed):
    """HTML reads a reference to NUL, to a surrogate or past U+10FFFF as U+FFFD (libxml2 and lexbor both do):
    such references are removed and counted; every other reference is left to the HTML parser."""
    from pipeline.reading.decode import decode

    html = PAGE.replace(b"Absatz 5.", b"Absatz 5." + reference.encode())
    decoded = decode(html)
    assert decoded.text == (PAGE.decode() if removed else html.decode())
    assert decoded.removed == ({"reference": 1} if removed else {})
    # a cp1252 page is not taken for CESU-8
    cp1252 = "<p>Caf\u00e9 \u00ed\u00a0\u20ac, d\u00e9j\u00e0 vu, gar\u00e7on, na\u00efve, \u00e9t\u00e9</p>".encode("cp1252")
    assert decode(cp1252, "windows-1252").text == cp1252.decode("cp1252")


def test_western_text_labelled_latin1_is_never_relabelled():
    """Every Western European bench page of data-ml (de, fr, es, it, pt, nl, sv, da, fi, ...) written in
    cp1252 and labelled Latin-1 reads as itself: accented letters mixed with ASCII ones are not mojibake."""
    import re

    from pipeline.reading.decode import decode

    western = {"de", "fr", "es", "it", "pt", "nl", "sv", "da", "fi", "no", "ga", "et", "mt", "id"}
    manifest = bench_file("data-ml", "manifest.jsonl")
    checked = 0
    for line in manifest.read_text().splitlines():
        row = json.loads(line)
        if row["lang"] not in western:
            continue
        html = gzip.decompress(bench_file("data-ml", row["dataset"], "pages", f"{row['id']}.html.gz").read_bytes())
        text = re.sub(r'(?i)charset\s*=\s*["\']?[\w-]+', "charset=iso-8859-1", html.decode("utf-8", "replace"))
        raw = text.encode("cp1252", "xmlcharrefreplace")
        if raw.isascii():
            continue
        decoded = decode(raw, "iso-8859-1")
        assert decoded.note is None and decoded.encoding == "cp1252", row["id"]
        checked += 1
    assert checked >= 200
