"""The text stages without Spark: decoding, extraction, language ID, sentences, perplexity filter."""

from __future__ import annotations

import math

import kenlm
import pytest


from conftest import BAD, BAD_LOG10, BAD_WORDS, GOOD, GOOD_LOG10, GOOD_WORDS, TINY_ARPA
from pipeline.config import ExtractSettings, LangIdSettings, PerplexitySettings
from pipeline.lm_text import normalize_for_lm
from pipeline.document import Document, Language, Sentence
from pipeline.reading.decode import decode_html
from pipeline.document import Page
from pipeline.steps.extractors import ConservativeExtractor, ResiliparseExtractor
from pipeline.steps.langid import LanguageIdentifier
from pipeline.perplexity_rule import log10_bin, median, perplexity
from pipeline.model_registry import load_registry
from pipeline.steps.perplexity import PerplexityFilter
from pipeline.steps.sentences import split as split_sentences
import make_sample_warc
from sample_texts import ARTICLES



def article(slug: str) -> tuple[int, tuple]:
    return next((i, a) for i, a in enumerate(ARTICLES) if a[0] == slug)


def body_paragraphs(art: tuple) -> list[str]:
    return make_sample_warc.paragraphs(art[5])


# --- decoding -----------------------------------------------------------------------------


def test_a_page_declared_utf8_but_written_in_cp1252_decodes_correctly():
    raw = make_sample_warc.CP1252_PAGE.encode("cp1252")
    text = decode_html(raw, "utf-8")
    assert "The café on Elm Street turns ten" in text
    assert "“a lovely idea for about six months”" in text and "crème brûlée" in text and "£4.50" in text


def test_utf8_bytes_declared_latin1_decode_as_utf8():
    page = "<html><head><meta charset='iso-8859-1'></head><body><p>Grüße aus Köln, Straße und Maß — über alles.</p>" \
           "</body></html>"
    assert "Grüße aus Köln, Straße und Maß — über alles." in decode_html(page.encode("utf-8"), "iso-8859-1")


def test_undeclared_shift_jis_decodes():
    page = "<html><body><p>毎朝、仕事に行く前に川沿いの道を三十分ほど歩くことにしています。朝の川はとても静かです。</p></body></html>"
    assert "川沿いの道を三十分ほど歩く" in decode_html(page.encode("shift_jis"), None)


# --- extraction ---------------------------------------------------------------------------


@pytest.mark.parametrize("slug", ["old-mill-bridge", "red-lentil-soup", "kettle-review", "dripping-tap"])
def test_main_content_extraction_keeps_paragraphs_and_drops_boilerplate(slug):
    index, art = article(slug)
    html = make_sample_warc.render_page(index, art)
    text = ResiliparseExtractor(ExtractSettings()).extract(html)
    lines = [line.strip() for line in text.split("\n")]
    for paragraph in body_paragraphs(art):
        assert paragraph in lines  # each paragraph is a line of its own
    assert "We use cookies" not in text and "Subscribe to our newsletter" not in text


@pytest.mark.parametrize("slug", ["old-mill-bridge", "kettle-review"])
def test_main_content_off_keeps_everything_visible_with_breaks(slug):
    index, art = article(slug)
    html = make_sample_warc.render_page(index, art)
    full = ResiliparseExtractor(ExtractSettings(main_content=False)).extract(html)
    conservative = ConservativeExtractor(ExtractSettings()).extract(html)
    assert full == conservative
    lines = [line.strip() for line in full.split("\n")]
    for paragraph in body_paragraphs(art):
        assert paragraph in lines
    assert "We use cookies" in full and "Share on Facebook" in full and "All rights reserved." in full


# --- language ID --------------------------------------------------------------------------


@pytest.mark.parametrize("slug", ["old-mill-bridge", "how-tides-work", "apfelkuchen", "stadtbibliothek",
                                  "sanpo-nikki", "ratatouille", "tortilla-espanola", "istoriya-mosta",
                                  "risotto-zucca"])
def test_fasttext_identifies_the_language_of_real_text(slug):
    _, art = article(slug)
    language = LanguageIdentifier(LangIdSettings()).identify(art[5])
    assert language.code == art[1]
    assert 0.8 < language.score <= 1.0


def test_langid_edge_cases():
    assert LanguageIdentifier(LangIdSettings()).identify("   \n ").code == "und"
    assert LanguageIdentifier(LangIdSettings(enabled=False)).identify(ARTICLES[0][5]).code == "und"
    strict = LanguageIdentifier(LangIdSettings(min_score=0.99))
    low = strict.identify("ok 12 34 ?? !!")
    assert low.code == "und" and low.score < 0.99
    assert strict.stats.counts["stage.langid.below_min_score"] == 1


# --- sentences ----------------------------------------------------------------------------


def test_english_sentences_per_paragraph():
    text = "Dr. Osei opened the library at ten. A queue had formed!\n\n  \nWas it worth the wait? Yes, it was."
    assert split_sentences(text, "en") == [
        ["Dr. Osei opened the library at ten.", "A queue had formed!"],
        ["Was it worth the wait?", "Yes, it was."],
    ]


@pytest.mark.parametrize("language, text, expected", [
    ("ja", "朝の川はとても静かです。サギが浅瀬でじっと魚を待っています！本当ですか？",
     ["朝の川はとても静かです。", "サギが浅瀬でじっと魚を待っています！", "本当ですか？"]),
    ("zh", "今天天气很好。我们去公园吧！你来吗？", ["今天天气很好。", "我们去公园吧！", "你来吗？"]),
])
def test_cjk_terminators_split_sentences(language, text, expected):
    assert split_sentences(text, language) == [expected]


def test_unknown_language_splits_with_the_default_rules():
    assert split_sentences("One sentence here. Another one there.", "und") == [
        ["One sentence here.", "Another one there."]]


# --- perplexity ---------------------------------------------------------------------------

# A bigram model small enough to compute by hand (log10 probabilities, backoffs).


@pytest.fixture
def tiny_model(tmp_path):
    path = tmp_path / "tiny.arpa"
    path.write_text(TINY_ARPA)
    return path


def sentence_rule(**settings) -> PerplexitySettings:
    """Filter settings judging each sentence alone at the threshold (unless ``settings`` say otherwise)."""
    return PerplexitySettings(**{"unit": "sentence", "rule": "fixed", **settings})


def registry(tmp_path, model_path, **entry) -> str:
    import yaml

    reg = tmp_path / "models.yaml"
    reg.write_text(yaml.safe_dump({"models": {"en": {"path": str(model_path), **entry}}}))
    return str(reg)


def score(stage: PerplexityFilter, paragraphs: list[list[str]], language: str) -> list[list[Sentence]]:
    """The filter step run on a document of ``paragraphs`` in ``language``; its sentences by paragraph."""
    doc = Document(Page("<urn:test>", "http://example.org/", "", b"", None), language=Language(language, 1.0),
                   sentences=[Sentence(text, i) for i, para in enumerate(paragraphs) for text in para])
    assert stage(doc) is doc
    return doc.paragraphs()


def test_perplexity_formula_against_hand_computation_and_kenlm(tiny_model):
    model = kenlm.Model(str(tiny_model))
    for sentence, log10_prob, words in ((GOOD, GOOD_LOG10, GOOD_WORDS), (BAD, BAD_LOG10, BAD_WORDS)):
        ppl, n_words = perplexity(model, sentence)
        assert n_words == words
        assert ppl == pytest.approx(10 ** (-log10_prob / (words + 1)), rel=1e-5)
        assert ppl == pytest.approx(model.perplexity(normalize_for_lm(sentence)), rel=1e-6)


def test_filter_drops_above_threshold_keeps_below_and_records_scores(tmp_path, tiny_model):
    good_ppl = 10 ** (0.85 / 4)
    bad_ppl = 10 ** (-BAD_LOG10 / 4)
    stage = PerplexityFilter(sentence_rule(registry=registry(tmp_path, tiny_model, threshold=10)))
    assert stage.has_model("en") and not stage.has_model("de")
    [[good, bad], [good2]] = score(stage, [[GOOD, BAD], [GOOD]], "en")
    assert good.kept and good.perplexity == pytest.approx(good_ppl, rel=1e-5) and good.reason is None
    assert not bad.kept and bad.perplexity == pytest.approx(bad_ppl, rel=1e-5)
    assert bad.reason == "perplexity:sentence/fixed@10"
    assert good2.kept


def test_filter_leaves_preformatted_lines_unscored_and_kept(tmp_path, tiny_model):
    stage = PerplexityFilter(sentence_rule(registry=registry(tmp_path, tiny_model, threshold=10)))
    doc = Document(Page("<urn:test>", "http://example.org/", "", b"", None), language=Language("en", 1.0),
                   sentences=[Sentence(GOOD, 0), Sentence(BAD, 1), Sentence(BAD, 2, preformatted=True)])
    assert stage(doc) is doc
    good, bad, code = doc.sentences
    assert good.kept and not bad.kept  # the same text, not preformatted, is dropped
    assert code.kept and code.perplexity is None and code.reason is None
    assert stage.stats.to_dict()["stage"]["perplexity"]["sentences_preformatted"] == 1


def test_line_unit_pools_a_lines_sentences_and_keeps_or_drops_them_together(tmp_path, tiny_model):
    reg = registry(tmp_path, tiny_model, threshold=5)
    by_sentence = score(PerplexityFilter(sentence_rule(registry=reg)), [[GOOD, BAD]], "en")[0]
    assert [s.kept for s in by_sentence] == [True, False]
    # pooled: 10^((0.85 + 4.2) / 8) = 4.3 perplexity, under 5 (alone BAD scores 10^(4.2 / 4) = 11.2)
    by_line = score(PerplexityFilter(sentence_rule(registry=reg, unit="line")), [[GOOD, BAD]], "en")[0]
    assert [s.kept for s in by_line] == [True, True]
    strict = score(PerplexityFilter(sentence_rule(registry=reg, unit="line", threshold=3)), [[GOOD, BAD]], "en")
    assert [s.kept for s in strict[0]] == [False, False] and strict[0][1].reason == "perplexity:line/fixed@3"


def test_window_rule_judges_a_short_line_with_its_neighbours(tmp_path, tiny_model):
    reg = registry(tmp_path, tiny_model, threshold=5)
    lines = [[GOOD], [BAD], [GOOD]]
    fixed = score(PerplexityFilter(sentence_rule(registry=reg, unit="line")), lines, "en")
    assert [p[0].kept for p in fixed] == [True, False, True]
    # BAD (3 tokens) pooled with both neighbours: 10^((2 * 0.85 + 4.2) / 12) = 3.1
    window = PerplexityFilter(sentence_rule(registry=reg, unit="line", rule="window", window_tokens=9))
    assert [p[0].kept for p in score(window, lines, "en")] == [True, True, True]
    # a long enough line is judged alone
    alone = PerplexityFilter(sentence_rule(registry=reg, unit="line", rule="window", window_tokens=3))
    assert [p[0].kept for p in score(alone, lines, "en")] == [True, False, True]


def test_length_rule_lowers_the_threshold_for_short_units(tmp_path, tiny_model):
    reg = registry(tmp_path, tiny_model, threshold=20)
    fixed = score(PerplexityFilter(sentence_rule(registry=reg)), [[GOOD, BAD]], "en")[0]
    assert [s.kept for s in fixed] == [True, True]
    # 3 tokens of a 6-token window: threshold 20 * 3/6 = 10 (BAD scores 11.2, GOOD 1.6)
    length = PerplexityFilter(sentence_rule(registry=reg, rule="length", window_tokens=6))
    assert [s.kept for s in score(length, [[GOOD, BAD]], "en")[0]] == [True, False]


def test_threshold_override_and_min_tokens(tmp_path, tiny_model):
    reg = registry(tmp_path, tiny_model, threshold=10)
    strict = PerplexityFilter(sentence_rule(registry=reg, threshold=1.5))
    assert [s.kept for s in score(strict, [[GOOD, BAD]], "en")[0]] == [False, False]
    lenient_short = PerplexityFilter(sentence_rule(registry=reg, threshold=1.5, min_tokens=4))
    scored = score(lenient_short, [[GOOD, BAD]], "en")[0]
    assert [s.kept for s in scored] == [True, True] and all(s.perplexity for s in scored)


def test_percentile_mode_uses_the_registry_percentiles(tmp_path, tiny_model):
    reg = registry(tmp_path, tiny_model, threshold=1000, percentiles={50: 5.0, 90: 20.0})
    p50 = PerplexityFilter(sentence_rule(registry=reg, threshold_mode="percentile", percentile=50))
    p90 = PerplexityFilter(sentence_rule(registry=reg, threshold_mode="percentile", percentile=90))
    assert p50.entry("en").threshold_for(p50.settings) == 5.0 and p90.entry("en").threshold_for(p90.settings) == 20.0
    assert [s.kept for s in score(p50, [[GOOD, BAD]], "en")[0]] == [True, False]
    assert [s.kept for s in score(p90, [[GOOD, BAD]], "en")[0]] == [True, True]
    p75 = PerplexityFilter(sentence_rule(registry=reg, threshold_mode="percentile", percentile=75))
    with pytest.raises(ValueError, match="no percentiles.75"):
        load_registry(reg).get("en").threshold_for(p75.settings)
    # A language without the run's percentile is a language without a model: its sentences pass unscored.
    assert not p75.has_model("en") and p75.entry("en") is None
    assert all(s.kept and s.perplexity is None for s in score(p75, [[GOOD, BAD]], "en")[0])


def test_unknown_language_passes_unscored_and_is_counted(tmp_path, tiny_model):
    stage = PerplexityFilter(sentence_rule(registry=registry(tmp_path, tiny_model, threshold=1.5)))
    result = score(stage, [[BAD, GOOD], [BAD]], "sw")
    assert all(s.kept and s.perplexity is None for para in result for s in para)
    assert stage.stats.counts["stage.perplexity.unscored_language_pages"] == 1
    disabled = PerplexityFilter(sentence_rule(enabled=False, registry=registry(tmp_path, tiny_model, threshold=1)))
    assert not disabled.has_model("en")


def test_median_and_histogram_bins():
    assert median([]) is None and median([3.0]) == 3.0 and median([4.0, 1.0, 2.0, 3.0]) == 2.5
    assert log10_bin(1.0) == 0 and log10_bin(0.5) == 0
    assert log10_bin(100.0) == 20 and log10_bin(150.0) == math.floor(math.log10(150) * 10)


def test_context_rule_pools_short_lines_and_lets_agreeing_neighbours_decide():
    from pipeline.perplexity_rule import Unit, rule_mask

    # long good, short bad, long good, long bad, short good, long bad (one sentence a line)
    units = [Unit(100, 40, 0), Unit(50_000, 2, 1), Unit(100, 40, 2), Unit(10_000, 40, 3), Unit(200, 3, 4),
             Unit(10_000, 40, 5)]
    # alone, each short line is judged against threshold * (tokens + 1) / short_tokens: 300 and 400
    assert rule_mask(units, 3000, "line", "length", short_tokens=30) == [True, False, True, False, True, False]
    # the neighbours decide a short line they agree on
    assert rule_mask(units, 3000, "line", "context", window_tokens=1, short_tokens=30) == \
        [True, True, True, False, False, False]
    # pooled with its neighbours up to 40 tokens, the short bad line scores 10^((3 * 4.7 + 82 * 2) / 85) = 124
    assert rule_mask(units, 3000, "line", "window", window_tokens=40)[1]
    assert rule_mask(units, 3000, "line", "fixed") == [True, False, True, False, True, False]
    # unscored units stay
    assert rule_mask([Unit(None, 5, 0), Unit(10_000, 40, 1)], 3000, "line", "context") == [True, False]


def test_protected_lines_are_kept_and_count_as_kept_neighbours():
    from pipeline.perplexity_rule import Unit, rule_mask

    units = [Unit(1000.0, 40, 0), Unit(5000.0, 3, 1), Unit(1000.0, 40, 2)]  # all above the threshold of 100
    context = dict(unit="line", rule="context")
    assert rule_mask(units, 100, **context) == [False, False, False]
    # the short middle line follows its two protected neighbours; a protected short line stays between dropped ones
    assert rule_mask(units, 100, **context, protected=[True, False, True]) == [True, True, True]
    assert rule_mask(units, 100, **context, protected=[False, True, False]) == [False, True, False]
    # a line is protected when one of its sentences is
    pooled_line = [Unit(1000.0, 40, 0), Unit(1000.0, 40, 0), Unit(1000.0, 40, 1)]
    assert rule_mask(pooled_line, 100, **context, protected=[False, True, False]) == [True, True, False]


def test_a_protected_line_goes_only_above_its_raised_bar():
    """``protected_threshold`` judges a protected line by the rule's score (pooled with its neighbours under
    ``context``) without the length scale, and ``context`` does not overturn it."""
    from pipeline.perplexity_rule import Unit, rule_mask

    units = [Unit(100.0, 40, 0), Unit(5000.0, 2, 1), Unit(20_000.0, 40, 2), Unit(100.0, 40, 3)]
    context = dict(unit="line", rule="context")
    # the short line pools to 10^((3*3.7 + 82*(2 + 4.3)/2) / 85) = 1,479; the long one stays at 20,000
    assert rule_mask(units, 100, **context) == [True, False, False, True]
    protected = [False, True, True, False]
    assert rule_mask(units, 100, **context, protected=protected, protected_threshold=300) == [True, False, False, True]
    # a bar between the two: the short line stays (no length scale: 1,479 against 5,000), the garbled line goes
    assert rule_mask(units, 100, **context, protected=protected, protected_threshold=5000) == [True, True, False, True]
    assert rule_mask(units, 100, **context, protected=protected, protected_threshold=30_000) == [True] * 4


def test_each_verdict_names_the_part_of_the_rule_that_decided_and_the_threshold_it_faced():
    """The reason of a dropped sentence says what dropped it, not `perplexity>threshold`: its window over the
    threshold (the rule's name), its length-scaled share (`length`), its neighbours, or the protected bar."""
    from pipeline.perplexity_rule import Judgement, Unit, Verdict, drop_reason

    # long good, short bad, long good, long bad, short good, long bad (one sentence a line)
    units = [Unit(100, 40, 0), Unit(50_000, 2, 1), Unit(100, 40, 2), Unit(10_000, 40, 3), Unit(200, 3, 4),
             Unit(10_000, 40, 5)]
    verdicts = Judgement(units, "line", "context", window_tokens=1).verdicts(3000, short_tokens=30)
    assert verdicts[0] == Verdict(True, "score", 3000)
    # the short bad line scored over the threshold itself, but its kept neighbours keep it
    assert verdicts[1] == Verdict(True, "neighbours", 3000)
    assert verdicts[3] == Verdict(False, "context", 3000)
    # the short good line (200 under its bar of 400) goes with its two dropped neighbours
    assert verdicts[4] == Verdict(False, "neighbours", 400)
    assert drop_reason("line", verdicts[4]) == "perplexity:line/neighbours@400"
    # under `length` a line scoring under the threshold goes when over its length-scaled share of it
    length = Judgement([Unit(100, 40, 0), Unit(1000, 5, 1)], "line", "length").verdicts(3000, short_tokens=30)
    assert length[1] == Verdict(False, "length", 600) and drop_reason("line", length[1]) == "perplexity:line/length@600"
    # a protected line over the protected bar; unscored units are kept
    protected = Judgement([Unit(20_000, 40, 0), Unit(None, 3, 1)], "line", "context").verdicts(
        100, protected=[True, False], protected_threshold=300)
    assert protected == [Verdict(False, "protected", 300), Verdict(True, "unscored", math.inf)]
    assert drop_reason("sentence", Verdict(False, "fixed", 42169.7)) == "perplexity:sentence/fixed@42170"
    # the mask is the verdicts' kept flags
    judged = Judgement(units, "line", "context", window_tokens=1)
    assert judged.mask(3000) == [v.kept for v in judged.verdicts(3000)]


def test_the_block_stage_protects_lines_at_its_page_types_own_bar():
    """``perplexity.protect_min_prob_by_type``: on a product page a line the block stage kept at 0.7 is protected,
    on an article (or a page of no type) it faces the rule like any other."""
    from pipeline.config import load_settings
    from pipeline.document import Sentence
    from pipeline.perplexity_rule import protected

    settings = load_settings(None, []).perplexity
    sentences = [Sentence("Weight 1.2 kg", block_prob=0.7), Sentence("Colour red", block_prob=0.9),
                 Sentence("Sold out", block_prob=0.4), Sentence("Menu")]
    assert protected(sentences, settings, "product") == [True, True, False, False]
    assert protected(sentences, settings, "article") == protected(sentences, settings) == [False, True, False, False]
