"""Work the steps share instead of redoing, on real pages and real models: the same outcome, less CPU."""

from __future__ import annotations

import random
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest
from conftest import SAMPLE_WARC

from pipeline import _native, model_cache
from pipeline.config import load_settings
from pipeline.document import Document
from pipeline.reading.reader import read_pages
from pipeline.reading.shards import Split
from pipeline.spark import cds
from pipeline.spark.runner import run_split
from pipeline.spark.cds import BATCH_JAVA_OPTIONS, require_java
from pipeline.spark.session import LOCAL_BATCH_CONF, local_batch_conf
from pipeline.stats import Stats
from pipeline.steps.loop import StepLoop
from pipeline.perplexity_rule import Unit
from pipeline.steps.perplexity import PerplexityFilter
from pipeline import perplexity_rule as perplexity_module
from pipeline.steps import perplexity as filter_step
from pipeline.steps.blocks import features
from pipeline.steps.blocks import model as block_model_module


LOAD_KENLM = model_cache._load_kenlm


class CountingModel:
    """A real KenLM model that counts the lines it scores."""

    def __init__(self, path: str) -> None:
        self.path, self.model, self.scored = path, LOAD_KENLM(path), 0

    def score(self, line: str, bos: bool = True, eos: bool = True) -> float:
        self.scored += 1
        return self.model.score(line, bos=bos, eos=eos)


def test_the_filter_reuses_the_block_stages_kenlm_scores(tmp_path, monkeypatch):
    """The block stage's pinned model and the registry's entry for the same file are one object, so a
    sentence equal to a block the block stage scored on the page is not scored again."""
    loaded: list[CountingModel] = []

    def load(path: str) -> CountingModel:
        loaded.append(CountingModel(path))
        return loaded[-1]

    monkeypatch.setattr(model_cache, "_load_kenlm", load)
    monkeypatch.setattr(model_cache, "_CACHE", {})
    monkeypatch.setattr(block_model_module, "_VERIFIED", {})
    monkeypatch.setattr(perplexity_module, "_SCORED", {})
    asked: dict[str, set] = {"blocks": set(), "filter": set()}
    real = perplexity_module.perplexities

    def asking(stage: str):
        def scored(model, texts: list[str]) -> list[tuple[float, int]]:
            asked[stage].update((model, text) for text in texts)
            return real(model, texts)
        return scored

    monkeypatch.setattr(features, "perplexities", asking("blocks"))
    monkeypatch.setattr(filter_step, "perplexities", asking("filter"))
    stats = run_split(Split(str(SAMPLE_WARC), 0, 1), load_settings(None), str(tmp_path / "out"))
    assert stats["outcome"]["kept"] > 0
    assert max(Counter(m.path for m in loaded).values()) == 1  # each file loaded once
    assert len(asked["blocks"] | asked["filter"]) < perplexity_module.SCORED_CACHE_SIZE  # nothing evicted
    shared = asked["blocks"] & asked["filter"]
    assert len(shared) >= 10, "sentences equal to scored blocks, under the same model object"
    # every text was scored once per model, those both stages asked for included
    assert sum(m.scored for m in loaded) == len(asked["blocks"] | asked["filter"])


@pytest.fixture(scope="module")
def scored_pages() -> list[Document]:
    """The sample WARC's kept pages through the default steps: real blocks, real KenLM scores."""
    loop = StepLoop(load_settings(None))
    pages = read_pages(Split(str(SAMPLE_WARC), 0, 1), loop.settings.input, loop.settings.s3, Stats())
    docs = [doc for doc in loop.run(pages) if doc.outcome == "kept" and doc.sentences]
    assert sum(1 for doc in docs if doc.extractor == "blocks") >= 10
    return docs


def windows(units: list[Unit], window: int) -> list[Unit]:
    """Each scored unit pooled with its nearest neighbours, both sides in turn, until it holds ``window`` tokens."""
    out = []
    for i, unit in enumerate(units):
        if unit.perplexity is None:
            out.append(unit)
            continue
        members, lo, hi = [unit], i - 1, i + 1
        while sum(u.n_tokens for u in members) < window and (lo >= 0 or hi < len(units)):
            members += [units[j] for j in (lo, hi) if 0 <= j < len(units)]
            lo, hi = lo - 1, hi + 1
        out.append(perplexity_module.pooled(members)._replace(paragraph=unit.paragraph))
    return out


def lines_of(units: list[Unit]) -> list[list[int]]:
    """The indexes of ``units`` grouped by line (paragraph), in order of first appearance."""
    groups: dict[int, list[int]] = {}
    for i, unit in enumerate(units):
        groups.setdefault(unit.paragraph, []).append(i)
    return list(groups.values())


def test_a_judgement_pools_each_group_and_its_window_as_pooled_does(scored_pages):
    """``Judgement`` (compiled pooling): its groups are the lines (or the units), each judged unit is :func:`pooled`
    of its group, and each score is :func:`pooled` of its window of neighbours, float for float, under every unit and
    window, on real pages and on made-up ones (unscored lines, perplexities under 1, lines of no tokens, paragraphs
    out of order)."""
    settings = load_settings(None).perplexity
    pages = [[Unit(s.perplexity if (s.n_tokens or 0) >= settings.min_tokens else None, s.n_tokens or 0, s.paragraph)
              for s in doc.sentences] for doc in scored_pages]
    rng = random.Random(7)
    for _ in range(300):
        paragraphs = [rng.choice([0, 1, 1, 2, 5]) for _ in range(rng.randint(0, 40))]
        pages.append([Unit(None if rng.random() < 0.2 else rng.choice([rng.uniform(0.2, 1.5), rng.lognormvariate(6, 2)]),
                           rng.randint(0, 50), paragraph) for paragraph in paragraphs])
    checked = 0
    for units in pages:
        for unit_kind in ("line", "sentence"):
            for rule, window in (("fixed", 40), ("window", 1), ("window", 40), ("context", 400)):
                judged = perplexity_module.Judgement(units, unit_kind, rule, window)
                groups = lines_of(units) if unit_kind == "line" else [[i] for i in range(len(units))]
                assert judged.groups == groups
                assert judged.judged == [perplexity_module.pooled([units[i] for i in group]) for group in groups]
                assert judged.scores == (judged.judged if rule == "fixed" else windows(judged.judged, window))
                assert all(type(u) is Unit for u in judged.judged + judged.scores)
                checked += sum(u.perplexity is not None for u in judged.scores)
    assert checked > 10_000


def test_one_judgement_serves_the_protected_and_unprotected_masks(scored_pages):
    """The filter judges a page once and decides twice (the unprotected mask counts ``sentences_protected``):
    the same masks as judging afresh, at the registry's threshold and at a tenth of it."""
    settings = load_settings(None).perplexity
    entries = [(doc, PerplexityFilter(settings).entry(doc.language_code)) for doc in scored_pages]
    saved = 0
    for doc, entry in ((doc, entry) for doc, entry in entries if entry is not None):
        judged = perplexity_module.judgement(doc.sentences, settings)
        for threshold in (entry.threshold_for(settings), entry.threshold_for(settings) / 10):
            masks = [perplexity_module.kept_mask(doc.sentences, threshold, settings, protect, judged)
                     for protect in (True, False)]
            assert masks == [perplexity_module.kept_mask(doc.sentences, threshold, settings, protect)
                             for protect in (True, False)]
            saved += sum(k and not u for k, u in zip(*masks))
    assert saved > 0, "some lines kept only because the block stage was sure of them"


def fake_java(tmp_path: Path, runtime: str = "17.0.15+6-Debian-1deb12u1") -> str:
    """A ``bin/java`` beside a JDK ``release`` file (all :class:`ClassArchive` reads of a JDK)."""
    (tmp_path / "jdk" / "bin").mkdir(parents=True)
    (tmp_path / "jdk" / "release").write_text(f'JAVA_VERSION="17.0.15"\nJAVA_RUNTIME_VERSION="{runtime}"\n')
    return str(tmp_path / "jdk" / "bin" / "java")


def test_the_class_archive_is_named_for_its_java_pyspark_and_options(tmp_path, monkeypatch):
    """A run maps the archive only when one was made for its Java runtime, pyspark and JVM options."""
    import pyspark

    monkeypatch.setattr(cds, "ARCHIVE_DIR", tmp_path / "cds")
    java = fake_java(tmp_path)
    archive = cds.ClassArchive(java, BATCH_JAVA_OPTIONS)
    assert archive.path.parent == tmp_path / "cds"
    assert archive.path.name.startswith(f"spark-{pyspark.__version__}-java-17.0.15_6-Debian-1deb12u1-")
    assert cds.ClassArchive(java, BATCH_JAVA_OPTIONS + " -Xmx2g").path != archive.path
    assert archive.java_option() is None and local_batch_conf(java) == LOCAL_BATCH_CONF  # none made yet
    archive.path.parent.mkdir()
    archive.path.write_bytes(b"archive")
    assert local_batch_conf(java)["spark.driver.extraJavaOptions"] == \
        f"{BATCH_JAVA_OPTIONS} -XX:SharedArchiveFile={archive.path}"
    (tmp_path / "jdk" / "release").write_text('JAVA_RUNTIME_VERSION="17.0.16+8"\n')  # Java upgraded
    assert local_batch_conf(java) == LOCAL_BATCH_CONF
    assert cds.ClassArchive(str(tmp_path / "nojdk" / "java"), BATCH_JAVA_OPTIONS).java_option() is None


@pytest.mark.spark
def test_a_local_run_maps_the_class_archive_make_setup_built():
    """The driver JVM of a context warcplex starts maps the archive (it is in the JVM's memory maps)."""
    archive = cds.ClassArchive(require_java(), BATCH_JAVA_OPTIONS)
    if archive.java_option() is None:
        pytest.skip("no class-data archive (make setup builds it)")
    script = ("import os; from pipeline.config import load_settings; from pipeline.spark.session import spark_context; "
              "sc = spark_context(load_settings(None, ['spark.master=local[1]'])); "
              "pid = sc._jvm.java.lang.ProcessHandle.current().pid(); "
              "print(open(f'/proc/{pid}/maps').read()); sc.stop()")
    run = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr[-2000:]
    assert str(archive.path) in run.stdout
    assert "Unable to use shared archive" not in run.stdout + run.stderr


def test_the_worker_daemon_collects_only_the_young_generations_after_a_task():
    """pyspark's daemon calls ``gc.collect()`` after each task; under warcplex's daemon that walks generations 0
    and 1, never the oldest (the whole heap of the worker)."""
    import gc

    import pyspark.daemon

    from pipeline.spark import worker_daemon  # noqa: F401  (patches pyspark.daemon)

    before = [generation["collections"] for generation in gc.get_stats()]
    cycle = []
    cycle.append(cycle)
    del cycle
    assert pyspark.daemon.gc.collect() >= 1  # the young cycle is found
    after = [generation["collections"] for generation in gc.get_stats()]
    assert after[1] > before[1] and after[2] == before[2]
    assert pyspark.daemon.gc.get_threshold() == gc.get_threshold()  # the rest is gc's


@pytest.mark.spark
def test_a_local_runs_workers_are_forked_by_warcplexs_daemon_with_the_task_modules_imported():
    """The Python workers of a context warcplex starts come from pipeline/spark/worker_daemon.py: their daemon's
    collection is the young one, and pyspark.worker was imported before the fork. Every worker imports the page
    pipeline, the corpus stages and pandas for its tasks (about 0.85 CPU-seconds each): the daemon imports them once
    before it forks, frozen out of the collector. A task that imports nothing finds them in its worker. The daemon's
    own CPU, which the job's start-up counts, is read apart from its workers'."""
    from pipeline.spark.worker_daemon import TASK_MODULES

    script = ("from pipeline.config import load_settings; from pipeline.spark.session import spark_context; "
              "sc = spark_context(load_settings(None, ['spark.master=local[1]'])); "
              "import gc, sys; print(sc.parallelize([0], 1).map(lambda _: (type(sys.modules['pyspark.daemon'].gc).__name__, "
              "sys.modules['__main__'].__spec__.name)).collect()); "
              f"print(sc.parallelize([0], 1).map(lambda _: ([n in sys.modules for n in "
              f"{TASK_MODULES!r}], gc.get_freeze_count() > 0)).collect()); "
              "from pipeline.spark.cpu import probe_executor; "
              "print([0 < p['daemons'] < p['python_workers'] for p in "
              "sc.parallelize([0], 1).mapPartitions(probe_executor).collect()]); sc.stop()")
    run = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr[-2000:]
    assert "[('_YoungCollection', 'pipeline.spark.worker_daemon')]" in run.stdout
    assert f"[({[True] * len(TASK_MODULES)}, True)]\n[True]" in run.stdout
