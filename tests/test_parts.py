"""Parts found by name: steps, extractors, readers and corpus stages are found by the name they declare, and a
run refuses a name it cannot find in one line, before it writes anything or starts Spark."""

from __future__ import annotations

import pyarrow.dataset as ds
import pytest
from pyspark.sql import functions as F

from conftest import SAMPLE_WARC, real_warc
from pipeline import parts
from pipeline.cli import main as cli_main
from pipeline.config import ConfigError, load_settings
from pipeline.corpus.stages import CorpusRule, CorpusStage, ExactDedup, Quality
from pipeline.reading.arc import ArcReader
from pipeline.reading.reader import Reader, default_extractors, pages_line, pages_read, reader_for
from pipeline.reading.warc import WarcReader
from pipeline.reading.wet import WetReader
from pipeline.steps.base import Step
from pipeline.steps.blocks.extractor import BlocksExtractor
from pipeline.steps.extractors import ConservativeExtractor, Extractor, WetExtractor, build_extractor
from pipeline.steps.min_words import MinWords


def test_each_kind_finds_its_parts_by_the_names_they_declare():
    assert parts.find(Step, "min_words") is MinWords
    assert parts.find(Extractor, "blocks") is BlocksExtractor and parts.find(Extractor, "wet") is WetExtractor
    assert parts.find(CorpusStage, "exact_dedup") is ExactDedup and parts.find(CorpusStage, "quality") is Quality
    assert parts.every(Reader) == [ArcReader, WarcReader, WetReader]
    # one name, one kind: an extractor is no step, a step is no extractor
    with pytest.raises(ConfigError, match=r"pipeline.steps: no step 'blocks' \(there are: .*min_words"):
        parts.find(Step, "blocks")
    with pytest.raises(ConfigError, match=r"extract.cascade: no extractor 'min_words' \(there are: blocks, "):
        parts.find(Extractor, "min_words")
    assert parts.find(Extractor, "pipeline.steps.extractors:ConservativeExtractor") is ConservativeExtractor
    with pytest.raises(ConfigError, match="has no extractor 'MinWords'"):
        parts.find(Extractor, "pipeline.steps.min_words:MinWords")


def test_an_extractor_is_made_as_the_settings_say():
    settings = load_settings("conf/local.yaml", ["perplexity.protect_regions=true"])
    assert build_extractor("blocks", settings).regions is True
    assert build_extractor("conservative", settings, first=True).unfiltered is False  # the paper's first stage
    assert build_extractor("conservative", settings).unfiltered is True  # SORE's revert


def test_a_file_is_read_by_the_reader_its_name_chooses():
    assert reader_for("CC-MAIN-2024-22.whirlwind.warc.wet.gz") is WetReader
    assert reader_for("s3://bucket/x.WARC.GZ?versionId=1") is WarcReader
    assert reader_for("page-dump.bin") is WarcReader  # no reader claims it: the fallback reads it as WARC
    assert default_extractors() == {"wet"}
    assert pages_read({"read": 10, "html": 3, "wet": 2}) == 5
    assert pages_line({"html": 3}) == "HTML pages: 3"
    assert pages_line({"html": 0, "wet": 2}) == "HTML pages: 0 + WET text records: 2"


def test_a_wet_page_carries_its_kind_and_its_extractor():
    settings = load_settings(None)
    reader = WetReader(settings.input, settings.s3)
    from pipeline.reading.shards import Shard
    from pipeline.stats import Stats

    path = real_warc("cc-genuine", "CC-MAIN-2024-22.whirlwind.warc.wet.gz")
    [split] = reader.plan(Shard(str(path), path.name), 4)
    stats = Stats()
    [page] = list(reader.pages(split, stats))
    assert (page.kind, page.extractor, split.reader) == ("wet", "wet", "wet")
    assert stats.counts["records.wet"] == 1 and stats.counts["skip.not_response.warcinfo"] == 1


@pytest.mark.parametrize("assignment, message", [
    ("extract.cascade=[blocks, trafilaturaa]", "extract.cascade: no extractor 'trafilaturaa'"),
    ("pipeline.steps=[decode, cascade, langid, sentence]", "pipeline.steps: no step 'sentence'"),
    ("corpus.stages=[exact_dedup, qualityy]", "corpus.stages: no corpus stage 'qualityy'"),
])
def test_a_name_no_part_has_ends_the_run_in_one_line_before_it_writes(assignment, message, tmp_path, capsys):
    output = tmp_path / "out"
    assert cli_main(["run", "--input", str(SAMPLE_WARC), "--output", str(output), "--set", assignment]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and message in err
    assert not output.exists()


class ShortDocuments(CorpusRule):
    """A corpus rule of a test's own: drops the documents of fewer than ``min_lines`` lines."""

    name = "short_documents"

    def __init__(self, min_lines: int = 2) -> None:
        self.min_lines = min_lines

    def rejects(self):
        return F.size(F.split(F.col("text"), "\n")) < self.min_lines


@pytest.mark.spark
def test_a_corpus_rule_is_a_stage_of_its_own_configured_by_name(tmp_path):
    output = tmp_path / "out"
    assert cli_main(["run", "--input", str(SAMPLE_WARC), "--output", str(output), "--config", "conf/local.yaml",
                     "--set", "corpus.stages=[exact_dedup, test_parts:ShortDocuments, quality]",
                     "--set", "corpus.options={short_documents: {min_lines: 6}}"]) == 0
    dropped = ds.dataset(str(output / "corpus_dropped" / "documents")).to_table().to_pylist()
    kept = ds.dataset(str(output / "corpus")).to_table().to_pylist()
    short = [d for d in dropped if d["reason"] == "short_documents"]
    assert short and kept and all(len(d["text"].split("\n")) >= 6 for d in kept)
