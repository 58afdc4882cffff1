"""WARC reading: shard splits and the stream of HTML pages, with every record accounted for.

A split is a byte range of one shard. A local gzipped WARC is cut at gzip member boundaries
(Common Crawl writes one member per record), so several tasks read one big shard in parallel;
a remote or uncompressed shard is one split. A record belongs to the split its first byte
falls in. FastWARC parses the records; a damaged gzip member or a broken header is counted,
and reading resumes at the next member that starts a WARC record.
"""

from __future__ import annotations

import hashlib
import os
import re
import zlib
from dataclasses import dataclass, field
from typing import Iterator

from fastwarc.warc import ArchiveIterator, WarcRecordType

from pipeline.config import InputSettings, S3Settings
from pipeline.identity import shard_key
from pipeline.reading.decode import utf16_without_bom
from pipeline.reading.payload import Codings, PayloadError, decode_payload
from pipeline.reading.sources import PermanentError, RetriesExhausted, is_remote, open_stream
from pipeline.stats import Stats

GZIP_MAGIC = b"\x1f\x8b\x08"
HTML_TYPES = frozenset({"text/html", "application/xhtml+xml", "application/xhtml", "text/x-server-parsed-html"})
_SCAN_CHUNK = 1 << 20
_SYNC_WINDOW = 256 * 1024  # > one stored deflate block (64 KiB): see stays_in_sync


class ShardReadError(Exception):
    """A shard that cannot be read at all (missing, access denied, remote retries exhausted).

    Not an ``OSError``: the split is failed, never marked done, and retried by the next run.
    """


@dataclass(frozen=True)
class Split:
    """A byte range ``[start, end)`` of a shard; ``end`` None means to the end of the shard."""

    uri: str
    index: int
    count: int
    start: int = 0
    end: int | None = None
    # The shard's key (pipeline.identity); empty: derived from ``uri`` as for a single file.
    shard_key: str = field(default="", compare=False)

    @property
    def split_id(self) -> str:
        """Deterministic id used in output file names and completion markers: from the shard's
        key, never its location."""
        key = self.shard_key or shard_key(self.uri)
        digest = hashlib.sha1(key.encode("utf-8")).hexdigest()[:8]
        stem = re.sub(r"[^A-Za-z0-9._-]+", "_", os.path.basename(self.shard_name.rstrip("/")))[:80]
        return f"{stem}-{digest}-{self.index:03d}of{self.count:03d}"

    @property
    def shard_name(self) -> str:
        """The shard's key without its size: the ``warc_filename`` of its rows (never a local location)."""
        return re.sub(r"@\d+$", "", self.shard_key or shard_key(self.uri))


@dataclass
class Page:
    """An HTML response record (``kind`` html) or a WET text record (``kind`` wet), payload undecoded."""

    record_id: str
    url: str
    warc_date: str
    html: bytes
    http_charset: str | None
    kind: str = "html"


def _is_member_start(data: bytes) -> bool:
    """True when ``data`` starts a gzip member whose content starts a WARC record."""
    try:
        head = zlib.decompressobj(31).decompress(data, 16)
    except zlib.error:
        return False
    return head.startswith(b"WARC/")


def next_member_offset(fh, offset: int, limit: int | None = None) -> int | None:
    """The first offset >= ``offset`` where a gzip member holding a WARC record starts."""
    pos = offset
    while limit is None or pos < limit:
        fh.seek(pos)
        chunk = fh.read(_SCAN_CHUNK + 4096)
        if len(chunk) < len(GZIP_MAGIC):
            return None
        search_from = 0
        while True:
            hit = chunk.find(GZIP_MAGIC, search_from)
            if hit < 0 or hit >= _SCAN_CHUNK:
                break
            if limit is not None and pos + hit >= limit:
                return None
            fh.seek(pos + hit)
            if _is_member_start(fh.read(4096)):
                return pos + hit
            search_from = hit + 1
        if len(chunk) <= _SCAN_CHUNK:
            return None
        pos += _SCAN_CHUNK
    return None


def stays_in_sync(fh, offset: int, size: int, window: int = _SYNC_WINDOW) -> bool:
    """True when reading from ``offset`` walks whole gzip members, each holding a WARC record
    and each ending where the next begins (or at the end of the file), for ``window`` bytes.

    A WARC stored as the payload of a record shows its own gzip members verbatim inside the
    outer member's stored deflate blocks; a walk from one of them breaks within 64 KiB, at
    the next stored-block header or where the inner file ends.
    """
    pos = offset
    while pos < size and pos - offset < window:
        fh.seek(pos)
        head = fh.read(4096)
        if not _is_member_start(head):
            return False
        fh.seek(pos)
        inflater = zlib.decompressobj(31)
        consumed = 0
        try:
            while not inflater.eof:
                chunk = fh.read(_SCAN_CHUNK)
                if not chunk:
                    return False  # a member cut short
                inflater.decompress(chunk, 1)
                while inflater.unconsumed_tail and not inflater.eof:
                    inflater.decompress(inflater.unconsumed_tail, 1 << 20)
                consumed += len(chunk)
        except zlib.error:
            return False
        pos += consumed - len(inflater.unused_data)
    return True


def plan_splits(uri: str, settings: InputSettings, default_parallelism: int, key: str = "") -> list[Split]:
    """Cut one shard into splits at gzip member boundaries (local gzip files only).

    A boundary is an offset where a gzip member starts a WARC record and reading stays in
    sync from there (:func:`stays_in_sync`), never a member inside a record's payload.
    """
    key = key or shard_key(uri)
    wanted = settings.splits_per_shard or default_parallelism
    if is_remote(uri) or wanted <= 1:
        return [Split(uri, 0, 1, shard_key=key)]
    try:
        size = os.path.getsize(uri)
        with open(uri, "rb") as fh:
            if fh.read(3) != GZIP_MAGIC:
                return [Split(uri, 0, 1, shard_key=key)]
            wanted = max(1, min(wanted, size // settings.min_split_bytes))
            bounds = [0]
            for i in range(1, wanted):
                found = max(size * i // wanted, bounds[-1] + 1)
                while True:
                    found = next_member_offset(fh, found, size)
                    if found is None or stays_in_sync(fh, found, size):
                        break
                    found += 1
                if found is not None and found > bounds[-1]:
                    bounds.append(found)
    except OSError:
        return [Split(uri, 0, 1, shard_key=key)]  # the reader reports the error
    ends: list[int | None] = [*bounds[1:], None]
    return [Split(uri, i, len(bounds), start, end, key) for i, (start, end) in enumerate(zip(bounds, ends))]


def _html_type(record) -> str | None:
    """The payload's MIME type: WARC-Identified-Payload-Type when present, else HTTP Content-Type."""
    identified = (record.headers.get("WARC-Identified-Payload-Type") or "").strip().lower()
    if identified:
        return identified.split(";")[0].strip()
    if record.is_http and record.http_content_type:
        return record.http_content_type.split(";")[0].strip().lower()
    return None


def _http_status(record) -> int | None:
    status_line = record.http_headers.status_line if record.http_headers is not None else ""
    match = re.match(r"\S+\s+(\d{3})", status_line or "")
    return int(match.group(1)) if match else None


def _clean_uri(uri: str | None) -> str:
    uri = (uri or "").strip()
    return uri[1:-1] if uri.startswith("<") and uri.endswith(">") else uri


def iter_pages(split: Split, settings: InputSettings, s3: S3Settings, stats: Stats,
               skip_ids: frozenset[str] = frozenset()) -> Iterator[Page]:
    """Yield the HTML response pages of a split; count every other record under ``skip.*``.

    Counters: ``records.read`` (all records parsed), ``records.html`` and ``records.wet`` (pages
    yielded: HTML responses, WET ``conversion`` records), ``skip.<reason>`` and
    ``read_errors.<kind>``; a shard that fails to parse gets a ``file_errors`` entry, one that
    cannot be read at all raises :class:`ShardReadError`. A response or conversion record whose
    WARC-Record-ID is in ``skip_ids`` (an earlier split holds it) or was already seen in this
    split is ``skip.duplicate_record_id`` (unless ``input.dedup_record_ids`` is off).
    """
    seen: set[str] = set()
    for record in iter_records(split, s3, stats):
        if settings.dedup_record_ids and record.record_type in (WarcRecordType.response,
                                                                WarcRecordType.conversion):
            record_id = record.record_id or ""
            if record_id in skip_ids or record_id in seen:
                stats.add("skip.duplicate_record_id")
                continue
            seen.add(record_id)
        page = _page_from_record(record, settings, stats)
        if page is not None:
            stats.add(f"records.{page.kind}")
            yield page


_UNREADABLE = (FileNotFoundError, PermissionError, IsADirectoryError, PermanentError)


def iter_records(split: Split, s3: S3Settings, stats: Stats) -> Iterator:
    """Yield the WARC records of a split (``records.read`` counts them), resyncing after damage."""
    start = split.start
    resumable = not is_remote(split.uri)
    while True:
        last_pos, last_length = start, 0
        read_before = stats.counts["records.read"]
        try:
            with open_stream(split.uri, s3) as stream:
                if start:
                    stream.seek(start)
                iterator = ArchiveIterator(stream, parse_http=True, quirks_mode=True,
                                           max_content_length=None, min_content_length=None)
                for record in iterator:
                    pos = record.stream_pos
                    if pos < start:  # offsets relative to where reading began
                        pos += start
                    if split.end is not None and pos >= split.end:
                        return
                    last_pos, last_length = pos, record.content_length
                    stats.add("records.read")
                    yield record
            if not resumable:
                return
            found = _check_end(split, start, last_pos, last_length, read_before, stats)
            if found is None:
                return
            stats.add("read_errors.resynced")
            start = found
            continue
        except _UNREADABLE as exc:
            raise ShardReadError(f"{split.uri}: {type(exc).__name__}: {exc}") from None
        except RetriesExhausted as exc:
            raise ShardReadError(str(exc)) from None
        except (OSError, ValueError, UnicodeError) as exc:
            kind = "gzip" if "ecompress" in str(exc) or "gzip" in str(exc).lower() else "parse"
            stats.add(f"read_errors.{kind}")
            stats.file_errors.setdefault(split.uri, f"{type(exc).__name__}: {exc} (near byte {last_pos})")
            if not resumable:
                return
            try:
                with open(split.uri, "rb") as fh:
                    found = next_member_offset(fh, last_pos + 1, split.end)
            except OSError:
                return
            if found is None:
                return
            stats.add("read_errors.resynced")
            start = found


def _check_end(split: Split, start: int, last_pos: int, last_length: int, read_before: float,
               stats: Stats) -> int | None:
    """After a local read ends cleanly: report what FastWARC passed over silently.

    An empty or non-WARC file, and a last gzip member or uncompressed record cut short, get a
    ``file_errors`` entry. A record whose Content-Length ran past its gzip member swallows the
    records after it; the offset of the next member that starts a WARC record is returned to
    resume there (None when there is nothing left).
    """
    def error(kind: str, message: str) -> None:
        stats.add(f"read_errors.{kind}")
        stats.file_errors.setdefault(split.uri, message)

    try:
        size = os.path.getsize(split.uri)
        end = size if split.end is None else min(split.end, size)
        if stats.counts["records.read"] == read_before:
            if start == 0 and size == 0:
                error("empty_file", "empty file")
            elif start == 0:
                error("not_warc", "no WARC record found (not a WARC file?)")
            return None
        with open(split.uri, "rb") as fh:
            fh.seek(last_pos)
            head = fh.read(4096)
            if head.startswith(b"WARC/") and last_pos + last_length > size:
                error("truncated", f"the last record (byte {last_pos}) is cut short")
            if not _is_member_start(head):
                return None  # uncompressed, or a whole-file gzip stream: FastWARC saw it all
            fh.seek(last_pos)
            inflater = zlib.decompressobj(31)
            consumed = 0
            while not inflater.eof:
                chunk = fh.read(_SCAN_CHUNK)
                if not chunk:
                    error("truncated", f"last gzip member (byte {last_pos}) is cut short")
                    return None
                inflater.decompress(chunk, 1)  # output is discarded; max_length keeps memory flat
                while inflater.unconsumed_tail and not inflater.eof:
                    inflater.decompress(inflater.unconsumed_tail, 1 << 20)
                consumed += len(chunk)
            member_end = last_pos + consumed - len(inflater.unused_data)
            if member_end >= end:
                return None
            found = next_member_offset(fh, member_end, end)
    except (OSError, zlib.error):
        return None
    if found is None:
        error("trailing_bytes", f"{end - member_end} bytes after the last record (byte {member_end}) "
                                "are not a WARC record (truncated?)")
    else:
        error("swallowed", f"the record at byte {last_pos} ran past its gzip member (wrong Content-Length?)")
    return found


_BINARY_MAGIC = (b"\x89PNG", b"GIF8", b"\xff\xd8\xff", b"%PDF", b"PK\x03\x04", b"\x1f\x8b", b"RIFF", b"\x00\x00\x01\x00")
_CONTROL_BYTES = bytes(b for b in range(32) if b not in b"\t\n\r\f\x1b")


def looks_binary(payload: bytes, sniff: int = 4096) -> bool:
    """True for a payload that is not text whatever its label: a known binary signature, or
    more than 5% control bytes in its head (UTF-16, with a BOM or without, is text)."""
    head = payload[:sniff].lstrip()
    if head.startswith((b"\xff\xfe", b"\xfe\xff")) or utf16_without_bom(payload[:sniff]):
        return False
    if head.startswith(_BINARY_MAGIC):
        return True
    controls = len(head) - len(head.translate(None, _CONTROL_BYTES))
    return controls > 0.05 * len(head)


def decode_http_payload(body: bytes, http_headers, max_bytes: int, stats: Stats) -> bytes | None:
    """The body with its transfer and content codings undone, counted under ``payload.*``;
    None (counted as ``skip.payload.<reason>``) when it cannot be decoded."""
    try:
        decoded = decode_payload(body, Codings.from_headers(http_headers), max_bytes)
    except PayloadError as exc:
        stats.add(f"skip.payload.{exc.reason}")
        return None
    for note in decoded.notes:
        stats.add(f"payload.{note}")
    return decoded.body


def _page_from_record(record, settings: InputSettings, stats: Stats) -> Page | None:
    if record.record_type == WarcRecordType.conversion:
        return _wet_page(record, settings, stats)
    if record.record_type != WarcRecordType.response:
        stats.add(f"skip.not_response.{_record_type_name(record.record_type)}")
        return None
    if not record.is_http:
        stats.add("skip.not_http")
        return None
    mime = _html_type(record)
    if mime not in HTML_TYPES:
        stats.add("skip.not_html")
        return None
    status = _http_status(record)
    if status is not None and status != 200:
        stats.add(f"skip.http_status.{status // 100}xx")
        return None
    if record.content_length > settings.max_html_bytes + 65536:
        stats.add("skip.too_large")
        return None
    return _read_page(record, settings, stats, record.http_charset, "html")


def _wet_page(record, settings: InputSettings, stats: Stats) -> Page | None:
    """A WET ``conversion`` record: the text Common Crawl extracted, UTF-8."""
    if record.content_length > settings.max_html_bytes + 65536:
        stats.add("skip.too_large")
        return None
    return _read_page(record, settings, stats, "utf-8", "wet")


def _read_page(record, settings: InputSettings, stats: Stats, charset: str | None, kind: str) -> Page | None:
    html = record.reader.read(settings.max_html_bytes + 1)
    if len(html) > settings.max_html_bytes:
        stats.add("skip.too_large")
        return None
    if kind == "html" and html.strip():  # a WET record's text has no HTTP codings to undo
        html = decode_http_payload(html, record.http_headers, settings.max_html_bytes, stats)
    if html is None:
        return None
    if not html.strip():
        stats.add("skip.empty_payload")
        return None
    if looks_binary(html):
        stats.add("skip.binary_payload")
        return None
    return Page(
        record_id=record.record_id or "",
        url=_clean_uri(record.headers.get("WARC-Target-URI")),
        warc_date=(record.headers.get("WARC-Date") or "").strip(),
        html=html,
        http_charset=charset,
        kind=kind,
    )


WAT_SUFFIXES = (".wat.gz", ".wat")


def is_wat(uri: str) -> bool:
    """A Common Crawl WAT file (JSON metadata records), by its name."""
    return uri.split("?", 1)[0].lower().endswith(WAT_SUFFIXES)


def _record_type_name(record_type) -> str:
    return str(record_type).rsplit(".", 1)[-1]
