"""The compiled modules (``pipeline._native``), the one implementation of the block parse, its features, the tree
ensembles and the LM tokens, and of the corpus's text kernels: what they compute on edge cases and real pages, and
that the modules built are those of this version (a missing or stale one is an error). The block stage's output on the
real pages of tests/data is frozen in tests/test_block_fixtures.py."""

from __future__ import annotations

import functools
from pathlib import Path

import numpy as np
import pytest
import corpus_oracles
from block_fixtures import warc_pages
from conftest import REAL_WARCS, SAMPLE_WARC, bench_file

from pipeline import _native
from pipeline._native.columns import COLUMN, CONTEXT, context_names, dense_names
from pipeline.config import load_settings
from pipeline.steps.blocks.features import context_features, featurize, word_count
from pipeline.steps.blocks.model import block_model
from pipeline.steps.blocks.parse import BREAK, Block, block_element, parse_blocks, parse_page, parse_tree
from pipeline.steps.blocks.extractor import BlocksExtractor
from pipeline.steps.extractors import nesting_depth

html = _native.compiled("html")


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


def test_the_parse_reads_the_edge_cases_as_a_reader_sees_them():
    """Pages built to differ: white space of every kind, link text, skipped subtrees, class/id attributes, parts never
    kept, several top-level elements, deep nesting, the markup the page type reads."""
    got = [parse_page(html, nodes=True) for html in EDGE_HTML]
    markup = got[-2][1]
    assert (markup.https_links, markup.http_links, markup.data_attributes, markup.aria_attributes) == (2, 1, 3, 2)
    assert markup.viewport and markup.og_types == ["Product.Item"]
    assert markup.itemtypes == ["https://schema.org/Recipe"]
    assert markup.json_ld == ['{"@type": ["Product", "Offer"]}', '{"@type": "ItemList"}']
    pages = [blocks for blocks, _ in got]
    assert sum(map(len, pages)) >= 20 and any(b.link_chars for page in pages for b in page)
    assert [b.text for b in pages[-1]] == ["deep", "after"]
    skipped = pages[9]  # text after a block-level child starts a new run; skipped subtrees are not read
    assert [(b.text, b.tag) for b in skipped] == [("before", "div"), ("child", "p"), ("after", "div")]
    excluded = {b.text: b.excluded for b in pages[10]}  # footer, dialog, roles, aria-modal; a role on an inline one
    assert excluded == {"f": True, "a": False, "d": True, "n": True, "m": False, "r": False, "v": False, "w": False,
                        "x": True, "y": False, "z": False}
    assert [b.text for b in pages[12] if b.excluded] == ["page", "in article", "in a dialog", "unclosed"]
    classes = {b.text: b.attr_tokens for b in pages[7]}
    assert classes["deep"][:3] == ("0:id", "1:col", "1:md") and classes["tail"] == ("0:tail",)
    written = {b.text: b.written for page in pages for b in page}
    assert written["XSS Py. (x) a c 中文 ab"] == "XS S Py. (x) a c 中文 ab" and written["xy"] == "x y"


def test_the_fallback_text_of_video_and_audio_is_not_read():
    """What a page writes inside `video` and `audio` is shown only by a browser that cannot play them."""
    blocks, _ = parse_page('<body><p>Watch the demo.</p><video src="d.mp4"><source src="d.webm"><p>Your browser does '
                           'not support the video tag.</p></video><p>Or listen: <audio src="a.mp3">No audio support.'
                           '</audio>the talk.</p></body>', nodes=True)
    assert [b.text for b in blocks] == ["Watch the demo.", "Or listen: the talk."]


def test_a_headings_permalink_is_read_but_not_written():
    """Sphinx's and MkDocs' permalinks (`<a class="headerlink">¶</a>`) end a heading's or a signature's text: the
    features read them (the classifier was fitted on them), the written lines leave them out, and a pilcrow inside a
    line or in preformatted code stays. rustdoc's section sign ends a heading or starts it (from docs.rs and
    doc.rust-lang.org); a section sign that cites a paragraph stays."""
    blocks, _ = parse_page('<body><h1>Monitoring Guide<a class="headerlink" href="#m">¶</a></h1>'
                           '<dl><dt>celery.shell(args) <a class="headerlink" href="#s">\u00b6</a></dt>'
                           '<dd>Starts a shell.<br>See below.</dd></dl><p>Section \u00b6 3 of the act.</p>'
                           '<p>Line one<br>Line two<a href="#x">¶</a></p><pre>x = "¶"\ny = 1 ¶</pre>'
                           '<h2>Recipes<a class="headerlink">Â¶</a></h2></body>',
                           nodes=True)
    assert [b.text for b in blocks] == ["Monitoring Guide¶", "celery.shell(args) ¶", "Starts a shell. See below.",
                                        "Section ¶ 3 of the act.", "Line one Line two¶", 'x = "¶" y = 1 ¶', "RecipesÂ¶"]
    assert [b.written for b in blocks] == ["Monitoring Guide", "celery.shell(args)", "Starts a shell. See below.",
                                           "Section ¶ 3 of the act.", "Line one Line two", 'x = "¶" y = 1 ¶',
                                           "Recipes"]  # `Â¶`: the pilcrow of a page whose text was encoded twice
    assert blocks[4].lines == ("Line one", "Line two")
    blocks, _ = parse_page('<body><h2 id="variants">Variants<a href="#variants" class="anchor">§</a></h2>'
                           '<h2 id="a-tour"><a class="doc-anchor" href="#a-tour">§</a>A Tour of Tokio</h2>'
                           '<p>1.0.0 · <a class="src" href="x.rs.html">Source</a><a href="#m" class="anchor">§</a></p>'
                           '<p>§ 242 BGB und §3 gelten.</p><p>§</p><p>Siehe §</p></body>', nodes=True)
    assert [b.text for b in blocks] == ["Variants§", "§A Tour of Tokio", "1.0.0 · Source§", "§ 242 BGB und §3 gelten.",
                                        "§", "Siehe §"]
    assert [b.written for b in blocks] == ["Variants", "A Tour of Tokio", "", "§ 242 BGB und §3 gelten.",
                                           "§", "Siehe"]  # the source link: test_rustdocs_source_links_are_not_written


def test_rustdocs_source_links_are_not_written():
    """rustdoc's link to an item's source, on its own before the item's heading (after the version the item is stable
    since, and before a permalink), from doc.rust-lang.org's `Result`: read, not written. The word as a caption, or a
    link in a sentence, stays."""
    blocks, _ = parse_page(
        '<body><section class="method"><span class="rightside"><span class="since">1.0.0 (const: 1.48.0)</span> · '
        '<a class="src" href="r.rs.html#593">Source</a></span><h4>pub const fn is_ok(&amp;self) -&gt; bool</h4>'
        '</section><section class="method"><span class="rightside"><span class="since">1.70.0 (const: '
        '<a href="https://github.com/rust-lang/rust/issues/1">unstable</a>)</span> · <a class="src">Source</a></span>'
        '<h4>pub fn is_ok_and</h4></section><section class="impl"><a class="src rightside" href="r.rs.html">Source</a>'
        '<a href="#impl" class="anchor">§</a><h3>impl Clone for Result</h3></section>'
        '<p>Source</p><p><a href="https://example.org">Source</a>: the annual report.</p>'
        '<p>Read the <a href="r.rs.html">Source</a></p></body>')
    assert [b.text for b in blocks] == [
        "1.0.0 (const: 1.48.0) · Source", "pub const fn is_ok(&self) -> bool", "1.70.0 (const: unstable) · Source",
        "pub fn is_ok_and", "Source§", "impl Clone for Result", "Source", "Source: the annual report.",
        "Read the Source"]
    assert [b.written for b in blocks] == [
        "", "pub const fn is_ok(&self) -> bool", "", "pub fn is_ok_and", "", "impl Clone for Result", "Source",
        "Source: the annual report.", "Read the Source"]


def test_mediawikis_edit_links_are_not_read():
    """MediaWiki's edit link after a section's heading (an.wikipedia.org's, from cc-genuine, and the older
    `editsection`) is not part of the page's text; other spans of its heading, and a class that only starts the same,
    are."""
    blocks, _ = parse_page(
        '<body><div class="mw-heading mw-heading2"><h2 id="Historia">Historia</h2><span class="mw-editsection">'
        '<span class="mw-editsection-bracket">[</span><a href="/w/index.php?title=Escopete&amp;action=edit">editar'
        '</a> | <a>modificar o codigo</a><span class="mw-editsection-bracket">]</span></span></div>'
        '<h2><span class="editsection">[<a href="?action=edit">edit</a>]</span> <span class="mw-headline">'
        'History</span></h2><p>Escopete ye citato <span class="mw-editsection-like">en 1578</span>.</p></body>')
    assert [b.text for b in blocks] == ["Historia", "History", "Escopete ye citato en 1578."]


def test_a_reviews_widgets_seo_metadata_is_not_read():
    """Bazaarvoice's SEO metadata lists (`BVSEOSDK_meta`, as on yeti.com's product pages in WCXB; `BVSEO_meta`, as on
    bose.ae's) are not part of the page's text; the reviews the same widget renders are, and so are the text around a
    list and an element whose id only starts the same."""
    blocks, _ = parse_page(
        '<body><div class="ratings"><div id="data-bv-show" style="display:none"><ul id="BVSEOSDK_meta" '
        'style="display: none !important;"><li>bvseo_sdk, dw_cartridge, 18.2.0, p_sdk_3.2.0</li><li>CLOUD, '
        'getAggregateRating, 0ms</li><li>reviews, product</li><li>bvseo-msg:  SEO SDK is disabled. Enable by setting '
        'seo.sdk.enabled to true.;</li></ul></div></div><div id="bvseo-reviewsSection"><div class="bvseo-review">'
        'Rated 5 out of 5 by <span>Martin</span> Amazing headphones</div></div><p>Before<ul id=BVSEO_meta '
        'style="display:none!important"><li>y_2022, m_11, d_20, h_21</li></ul>after</p><ul id="BVSEO_metadata">'
        '<li>a list of its own</li></ul></body>')
    assert [b.text for b in blocks] == ["Rated 5 out of 5 by Martin Amazing headphones", "Before", "after",
                                        "a list of its own"]


def test_a_menu_the_parser_leaves_open_does_not_hide_the_main_element():
    """libxml2 ignores `</button>` and `</nav>` while a `div` inside is open, and nests the rest of the page in the menu
    (investopedia.com's menu button leaves one `div` unclosed; WCXB has 9 such pages). The page's main element is read
    from there on, as a browser shows it, with the page's footer still a part never kept; the menus' own text is not
    read; without a main element the menu still holds the page."""
    blocks, _ = parse_page(
        '<body><header><button class="menu"><div class="inner">Menu<div></button></div><div>Logo</div></header>'
        '<main><h1>How to start a garden</h1><p>Pick a sunny spot.</p></main><footer><p>About us</p></footer></body>')
    assert [(b.text, b.excluded) for b in blocks] == [("How to start a garden", False), ("Pick a sunny spot.", False),
                                                      ("About us", True)]
    blocks, _ = parse_page('<body><nav><ul><li><a href="/">Home</a><li><div class="dropdown"><a href="/shop">Shop</a>'
                           '</li></ul></nav><main><p>The article.</p></main></body>')
    assert [b.text for b in blocks] == ["The article."]
    blocks, _ = parse_page('<body><nav><a href="/">Home</a></nav><button>Buy</button><main><p>The article.</p></main>'
                           '</body>')
    assert [b.text for b in blocks] == ["The article."]
    blocks, _ = parse_page('<body><nav><ul><li><div class="dropdown"><a href="/shop">Shop</a></li></ul></nav>'
                           '<div><p>No main element.</p></div></body>')
    assert blocks == []


def test_tag_soup_parses_into_blocks_in_document_order():
    """Seeded tag soup (broken markup, every kind of attribute and text): each page parses; its blocks are non-empty
    texts with their white space collapsed, each after its parent element."""
    blocks_seen = 0
    for page in tag_soup(400):
        blocks, markup = parse_page(page, nodes=True)
        assert all(b.parent < b.element < markup.elements and b.depth >= 0 for b in blocks)
        assert all(b.text and b.text == " ".join(b.text.split()) for b in blocks)
        blocks_seen += len(blocks)
    assert blocks_seen > 500


def test_the_reused_target_reads_every_page_as_a_fresh_one_would():
    """parse_page keeps one target per thread: a page after an unreadable, unfinished or failed one gets the blocks and
    markup a new target gives it."""
    pages = warc_pages(SAMPLE_WARC)[:6]
    documents = ["", "<p>unclosed <b>bold <div>and a div", "\x00\x01", pages[0], "<body><p>a</p></body></html><p>b</p>",
                 "   ", *pages[1:], *tag_soup(50)]
    for page in documents * 2:
        fresh = html.BlockTarget()
        fresh.nodes = True
        assert parse_page(page, nodes=True) == (html.parse_html(page.encode("utf-8", "replace"), fresh), fresh.markup)


def test_word_count_counts_unspaced_scripts_by_two_characters():
    texts = ["Three plain words", "毎朝、仕事に行く前に川沿いの道を歩きます。", "", " \u3000 a\u00a0b\tc ",
             "ภาษาไทย ไม่มี ช่องว่าง", "x"]
    assert [word_count(t) for t in texts] == [3, 10, 1, 3, 13, 1]


def test_joined_words_collapse_white_space_as_split_and_join_do():
    texts = ["", " ", "a", "  two  words ", "tab\tnew\nline\r\x0b\x0c\x1c\x1d\x1e\x1f\x85 end",
             "ascii\x1c\x1d\x1e\x1f\x0b\x0c\r end\x7f", "\u3000全角\u3000空白\u2028", "nbsp\u00a0zero\u200bwidth",
             "\ud800 lone surrogate \U0001F600 emoji"]
    texts += warc_pages(SAMPLE_WARC)[:5]
    for text in texts:
        assert html.joined_words(text) == " ".join(text.split()), text


@pytest.mark.parametrize("text, preformatted, want", [
    ("Title\x00Authors, and more\x00venue", False, ("Title Authors, and more venue", ("Title", "Authors, and more venue"))),
    ("track attendance,\x00simplify pay", False, ("track attendance, simplify pay", ())),  # a br inside a sentence
    ("  a \x00 \x00\x00 B c\x00d", False, ("a B c d", ("a", "B c d"))),
    ("def f():\n    return 1\x00\n\n  # indented\t\n", True,
     ("def f(): return 1 # indented", ("def f():", "    return 1", "  # indented"))),
    ("def f():\n    return 1\x00\n\n  # indented\t\n", False, ("def f(): return 1 # indented", ("def f(): return 1", "# indented"))),
    ("\x00\n \n\x00", True, ("", ())),
])
def test_break_lines_gives_the_text_the_features_read_and_the_lines_a_reader_sees(text, preformatted, want):
    assert BREAK == "\x00"
    assert html.break_lines(text, preformatted) == want


def test_block_text_writes_a_space_where_the_markup_runs_words_together():
    assert html.block_text(["Part", "Lifetime"], [1], False) == ("PartLifetime", ("Part Lifetime",))
    assert html.block_text(["a\x00b", "c"], [1], False) == ("a bc", ("a b c",))
    assert html.block_text(["one ", "two"], None, False) == ("one two", ())


@pytest.mark.parametrize("before, after, junction, want", [
    ("Part", "Lifetime", True, True), ("was", "$540", True, True), ("a2", "B", True, True), ("n", "2", True, True),
    ("cl", "és", True, False), ("NA", "SA", True, False), ("json.", "JSONDecoder", True, False),
    ("XS", "S", False, True), ("Python", ".", False, False), ("中", "文", False, False), ("a ", "b", False, False),
])
def test_separates_tells_where_a_reader_sees_a_space(before, after, junction, want):
    assert html.separates(before, after, junction) is want


@pytest.mark.parametrize("page, stops", [
    ("", (0, 0, 0)), ("<", (0, 0, 0)), ("<a", (1, 0, 0)), ("<div>" * 40 + "</div>" * 41, (1, 6, 31)),
    ("<p><p><li><td><colgroup><colgroups>", (1, 1, 0)), ("<br/><img><wbr>" * 3, (0, 0, 0)),
    ("<DIV><Div></div>", (1, 0, 0)), ("<1a>", (0, 0, 0)), ("</ a>", (0, 0, 0)), ("<é><ß>" * 30, (0, 0, 0)),
])
def test_nesting_depth_counts_open_tags_but_flat_ones_and_stops_above_the_bound(page, stops):
    assert tuple(nesting_depth(page, stop) for stop in (0, 5, 30)) == stops


def test_nesting_depth_of_real_pages_reaches_what_the_guard_guards():
    pages = warc_pages(SAMPLE_WARC) + [page for path in REAL_WARCS for page in warc_pages(path)]
    depths = [nesting_depth(page, 220) for page in pages]
    assert max(depths) > 30 and all(0 <= d <= 221 for d in depths)


def block(text: str, element: int, tag: str = "p", parent: int = 0, link: int = 0, attrs: tuple = ()) -> Block:
    return Block(text, element, tag, ("div", "body"), attrs, link, 2, parent)


PRIMARY = "The first sentence here. The third sentence.\nOnly one block here\na b c d e"
PAGE = [block("x" * 100, 1, link=1), block("abcdefghij", 2, link=3), block("a b", 3), block("a b c d e", 4),
        block(" ".join(["w"] * 13), 5, "td", 4), block(" ".join(["w"] * 13), 6, "td", 4), block("毎朝、仕事に行く", 7),
        block("The third sentence.", 8, "h2"), block("The first sentence here.", 9, "li"),
        block("third sentence here", 10), block("Only one block here", 11)]


@pytest.mark.parametrize("scored", ["none", "all", "some"])
def test_the_dense_features_say_what_the_column_table_says(scored):
    """Each column of the table, on a page built for it: words and their bins, link density at the bins' edges, the
    blocks found in the primary text (out of order, and one made of its 4-grams but not in it), the tag kinds, the
    position, the repeated structures, the perplexity and its bins, the neighbours and the window."""
    n = len(PAGE)
    log_ppl = {"none": None, "all": np.linspace(1.5, 3.0, n),
               "some": np.where(np.arange(n) % 3 == 0, np.nan, np.arange(n) % 5 * 0.4)}[scored]
    X, hashed = featurize(PAGE, PRIMARY, log_ppl, 0.5)
    col = {name: X[:, j] for name, j in COLUMN.items() if j < X.shape[1]}
    assert X.shape == (n, len(dense_names())) and X.dtype == np.float32
    np.testing.assert_array_equal(col["bias"], 1.0)
    np.testing.assert_allclose(np.expm1(col["log_words"]), [1, 1, 2, 5, 13, 13, 4, 3, 4, 3, 4], rtol=1e-6)
    np.testing.assert_allclose(col["link_density"][:2], [0.01, 0.3], rtol=1e-6)
    assert col["in_primary"].tolist() == [0, 0, 1, 1, 0, 0, 0, 1, 1, 0, 1]  # a substring of it counts
    assert col["heading"].tolist() == [0] * 7 + [1, 0, 0, 0] and col["cell"].tolist() == [0] * 4 + [1, 1] + [0] * 5
    assert col["list_item"].tolist() == [0] * 8 + [1, 0, 0] and col["ends_punct"].tolist() == [0] * 7 + [1, 1, 0, 0]
    np.testing.assert_allclose(col["position"], np.linspace(0, 1, n), rtol=1e-6)
    assert col["log_siblings"][4] == col["log_siblings"][5] == np.float32(np.log1p(1))
    for group, edges in (("words_bin", 9), ("link_bin", 5)):
        bins = X[:, [COLUMN[f"{group}{k}"] for k in range(edges)]]
        assert (bins.sum(axis=1) == 1).all()
    # the float32 density against the edges: 1/100 rounds below 0.01, 3/10 above 0.3
    assert X[0, COLUMN["link_bin0"]] == 1 and X[1, COLUMN["link_bin2"]] == 1
    ppl_bins = X[:, [COLUMN[f"ppl_bin{k}"] for k in range(7)]]
    unscored = col["no_ppl"] == 1
    assert (ppl_bins[unscored].sum(axis=1) == 0).all() and (ppl_bins[~unscored].sum(axis=1) == 1).all()
    assert (col["log_ppl"][unscored] == 0).all() and (col["page_lm"] == float(log_ppl is not None)).all()
    if scored == "all":
        np.testing.assert_allclose(col["log_ppl"], np.linspace(1.5, 3.0, n) - 0.5, rtol=1e-6)
        np.testing.assert_allclose(col["ppl_rank"], np.linspace(0, 1, n), rtol=1e-6)
    for side, offset in (("prev1", -1), ("prev2", -2), ("next1", 1), ("next2", 2)):
        for name in ("log_words", "link_density", "in_primary", "ends_punct"):
            want = np.roll(col[name], -offset)
            want[slice(n - offset, None) if offset > 0 else slice(0, -offset)] = 0.0  # past either end
            np.testing.assert_array_equal(col[f"{side}.{name}"], want, err_msg=f"{side}.{name}")
    np.testing.assert_allclose(col["win.log_words"][5], col["log_words"][2:9].mean(), rtol=1e-6)
    assert len(hashed) == n and all(row == sorted(set(row)) for row in hashed) and hashed[4] == hashed[5]


def test_the_context_features_say_what_the_context_table_says():
    prob = np.array([0.1, 0.9, 0.6, 0.2, 0.95])
    X, _ = featurize(PAGE[:5], PRIMARY)
    C = context_features(prob, X)
    col = {name: C[:, j] for j, name in enumerate(context_names())}
    assert C.shape == (5, len(CONTEXT) + 17) and list(col)[-1] == "position"
    np.testing.assert_array_equal(col["prob"], prob)
    np.testing.assert_allclose(col["logit"], np.log(prob / (1 - prob)))
    assert col["prev1"].tolist() == [0.0, 0.1, 0.9, 0.6, 0.2] and col["next2"].tolist() == [0.6, 0.2, 0.95, 0.0, 0.0]
    assert col["max_before"].tolist() == [0.1, 0.9, 0.9, 0.9, 0.95] and col["max_after"].tolist() == [0.95] * 5
    assert (col["page_kept_share"] == 0.6).all() and (col["page_max"] == 0.95).all()
    np.testing.assert_array_equal(C[:, len(CONTEXT):], X[:, COLUMN["log_words"]:COLUMN["position"] + 1])


def test_the_shipped_model_reads_the_column_table():
    model = block_model()
    assert len(model.dense) == len(dense_names(model.nodes))
    X, hashed = featurize(PAGE, PRIMARY)
    probs = model.scores(X, hashed)
    assert probs.shape == (len(PAGE),) and ((probs >= 0) & (probs <= 1)).all()


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


def test_the_format_character_scan_finds_unicodes_format_characters():
    """``visible_lines``' test for format characters: the compiled scan of FORMAT_CHARACTERS' ranges finds exactly
    Unicode's category Cf, on every code point alone and inside text of each string width."""
    import unicodedata

    from pipeline import document

    scan = document._format_scan()
    every = [chr(c) for c in range(0x110000)]
    # Unicode's format characters: category Cf in Python 3.11's unicodedata (Unicode 14)
    assert unicodedata.unidata_version == "14.0.0"
    assert [c for c in every if scan(c)] == [c for c in every if unicodedata.category(c) == "Cf"]
    texts = ["", "plain ascii", "caf\u00e9", "caf\u00e9\u00ad", "\u4e2d\u6587\u200b", "\u4e2d\u6587", "\U0001f600 x",
             "\U0001f600\U000e0020", *(html[:3000] for html in warc_pages(SAMPLE_WARC))]
    got = [document.has_format_character(text) for text in texts]
    assert got == [any(unicodedata.category(c) == "Cf" for c in text) for text in texts]
    assert got[:8] == [False, False, False, True, True, False, False, True]


@functools.cache
def real_page_texts() -> tuple[str, ...]:
    """The visible text (resiliparse, no main-content selection) of every HTML page of the real WARCs."""
    from resiliparse.extract.html2text import extract_plain_text

    return tuple(extract_plain_text(html) for path in REAL_WARCS for html in warc_pages(path))


@pytest.mark.slow  # every code point of Unicode, three ways (44 s of the fast tier)
def test_corpus_normalisation_follows_its_rule_on_every_character_and_real_pages():
    """The corpus stages' normaliser (``Normalizer``): the lines and texts that the rule written with regular
    expressions in tests/corpus_oracles.py gives, for every code point (inside a word, repeated, around line breaks) and for the visible text
    of the real WARCs' pages, CJK and other scripts among them."""
    from pipeline.corpus import normalize

    normalizer = normalize._normalizer()
    texts = ["", "\n", "\n\n x \n", "Héllo, WORLD 1984!!\n\n  --- \n😀x𝟗y ١٢\tΟΔΟΣ\x1cend\u00a0 ", *real_page_texts()]
    texts += [f"a{c}b {c}{c}\n{c}x" for c in map(chr, range(0x110000)) if not 0xD800 <= ord(c) < 0xE000]
    assert len(texts) > 0x110000 - 0x800
    for text in texts:
        reference = corpus_oracles.normalized_lines(text)
        assert normalizer.lines(text) == reference, repr(text[:80])
        assert normalizer.text(text) == "\n".join(line for line in reference if line), repr(text[:80])
    assert normalize.normalized_lines("x \u0660.A\n") == ["x 0 a", ""]


def test_quality_signals_follow_their_rules_on_real_pages_and_edge_cases():
    """The corpus's quality signals (``SignalCounter``): the values that the rules written plainly in
    tests/corpus_oracles.py give, for the visible text of the real WARCs' pages and for edge cases of every rule, with and without stop words, at
    several n-gram lengths (1 word up to longer than the text)."""
    from pipeline.corpus import signals

    counter = signals._counter()
    edge = ["", "\n", "a", "word word", "a b a b a b", "Done.\u00a0\nDone. \r\nYes!\u2028\n— item\n(The) -- end",
            "...\n....\n…\n#a##\n. . .\n..", "x.\u2028\u2028\n x…\u2029 \n  • b\n\t-c\n»", "ΟΔΟΣ İstanbul «the» 'and' (of)",
            "a\x1cb the\x1dof\u3000and\u2000or", "(((the))) ((", "😀the😀 𝟗 \U0001d400and"]
    compared = 0
    for text in [*edge, *real_page_texts()]:
        for language in ("en", "de", "ja", "xx"):
            stop = signals.stop_words(language)
            for n in (1, 2, 13, 200):
                assert counter.signals(text, stop, n) == corpus_oracles.signals(text, stop, n), (repr(text[:80]), n)
                compared += 1
    assert compared > 1000
    values = dict(zip([name for name, _ in signals.SIGNAL_COLUMNS], signals.document_signals("the cat the cat the cat!", "en", 2)))
    # "the cat" twice and "cat the" twice among 5 bigrams ("the cat!" is another), "the" three times; a terminal mark
    assert values["q_duplicate_ngrams"] == 2 / 5 and values["q_stop_words"] == 3 and values["q_punctuation_lines"] == 1.0


def test_the_built_modules_are_those_of_this_version():
    """Every .pyx of the package is a module, built (make setup) from this VERSION, and loads."""
    import importlib

    sources = sorted(path.stem for path in Path(_native.__file__).parent.glob("*.pyx"))
    assert sources == sorted(_native.PARTS)
    for part in _native.PARTS:
        assert importlib.import_module(f"pipeline._native.{part}").VERSION == _native.VERSION, part
        assert _native.compiled(part) is not None and _native.built_file(part) is not None


@pytest.fixture
def fresh_parts():
    """``_native.compiled`` asked afresh (and afterwards again)."""
    _native.compiled.cache_clear()
    yield
    _native.compiled.cache_clear()


def test_a_module_of_another_version_is_an_error(fresh_parts, monkeypatch):
    monkeypatch.setattr(_native, "VERSION", _native.VERSION + 1)
    with pytest.raises(_native.NotBuilt, match="built from version .* rebuild it"):
        _native.compiled("trees")


def test_a_module_that_is_not_built_is_an_error(fresh_parts, monkeypatch):
    import importlib

    real = importlib.import_module
    monkeypatch.setattr(importlib, "import_module",
                        lambda name, *a: (_ for _ in ()).throw(ImportError("no module")) if name.endswith(".trees")
                        else real(name, *a))
    with pytest.raises(_native.NotBuilt, match="not built"):
        _native.compiled("trees")
    assert _native.compiled("html") is html


def test_the_install_fails_where_a_module_does_not_compile():
    """setup.py declares no module optional: a compiler error fails ``pip install``."""
    from conftest import ROOT

    assert "optional=True" not in (ROOT / "setup.py").read_text(encoding="utf-8")


def test_the_resiliparse_stage_reuses_the_block_stage_main_content_pass(monkeypatch):
    """The cascade's resiliparse stage after the block stage takes the main-content pass the block stage made of the
    same page with the same options (its reading, ``doc.blocks``); other options, or no reading, parse the page."""
    from resiliparse.parse.html import HTMLTree

    from pipeline.document import Document, Page
    from pipeline.steps.extractors import ResiliparseExtractor

    settings = load_settings(None, [])
    html = warc_pages(SAMPLE_WARC)[0]
    expected = ResiliparseExtractor(settings.extract).extract(html + " ")  # another page: parsed afresh
    doc = Document(Page("<urn:x>", "http://x/", "", html.encode(), "utf-8"), html)
    BlocksExtractor(settings.extract, settings.langid).run(doc)
    parses = []
    real_parse = HTMLTree.parse
    monkeypatch.setattr(HTMLTree, "parse", lambda *a: parses.append(1) or real_parse(*a))
    assert ResiliparseExtractor(settings.extract).run(doc).text.rstrip() == expected.rstrip()
    assert doc.blocks.primary == expected and doc.extractor == "resiliparse"
    assert parses == []  # the same page, the same options: no second parse
    ResiliparseExtractor(settings.extract, main_content=False).run(doc)
    assert parses == [1]  # other options: parsed
    ResiliparseExtractor(settings.extract).run(Document(doc.page, html))
    assert parses == [1, 1]  # a page the block stage did not read: parsed


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


