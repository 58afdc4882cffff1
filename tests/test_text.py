"""Issue 11.4: ``text`` is the extracted text minus the dropped sentences, cut as spans of it."""

from __future__ import annotations

import sys
import unicodedata

import pyarrow.dataset as ds
import pytest

from conftest import write_warc
from pipeline.config import load_settings
from pipeline.document import Document, Language, Sentence, cut_dropped, visible, visible_lines
from pipeline.reading.decode import decode_html
from pipeline.document import Page
from pipeline.reading.reader import read_pages
from pipeline.reading.shards import Split
from pipeline.spark.runner import run_split
from pipeline.stats import Stats
from pipeline.steps.extractors import build_extractor
from pipeline.steps.sentences import SentenceSplitter
from pipeline.writing.index_sample import read_index_sample


def split_doc(text: str, language: str = "en") -> Document:
    doc = Document(Page("<urn:t>", "http://t/", "", b"", None), text=text, language=Language(language, 1.0))
    return SentenceSplitter()(doc)


def dropping(doc: Document, *needles: str) -> str:
    for sentence in doc.sentences:
        sentence.kept = not any(n in sentence.text for n in needles)
    return doc.clean_text


def test_spans_point_into_the_text():
    text = "Run jq '.[0].id' on it.  Then stop.\n\n    indented();\n日本語です。次の文！"
    doc = split_doc(text)
    assert all(text[s.start:s.end] == s.text for s in doc.sentences)
    assert [s.paragraph for s in doc.sentences][-1] == 2


@pytest.mark.parametrize("text, drop, expected", [
    ("A first. B second. C third.", "B second", "A first. C third."),
    ("A first. B second. C third.", "C third", "A first. B second."),
    ("A first. B second. C third.", "A first", "B second. C third."),
    ("keep me.\ndrop me.\nkeep too.", "drop me", "keep me.\nkeep too."),
    ("keep me.\ndrop me.", "drop me", "keep me."),
    # nothing rejoined: code, spacing, blank lines and "aid.The" stay as extracted
    ("Run jq '.[0].id' on it. Spam spam spam.\n\n    code_line();\nfirst aid.The end", "Spam",
     "Run jq '.[0].id' on it.\n\n    code_line();\nfirst aid.The end"),
    # paragraphs separated by blank lines (resiliparse): a dropped one leaves one blank line, none at the ends
    ("Keep one.\n\nDrop two.\n\nKeep three.", "Drop", "Keep one.\n\nKeep three."),
    ("Drop one.\n\nKeep two.\n\nDrop three.", "Drop", "Keep two."),
])
def test_dropped_sentences_are_cut_as_spans(text, drop, expected):
    assert dropping(split_doc(text), drop) == expected


def test_cjk_sentences_are_cut_without_spaces():
    assert dropping(split_doc("这是第一句。这是第二句！第三句？", "zh"), "第二") == "这是第一句。第三句？"


def test_the_written_text_follows_every_later_change_of_the_document():
    """clean_text is computed once per state: asked again it gives the same text without cutting again, and a
    sentence dropped or kept, a sentence list replaced or a new text after the first answer is seen."""
    doc = split_doc("A first. B second. C third.\nD fourth.")
    assert doc.clean_text == doc.text
    assert dropping(doc, "B second") == "A first. C third.\nD fourth." == doc.clean_text
    assert dropping(doc, "D fourth") == "A first. B second. C third."
    doc.sentences[0].kept = False
    assert doc.clean_text == "B second. C third."
    other = split_doc("E fifth. F sixth.")
    doc.text, doc.sentences = other.text, other.sentences
    assert doc.clean_text == "E fifth. F sixth."
    doc.sentences[1].kept = False
    assert doc.clean_text == "E fifth."
    doc.sentences[1].start = -1  # its span no longer known: the dropped sentence stays
    assert doc.clean_text == "E fifth. F sixth."


def test_nothing_dropped_is_the_text_itself():
    text = "  Leading space.\n\n\tTabbed   words.  \n"
    assert split_doc(text).clean_text == text
    assert cut_dropped(text, [Sentence("Leading space.", 0, kept=False)]) == text  # no span: kept


PRE_PAGE = (b"<html><body><article><p>The harbour town rebuilt its old stone bridge in spring, and the people "
            b"walked across it every evening.</p><pre>for i in range(3):\n    print(i)</pre>"
            b"<p>Use jq '.[0].id' to read it.</p></article></body></html>")


def test_filter_off_text_is_the_extractors_output_byte_for_byte(tmp_path, cc_genuine_warc):
    """Real pages (Common Crawl WARC): with the filter off every row's text is its extractor's output as
    written (:func:`visible_lines`)."""
    settings = load_settings(None, ["perplexity.enabled=false", "input.splits_per_shard=1"])
    split = Split(str(cc_genuine_warc), 0, 1)
    run_split(split, settings, str(tmp_path / "out"))
    rows = {r["warc_record_id"]: r for r in ds.dataset(str(tmp_path / "out" / "data")).to_table().to_pylist()}
    assert len(rows) >= 10
    extractors = {}
    for page in read_pages(split, settings.input, settings.s3, Stats()):
        row = rows.get(page.record_id)
        if row is None:
            continue
        extractor = extractors.setdefault(row["extractor"], build_extractor(row["extractor"], settings))
        assert row["text"] == visible_lines(extractor.extract(decode_html(page.html, page.http_charset))), page.url
        assert row["text_bytes_clean"] == row["text_bytes_raw"] == len(row["text"].encode("utf-8"))


@pytest.mark.parametrize("text, expected", [
    ("One.\n\xa0\nTwo.", "One.\n\nTwo."),                      # <p>&nbsp;</p>
    ("One.\n\u200d\n\u200d\nTwo.", "One.\n\nTwo."),            # spacers of zero-width joiners
    ("\ufeff\nOne.\n \t\u200b\u00ad\n\n\n\nTwo.\n\u2060", "One.\n\nTwo."),  # BOM, ZWSP, soft hyphen, word joiner
    ("One.\n\nTwo.", "One.\n\nTwo."),
    ("def f():\n    return 1\n\nf()", "def f():\n    return 1\n\nf()"),
    ("Hyphen\u00adated and joined\u200d words stay.", "Hyphen\u00adated and joined\u200d words stay."),
    # words of format characters only, inside a line: gone with their white space
    ("much more. \u200d The crawl data", "much more. The crawl data"),
    ("a \u200d \ufeff\u00ad b\nnext", "a b\nnext"),
    ("End of line \u2063\nNext \u200b", "End of line\nNext"),
    ("    \u200b return 1\n\u200d x", "    return 1\nx"),
    ("\U0001f468\u200d\U0001f469 family, \u200ca\u200cb", "\U0001f468\u200d\U0001f469 family, \u200ca\u200cb"),
])
def test_lines_a_reader_sees_as_blank_are_written_blank(text, expected):
    assert visible_lines(text) == expected


def test_format_characters_are_unicodes_category_cf():
    """The regex class ``FORMAT_CHARACTERS`` is Unicode's category Cf as this Python's unicodedata has it."""
    invisible = {c for c in map(chr, range(sys.maxunicode + 1)) if not visible(c)}
    expected = {c for c in map(chr, range(sys.maxunicode + 1)) if c.isspace() or unicodedata.category(c) == "Cf"}
    if unicodedata.unidata_version == "14.0.0":  # Python 3.11, the version the class was written from
        assert invisible == expected
    else:
        assert invisible <= expected


BLANK_LINES_PAGE = ("<html><head><title>Harbour notes</title></head><body><article>"
                    "<h1>The harbour town rebuilt its bridge</h1>"
                    "<p>The harbour town rebuilt its old stone bridge in spring, and the people walked across it "
                    "every evening to watch the boats come in.</p><p>&nbsp;</p><p>&zwj;</p><p>&#8203;&zwj;</p>"
                    "<p>In the summer the fishermen mended their nets on the quay, and the children sold lemonade "
                    "to the visitors who came by train from the city.</p><p>&nbsp;</p>"
                    "<p>By autumn the bridge was finished, and the town held a festival with music and food on "
                    "both banks of the river.</p></article></body></html>").encode()


@pytest.mark.parametrize("cascade", ["[blocks, resiliparse, trafilatura, readability, conservative]",
                                     "[resiliparse, conservative]"])
def test_spacer_paragraphs_leave_no_invisible_lines(tmp_path, cascade):
    """A page whose paragraphs are separated by ``<p>&nbsp;</p>`` and zero-width-joiner spacers, through
    the split runner (both stages wrote such lines before): every line written is blank or has a
    character a reader sees."""
    warc = tmp_path / "spacers.warc.gz"
    write_warc(warc, [("200 OK", "text/html", None, BLANK_LINES_PAGE)])
    settings = load_settings(None, [f"extract.cascade={cascade}", "index.sample_share=1"])  # the page is sampled
    run_split(Split(str(warc), 0, 1), settings, str(tmp_path / "out"))
    [row] = ds.dataset(str(tmp_path / "out" / "data")).to_table().to_pylist()
    assert row["extractor"] == cascade[1:].split(",")[0]
    assert "fishermen mended their nets" in row["text"] and "held a festival" in row["text"]
    # the page's text and its all visible text in the index sample (the index chain's first link) alike
    [sampled] = read_index_sample(str(tmp_path / "out"), settings.s3, 0)[0]
    for text in (row["text"], sampled.visible):
        assert all(line == "" or line.strip(" \xa0\u200b\u200d") for line in text.split("\n")), text
        assert not text.startswith("\n") and not text.endswith("\n")


def test_pre_and_code_survive_the_filter(tmp_path):
    warc = tmp_path / "pre.warc.gz"
    write_warc(warc, [("200 OK", "text/html", None, PRE_PAGE)])
    settings = load_settings(None, ["extract.cascade=[resiliparse, conservative]", "perplexity.threshold=1e9"])
    run_split(Split(str(warc), 0, 1), settings, str(tmp_path / "out"))
    [row] = ds.dataset(str(tmp_path / "out" / "data")).to_table().to_pylist()
    assert "for i in range(3):\n    print(i)" in row["text"]
    assert "jq '.[0].id'" in row["text"]


@pytest.mark.slow
def test_clean_text_never_exceeds_the_raw_text_over_the_bench_warc(tmp_path, bench_dev_warc):
    """Every page of the bench WARC, default config: text_bytes_clean <= text_bytes_raw, kept sentences in order."""
    stats = run_split(Split(str(bench_dev_warc), 0, 1), load_settings("conf/local.yaml"), str(tmp_path / "out"))
    rows = ds.dataset(str(tmp_path / "out" / "data")).to_table(
        columns=["text", "text_bytes_raw", "text_bytes_clean"]).to_pylist()
    assert len(rows) == stats["outcome"]["kept"] > 1000
    assert all(r["text_bytes_clean"] <= r["text_bytes_raw"] for r in rows)
    assert all(r["text_bytes_clean"] == len(r["text"].encode("utf-8")) for r in rows)
    assert any(r["text_bytes_clean"] < r["text_bytes_raw"] for r in rows)
