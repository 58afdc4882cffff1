"""Issue 11.3: the language is identified on the text that is finally kept, and the filter uses it."""

from __future__ import annotations

import pyarrow.dataset as ds

from conftest import write_warc
from pipeline.config import load_settings
from pipeline.reading.shards import Split
from pipeline.spark.runner import run_split

ENGLISH = "".join(f"<p>The harbour town rebuilt its old stone bridge in spring number {i}, and the people "
                  "walked across it every evening after work.</p>" for i in range(4))
CHINESE = ("这个城市的图书馆每天早上八点开门，周末也对所有市民开放。" "新的公园里种了很多树，孩子们放学以后常常在那里玩。"
           "天气好的时候，老人们喜欢在河边散步，一边聊天一边看风景。") * 4
# The main content (resiliparse's pick) is English; the page's other text is longer and Chinese.
PAGE = (f"<html><body><aside><ul>{''.join(f'<li>{CHINESE[i:i + 60]}</li>' for i in range(0, len(CHINESE), 60))}"
        f"</ul></aside><main><article>{ENGLISH}</article></main></body></html>").encode("utf-8")
SETTINGS = ["extract.cascade=[resiliparse, conservative]", "perplexity.threshold=1.5",
            "extract.max_removed_share=0.5", "input.splits_per_shard=1"]


def test_the_kept_text_decides_the_language(tmp_path):
    warc = tmp_path / "mixed.warc.gz"
    write_warc(warc, [("200 OK", "text/html; charset=utf-8", None, PAGE)])
    stats = run_split(Split(str(warc), 0, 1), load_settings(None, SETTINGS), str(tmp_path / "out"))
    # resiliparse's English article lost every sentence to the filter: the page fell back to the
    # all-text revert, whose text is mostly Chinese, and the page is Chinese.
    assert stats["fallback"]["resiliparse_filtered"] == 1
    [row] = ds.dataset(str(tmp_path / "out" / "data")).to_table().to_pylist()
    assert row["extractor"] == "conservative" and row["language"] == "zh"
    assert "图书馆" in row["text"] and "stone bridge" in row["text"]
    assert stats["lang"]["zh"]["pages_kept"] == 1 and "en" not in stats["lang"]



def test_a_page_in_one_language_keeps_it_and_is_scored_by_its_model(tmp_path):
    """The English article alone: English, every sentence scored by the English model."""
    warc = tmp_path / "english.warc.gz"
    write_warc(warc, [("200 OK", "text/html", None, f"<html><body><article>{ENGLISH}</article></body></html>".encode())])
    sentences = tmp_path / "sentences"
    settings = load_settings(None, ["extract.cascade=[resiliparse, conservative]", f"output.sentences={sentences}"])
    stats = run_split(Split(str(warc), 0, 1), settings, str(tmp_path / "out"))
    assert stats["lang"]["en"]["pages_kept"] == 1
    rows = ds.dataset(str(sentences)).to_table().to_pylist()
    assert rows and all(r["language"] == "en" and r["perplexity"] is not None for r in rows)


# A Chinese stationery shop's item list (a Common Crawl 2020 page, CC-MAIN-2020-34): codes, names, click counts.
ITEMS = [("2", "曾为（联想电脑）定制", 2382), ("3", "笔记本", 1799), ("4", "曾为（中美史克）定制", 1660), ("5", "笔记本", 1895),
         ("6", "曾为（三星）定制", 1645), ("7", "笔记本", 1149), ("8", "曾为（阿里巴巴）定制", 2053),
         ("9", "曾为（雀巢咖啡）定制", 1995), ("10", "真皮笔记本", 1535), ("11", "普通笔记本", 1124), ("12", "简装笔记本", 1428),
         ("13", "笔记本", 1208), ("14", "真皮笔记本", 2257), ("15", "笔记本", 1387), ("17", "高档笔记本", 1230),
         ("19", "真皮笔记本", 1518), ("20", "真皮笔记本", 1582)]


def test_chinese_without_kana_is_not_japanese(tmp_path):
    """fastText reads this list of short Chinese lines as Japanese (0.59); Japanese writes kana between its kanji,
    and text without any is Chinese. A Japanese page keeps its language."""
    shop = "".join(f"<li><p>WJ-BJB_{code}</p><p>{name}</p><p>(点击：{clicks})</p></li>" for code, name, clicks in ITEMS)
    japanese = "".join(f"<p>図書館は毎朝八時に開きます。週末もすべての市民が利用できます。番号{i}の新しい公園には木がたくさんあります。</p>"
                       for i in range(4))
    warc = tmp_path / "cjk.warc.gz"
    write_warc(warc, [("200 OK", "text/html; charset=utf-8", None,
                       f"<html><body><main><ul>{shop}</ul></main></body></html>".encode()),
                      ("200 OK", "text/html; charset=utf-8", None,
                       f"<html><body><article>{japanese}</article></body></html>".encode())])
    stats = run_split(Split(str(warc), 0, 1), load_settings(None, ["input.splits_per_shard=1"]), str(tmp_path / "out"))
    rows = ds.dataset(str(tmp_path / "out" / "data")).to_table().to_pylist()
    by_text = {("shop" if "笔记本" in r["text"] else "japanese"): r["language"] for r in rows}
    assert by_text == {"shop": "zh", "japanese": "ja"}
    assert stats["stage"]["langid"]["ja_without_kana"] == 1
