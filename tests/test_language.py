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
