"""The reader interface, and the functions the rest of warcplex reads its input through.

A reader turns the files of one format into pages (datatrove's model: a reader is one :meth:`Reader.read_file`).
It is a part (:mod:`pipeline.parts`): a :class:`Reader` subclass in a module of ``pipeline/reading/`` that says
its ``name`` and the file names it reads (``suffixes``). A file is read by the reader whose suffix its name ends
with, else by the ``fallback`` reader (WARC); no setting names a reader. A reader declares:

- ``page_kind``: what its pages are; every page is counted as ``records.<kind>`` (``html``, ``wet``);
- ``extractor``: the extractor of its pages' text (None: the ``extract.cascade`` stages), carried by each page;
- :meth:`Reader.plan`: a shard's splits (by default the whole file, for a format that cannot be cut at byte
  offsets);
- :meth:`Reader.read_file`: the pages of one split, every other record counted under ``skip.<reason>``;
- :meth:`Reader.record_ids`: the ids of a split's pages, which no other split may repeat.

:func:`plan_splits`, :func:`read_pages` and :func:`split_record_ids` are how the job, the split runner, the
duplicate check and nightly read their input; :func:`pages_read` and :func:`pages_line` count the pages of a
stats tree.
"""

from __future__ import annotations

from typing import Any, Iterator

from pipeline import parts
from pipeline.config import InputSettings, S3Settings
from pipeline.document import Page
from pipeline.reading.shards import Shard, Split
from pipeline.stats import Stats


class ShardReadError(Exception):
    """A shard that cannot be read at all (missing, access denied, remote retries exhausted, no record of its
    format in it).

    Not an ``OSError``: the split is failed, never marked done, and retried by the next run.
    """


class Reader:
    """Reads the files of one format: their splits, their pages and their records' ids."""

    part, home, setting = "reader", "pipeline.reading", "input"  # a part of the registry (pipeline.parts)
    name = "reader"
    suffixes: tuple[str, ...] = ()  # the ends of the file names it reads (lower case), e.g. ".warc.gz"
    fallback = False  # it reads the files whose names no reader's suffixes end
    page_kind = "page"  # its pages' kind: counted as records.<page_kind>
    pages_are = "pages"  # what its pages are, in a sentence (summary.txt)
    extractor: str | None = None  # the extractor of its pages' text (None: the extract.cascade stages)

    def __init__(self, settings: InputSettings, s3: S3Settings) -> None:
        self.settings, self.s3 = settings, s3

    def plan(self, shard: Shard, parallelism: int) -> list[Split]:
        """The splits of ``shard`` (``parallelism``: the splits a shard may be cut into when ``input.splits_per_shard``
        is 0). By default one split, the whole file."""
        return [Split(shard.uri, 0, 1, shard_key=shard.key, reader=self.name)]

    def read_file(self, split: Split, stats: Stats, skip_ids: frozenset[str] = frozenset()) -> Iterator[Page]:
        """The pages of ``split``; every record that is not one is counted (``records.read`` all of them,
        ``skip.<reason>``), and so is a page whose record id is in ``skip_ids`` (another split holds it) or was
        already read (``skip.duplicate_record_id``, unless ``input.dedup_record_ids`` is off). A shard that cannot be
        read at all raises :class:`ShardReadError`."""
        raise NotImplementedError

    def record_ids(self, split: Split) -> list[str] | None:
        """The distinct record ids of ``split``'s pages in file order (the duplicate check across splits); None when
        the shard cannot be read. By default its pages are read for them; a reader that can list them cheaper does."""
        try:
            return list(dict.fromkeys(page.record_id for page in self.read_file(split, Stats())))
        except ShardReadError:
            return None

    def pages(self, split: Split, stats: Stats, skip_ids: frozenset[str] = frozenset()) -> Iterator[Page]:
        """:meth:`read_file`, each page counted as ``records.<kind>``. A whole shard in which the reader found no
        record at all (an empty file, a file that is not of its format) could not be read: :class:`ShardReadError`,
        with the reader's ``file_errors`` reason."""
        read_before = stats.counts["records.read"]
        for page in self.read_file(split, stats, skip_ids):
            stats.add(f"records.{page.kind}")
            yield page
        if split.count == 1 and stats.counts["records.read"] == read_before:
            reason = stats.file_errors.get(split.uri, f"no {self.name.upper()} record found")
            raise ShardReadError(f"{split.uri}: {reason}")


def readers() -> list[type[Reader]]:
    """Every reader (the fallback reader last)."""
    return sorted(parts.every(Reader), key=lambda reader: reader.fallback)


def reader_for(uri: str) -> type[Reader]:
    """The reader of the file at ``uri``: the one whose longest suffix its name ends with, else the fallback."""
    name = uri.split("?", 1)[0].lower()
    matches = [(len(suffix), reader) for reader in readers() for suffix in reader.suffixes if name.endswith(suffix)]
    if matches:
        return max(matches, key=lambda match: match[0])[1]
    return next(reader for reader in readers() if reader.fallback)


def open_reader(split: Split, settings: InputSettings, s3: S3Settings) -> Reader:
    """The reader of ``split``: the one that planned it, else the one its file's name chooses."""
    reader = parts.find(Reader, split.reader) if split.reader else reader_for(split.uri)
    return reader(settings, s3)


def plan_splits(shards: list[Shard], settings: InputSettings, s3: S3Settings, parallelism: int) -> list[Split]:
    """Every shard's splits, in order, each planned by its reader."""
    return [split for shard in shards for split in reader_for(shard.uri)(settings, s3).plan(shard, parallelism)]


def read_pages(split: Split, settings: InputSettings, s3: S3Settings, stats: Stats,
               skip_ids: frozenset[str] = frozenset()) -> Iterator[Page]:
    """The pages of ``split`` (:meth:`Reader.pages` of its reader)."""
    return open_reader(split, settings, s3).pages(split, stats, skip_ids)


def split_record_ids(split: Split, settings: InputSettings, s3: S3Settings) -> list[str] | None:
    """:meth:`Reader.record_ids` of ``split``'s reader."""
    return open_reader(split, settings, s3).record_ids(split)


def pages_read(records: dict[str, Any]) -> int:
    """The pages a stats tree's ``records`` section counts (of every kind)."""
    return int(sum(records.get(kind, 0) for kind in {reader.page_kind for reader in readers()}))


def pages_line(records: dict[str, Any]) -> str:
    """The pages read, for summary.txt: the fallback reader's always, the others' where there are any
    (``HTML pages: 120 + WET text records: 3``)."""
    return " + ".join(f"{reader.pages_are}: {records.get(reader.page_kind, 0)}" for reader in reversed(readers())
                      if reader.fallback or records.get(reader.page_kind))


def default_extractors() -> set[str]:
    """The extractors readers name for their pages (their text is the pages' first and only choice)."""
    return {reader.extractor for reader in readers() if reader.extractor}
