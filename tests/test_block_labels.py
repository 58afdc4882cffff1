"""Block labels: the structure heuristics of seeds 003 and 004 (main-content candidates found in the block parse), the
comment regions, and comments told apart from a page's main text (``extract.comments``)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from pipeline.steps.blocks.features import NODES, dense_names, featurize, node_features
from pipeline.steps.blocks.parse import NO_NODE, article_descends, list_choice, names_comments, parse_page


def inside(html: str, column: str) -> list[str]:
    """The texts of the blocks of ``html`` inside the candidate of ``NODES`` column ``column``."""
    blocks, markup = parse_page(html, nodes=True)
    flags = node_features(blocks, markup.nodes)[:, NODES.index(column)]
    return [b.text for b, flag in zip(blocks, flags) if flag]


MENU = "<ul class=menu><li>Home</li><li>News</li><li>About</li></ul>"
LONG_MENU = "<ul class=menu>" + "".join(f"<li>Item {i}</li>" for i in range(9)) + "</ul>"
ARTICLE = ("<div class=story><h1>Title of the story</h1><p>First paragraph of the story, long enough.</p>"
           "<p>Second paragraph of the story, longer than the first one here.</p><p>Third and last.</p>"
           "<p>Fourth.</p></div>")


def test_mce_the_element_with_the_most_text_bearing_children():
    """Seed 003, first heuristic: the story's five children bear text, the menu's three."""
    html = f"<html><body>{MENU}{ARTICLE}<div class=side><p>one</p><p></p><p></p><p></p><p></p><p></p></div></body></html>"
    assert inside(html, "mce_children") == ["Title of the story", "First paragraph of the story, long enough.",
                                            "Second paragraph of the story, longer than the first one here.",
                                            "Third and last.", "Fourth."]


def test_mce_the_parent_of_the_most_text_without_text_bearing_children():
    """Seed 003, second heuristic: the longest element whose children bear no text is a paragraph; its parent holds
    the story (the menu has more text-bearing children, but shorter text)."""
    html = f"<html><body>{LONG_MENU}{ARTICLE}</body></html>"
    assert inside(html, "mce_leaf_parent") == inside(ARTICLE, "mce_children")  # the story's five blocks
    assert inside(html, "mce_children")[0] == "Item 0"  # nine items


def test_mce_of_the_two_candidates_the_one_nearest_the_middle_depth():
    """Seed 003, third heuristic: the page's tree is 8 block-level elements deep (middle 4); the menu of nine items
    is at depth 1, the story's paragraphs' parent at depth 4: the story is the main node."""
    deep = "<div><div><div><div><div><div><div><p>deep leaf</p></div></div></div></div></div></div></div>"
    story = ARTICLE.replace("<div class=story>", "<div class=story><div>").replace("</div>", "</div></div>")
    html = f"<html><body>{LONG_MENU}<div><div>{story}</div></div>{deep}</body></html>"
    blocks, markup = parse_page(html, nodes=True)
    nodes = markup.nodes
    assert nodes.middle == nodes.leaf_parent != nodes.most_children
    assert "Title of the story" in inside(html, "mce_middle") and "Item 0" not in inside(html, "mce_middle")


def test_seed_004_article_test_descends_while_one_child_holds_the_text():
    """The body's children: a menu (16 characters) and a wrapper (the story): the gap between the two longest is at
    least their standard deviation, so the test goes on in the wrapper, then in the story, whose paragraphs are
    alike (gap below the deviation): the story is the main element."""
    html = f"<html><body>{MENU}<div class=wrapper>{ARTICLE}</div></body></html>"
    assert inside(html, "article_node") == inside(html, "mce_children")  # the story's five blocks
    # the arithmetic: children 100, 10, 5: gap 90 >= sd 52.9 (descend); 50, 40, 48: gap 2 < sd 5.3 (main); 50, 40,
    # 45: gap 5 = sd 5 (descend)
    assert article_descends(3, 115.0, 100.0 ** 2 + 10.0 ** 2 + 5.0 ** 2, 100, 10)
    assert not article_descends(3, 138.0, 50.0 ** 2 + 40.0 ** 2 + 48.0 ** 2, 50, 48)
    assert article_descends(3, 135.0, 50.0 ** 2 + 40.0 ** 2 + 45.0 ** 2, 50, 45)
    assert article_descends(1, 7.0, 49.0, 7, 0) and not article_descends(0, 0.0, 0.0, 0, 0)
    assert not article_descends(2, 0.0, 0.0, 0, 0)  # no text in the children: the element itself


def test_seed_004_list_selection_scores_groups_and_takes_the_longest_on_average():
    """R = 2 o L / (o + L) ranks the groups (depth, tag, class/id words); of the three of highest R, the one with
    the highest average text length is the list: the product cards, not the more numerous short menu items."""
    cards = "".join(f"<div class=card><h3>Product number {i}</h3><p>A description of product {i} in a few words."
                    f"</p></div>" for i in range(6))
    menu = "<ul>" + "".join(f"<li class=item>m{i}</li>" for i in range(12)) + "</ul>"
    html = f"<html><body>{menu}<div class=grid>{cards}</div><p>Footer text</p></body></html>"
    listed = inside(html, "list_items")
    assert len(listed) == 12 and listed[0] == "Product number 0" and "m1" not in listed
    # the choice itself: groups as [occurrences, text length, ranges]
    groups = [[12, 24, [(i, i) for i in range(12)]], [6, 300, [(20, 22), (23, 25)]], [2, 4, [(30, 30)]],
              [1, 500, [(40, 40)]]]
    assert list_choice(groups) == [(20, 22), (23, 25)]  # R 16.0 / 11.6 / 2.7 (one element: no list); ATL 50
    assert list_choice([[1, 10, [(1, 1)]]]) == []


def test_a_page_of_body_text_alone_is_its_own_candidate():
    blocks, markup = parse_page("<html><body>only text</body></html>", nodes=True)
    nodes = markup.nodes
    assert nodes.list_items == [] and nodes.most_children == NO_NODE  # no element has a text-bearing child
    assert nodes.leaf_parent == nodes.middle == nodes.article == (blocks[0].element, blocks[0].element)
    np.testing.assert_array_equal(node_features(blocks, nodes), [[0, 0, 1, 1, 1, 0]])
    assert node_features([], nodes).shape == (0, len(NODES))


@pytest.mark.parametrize("value, named", [
    ("comment-list", True), ("commentlist", True), ("fbComments", True), ("komentarze", True),
    ("kommentare", True), ("comentarios", True), ("reply", True), ("respond", True), ("disqus_thread", True),
    ("user-reviews", True), ("reviewBody", True), ("preview", False), ("replace", False), ("post-content", False),
    ("article", False)])
def test_comment_regions_are_named_by_class_and_id(value, named):
    from pipeline.steps.blocks.parse import class_id_tokens

    assert names_comments(class_id_tokens(value)) is named


def test_blocks_inside_a_comment_region_are_marked_and_the_features_say_so():
    html = (f"<html><body>{ARTICLE}<section id=comments><h3>2 Comments</h3><ol><li><div><p>I liked this story a "
            "lot.</p></div></li></ol></section><p>After</p></body></html>")
    blocks, markup = parse_page(html, nodes=True)
    assert [b.text for b in blocks if b.comment_region] == ["2 Comments", "I liked this story a lot."]
    X, _ = featurize(blocks, "", nodes=markup.nodes)
    assert X.shape[1] == len(dense_names(nodes=True))
    column = X[:, dense_names(nodes=True).index("comment_region")]
    np.testing.assert_array_equal(column, [b.comment_region for b in blocks])


# Held-out bench pages (never fitted on): blog and news posts with reader comments below them, and posts whose
# comment markup holds no comment (a comment form, a count), and a page without any.
COMMENTED = {"dragnet-27": "Ayer empecé a leer el alquimista", "dragnet-149": "This news comes as a shock and surprise.",
             "dragnet-172": None, "dragnet-418": None}
UNCOMMENTED = ("dragnet-R483", "dragnet-R40", "dragnet-97")


def bench_html(folder: str, page_id: str) -> str:
    """A bench page's decoded HTML (the test skips without ../shared/bench)."""
    import gzip
    import json

    from conftest import bench_file

    from pipeline.reading.decode import decode_html

    rows = {m["id"]: m for m in map(json.loads, bench_file(folder, "manifest.jsonl").open(encoding="utf-8"))}
    return decode_html(gzip.decompress(bench_file(folder, rows[page_id]["dataset"], "pages",
                                                  f"{page_id}.html.gz").read_bytes()))


def cleaned(page_id: str, html: str, overrides: tuple[str, ...] = ()):
    from pipeline.config import load_settings
    from pipeline.reading.warc import Page
    from pipeline.steps.loop import StepLoop

    loop = StepLoop(load_settings(None, ["perplexity.enabled=false", *overrides]))
    return loop.process(Page(f"<urn:{page_id}>", "http://x/", "", html.encode("utf-8"), "utf-8"))


def test_reader_comments_are_written_apart_on_blog_and_news_pages_and_empty_without():
    """The default (``extract.comments: separate``): a post's reader comments are the row's ``comments``, out of its
    ``text``; a post whose comment markup holds a form or a count only, and a page without, have none."""
    from pipeline.writing.rows import PAGE_SCHEMA, page_row

    assert "comments" in PAGE_SCHEMA.names
    for page_id, sentence in COMMENTED.items():
        doc = cleaned(page_id, bench_html("data", page_id))
        assert doc.outcome == "kept" and doc.extractor == "blocks", page_id
        comments = doc.blocks.comments
        assert comments and len(comments.split()) >= 50, page_id
        assert len(doc.text.split()) >= 100, page_id  # the post itself stays
        assert not set(comments.splitlines()) & set(doc.text.splitlines()), page_id
        if sentence:
            assert sentence in comments and sentence not in doc.text
        assert page_row(doc, "shard")["comments"] == comments
    for page_id in UNCOMMENTED:
        doc = cleaned(page_id, bench_html("data", page_id))
        assert doc.outcome == "kept" and doc.blocks.comments is None and page_row(doc, "shard")["comments"] is None, page_id


def with_json_ld(html: str, data: dict) -> str:
    """``html`` with a schema.org JSON-LD script added to its head."""
    return html.replace("</head>", f'<script type="application/ld+json">{json.dumps(data)}</script></head>', 1)


def test_a_thread_by_its_markup_keeps_its_posts_as_main_text_and_an_faq_page_its_comments_apart():
    """The blog post with reader comments (dragnet-149) declared a forum post (``DiscussionForumPosting``) or a
    question page (``QAPage``): its comment region holds the thread's posts, main text, whatever its page type. An
    FAQ page's answers (``FAQPage``) are the site's own: its reader comments stay comments."""
    from pipeline.writing.rows import page_row

    html = bench_html("data", "dragnet-149")
    sentence = COMMENTED["dragnet-149"]
    plain = cleaned("dragnet-149", html)
    comments = page_row(plain, "shard")["comments"]
    assert sentence in comments and sentence not in plain.text
    for declared in ({"@type": "DiscussionForumPosting", "headline": "x"}, {"@type": "QAPage"}):
        thread = cleaned("dragnet-149", with_json_ld(html, {"@context": "https://schema.org", **declared}))
        assert thread.blocks.page_type not in ("forum", "documentation", "collection", "listing"), declared
        assert page_row(thread, "shard")["comments"] is None and sentence in thread.text, declared
        assert len(thread.text.split()) > len(plain.text.split()) + len(comments.split()) // 2, declared
    faq = cleaned("dragnet-149", with_json_ld(html, {"@context": "https://schema.org", "@type": "FAQPage", "mainEntity": [
        {"@type": "Question", "name": "q", "acceptedAnswer": {"@type": "Answer", "text": "a"}}]}))
    assert page_row(faq, "shard")["comments"] == comments and faq.text == plain.text


def test_a_listing_whose_question_and_answer_markup_declares_a_thread_keeps_its_customers_posts():
    """A held-out shop listing (Sur La Table, wcxb-dev-4818) with schema.org ``Question``/``Answer`` markup and no
    FAQ: its customers' posts in the review region are its text (the WCXB truth has them), not comments."""
    from pipeline.writing.rows import page_row

    doc = cleaned("wcxb-dev-4818", bench_html("data-wcxb", "wcxb-dev-4818"))
    assert page_row(doc, "shard")["comments"] is None
    assert "This was a gift to me after seeing it at my daughter's house and having the best Latte ever" in doc.text


MLOG = "magichtml_forum_9864ca4dc1b29963"  # mlog.club: a topic of two lines and eight replies, no thread markup
REPLIES = {MLOG: ("我是年前彻底放假了，华为外包释放，一点补偿都没有", "我们放一天上一天再放一天"),
           "magichtml_forum_f8a495be9c3382fb": ("人太多，容易崩，我优化下", "我还以为是我网络的问题")}  # developers.pub Q&A


def test_a_thread_the_page_shows_keeps_its_replies_as_main_text_and_an_article_its_comments_apart():
    """Two Chinese threads of the multilingual set whose markup declares none (mlog.club: a ``BlogPosting``) and
    whose type is unknown: a comment region of replies, each under a line saying when it was posted
    (``2021-01-01 10:34:38``, ``客栈小K | 扫地 | 6天前``), after a first post of a few words. The replies are the
    page's text (the truth keeps them), not its buttons (``点赞``, ``|``). The same page with an article's body
    before the replies is an article with reader comments: the replies are not its text."""
    from pipeline.writing.rows import page_row

    for page_id, replies in REPLIES.items():
        doc = cleaned(page_id, bench_html("data-ml", page_id))
        lines = doc.text.splitlines()
        assert doc.blocks.page_type == "unknown" and page_row(doc, "shard")["comments"] is None, page_id
        assert all(any(reply in line for line in lines) for reply in replies), (page_id, doc.text)
        assert not {"点赞", "评论", "|"} & set(lines), page_id
    body = "".join(f"<p>{sentence}</p>" for sentence in (
        "Every winter the office closes for the new year, and most of the team travels home to see their families.",
        "This year the break starts on the thirty-first and lasts three days, one more than the calendar gives.",
        "We asked everyone how they would spend it, and the answers ranged from sleeping late to climbing hills.",
        "Some will work on side projects, some will read the books they bought in spring and never opened.",
        "A few of us will stay in town, walk along the river in the cold, and eat dumplings at midnight.",
        "The shops near the station stay open late on the last evening, and the square fills with music.",
        "When we come back we will plan the first quarter together, starting with the release in February."))
    html = bench_html("data-ml", MLOG).replace('<div class="topic-content-detail line-numbers">',
                                              f'<div class="topic-content-detail line-numbers">{body}', 1)
    article = cleaned(MLOG, html)
    assert "travels home to see their families" in article.text
    assert not any(reply in article.text for reply in REPLIES[MLOG])


DOUBAN = "magichtml_forum_b5bb37137a346f6d"  # movie.douban.com: a page of twenty short reviews, each under its line


def test_a_list_of_reviews_the_page_shows_keeps_its_short_ones_too():
    """A review list with no thread markup (douban's short reviews of a series): each review is a line of text under
    a line of who and when (``6765 有用 小倪儿呼啦呼啦 看过 2024-04-07 13:19:20 贵州``), and the classifier alone kept
    the longer reviews and dropped the short ones. The kept text lies in three or more of the posts and none before
    them, so the page is the thread: every review is its text (the truth keeps them), the who-and-when lines are
    not, and nothing goes to comments."""
    from pipeline.writing.rows import page_row

    doc = cleaned(DOUBAN, bench_html("data-ml", DOUBAN))
    lines = doc.text.splitlines()
    assert doc.blocks.page_type == "unknown" and page_row(doc, "shard")["comments"] is None
    for review in ("我们的善良和恶毒都不够纯粹，所以痛苦。", "五菜一汤 还是男人会做梦", "不要美化自己没有走的另一条路",
                   "编剧能力惊人"):
        assert any(review in line for line in lines), (review, doc.text)
    assert not any("有用" in line and "看过" in line for line in lines), doc.text


def test_extract_comments_drops_them_or_keeps_them_in_the_text():
    html = bench_html("data", "dragnet-149")
    sentence = COMMENTED["dragnet-149"]
    separate = cleaned("dragnet-149", html)
    dropped = cleaned("dragnet-149", html, ("extract.comments=drop",))
    kept = cleaned("dragnet-149", html, ("extract.comments=main",))
    assert dropped.text == separate.text and dropped.blocks.comments is None
    assert kept.blocks.comments is None and sentence in kept.text and separate.text.splitlines()[0] in kept.text
    assert len(kept.text) > len(separate.text) + len(separate.blocks.comments) // 2


def test_extract_comments_takes_its_three_choices_and_the_old_booleans():
    from pipeline.config import ConfigError, load_settings

    assert load_settings(None, []).extract.comments == "separate"
    assert load_settings(None, ["extract.comments=drop"]).extract.comments == "drop"
    assert load_settings(None, ["extract.comments=true"]).extract.comments == "main"
    assert load_settings(None, ["extract.comments=false"]).extract.comments == "separate"
    with pytest.raises(ConfigError):
        load_settings(None, ["extract.comments=sometimes"])


def test_explain_outlines_the_comments_and_shows_where_they_went(tmp_path):
    """``warcplex explain`` on a blog post with reader comments: the comment blocks carry their own label and
    outline in the framed page, and the explanation shows the row's comments apart from its text."""
    import html as html_module
    import re

    from conftest import write_warc

    from pipeline.cli import main as cli_main

    page_id = "dragnet-149"
    write_warc(tmp_path / "post.warc.gz", [("200 OK", "text/html; charset=utf-8", None,
                                            bench_html("data", page_id).encode("utf-8"))])
    assert cli_main(["explain", "--input", str(tmp_path / "post.warc.gz"), "--sample", "1",
                     "--output", str(tmp_path / "ex")]) == 0
    [page] = [p for p in (tmp_path / "ex").glob("*.html") if p.name != "index.html"]
    text = page.read_text(encoding="utf-8")
    framed = html_module.unescape(re.search(r"srcdoc='([^']*)'", text).group(1))
    assert "wx-comment" in framed and "wx-main" in framed
    assert "a reader comment: written to the row&#x27;s comments, not its text" in framed or \
        "a reader comment: written to the row's comments, not its text" in framed
    assert "The reader comments" in text and html_module.escape(COMMENTED[page_id]) in text


def test_the_candidates_are_computed_only_when_asked_and_the_blocks_do_not_change():
    """The shipped classifier reads none of the five candidates, so the block stage's parse skips them; asked for
    (a model fitted with ``--seed-features``), the same pass computes them and cuts the same blocks."""
    from pipeline.steps.blocks.model import block_model
    from pipeline.steps.blocks.parse import Nodes

    html = (f"<html><body><ul class=nav><li>Home</li><li>About</li></ul>{ARTICLE}"
            "<div class=cards><div class=card>First card text here</div><div class=card>Second card text</div></div>"
            "</body></html>")
    with_nodes, markup = parse_page(html, nodes=True)
    without, bare = parse_page(html)
    assert with_nodes == without
    assert bare.nodes == Nodes() and markup.nodes != Nodes()
    assert block_model(None).nodes is False  # the shipped model: no structure candidates


@pytest.mark.spark
def test_the_comments_column_through_spark_on_real_blog_and_news_pages(tmp_path):
    """``warcplex run`` in local Spark over the held-out blog and news pages above: the rows of the posts with reader
    comments have them in ``comments`` and not in ``text``; the rows of the pages without have none."""
    import shutil

    import pyarrow.dataset as ds
    from conftest import write_warc

    from pipeline.cli import main as cli_main
    from pipeline.config import PROJECT_ROOT

    if shutil.which("java") is None:
        pytest.skip("Java is needed for Spark")
    pages = [*COMMENTED, *UNCOMMENTED]
    write_warc(tmp_path / "posts.warc.gz", [("200 OK", "text/html; charset=utf-8", None,
                                             bench_html("data", page_id).encode("utf-8")) for page_id in pages])
    out = tmp_path / "out"
    assert cli_main(["run", "--input", str(tmp_path / "posts.warc.gz"), "--output", str(out),
                     "--config", str(PROJECT_ROOT / "conf" / "local.yaml"), "--set", "spark.master=local[1]",
                     "--set", "corpus.enabled=false"]) == 0
    rows = {r["url"]: r for r in ds.dataset(out / "data", format="parquet").to_table().to_pylist()}
    by_page = {page_id: rows[f"https://t.example/{n}"] for n, page_id in enumerate(pages)}
    for page_id, sentence in COMMENTED.items():
        row = by_page[page_id]
        assert row["comments"] and len(row["comments"].split()) >= 50, page_id
        if sentence:
            assert sentence in row["comments"] and sentence not in row["text"], page_id
    assert all(by_page[page_id]["comments"] is None for page_id in UNCOMMENTED)
    stats = json.loads((out / "stats.json").read_text())
    assert stats["stage"]["blocks"]["comments"]["pages"] == len(COMMENTED)
