"""warcio at work: the ARC reader's records, and the WARC reader's reader of last resort.

FastWARC reads WARC files fast; warcio (Webrecorder's library) reads what FastWARC does not: ARC files
(each record converted to a WARC record, ``arc2warc``), a record whose version line FastWARC rejects
(``warc/1.0``), a header holding bytes that are not UTF-8 (warcio reads them as Latin-1 where FastWARC
writes U+FFFD). :class:`WarcioRecord` shows a warcio record as the WARC reader sees FastWARC's, so that one
set of rules (:class:`~pipeline.reading.warc.WarcReader`) makes pages of both.
"""

from __future__ import annotations

import re
import uuid
from typing import BinaryIO, Iterator

from fastwarc.warc import WarcRecordType
from warcio.archiveiterator import ArchiveIterator
from warcio.exceptions import ArchiveLoadFailed

RECORD_TYPES = {name: getattr(WarcRecordType, name) for name in
                ("warcinfo", "response", "resource", "request", "metadata", "revisit", "conversion", "continuation")}
# What warcio raises on bytes it cannot read as a record.
WARCIO_ERRORS = (ArchiveLoadFailed, ValueError, EOFError, OSError)
_CHARSET = re.compile(r"charset\s*=\s*[\"']?([^\s;\"']+)", re.IGNORECASE)


class _Headers:
    """warcio's ``StatusAndHeaders`` as FastWARC's header map (``get``, ``get_multiple``, ``status_line``)."""

    def __init__(self, headers) -> None:
        self._headers = headers

    def get(self, name: str, default: str | None = None) -> str | None:
        value = self._headers.get_header(name)
        return default if value is None else value

    def get_multiple(self, name: str) -> list[str]:
        return [value for key, value in self._headers.headers if key.lower() == name.lower()]

    @property
    def status_line(self) -> str:
        return f"{self._headers.protocol} {self._headers.statusline}".strip()


class WarcioRecord:
    """A record warcio read, with the attributes the WARC reader reads of FastWARC's records. ``record_id``
    replaces the record's own (an ARC record converted by warcio gets a random one)."""

    def __init__(self, record, offset: int, record_id: str | None = None) -> None:
        self.stream_pos = offset
        self.record_type = RECORD_TYPES.get(record.rec_type, WarcRecordType.unknown)
        self.headers = _Headers(record.rec_headers)
        self.record_id = record_id or record.rec_headers.get_header("WARC-Record-ID") or ""
        self.http_headers = _Headers(record.http_headers) if record.http_headers is not None else None
        self.is_http = self.http_headers is not None
        self.content_length = int(record.rec_headers.get_header("Content-Length") or record.length or 0)
        self.reader = record.raw_stream  # the payload after the HTTP headers, its codings not undone

    @property
    def http_content_type(self) -> str | None:
        return self.http_headers.get("Content-Type") if self.http_headers is not None else None

    @property
    def http_charset(self) -> str | None:
        match = _CHARSET.search(self.http_content_type or "")
        return match.group(1) if match else None


def arc_record_id(record) -> str:
    """A converted ARC record's id, from its ARC header line (URL, IP address, date, length): the same record has
    the same id on every read and in every file that holds it (an ``.arc`` and its ``.arc.gz``, a copy), so the
    duplicate check treats it as WARC record ids are treated."""
    headers = record.rec_headers
    basis = " ".join(str(headers.get_header(name) or "") for name in
                     ("WARC-Target-URI", "WARC-IP-Address", "WARC-Date", "Content-Length"))
    return f"<urn:uuid:{uuid.uuid5(uuid.NAMESPACE_URL, f'arc:{basis}')}>"


def warcio_records(stream: BinaryIO, arc: bool = False) -> Iterator[WarcioRecord]:
    """The records warcio reads from ``stream`` (where it is now), each with its offset in the stream; ARC records
    converted to WARC records with ids of their own (:func:`arc_record_id`). warcio's errors propagate
    (:data:`WARCIO_ERRORS`)."""
    iterator = ArchiveIterator(stream, arc2warc=arc)
    for record in iterator:
        offset = iterator.offset  # where this record starts (read before the record is consumed)
        yield WarcioRecord(record, offset, arc_record_id(record) if arc else None)


def read_one(path: str, offset: int, skip: int = 0,
             max_payload: int = 256 << 20) -> tuple[WarcioRecord | None, int | None, str | None, int | None]:
    """The record at ``offset`` of the local file ``path`` after ``skip`` records, read by warcio: (the record, the
    offset after it, None, its offset), or (None, None, why warcio could not read it, where the record it could
    not read starts, if known). The payload (at most ``max_payload`` bytes) is read into memory: the record is
    handed on after the file is closed."""
    failed_at = offset
    try:
        with open(path, "rb") as fh:
            fh.seek(offset)
            iterator = ArchiveIterator(fh)
            for index, record in enumerate(iterator):
                start = iterator.offset
                if index < skip:
                    iterator.read_to_end()
                    failed_at = iterator.offset
                    continue
                found = WarcioRecord(record, start)
                found.reader = _Payload(record.raw_stream.read(max_payload))
                iterator.read_to_end()
                return found, iterator.offset, None, start
    except WARCIO_ERRORS as exc:
        return None, None, str(exc).splitlines()[0] if str(exc) else type(exc).__name__, failed_at
    return None, None, "no record", None


class _Payload:
    """A payload read into memory, read again as a stream (``read(n)``)."""

    def __init__(self, data: bytes) -> None:
        self.data, self.pos = data, 0

    def read(self, size: int = -1) -> bytes:
        end = len(self.data) if size is None or size < 0 else self.pos + size
        chunk, self.pos = self.data[self.pos:end], min(end, len(self.data))
        return chunk


def rejection_reason(message: str) -> str:
    """The counter name of why warcio could not read a record either (``version_line``, ``header``, ...)."""
    lowered = message.lower()
    if "first line" in lowered or "unknown archive format" in lowered:
        return "version_line"
    if "content-length" in lowered or "length" in lowered:
        return "length"
    return "header"
