"""React's streamed parts put in place (pipeline/reading/streamed.py): as the page's own calls do, checked against
Chromium's DOM after its scripts ran, and through the default pipeline."""

from __future__ import annotations

import gzip
import shutil
import subprocess
from collections import Counter
from pathlib import Path

import pytest

from conftest import bench_file
from pipeline.config import load_settings
from pipeline.document import Page
from pipeline.reading.decode import decode_html
from pipeline.reading.streamed import place_segments
from pipeline.steps.blocks.parse import parse_blocks
from pipeline.steps.loop import StepLoop

STREAMED = """<html><body><h1>Guide</h1>
<p>Install it:</p><!--$?--><template id="B:0"></template><p>Loading...</p><!--/$-->
<p>Then run it:</p><template id="P:3"></template>
<p>Footer</p>
<div hidden id="S:0"><pre>pip install thing</pre><!--$?--><template id="B:1"></template><!--/$--></div>
<script>$RC("B:0","S:0")</script>
<div hidden id="S:7"><pre>thing --run</pre></div><script>$RS("S:7","P:3")</script>
<div hidden id="S:1"><p>Nested part</p></div><script>$RC("B:1","S:1")</script>
<div hidden id="S:9"><p>Named by no call</p></div>
</body></html>"""


def texts(html: str) -> list[str]:
    return [b.text for b in parse_blocks(html)]


def test_segments_go_where_the_calls_put_them_and_fallbacks_go():
    placed, count = place_segments(STREAMED)
    assert count == 3
    assert texts(placed) == ["Guide", "Install it:", "pip install thing", "Nested part", "Then run it:",
                             "thing --run", "Footer", "Named by no call"]
    assert "Loading..." not in placed and 'id="S:0"' not in placed and '<div hidden id="S:9">' in placed


def test_pages_without_calls_or_with_an_unclosed_segment_are_left_as_sent():
    no_calls = STREAMED.replace('$RC("B:0","S:0")', "").replace('$RS("S:7","P:3")', "").replace('$RC("B:1","S:1")', "")
    assert place_segments(no_calls) == (no_calls, 0)
    unclosed = '<p>a</p><template id="B:0"></template><div hidden id="S:0"><div><p>b</p>$RC("B:0","S:0")'
    assert place_segments(unclosed) == (unclosed, 0)
    # a page cut short after its first segment: that one is placed, the cut one stays as sent
    cut = ('<p>a</p><template id="B:0"></template><p>c</p><template id="B:1"></template>'
           '<div hidden id="S:0"><p>b</p></div><script>$RC("B:0","S:0");$RC("B:1","S:1")</script>'
           '<div hidden id="S:1"><div><p>d</p>')
    placed, count = place_segments(cut)
    assert count == 1 and texts(placed) == ["a", "b", "c", "d"] and placed.endswith('<div hidden id="S:1"><div><p>d</p>')
    plain = "<html><body><p>Nothing streamed</p></body></html>"
    assert place_segments(plain) == (plain, 0)


def bench_html(page_id: str) -> str:
    return decode_html(gzip.decompress(bench_file("data-wcxb", "wcxb", "pages", f"{page_id}.html.gz").read_bytes()))


@pytest.mark.browser
@pytest.mark.parametrize("page_id", ["wcxb-dev-0498", "wcxb-dev-0046", "wcxb-dev-0606"])
def test_blocks_come_in_chromiums_order(page_id, tmp_path):
    """A GitBook guide, a Motley Fool article and a Helly Hansen product page, as Common Crawl would hold them:
    the blocks of the placed page, in the order of the blocks of Chromium's DOM once the page's scripts ran
    (React 19 reveals on an animation frame: Chromium gets 5 s of virtual time); as sent, they are not."""
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None:
        pytest.skip("chromium is not installed (`make setup-browser` installs it)")
    html = bench_html(page_id)
    (tmp_path / "page.html").write_text(html, encoding="utf-8")
    dom = subprocess.run([chromium, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                          f"--user-data-dir={tmp_path / 'profile'}", "--virtual-time-budget=5000", "--dump-dom",
                          (tmp_path / "page.html").as_uri()], capture_output=True, text=True, timeout=120).stdout
    shown = texts(dom)
    assert shown

    def same_order(blocks: list[str]) -> bool:
        ours, theirs = Counter(blocks), Counter(shown)
        once = [t for t in blocks if ours[t] == 1 and theirs[t] == 1]
        return len(once) > 20 and once == [t for t in shown if t in set(once)]

    placed, count = place_segments(html)
    assert count > 0
    assert same_order(texts(placed))
    assert not same_order(texts(html))


def test_the_pipeline_writes_a_guides_streamed_code_in_place():
    """Through the default steps (the decode step places the parts): the GitBook guide's commands stand between
    the sentences that introduce them, as the page shows them; as sent, the classifier read them after the footer
    and left them out."""
    loop = StepLoop(load_settings(None, []))
    raw = gzip.decompress(bench_file("data-wcxb", "wcxb", "pages", "wcxb-dev-0498.html.gz").read_bytes())
    doc = loop.process(Page("<urn:wcxb-dev-0498>", "https://mostly-adequate.gitbook.io/mostly-adequate-guide",
                            "", raw, None))
    assert doc.outcome == "kept"
    text = doc.clean_text
    assert text.index("As the recommended node version") < text.index("nvm install 10.22.1") \
        < text.index("As this project has a .nvmrc file")
    stats = loop.step("decode").stats.to_dict()["stage"]["decode"]
    assert stats["streamed_pages"] == 1 and stats["streamed_segments"] == 10


def test_a_placeholder_inside_a_dropped_fallback_is_dropped_with_it():
    html = ('<p>a</p><!--$?--><template id="B:0"></template><div><template id="P:1"></template></div><!--/$-->'
            '<p>z</p><div hidden id="S:0"><p>b</p></div><div hidden id="S:1"><p>never shown</p></div>'
            '<script>$RC("B:0","S:0");$RS("S:1","P:1")</script>')
    placed, count = place_segments(html)
    assert count == 1 and texts(placed) == ["a", "b", "z", "never shown"]  # S:1 stays where it was sent
    assert '<div hidden id="S:1">' in placed
