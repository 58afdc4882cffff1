"""The WET reader: Common Crawl's text of each page, read from its WET files as the WARC reader reads a WARC."""

from __future__ import annotations

from fastwarc.warc import WarcRecordType

from pipeline.document import Page
from pipeline.reading.warc import WarcReader
from pipeline.stats import Stats


class WetReader(WarcReader):
    """WET files: each ``conversion`` record (the text Common Crawl extracted from a page, UTF-8, at most
    ``input.max_html_bytes``) is a page of kind ``wet``, whose text is written as it is (the ``wet`` extractor)."""

    name = "wet"
    suffixes = (".warc.wet.gz", ".warc.wet", ".wet.gz", ".wet")
    fallback = False
    page_kind = "wet"
    pages_are = "WET text records"
    extractor = "wet"
    page_types = (WarcRecordType.conversion,)

    def page(self, record, stats: Stats) -> Page | None:
        return self.read_page(record, stats, "utf-8", http=False)  # a WET record's text has no HTTP codings to undo
