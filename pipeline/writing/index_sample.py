"""The deterministic page sample of the index statistics, written by every split, read by the driver.

The sample is the pages that reached the filter (kept, or emptied by it) whose SHA-1(record id), read as a fraction
of 2^160, is below ``index.sample_share`` (:func:`in_share`: uniform, and the same pages whatever the splits), and of
those at most the ``index.sample_pages`` of smallest key (0: all of them). Each split keeps its own candidates, the
``index.per_split_pages`` pages of smallest key it saw below the share (:class:`IndexSample`), with each page's text at
the three links the run produces: ``visible`` (all visible text, the paper's tag-stripped input: the page's one
parse by the block stage, every block a line, :meth:`~pipeline.steps.blocks.extractor.BlockPage.visible_text`; only when
``index.visible_text``), ``main_content`` (the extractor's sentences) and ``filtered`` (the sentences the filter
kept; ``written``, the same as the row writes it), and writes them to ``_index/pages/<split_id>.parquet``. The driver takes the smallest keys of all candidates
(:func:`read_index_sample`): the same pages as one global hash order whenever no split that filled its quota could
have held more of them, which the driver checks and states (``exact``). A split's quota is the binomial spread of
its share of the sample, its mean plus four standard deviations (:func:`per_split_pages`), so that the check holds
with high probability while a split keeps little more than its share. The corpus builder writes the sample's text
after each corpus stage to ``_corpus/index_sample/`` (null where no stage so far changed it: the ``written`` text).
"""

from __future__ import annotations

import hashlib
import heapq
import io
import math
from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from pipeline.config import ExtractSettings, S3Settings
from pipeline.document import Document, page_text
from pipeline.stats import Stats, timed
from pipeline.writing.output import CORPUS_STATE_DIR, INDEX_STATE_DIR, OutputTarget, filesystem_for

# The corpus builder's texts of the sampled pages after each stage: (stage, warc_record_id, text).
CORPUS_SAMPLE_DIR = f"{CORPUS_STATE_DIR}/index_sample"
# Each split's candidates for the sample.
INDEX_SAMPLE_DIR = f"{INDEX_STATE_DIR}/pages"
INDEX_SAMPLE_SCHEMA = pa.schema([("warc_record_id", pa.string()), ("language", pa.string()),
                                 ("split_id", pa.string()), ("visible", pa.string()),
                                 ("main_content", pa.string()), ("filtered", pa.string()), ("written", pa.string())])
# A split keeps its even share of the sample plus this many standard deviations of that share's spread: with even
# splits, one holds more than that of the global sample about 3 times in 100,000.
QUOTA_SDS = 4


def sample_key(record_id: str) -> bytes:
    return hashlib.sha1(record_id.encode("utf-8")).digest()


def share_bound(share: float) -> bytes | None:
    """The keys below which a page is in a sample of ``share`` of the pages (None: every page)."""
    if share >= 1:
        return None
    return int(share * (1 << 160)).to_bytes(20, "big")


def per_split_pages(sample_pages: int, splits: int) -> int:
    """How many candidates each of ``splits`` splits keeps for a sample of ``sample_pages`` (0: all of them): its
    even share of the sample, m = sample_pages / splits, plus ``QUOTA_SDS`` standard deviations of the number of the
    sample's pages an even split holds (binomial, p = 1 / splits: sd = sqrt(m (1 - p))); at least 2, at most the
    sample."""
    if not sample_pages:
        return 0
    splits = max(1, splits)
    share = sample_pages / splits
    spread = math.sqrt(share * (1 - 1 / splits))
    return min(sample_pages, max(2, math.ceil(share + QUOTA_SDS * spread)))


class IndexSample:
    """One split's candidates: the ``limit`` pages of smallest :func:`sample_key` (every page when 0), with
    their texts at the three links. The visible text comes from the page's one parse (the block stage's reading,
    ``Document.blocks``), or is the extractor's text where that is all visible text; only a page neither gives
    (the block stage did not read it) is tag-stripped again, when it enters."""

    def __init__(self, limit: int, extract: ExtractSettings, visible_text: bool = True, share: float = 1.0) -> None:
        self.limit = limit
        self.bound = share_bound(share)  # a page of a key at or above it is not in the sample
        self._heap: list[tuple[bytes, dict[str, Any]]] = []  # (inverted key, row): the largest key on top
        self._visible = None
        if visible_text:
            from pipeline.writing.rows import VisibleText

            self._visible = VisibleText(extract)

    def offer(self, doc: Document, stats: Stats) -> bool:
        """Take ``doc`` (a page that reached the filter) if its key is among the smallest; True if taken. Its visible
        text is timed as ``cpu.visible_text`` and counted as ``index_sample.visible_extracted`` (and as
        ``index_sample.visible_reparsed`` where the page was tag-stripped again)."""
        key = sample_key(doc.page.record_id)
        if self.bound is not None and key >= self.bound:
            return False
        inverted = bytes(255 - b for b in key)
        if self.limit and len(self._heap) >= self.limit and inverted <= self._heap[0][0]:
            return False
        visible = None
        if self._visible is not None:
            with timed(stats, "cpu.visible_text"):
                if doc.blocks is not None:
                    visible = doc.blocks.visible_text()
                else:
                    visible = self._visible.row(doc)["text"]
                    stats.add("index_sample.visible_reparsed")
            stats.add("index_sample.visible_extracted")
        row = {"warc_record_id": doc.page.record_id, "language": doc.language_code, "visible": visible,
               "main_content": page_text(doc.sentences), "filtered": page_text(doc.sentences, lambda s: s.kept),
               "written": doc.clean_text}
        if self.limit and len(self._heap) >= self.limit:
            heapq.heapreplace(self._heap, (inverted, row))
        else:
            heapq.heappush(self._heap, (inverted, row))
        return True

    def __len__(self) -> int:
        return len(self._heap)

    def write(self, target: OutputTarget, split_id: str, compression: str) -> None:
        """The candidates as ``_index/pages/<split_id>.parquet`` (written atomically), smallest key first."""
        rows = [{**row, "split_id": split_id} for _, row in sorted(self._heap, reverse=True)]
        buffer = io.BytesIO()
        import pyarrow.parquet as pq

        pq.write_table(pa.Table.from_pylist(rows, schema=INDEX_SAMPLE_SCHEMA), buffer,
                       compression=None if compression == "none" else compression)
        target.write_bytes(f"{INDEX_SAMPLE_DIR}/{split_id}.parquet", buffer.getvalue())


def open_dataset(uri: str, s3: S3Settings, what: str, hive: bool = True):
    """The Parquet dataset under ``uri`` (``hive``: its ``language=<code>`` directories read as the dictionary the
    files' own ``language`` column is, :data:`~pipeline.writing.output.PARTITION_TYPE`); ValueError naming ``what``
    when there is none."""
    # pyarrow.dataset imports pandas: only a run that builds index statistics pays for it
    import pyarrow.dataset as ds

    fs, root = filesystem_for(uri, s3)
    try:
        return ds.dataset(root, filesystem=fs, format="parquet",
                          partitioning=ds.HivePartitioning.discover(infer_dictionary=True) if hive else None,
                          exclude_invalid_files=True)
    except (FileNotFoundError, pa.ArrowInvalid) as exc:
        raise ValueError(f"no {what} under {uri}: {exc}") from None


@dataclass(frozen=True)
class SampledPage:
    """A sampled page's text at each link the run produced (``visible`` None: not extracted)."""

    record_id: str
    language: str
    visible: str | None
    main_content: str
    filtered: str
    written: str
    """The text the page's row holds: ``filtered`` as the run wrote it (the spacing between sentences as on the
    page); the corpus stages' text where none changed it."""


def _read_files(dataset, s3: S3Settings, columns: list[str] | None = None, keep=None):
    """The rows of ``dataset``'s files, one file at a time: each fetched whole with a plain GET (no ranged reads,
    which moto behind a proxy answered with a stream the S3 client could not flush) and tried up to
    ``s3.max_attempts`` times, then ``columns`` of the rows ``keep`` (an Arrow expression) selects."""
    import pyarrow.parquet as pq

    tables = []
    for path in dataset.files:
        for attempt in range(max(1, s3.max_attempts)):
            try:
                with dataset.filesystem.open_input_stream(path) as stream:
                    data = stream.read()
                break
            except OSError:
                if attempt + 1 >= max(1, s3.max_attempts):
                    raise
        table = pq.read_table(pa.BufferReader(data), columns=columns, filters=keep)
        tables.append(table)
    return pa.concat_tables(tables) if tables else None


def read_index_sample(output: str, s3: S3Settings, sample_pages: int,
                      per_split: int = 0) -> tuple[list[SampledPage], dict[str, Any]]:
    """The sample (smallest keys first) from every split's candidates, and how it was drawn: ``pages``,
    ``candidates`` (read), ``splits``, ``per_split`` (the most a split could keep, 0: all), ``exact`` (the
    same pages as one hash order over the whole run: no split that kept ``per_split`` candidates, and so may
    have left pages out, left out a key below the sample's largest)."""
    import pyarrow.compute as pc

    dataset = open_dataset(f"{output.rstrip('/')}/{INDEX_SAMPLE_DIR}", s3, "index sample", hive=False)
    # the record ids first: the texts are read for the chosen pages only (the driver holds no more of them)
    table = _read_files(dataset, s3, columns=["warc_record_id", "split_id"])
    ids = table.to_pydict() if table is not None else {"warc_record_id": []}
    if not ids["warc_record_id"]:
        raise ValueError(f"no page reached the filter (nothing under {output}/{INDEX_SAMPLE_DIR})")
    by_split: dict[str, list[bytes]] = {}
    keys: dict[str, bytes] = {}
    for record_id, split_id in zip(ids["warc_record_id"], ids["split_id"]):
        key = keys.get(record_id)
        if key is None:
            key = keys[record_id] = sample_key(record_id)
        by_split.setdefault(split_id, []).append(key)
    ordered = sorted(keys, key=keys.__getitem__)
    chosen_ids = ordered[:sample_pages] if sample_pages else ordered
    cutoff = keys[chosen_ids[-1]]
    # a split that kept its quota may have left out pages, all of keys above its largest kept one
    exact = all(max(split_keys) >= cutoff for split_keys in by_split.values()
                if per_split and len(split_keys) >= per_split)
    unique: dict[str, dict[str, Any]] = {}
    for row in _read_files(dataset, s3, keep=pc.field("warc_record_id").isin(chosen_ids)).to_pylist():
        unique.setdefault(row["warc_record_id"], row)
    chosen = [unique[record_id] for record_id in chosen_ids]
    pages = [SampledPage(row["warc_record_id"], row["language"], row["visible"], row["main_content"] or "",
                         row["filtered"] or "", row.get("written", row["filtered"]) or "") for row in chosen]
    return pages, {"pages": len(pages), "candidates": len(keys), "splits": len(by_split), "per_split": per_split,
                   "exact": exact}


def sample_record_ids(output: str, s3: S3Settings, sample_pages: int) -> list[str]:
    """The record ids of the sample (:func:`read_index_sample`)."""
    return [page.record_id for page in read_index_sample(output, s3, sample_pages)[0]]
