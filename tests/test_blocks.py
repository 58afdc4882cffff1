"""The Dripper-style block stage: HTML -> blocks mapped to the DOM -> main/other classifier."""

from __future__ import annotations

import gzip
import hashlib
import json
from collections import Counter

import numpy as np
from conftest import bench_file

from warcplex.config import load_settings
from warcplex.models import block_model
from warcplex.reading.decode import decode_html
from warcplex.reading.warc import Page
from warcplex.steps.blocks.features import dense_names, featurize, word_count
from warcplex.steps.blocks.parse import block_element, dom_path, parse_blocks, parse_tree
from warcplex.steps.blocks.step import BlocksExtractor
from warcplex.steps.extractors import ConservativeExtractor
from warcplex.steps.loop import StepLoop

HTML = """<html><head><title>T</title><script>var x = "no";</script></head><body>
<div id="top-nav"><ul><li><a href="/">Home</a></li><li><a href="/news">News</a></li></ul></div>
<div class="post-body">Intro text owned by the div
  <h1>A headline</h1>
  <p>First paragraph with <a href="/x">a link</a> and <b>bold</b> words.</p>
  tail text of the div
</div></body></html>"""


def test_blocks_follow_the_document_and_map_back_to_the_dom():
    blocks = parse_blocks(HTML)
    assert [b.text for b in blocks] == ["Home", "News", "Intro text owned by the div", "A headline",
                                        "First paragraph with a link and bold words.", "tail text of the div"]
    assert [b.tag for b in blocks] == ["li", "li", "div", "h1", "p", "div"]
    home, _, intro, _, para, tail = blocks
    assert home.link_chars == len("Home") and para.link_chars == len("a link") and intro.link_chars == 0
    assert "2:top" in home.attr_tokens and "0:post" in intro.attr_tokens and "1:post" in para.attr_tokens
    assert intro.element == tail.element  # two runs of text of one element
    tree = parse_tree(HTML).getroottree()
    for block in blocks:
        (found,) = tree.xpath(dom_path(HTML, block))
        assert found.tag == block.tag and block.text.split()[0] in "".join(found.itertext())
    assert dom_path(HTML, para) == "/html/body/div[2]/p"


def test_block_ids_map_back_to_the_dom_of_real_pages():
    for _, html, _ in heldout_pages(20):
        root = parse_tree(html)
        for block in parse_blocks(html)[:200]:
            found = block_element(root, block)
            assert found.tag == block.tag and root.getroottree().getpath(found) == dom_path(html, block)
            assert block.text.split()[0] in " ".join("".join(found.itertext()).split())


def test_word_count_counts_unspaced_scripts():
    assert word_count("Three plain words") == 3
    assert word_count("毎朝、仕事に行く前に川沿いの道を歩きます。") == 10  # 21 CJK characters ~ 10 words
    assert word_count("") == 1


def test_features_match_the_packaged_model():
    blocks = parse_blocks(HTML)
    X, hashed = featurize(blocks, "A headline\nFirst paragraph with a link and bold words.")
    assert X.shape == (len(blocks), len(dense_names()))
    assert list(X[:, dense_names().index("in_primary")]) == [0, 0, 0, 1, 1, 0]
    assert X[0, dense_names().index("next1.log_words")] == X[1, dense_names().index("log_words")]
    probs = block_model().scores(X, hashed)
    assert probs.shape == (len(blocks),) and np.all((probs > 0) & (probs < 1))


def heldout_pages(n: int) -> list[tuple[str, str, str]]:
    """n full-text dev pages that the classifier's fit never saw (the 30% id-hash split)."""
    data = bench_file("data")
    pages = []
    for line in open(data / "manifest.jsonl"):
        m = json.loads(line)
        if m["truth_type"] != "fulltext" or int(hashlib.md5(m["id"].encode()).hexdigest(), 16) % 10 < 7:
            continue
        html = decode_html(gzip.decompress((data / m["dataset"] / "pages" / f"{m['id']}.html.gz").read_bytes()))
        truth = (data / m["dataset"] / "truth" / f"{m['id']}.txt").read_text(encoding="utf-8", errors="replace")
        pages.append((m["id"], html, truth))
        if len(pages) == n:
            break
    return pages


def bow_precision(pred: str, truth: str) -> float:
    p, t = Counter(pred.lower().split()), Counter(truth.lower().split())
    return sum((p & t).values()) / max(1, sum(p.values()))


def test_block_stage_removes_boilerplate_on_held_out_bench_pages():
    settings = load_settings(None, [])
    blocks_stage, everything = BlocksExtractor(settings.extract, settings.perplexity), ConservativeExtractor(settings.extract)
    precision_blocks, precision_all = [], []
    for _, html, truth in heldout_pages(40):
        texts = {b.text for b in parse_blocks(html)}
        out = blocks_stage.extract(html)
        assert all(line in texts for line in out.split("\n") if line)
        if truth.strip() and out:
            precision_blocks.append(bow_precision(out, truth))
            precision_all.append(bow_precision(everything.extract(html), truth))
    assert len(precision_blocks) >= 30
    assert np.mean(precision_blocks) > np.mean(precision_all) + 0.05
    counters = blocks_stage.stats.to_dict()["stage"]["blocks"]["blocks"]
    assert 0 < counters["kept"] < counters["total"]


def test_default_cascade_starts_with_the_block_stage():
    settings = load_settings(None, ["perplexity.enabled=false", "langid.enabled=false"])
    assert settings.extract.cascade[0] == "blocks"
    page_id, html, _ = heldout_pages(1)[0]
    cleaned = StepLoop(settings).process(Page(f"<urn:{page_id}>", "http://x/", "", html.encode("utf-8"), "utf-8"))
    assert (cleaned.outcome, cleaned.extractor, cleaned.fallback_reason) == ("kept", "blocks", None)
