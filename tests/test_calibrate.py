"""`warcplex calibrate` on real bench pages with the shipped English model."""

from __future__ import annotations

import json

import pytest
import yaml

from benchpages import scorer
from conftest import bench_file
from pipeline.analysis.calibrate import (is_main_sentence, load_pages, rouge_n_f1, score_pages, score_tokens, snippet_f,
                                        snippet_label, token_effect)
from pipeline.cli import main as cli_main
from pipeline.config import PROJECT_ROOT, load_settings, resolve_path


def load_bench_scorer():
    return scorer(bench_file("score.py").parent)


def test_rouge_matches_the_bench_scorer():
    scorer = load_bench_scorer()
    pairs = [("the cat sat on the mat and looked at the dog", "the cat sat on the mat and then slept"),
             ("a b c d e f g", "a b c d e f g"), ("", "x y z"), ("one two three four five six", "")]
    for pred, truth in pairs:
        assert rouge_n_f1(pred.split(), truth.split()) == pytest.approx(scorer.score_pair(pred, truth)["rouge5_f"])


def test_tokens_follow_the_bench_scorer_on_unspaced_scripts():
    scorer = load_bench_scorer()
    for text in ("北京是中国的首都，人口超过两千万。", "東京タワーは 1958 年に完成した", "ภาษาไทย ไม่มีช่องว่าง",
                 "Mixed 中文 and English words", "한국어는 띄어쓰기를 한다"):
        assert score_tokens(text) == scorer.tokenize(text)
    pred, truth = "北京是中国的首都。", "北京是中国的首都，人口超过两千万。"
    assert rouge_n_f1(score_tokens(pred), score_tokens(truth)) == pytest.approx(scorer.score_pair(pred, truth)["rouge5_f"])


def test_snippet_score_and_labels_follow_the_bench_scorer():
    scorer = load_bench_scorer()
    snippets = {"with": ["Der Premierminister muss", "eine  Verlängerung beantragen"], "without": ["Drucken", "Video"]}
    for pred in ("Der Premierminister muss eine Verlängerung beantragen.\nDrucken", "Video", "",
                 "Der Premierminister muss gehen."):
        assert snippet_f(pred, snippets) == pytest.approx(scorer.score_snippets(pred, snippets)["snippet_f"])
    assert snippet_label("Der Premierminister muss eine Verlängerung beantragen.", snippets) is True
    assert snippet_label("Drucken", snippets) is False
    assert snippet_label("Ein anderer Satz ohne Bezug.", snippets) is None


def test_sentence_labels_follow_the_truth():
    truth = "the river flooded the old town twice in one winter and the bridge survived".split()
    shingles = {n: {tuple(truth[i:i + n]) for i in range(len(truth) - n + 1)} for n in (2, 3)}
    assert is_main_sentence("The river flooded the old town twice.", shingles, set(truth))
    assert not is_main_sentence("Subscribe to our newsletter today", shingles, set(truth))


@pytest.fixture
def registry_copy(tmp_path):
    source = PROJECT_ROOT / "conf" / "models.yaml"
    if not source.exists():
        pytest.skip("conf/models.yaml is missing")
    tree = yaml.safe_load(source.read_text())
    for entry in tree["models"].values():
        entry["path"] = str(resolve_path(entry["path"]))
    path = tmp_path / "models.yaml"
    path.write_text(yaml.safe_dump(tree))
    return path


@pytest.mark.slow
def test_calibrate_writes_distributions_plot_and_thresholds(tmp_path, registry_copy):
    data = bench_file("data")
    manifest = [json.loads(line) for line in (data / "manifest.jsonl").read_text().splitlines()]
    ids = [r["id"] for r in manifest if r["dataset"] == "cleaneval" and r["lang"] == "en"][:30]
    (tmp_path / "ids.txt").write_text("\n".join(ids))
    out = tmp_path / "cal"
    status = cli_main(["calibrate", "--data", str(data), "--ids", str(tmp_path / "ids.txt"), "--extractor", "conservative",
                       "--registry", str(registry_copy), "--out", str(out), "--min-pages", "5",
                       "--processes", "1", "--write"])
    assert status == 0
    calibration = json.loads((out / "calibration.json").read_text())
    assert calibration["extractor"] == "conservative"
    result = calibration["languages"]["en"]
    assert result["pages"] >= 25
    assert result["sentences_main"] > 0 and result["sentences_boilerplate"] > 0
    # Boilerplate scores higher than main text on real pages.
    assert result["median_perplexity_boilerplate"] > result["median_perplexity_main"]
    # The chosen threshold is the best point of the curve it reports.
    assert result["metric"] == "rouge5_f1"
    assert result["score"] == max(f for _, f in result["curve"])
    assert [t for t, f in result["curve"] if f == result["score"]][0] == result["threshold"]
    # On all visible text (no main-content extraction) a threshold removes boilerplate, as in the paper.
    assert result["score"] > result["score_unfiltered"]
    assert result["token_effect"]["boilerplate_tokens_removed"] > 1 - result["token_effect"]["main_tokens_kept"]
    values = [result["percentiles"][p] for p in sorted(result["percentiles"], key=int)]
    assert values == sorted(values)
    assert (out / "calibration.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    written = yaml.safe_load(registry_copy.read_text())["models"]["en"]
    assert written["threshold"] == result["threshold"]
    assert written["calibration"]["extractor"] == "conservative" and written["calibration"]["pages"] == result["pages"]
    assert written["percentiles"][90] == result["percentiles"]["90"]


@pytest.mark.slow
def test_calibrate_corpus_objective_removes_most_boilerplate_within_the_main_token_budget(tmp_path, registry_copy):
    data = bench_file("data")
    manifest = [json.loads(line) for line in (data / "manifest.jsonl").read_text().splitlines()]
    ids = [r["id"] for r in manifest if r["dataset"] == "cleaneval" and r["lang"] == "en"][:20]
    (tmp_path / "ids.txt").write_text("\n".join(ids))
    out = tmp_path / "cal"
    status = cli_main(["calibrate", "--data", str(data), "--ids", str(tmp_path / "ids.txt"), "--extractor", "conservative",
                       "--registry", str(registry_copy), "--out", str(out), "--min-pages", "5", "--processes", "1",
                       "--objective", "corpus", "--max-main-loss", "0.05"])
    assert status == 0
    result = json.loads((out / "calibration.json").read_text())["languages"]["en"]
    corpus, quality = result["objectives"]["corpus"], result["objectives"]["quality"]
    assert result["threshold"] == corpus["threshold"] and result["objective"] == corpus["objective"]
    assert corpus["token_effect"]["main_tokens_kept"] >= 0.95
    assert corpus["token_effect"]["boilerplate_tokens_removed"] > 0
    # The next lower threshold of the grid would lose more than the budget.
    grid = [t for t, _ in result["curve"]]
    lower = grid.index(corpus["threshold"]) - 1
    assert lower >= 0
    pages = score_pages(load_pages(data, set(ids)), load_settings(None, [f"perplexity.registry={registry_copy}"]),
                        "conservative", 1)
    assert token_effect([p for p in pages if p.language == "en"], grid[lower])["main_tokens_kept"] < 0.95
    # Both objectives are reported with their score.
    assert quality["score"] == max(f for _, f in result["curve"])


def test_calibrate_rejects_a_folder_without_manifest(tmp_path, capsys):
    assert cli_main(["calibrate", "--data", str(tmp_path)]) == 2
    assert "manifest.jsonl not found" in capsys.readouterr().err



@pytest.mark.slow
def test_calibrate_reads_the_layout_docs_thresholds_md_documents(tmp_path, registry_copy):
    """A folder written exactly as docs/thresholds.md describes it (a manifest with only id, dataset and
    truth_type; pages/<id>.html.gz and truth/<id>.txt or .json under the dataset's folder) calibrates: real
    bench pages copied into it, under a dataset name of one's own, with one snippet page and one row whose
    files are missing (skipped)."""
    import shutil

    data = bench_file("data")
    manifest = [json.loads(line) for line in (data / "manifest.jsonl").read_text().splitlines()]
    fulltext = [r for r in manifest if r["dataset"] == "cleaneval" and r["lang"] == "en"][:12]
    snippet = next(r for r in manifest if r["truth_type"] == "snippets" and r["lang"] == "en")
    mine = tmp_path / "mine"
    rows = []
    for i, row in enumerate([*fulltext, snippet]):
        page_id, suffix = f"page-{i:03d}", ".json" if row["truth_type"] == "snippets" else ".txt"
        (mine / "mysite" / "pages").mkdir(parents=True, exist_ok=True)
        (mine / "mysite" / "truth").mkdir(parents=True, exist_ok=True)
        shutil.copy(data / row["dataset"] / "pages" / f"{row['id']}.html.gz", mine / "mysite" / "pages" / f"{page_id}.html.gz")
        shutil.copy(data / row["dataset"] / "truth" / f"{row['id']}{suffix}", mine / "mysite" / "truth" / f"{page_id}{suffix}")
        rows.append({"id": page_id, "dataset": "mysite", "truth_type": row["truth_type"]})
    rows.append({"id": "page-missing", "dataset": "mysite", "truth_type": "fulltext"})
    (mine / "manifest.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert len(load_pages(mine, None)) == len(fulltext) + 1
    out = tmp_path / "cal"
    status = cli_main(["calibrate", "--data", str(mine), "--extractor", "conservative", "--registry", str(registry_copy),
                       "--out", str(out), "--min-pages", "5", "--processes", "1", "--objective", "corpus"])
    assert status == 0
    result = json.loads((out / "calibration.json").read_text())["languages"]["en"]
    assert result["pages"] == len(fulltext)  # the full-text pages decide; the snippet page is read, not needed
    assert result["threshold"] in [t for t, _ in result["curve"]] and result["percentiles"]
