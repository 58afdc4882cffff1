"""The ARC reader: the Internet Archive's format before WARC (Common Crawl's 2008-2012 crawls), read by warcio.

Each ARC record is converted to a WARC record by warcio (``arc2warc``: the ``filedesc://`` header becomes
a ``warcinfo`` record, every other record a ``response``) and goes through the WARC reader's rules; its
pages are counted as ``records.arc``. An ARC record has no id: it gets one from its header line
(:func:`~pipeline.reading.warcio_records.arc_record_id`), the same on every read and in every file that holds
the record. A local gzipped ARC is cut
into splits at gzip members that start an ARC record, as a WARC is; damage is counted and reading resumes
at the next such member.
"""

from __future__ import annotations

import re
from typing import Iterator

from pipeline.reading.reader import ShardReadError
from pipeline.reading.shards import Split
from pipeline.reading.sources import RetriesExhausted, is_remote, open_stream
from pipeline.reading.warc import _UNREADABLE, WarcReader, resync
from pipeline.reading.warcio_records import WARCIO_ERRORS, warcio_records
from pipeline.stats import Stats

# An ARC record's first line: the file's ``filedesc://`` header, or ``URL IP-address date content-type length``.
ARC_START = re.compile(rb"filedesc://|\S+ \S+ \d{14} \S* ?\d+\s")


class ArcReader(WarcReader):
    """ARC files (``.arc``, ``.arc.gz``): each HTML response record is a page of kind ``arc``."""

    name = "arc"
    suffixes = (".arc.gz", ".arc")
    fallback = False
    page_kind = "arc"
    pages_are = "ARC pages"
    record_start = ARC_START

    def records(self, split: Split, stats: Stats) -> Iterator:
        """The split's records as warcio converts them (``records.read`` counts them); a record warcio cannot
        read is counted (``read_errors.parse``, a ``file_errors`` entry) and, in a local gzipped file, reading
        resumes at the next member that starts an ARC record."""
        start, resumable = split.start, not is_remote(split.uri)
        while True:
            last_pos, read_before = start, stats.counts["records.read"]
            try:
                with open_stream(split.uri, self.s3) as stream:
                    if start:
                        stream.seek(start)
                    for record in warcio_records(stream, arc=True):
                        if split.end is not None and record.stream_pos >= split.end:
                            return
                        last_pos = record.stream_pos
                        stats.add("records.read")
                        yield record
                if start == 0 and stats.counts["records.read"] == read_before:
                    stats.add("read_errors.not_arc")
                    stats.file_errors.setdefault(split.uri, "no ARC record found (not an ARC file?)")
                return
            except _UNREADABLE as exc:
                raise ShardReadError(f"{split.uri}: {type(exc).__name__}: {exc}") from None
            except RetriesExhausted as exc:
                raise ShardReadError(str(exc)) from None
            except WARCIO_ERRORS as exc:
                found = resync(split, exc, "parse", last_pos, stats, resumable, ARC_START)
                if found is None:
                    return
                start = found
