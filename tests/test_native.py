"""The compiled parts (``pipeline._native``) against their Python reference: the same blocks, features and decisions
with whatever model is shipped, the same text kernels, on real WARC pages and edge cases; and the parts built are the
ones of this version."""

from __future__ import annotations

import functools
from pathlib import Path

import numpy as np
import pytest
from conftest import REAL_WARCS, SAMPLE_WARC, bench_file

from pipeline import _native
from pipeline.config import load_settings
from pipeline.steps.blocks.model import block_model
from pipeline.reading.decode import decode_html
from pipeline.reading.reader import read_pages
from pipeline.reading.shards import Split
from pipeline.stats import Stats
from pipeline.steps.blocks import parse
from pipeline.steps.blocks.features import context_features, featurize, word_count
from pipeline.steps.blocks.parse import (BREAK, Block, Markup, _BlockTarget, _html_parser, compiled_target, parse_blocks,
                                         parse_page)
from pipeline.steps.blocks.step import BlocksExtractor
from pipeline.steps.extractors import PageTooDeep
from pipeline.steps.normalize import lm_tokens


def without_compiled(part):
    """No compiled part: every owner runs its Python reference (patched over ``_native.compiled``)."""
    return None


def warc_pages(path, limit: int | None = None) -> list[str]:
    """Decoded HTML of the response pages of a WARC (as the pipeline reads them)."""
    settings = load_settings(None, [])
    pages = []
    for page in read_pages(Split(str(path), 0, 1), settings.input, settings.s3, Stats()):
        if page.kind == "html":
            pages.append(decode_html(page.html, page.http_charset))
        if limit and len(pages) >= limit:
            break
    return pages


def classify_all(pages: list[str]) -> list[tuple]:
    """Per page: its blocks, dense features, hashed features and probabilities (None: too deep)."""
    settings = load_settings(None, [])
    stage = BlocksExtractor(settings.extract, settings.langid)
    out = []
    for html in pages:
        try:
            blocks, X, hashed = stage.page_features(html)
        except PageTooDeep:
            out.append(None)
            continue
        out.append((blocks, X, hashed, stage.classify(html)[1]))
    return out


def assert_agree(pages: list[str], monkeypatch) -> int:
    """The compiled and the reference stage agree block by block; returns the blocks compared."""
    assert all(map(_native.compiled, _native.PARTS)), "the compiled parts are not built (pip install -e . builds them)"
    compiled = classify_all(pages)
    with monkeypatch.context() as patch:
        patch.setattr(_native, "compiled", without_compiled)
        reference = classify_all(pages)
    cut = block_model().threshold
    compared = 0
    for got, want in zip(compiled, reference):
        assert (got is None) == (want is None)
        if got is None:
            continue
        assert got[0] == want[0]  # blocks: text, element, tag, ancestors, class/id tokens, links, depth, parent
        np.testing.assert_array_equal(got[1], want[1])  # dense features, bit for bit (NaN == NaN)
        assert got[2] == want[2]
        np.testing.assert_array_equal(got[3] >= cut, want[3] >= cut)
        np.testing.assert_array_equal(got[3], want[3])
        compared += len(got[0])
    return compared


def test_compiled_block_stage_agrees_with_the_reference_on_the_sample_warc(monkeypatch):
    assert assert_agree(warc_pages(SAMPLE_WARC), monkeypatch) > 500


def test_compiled_block_stage_agrees_with_the_reference_on_bench_pages(monkeypatch):
    pages = warc_pages(bench_file("warc", "bench-dev.warc.gz"), limit=300)
    assert assert_agree(pages, monkeypatch) > 10_000


def test_compiled_parse_finds_the_references_comment_regions_and_structure_candidates(monkeypatch):
    """The comment regions and the main-content candidates of seeds 003 and 004 (parse.Nodes), read in the same
    parse: the compiled target's equal the reference's on real pages and tag soup."""
    pages = warc_pages(SAMPLE_WARC) + warc_pages(bench_file("warc", "bench-dev.warc.gz"), limit=300) + tag_soup(200)
    got = [parse_page(html, nodes=True) for html in pages]
    monkeypatch.setattr(_native, "compiled", without_compiled)
    want = [parse_page(html, nodes=True) for html in pages]
    assert got == want  # blocks (their comment_region too) and markup (its nodes too)
    assert sum(b.comment_region for blocks, _ in want for b in blocks) > 100
    assert sum(bool(markup.nodes.list_items) for _, markup in want) > 100
    assert sum(markup.nodes.article != markup.nodes.middle for _, markup in want) > 50


SPACES = "".join(c for c in map(chr, range(0x3001)) if c.isspace())
EDGE_HTML = [
    "", "   ", "\x00\x01", "<p>no body tag</p>", "<html><head><title>t</title></head></html>",
    # every character str.split() splits on, around and inside link text of 1-4 byte characters
    f"<body><p>a{SPACES}b<a href=x>{SPACES}é€😀 link{SPACES}</a>{SPACES}c</p><div>\u200b{SPACES}</div></body>",
    "<body><p>one<br>two<br/><br> three <a>in<b>side</b><br>link</a></p><p><br></p></body>",
    # class and id values: mixed case, digits, one-letter runs, non-ASCII letters whose lower case is ASCII (İ, K),
    # empty and repeated attributes, at four levels
    '<body><div class="Main-Content2 x y_Zz" id="POST_42"><section class="İstanbul \u212aelvin café" id="">'
    '<article class="" id="a b c"><div class="col-md-8\tcard--BODY" class="second"><p class="é" id="ID">deep</p>'
    '</div></article></section><p class="x">after</p></div><p id="tail_1">tail</p></body>',
    "<body><pre>\n  code <b>x</b>\n\n\ty = 1<br>z\r\n<div> in\n div </div>tail\n</pre><pre>one  line</pre></body>",
    # skipped subtrees use up preorder indexes; text after a block-level child starts a new run
    "<body><div>before<script>x<b>y</b></script><nav><ul><li>n</li></ul></nav><p>child</p>after"
    "<svg><g><text>s</text></g></svg></div></body>",
    # parts never kept: the page's footer but not a section's, dialogs, modals, ARIA roles (duplicates, upper case,
    # valueless, several tokens, inline), nested, unclosed, before the body
    '<body><footer><p>f</p></footer><p>a</p><dialog open><p>d</p></dialog><div ROLE="Navigation x"><p>n</p></div>'
    '<span role=menu>m</span><div role="main" role="dialog">r</div><div role>v</div><div aria-modal>w</div>'
    '<div aria-modal=" TRUE ">x</div><div aria-modal="false" role="article">y</div><p>z</p></body>',
    '<html role="dialog"><body role="contentinfo"><p>body roles do not count</p></body></html>',
    '<body><section><footer><p>s</p></section><footer>page<article><footer>in article</footer></article></footer>'
    '<main><div><footer><b>main</b></footer></div></main><aside><footer>side<footer>inner</footer></footer></aside>'
    '<div role="dialog"><section>in a dialog</section></div><p>end</p><footer>unclosed',
    '<html><footer>before body</footer><body><p>b</p></body></html>',
    # class/id: entities, duplicates, empty and namespaced attributes, upper case
    '<body><div CLASS="Main &amp; Content" id="x-1 ab"><p class="" id="">t</p></div>'
    '<section class="a" class="b" xml:id="z"><p>u</p></section><p class id=main-text>v</p></body>',
    # content after </html>, and a broken first root: the parser goes on with more top-level elements
    "<html><body><p>in</p></body></html><p>after the end</p><div>more</div>",
    "<html xmogo.jpg\" alt=x><p>broken start</p></html><html><body><p>second root</p></body></html>",
    "<body><p>unclosed <b>bold <div>and a div<table><tr><td>cell<td>cell two</table>",
    "<body><![CDATA[cdata text]]><p>x<!-- comment --> y<?pi z?></p></body>",
    # rendered skipped elements between words, punctuation, unspaced scripts, a br, preformatted text, unseen ones
    '<body><p><label>XS</label><input><label>S</label> <a>Py<svg><g/></svg></a>. (<svg></svg>x) a<br><button>b'
    '</button>c 中<svg></svg>文 a<script>x</script>b<select><option>o</select></p><pre>a<button>c</button>b</pre>'
    '<p><svg></svg>lead</p><div>tail<iframe></iframe></div><div>x<nav>n</nav>y</div>'
    '<div><span>Part</span><span>Lifetime</span><a>a</a><a>B</a><b>cl</b><b>és</b><i>n</i><sup>2</sup><sub>x</sub>'
    '<b>Y</b><span>was</span><br><s>$5</s><span>x</span> <span>Y</span><span>z</span><p>Q</p><span>R</span></div>'
    '<table><tr><td><span>Bug</span><span>62048</span></td></tr></table></body>',
    # the markup the page type reads: links, data- and aria- attributes, meta and JSON-LD in the skipped head,
    # microdata, upper case, valueless and empty values, a script that is not JSON-LD, text after a JSON-LD script
    '<html><head><meta NAME="ViewPort" content="w"><meta property="og:type" content="Product.Item"><meta property>'
    '<meta name=viewport><script type="Application/LD+JSON">{"@type": ["Product", "Offer"]}</script>'
    '<script type="text/javascript">{"@type": "Nope"}</script><link href="https://cdn/x.css"></head>'
    '<body><a HREF="https://a">s</a><a href="http://b" data-id=1 data-x aria-label="l" aria->p</a><a href>n</a>'
    '<div itemtype="https://schema.org/Recipe" DATA-Y="2"><p>r</p></div><script type="application/ld+json">'
    '{"@type": "ItemList"}</script><p>after the script</p><a href="HTTPS://C">upper</a></body></html>',
    # deeper than libxml2's tree builder goes (256): the parser's events go on
    "<body>" + "<div>" * 300 + "deep" + "</div>" * 300 + "<p>after</p></body>",
]


def test_compiled_target_gives_the_references_blocks_on_edge_cases(monkeypatch):
    """Pages built to differ: white space of every kind, link text, skipped subtrees, class/id
    attributes, several top-level elements, deep nesting."""
    assert _native.compiled("html") is not None
    got = [parse_page(html, nodes=True) for html in EDGE_HTML]
    monkeypatch.setattr(_native, "compiled", without_compiled)
    want = [parse_page(html, nodes=True) for html in EDGE_HTML]
    assert got == want  # the blocks and the markup
    markup = want[-2][1]
    assert (markup.https_links, markup.http_links, markup.data_attributes, markup.aria_attributes) == (2, 1, 3, 2)
    assert markup.viewport and markup.og_types == ["Product.Item"]
    assert markup.itemtypes == ["https://schema.org/Recipe"]
    assert markup.json_ld == ['{"@type": ["Product", "Offer"]}', '{"@type": "ItemList"}']
    want = [blocks for blocks, _ in want]
    assert sum(map(len, want)) >= 20 and any(b.link_chars for page in want for b in page)
    assert any(b.excluded for page in want for b in page) and not all(b.excluded for page in want for b in page)
    assert [b.text for b in want[-1]] == ["deep", "after"]


def test_compiled_word_count_matches_the_reference(monkeypatch):
    texts = ["Three plain words", "毎朝、仕事に行く前に川沿いの道を歩きます。", "", " \u3000 a\u00a0b\tc ",
             "ภาษาไทย ไม่มี ช่องว่าง", "x"]
    got = [word_count(t) for t in texts]
    monkeypatch.setattr(_native, "compiled", without_compiled)
    assert got == [word_count(t) for t in texts]


def test_compiled_joined_words_collapse_white_space_as_split_and_join_do():
    texts = ["", " ", "a", "  two  words ", "tab\tnew\nline\r\x0b\x0c\x1c\x1d\x1e\x1f\x85 end", "ascii\x1c\x1d\x1e\x1f\x0b\x0c\r end\x7f", "\u3000全角\u3000空白\u2028",
             "nbsp\u00a0zero\u200bwidth", "\ud800 lone surrogate \U0001F600 emoji"]
    texts += warc_pages(SAMPLE_WARC, limit=5)
    module = _native.compiled("html")
    for text in texts:
        assert module.joined_words(text) == " ".join(text.split()), text


BROKEN_TEXTS = ["", "\x00", "one line", "Title\x00Authors, and more\x00venue", "track attendance,\x00simplify pay",
                "  a \x00 \x00\x00 B c\x00d", "x\x00\u00e9t\u00e9 \x00\u00c9t\u00e9\x00\u01c5dz", "tab\tnew\nline\x00 \u3000",
                "def f():\n    return 1\x00\n\n  # indented\t\n", "\x00\n \n\x00", "\u00a0lead\x00ing\u2028sep"]


def test_compiled_break_lines_and_block_text_write_what_the_reference_writes():
    """The compiled block text (a block's parts with br marks and written spaces) gives parse.py's text and lines:
    edge cases, preformatted or not, and every text run of the sample WARC's pages cut into parts at its spaces."""
    module = _native.compiled("html")
    for text in BROKEN_TEXTS:
        for preformatted in (False, True):
            assert module.break_lines(text, preformatted, BREAK) == parse.break_lines(text, preformatted), (text, preformatted)
    cases = [(text.split(" "), spaces) for text in BROKEN_TEXTS for spaces in (None, [1], [1, 2], [])]
    cases += [(html.replace("<", "\x00").split(" ")[:200], [3, 5, 40]) for html in warc_pages(SAMPLE_WARC, limit=5)]
    for parts, spaces in cases:
        spaces = [i for i in spaces if i < len(parts)] if spaces else spaces
        for preformatted in (False, True):
            want = parse.block_text(parts, spaces, preformatted)
            assert module.block_text(parts, spaces, preformatted, BREAK) == want, (parts, spaces)
            assert isinstance(want[1], tuple)


def test_compiled_lm_line_matches_the_normalisation_on_real_sentences():
    """The compiled tokenizer (perplexity's fast path) gives normalize_for_lm's line and token count."""
    texts = ["Ünïcödé ＡＢＣ 12.5% — ½ café_au_lait!", "東京タワーは333メートル。서울 x²", "İstanbul ǅ ß ﬁ \u0663\u0664 a\u200bb",
             "  \t\n", "", "tab\tseparated\ncells, and __under__ scores", "\ud800 lone surrogate"]
    texts += [s for html in warc_pages(SAMPLE_WARC) for s in html.split("<")][:5000]
    texts += [f"{c}{pattern}{c}" for c in map(chr, range(128)) for pattern in ("", "x", "Ab9_", " Z ", "\u00e9")]
    module = _native.compiled("text")
    for text in texts:
        tokens = lm_tokens(text)
        assert module.lm_line(text) == (" ".join(tokens), len(tokens)), text


def test_compiled_nesting_depth_scans_tags_as_the_reference_does(monkeypatch):
    """The depth guard's compiled scan gives the regular expression's estimate on edge cases, on real
    pages and on pages cut anywhere, at every stop."""
    from pipeline.steps import extractors

    edge = ["", "<", "</", "<a", "</a", "< a>", "</ a>", "<1a>", "<!-- <b> -->", "<a1b2><x></x>", "<DIV><Div></div>",
            "<p><p><li><td><colgroup><colgroups>", "<br/><img><wbr>" * 3, "<div>" * 40 + "</div>" * 41,
            "<a<b<c", "<//a>", "</1>", "<é><ß>" * 30, "<div>é<span>中" * 25]
    edge += ["".join(f"<{name}>" for name in sorted(extractors.FLAT_TAGS)) * 3 + "<div>",  # the same flat tags
             "".join(f"<{name.upper()}x>" for name in sorted(extractors.FLAT_TAGS))]
    pages = warc_pages(SAMPLE_WARC) + warc_pages(bench_file("warc", "bench-dev.warc.gz"), limit=200)
    texts = edge + pages + [html[: len(html) // 3] for html in pages[:20]]
    module = _native.compiled("html")
    assert module is not None
    scan = module.DepthScan(extractors.FLAT_TAGS)
    for stop in (0, 5, 30, 220):
        got = [scan.depth(text, stop) for text in texts]
        assert got == [extractors.nesting_depth(text, stop) for text in texts]  # the stage's own call
        with monkeypatch.context() as patch:
            patch.setattr(_native, "compiled", without_compiled)
            assert got == [extractors.nesting_depth(text, stop) for text in texts]
    assert max(got) > 30  # real pages nest: the scan is compared on depths that matter


def test_compiled_format_character_scan_answers_as_the_regex_class(monkeypatch):
    """``visible_lines``' test for format characters: the compiled scan of FORMAT_CHARACTERS' ranges agrees with
    the regular expression's class on every code point, alone and inside text of each string width."""
    from pipeline import document

    scan = document._format_scan()
    assert scan is not None
    every = [chr(c) for c in range(0x110000)]
    assert [scan(c) for c in every] == [document._FORMAT.search(c) is not None for c in every]
    found = [c for c in every if scan(c)]
    assert len(found) > 150 and "\u00ad" in found and "\U000e007f" in found and "\u200a" not in found
    texts = ["", "plain ascii", "caf\u00e9", "caf\u00e9\u00ad", "\u4e2d\u6587\u200b", "\u4e2d\u6587", "\U0001f600 x",
             "\U0001f600\U000e0020", *(html[:3000] for html in warc_pages(SAMPLE_WARC))]
    got = [document.has_format_character(text) for text in texts]
    with monkeypatch.context() as patch:
        patch.setattr(document, "_format_scan", lambda: None)
        assert got == [document.has_format_character(text) for text in texts]
    assert got[:8] == [False, False, False, True, True, False, False, True]


@functools.cache
def real_page_texts() -> tuple[str, ...]:
    """The visible text (resiliparse, no main-content selection) of every HTML page of the real WARCs."""
    from resiliparse.extract.html2text import extract_plain_text

    return tuple(extract_plain_text(html) for path in REAL_WARCS for html in warc_pages(path))


def test_compiled_corpus_normalisation_agrees_with_the_reference_on_every_character_and_real_pages():
    """The corpus stages' normaliser (``Normalizer``): the same lines and texts as the regular expressions
    of normalize.py for every code point (inside a word, repeated, around line breaks) and for the visible text
    of the real WARCs' pages, CJK and other scripts among them."""
    from pipeline.corpus import normalize

    normalizer = normalize._compiled()
    assert normalizer is not None
    texts = ["", "\n", "\n\n x \n", "Héllo, WORLD 1984!!\n\n  --- \n😀x𝟗y ١٢\tΟΔΟΣ\x1cend\u00a0 ", *real_page_texts()]
    texts += [f"a{c}b {c}{c}\n{c}x" for c in map(chr, range(0x110000)) if not 0xD800 <= ord(c) < 0xE000]
    assert len(texts) > 0x110000 - 0x800
    for text in texts:
        reference = normalize._reference_lines(text)
        assert normalizer.lines(text) == reference, repr(text[:80])
        assert normalizer.text(text) == "\n".join(line for line in reference if line), repr(text[:80])
    assert normalize.normalized_lines("x \u0660.A\n") == ["x 0 a", ""]


def test_compiled_quality_signals_agree_with_the_reference_on_real_pages_and_edge_cases():
    """The corpus's quality signals (``SignalCounter``): the same values as signals.py's Python for the
    visible text of the real WARCs' pages and for edge cases of every rule, with and without stop words, at
    several n-gram lengths (1 word up to longer than the text)."""
    from pipeline.corpus import signals

    counter = signals._compiled()
    assert counter is not None
    edge = ["", "\n", "a", "word word", "a b a b a b", "Done.\u00a0\nDone. \r\nYes!\u2028\n— item\n(The) -- end",
            "...\n....\n…\n#a##\n. . .\n..", "x.\u2028\u2028\n x…\u2029 \n  • b\n\t-c\n»", "ΟΔΟΣ İstanbul «the» 'and' (of)",
            "a\x1cb the\x1dof\u3000and\u2000or", "(((the))) ((", "😀the😀 𝟗 \U0001d400and"]
    compared = 0
    for text in [*edge, *real_page_texts()]:
        for language in ("en", "de", "ja", "xx"):
            stop = signals.stop_words(language)
            for n in (1, 2, 13, 200):
                assert counter.signals(text, stop, n) == signals._reference_signals(text, stop, n), (repr(text[:80]), n)
                compared += 1
    assert compared > 1000
    values = dict(zip([name for name, _ in signals.SIGNAL_COLUMNS], signals.document_signals("the cat the cat the cat!", "en", 2)))
    # "the cat" twice and "cat the" twice among 5 bigrams ("the cat!" is another), "the" three times; a terminal mark
    assert values["q_duplicate_ngrams"] == 2 / 5 and values["q_stop_words"] == 3 and values["q_punctuation_lines"] == 1.0


def test_the_built_parts_are_the_parts_of_this_version():
    """Every .pyx of the package is a part, built (make setup) from this VERSION, and loads."""
    import importlib

    sources = sorted(path.stem for path in Path(_native.__file__).parent.glob("*.pyx"))
    assert sources == sorted(_native.PARTS)
    for part in _native.PARTS:
        assert importlib.import_module(f"pipeline._native.{part}").VERSION == _native.VERSION, part
        assert _native.compiled(part) is not None and _native.built_file(part) is not None
    assert _native.unavailable() == {}


@pytest.fixture
def fresh_parts(monkeypatch):
    """``_native.compiled`` asked afresh (and afterwards again), with no part yet found unavailable."""
    _native.compiled.cache_clear()
    monkeypatch.setattr(_native, "_UNAVAILABLE", {})
    yield
    _native.compiled.cache_clear()


@pytest.mark.slow
def test_parts_of_another_version_run_the_reference_said_once_and_counted(fresh_parts, monkeypatch, tmp_path, caplog):
    """Parts built from other source (here: the facade's VERSION moved on) are refused: the sample runs on the Python
    references with the golden rows and stats, each part is named once in the log, and the split counts each."""
    import json

    from golden_digest import GOLDEN_FILE, sample_run

    monkeypatch.setattr(_native, "VERSION", _native.VERSION + 1)
    digest = json.loads(json.dumps(sample_run(SAMPLE_WARC, tmp_path), sort_keys=True))
    golden = json.loads(GOLDEN_FILE.read_text(encoding="utf-8"))
    for part in ("data", "dropped", "sentences"):
        assert digest[part] == golden[part]
    assert digest["stats"].pop("native") == {"stale": {"html": 1, "text": 1, "trees": 1}}
    assert digest["stats"] == golden["stats"]
    said = [r.getMessage() for r in caplog.records if "compiled" in r.getMessage()]
    assert len(said) == 3 and all("stale" in line and "Python reference" in line for line in said)


def test_a_part_that_is_not_built_is_missing(fresh_parts, monkeypatch):
    import importlib

    real = importlib.import_module
    monkeypatch.setattr(importlib, "import_module",
                        lambda name, *a: (_ for _ in ()).throw(ImportError("no module")) if name.endswith(".trees")
                        else real(name, *a))
    assert _native.compiled("trees") is None and _native.compiled("html") is not None
    assert _native.unavailable() == {"trees": "missing"}


def test_the_resiliparse_stage_reuses_the_block_stage_main_content_pass(monkeypatch):
    from resiliparse.parse.html import HTMLTree

    from pipeline.steps.extractors import ResiliparseExtractor

    settings = load_settings(None, [])
    html = warc_pages(SAMPLE_WARC, limit=1)[0]
    expected = ResiliparseExtractor(settings.extract).extract(html + " ")  # another page: parsed afresh
    blocks_stage = BlocksExtractor(settings.extract, settings.langid)
    blocks_stage.extract(html)
    parses = []
    real_parse = HTMLTree.parse
    monkeypatch.setattr(HTMLTree, "parse", lambda *a: parses.append(1) or real_parse(*a))
    assert ResiliparseExtractor(settings.extract).extract(html) == blocks_stage.primary == expected
    assert parses == []  # the same page, the same options: no second parse
    ResiliparseExtractor(settings.extract, main_content=False).extract(html)
    assert parses == [1]  # other options: parsed


def reference(monkeypatch, function, *args):
    """``function(*args)`` computed by the pure-Python reference code."""
    with monkeypatch.context() as patch:
        patch.setattr(_native, "compiled", without_compiled)
        return function(*args)


@pytest.mark.parametrize("n", [*range(0, 40), 127, 128, 129, 255, 256, 257, 1000, 4099, 20_001])
def test_compiled_pairwise_sums_add_as_numpy_does(n):
    """page_rows, tree_raw and context_rows sum as ndarray.sum does (pairwise, 8 accumulators)."""
    rng = np.random.default_rng(n)
    values = rng.standard_normal(n) * 10.0 ** rng.integers(-8, 9, n)
    module = _native.compiled("trees")
    assert module.pairwise_sum(values) == values.sum()
    values32 = values.astype(np.float32)
    got = module.pairwise_sum32(values32)
    assert got.dtype == np.float32 and got == values32.sum()


def block(text: str, element: int, tag: str = "p", parent: int = 0, link: int = 0, attrs: tuple = ()) -> Block:
    return Block(text, element, tag, ("div", "body"), attrs, link, 2, parent)


EDGE_PAGES = [
    [block("Only one block here", 1)],
    [block("two", 1, "li"), block("blocks, the second not in the primary text.", 2)],
    # link density exactly at the 0.01 and 0.3 edges; word counts at the word bins' edges
    [block("x" * 100, 1, link=1), block("abcdefghij", 2, link=3), block("a b", 3), block("a b c d e", 4),
     block(" ".join(["w"] * 13), 5, "td", 4), block(" ".join(["w"] * 13), 6, "td", 4), block("毎朝、仕事に行く", 7)],
    # in the primary text out of order, repeated, and made of the primary text's 4-grams but not in it
    [block("The third sentence.", 1), block("The first sentence here.", 2), block("The first sentence here.", 3),
     block("sentence here. The third", 4), block("first sentence", 5), block("here. The first sentence.", 6)],
    [block(f"Item number {i % 4} of a long list", i, "li", 1, attrs=("0:item", "1:list")) for i in range(2, 160)],
]
EDGE_PRIMARY = "The first sentence here. The third sentence.\nOnly one block here\na b c d e"


@pytest.mark.parametrize("page", EDGE_PAGES)
@pytest.mark.parametrize("scored", ["none", "all", "some", "ties"])
def test_compiled_page_features_agree_with_the_reference_on_edge_cases(page, scored, monkeypatch):
    n = len(page)
    log_ppl = {"none": None, "all": np.linspace(1.5, 3.0, n), "ties": np.full(n, 2.25),
               "some": np.where(np.arange(n) % 3 == 0, np.nan, np.arange(n) % 5 * 0.4)}[scored]
    X, hashed = featurize(page, EDGE_PRIMARY, log_ppl, 0.5)
    X_ref, hashed_ref = reference(monkeypatch, featurize, page, EDGE_PRIMARY, log_ppl, 0.5)
    np.testing.assert_array_equal(X, X_ref)
    assert hashed == hashed_ref
    prob = block_model().first_stage(X, hashed)
    np.testing.assert_array_equal(prob, reference(monkeypatch, block_model().first_stage, X_ref, hashed_ref))
    np.testing.assert_array_equal(context_features(prob, X), reference(monkeypatch, context_features, prob, X))


@pytest.mark.parametrize("n", [1, 2, 3, 8, 25, 200])
def test_compiled_context_features_and_trees_agree_with_the_reference(n, monkeypatch):
    rng = np.random.default_rng(n)
    prob = rng.choice([0.0, 1e-9, 0.2, 0.5, 0.5000001, 0.9, 1.0 - 1e-9, 1.0], n)
    X = (rng.random((n, 71)) * 3).astype(np.float32)
    got = context_features(prob, X)
    np.testing.assert_array_equal(got, reference(monkeypatch, context_features, prob, X))
    trees = block_model().context_trees
    np.testing.assert_array_equal(trees.raw(got), reference(monkeypatch, trees.raw, got))


@pytest.mark.parametrize("compiled", [True, False])
def test_the_reused_parser_reads_every_page_as_a_fresh_one_would(compiled, monkeypatch):
    """parse_blocks keeps one parser and target per thread: a page after an unreadable or unfinished
    one gets the blocks a new parser gives it."""
    from lxml import etree

    module = _native.compiled("html")
    if not compiled:
        monkeypatch.setattr(_native, "compiled", without_compiled)

    def fresh(html: str) -> list[Block]:
        target = compiled_target(module) if compiled else _BlockTarget()
        try:
            return etree.fromstring(html.encode("utf-8", "replace"), _html_parser(target))
        except etree.XMLSyntaxError:
            return target.close()

    pages = warc_pages(SAMPLE_WARC, limit=6)
    documents = ["", "<p>unclosed <b>bold <div>and a div", "\x00\x01", pages[0], "<body><p>a</p></body></html><p>b</p>",
                 "   ", *pages[1:]]
    for html in documents * 2:
        assert parse_blocks(html) == fresh(html)


def tag_soup(count: int, seed: int = 0) -> list[str]:
    """Seeded random tag soup: start and end tags of block, inline, skipped and unknown elements with class,
    id, role, aria-modal and other attributes (quoted, bare, valueless, duplicated), text with entities, white space and
    non-ASCII characters, comments, CDATA, PIs, doctypes and broken markup."""
    import random

    rng = random.Random(seed)
    tags = ("html head body title script style div p span a b br li ul table tr td th h1 pre code nav form "
            "noscript select option svg template section iframe math font x-custom my:tag footer dialog article "
            "meta").split()
    texts = ["hello", " ", "\n\t", "é€😀", "&amp;", "&nbsp;", "&#x1F600;", "&bogus;", "a\u00a0b", "\u3000", "<", "&",
             "\x00", "\r\n", "two words", "\u200b"]
    other = ["<!-- c -->", "<![CDATA[cd]]>", "<?pi x?>", "<!DOCTYPE html>", "<br/>", "<p/>", "</", "<!", "<a href='x'"]
    pages = []
    for _ in range(count):
        parts = []
        for _ in range(rng.randint(1, 60)):
            r, tag = rng.random(), rng.choice(tags)
            if r < 0.35:
                attrs = "".join(rng.choice([f' {n}="{v}"', f" {n}={v.replace(' ', '')}", f" {n}"])
                                for n, v in ((rng.choice(["class", "id", "CLASS", "href", "xml:id", "role", "aria-modal",
                                                          "data-x", "aria-label", "itemtype", "name", "property",
                                                          "content", "type"]),
                                              rng.choice(["", "main content", "a&amp;b", "é", "nav-bar", "dialog", "true",
                                                          "https://x", "http:y", "viewport", "og:type",
                                                          "application/ld+json", '{"@type": "Product"}']))
                                             for _ in range(rng.randint(0, 3))))
                parts.append(f"<{tag}{attrs}>")
            elif r < 0.6:
                parts.append(f"</{tag}>")
            else:
                parts.append(rng.choice(texts) if r < 0.9 else rng.choice(other))
        pages.append("".join(parts))
    return pages


def test_the_compiled_parser_gets_the_events_lxml_delivers(monkeypatch):
    """``parse_html`` drives lxml's own libxml2 with the module's callbacks: the blocks equal those of the same
    compiled target fed by lxml's parser, on the edge cases, real pages and tag soup; a callback's exception stops the
    parse and is raised, and the next page reads as a fresh one."""
    from lxml import etree

    module = _native.compiled("html")
    assert module.sax_available(), "libxml2's functions were not found in lxml.etree"

    def via_lxml(data: bytes) -> list[Block]:
        target = compiled_target(module)
        try:
            return etree.fromstring(data, _html_parser(target))
        except etree.XMLSyntaxError:
            return target.close()

    def via_lxml_markup(data: bytes) -> Markup:
        target = compiled_target(module)
        try:
            etree.fromstring(data, _html_parser(target))
        except etree.XMLSyntaxError:
            target.close()
        return target.markup

    target = compiled_target(module)
    documents = [html.encode("utf-8", "replace") for html in EDGE_HTML + warc_pages(SAMPLE_WARC) + tag_soup(400)]
    assert all(module.parse_html(data, target) == via_lxml(data) and target.markup == via_lxml_markup(data)
               for data in documents)
    assert sum(module.parse_html(data, target) is not None and target.markup.https_links for data in documents) > 10
    assert sum(len(module.parse_html(data, target)) for data in documents) > 500

    def failing(class_id):
        raise ValueError("class and id tokens failed")

    with monkeypatch.context() as patch:
        patch.setattr(parse, "class_id_tokens", failing)
        broken = compiled_target(module)
    with pytest.raises(ValueError, match="class and id tokens failed"):  # a class not seen, not ASCII: parse.py's
        module.parse_html('<body><div class="not-seen-before-fäiling"><p>a</p></div></body>'.encode(), broken)
    assert module.parse_html(documents[-1], target) == via_lxml(documents[-1])
    calls = []
    with monkeypatch.context() as patch:
        patch.setattr(module, "parse_html", lambda *a: calls.append(1) or [])
        assert parse_blocks("<body><p>x</p></body>") == [] and calls == [1]  # the stage's parse is this one

    class WithoutLibxml2Symbols:  # an lxml that hides libxml2: the stage reads lxml's events into the same target
        def __getattr__(self, name):
            return getattr(module, name)

        def sax_available(self) -> bool:
            return False

    without = WithoutLibxml2Symbols()
    monkeypatch.setattr(_native, "compiled", lambda part: without if part == "html" else None)
    monkeypatch.setattr(module, "parse_html", lambda *a: pytest.fail("parse_html called without libxml2"))
    assert [parse_blocks(html) for html in EDGE_HTML] == [via_lxml(data) for data in documents[:len(EDGE_HTML)]]
