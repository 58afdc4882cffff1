"""The WARC reader: shard splits and the stream of HTML pages, with every record accounted for.

A split is a byte range of one shard. A local gzipped WARC is cut at gzip member boundaries
(Common Crawl writes one member per record), so several tasks read one big shard in parallel;
a remote or uncompressed shard is one split. A record belongs to the split its first byte
falls in. FastWARC parses the records; a damaged gzip member or a broken header is counted,
and reading resumes at the next member that starts a WARC record. In a local file, a record
FastWARC passes over (a version line it rejects) or reads with U+FFFD in its target URI, record id
or date is read again by warcio (:mod:`pipeline.reading.warcio_records`), the reader of last resort, or counted.
The WET reader (:mod:`pipeline.reading.wet`) reads its files the same way and takes other records
for pages; the ARC reader (:mod:`pipeline.reading.arc`) plans its splits the same way.
"""

from __future__ import annotations

import os
import re
import zlib
from typing import Iterator

from fastwarc.warc import ArchiveIterator, WarcRecordType

from pipeline.config import S3Settings
from pipeline.document import Page
from pipeline.reading.decode import utf16_without_bom
from pipeline.reading.payload import Codings, PayloadError, decode_payload
from pipeline.reading.reader import Reader, ShardReadError
from pipeline.reading.shards import Shard, Split
from pipeline.reading.sources import PermanentError, RetriesExhausted, is_remote, open_stream
from pipeline.reading.warcio_records import read_one, rejection_reason
from pipeline.stats import Stats

GZIP_MAGIC = b"\x1f\x8b\x08"
HTML_TYPES = frozenset({"text/html", "application/xhtml+xml", "application/xhtml", "text/x-server-parsed-html"})
_SCAN_CHUNK = 1 << 20
_SYNC_WINDOW = 256 * 1024  # > one stored deflate block (64 KiB): see stays_in_sync


# How a record's first bytes look: a WARC record's version line (an ARC reader has its own).
WARC_START = re.compile(rb"WARC/")
# A record's first bytes, whatever its version line (case, a byte-order mark, a version 2) ...
_RECORD_LIKE = re.compile(rb"\s*(?:\xef\xbb\xbf)?warc/", re.IGNORECASE)
# ... and the version lines FastWARC reads (quirks mode takes ClueWeb's WARC/0.18).
_FASTWARC_VERSION = re.compile(rb"WARC/[01]\.\d+\r?\n")


def _is_member_start(data: bytes, record_start: re.Pattern = WARC_START) -> bool:
    """True when ``data`` starts a gzip member whose content starts a record (``record_start``: a WARC record)."""
    try:
        head = zlib.decompressobj(31).decompress(data, 512)
    except zlib.error:
        return False
    return record_start.match(head) is not None


def next_member_offset(fh, offset: int, limit: int | None = None, record_start: re.Pattern = WARC_START) -> int | None:
    """The first offset >= ``offset`` where a gzip member holding a record (a WARC record) starts."""
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
            if _is_member_start(fh.read(4096), record_start):
                return pos + hit
            search_from = hit + 1
        if len(chunk) <= _SCAN_CHUNK:
            return None
        pos += _SCAN_CHUNK
    return None


def stays_in_sync(fh, offset: int, size: int, window: int = _SYNC_WINDOW, record_start: re.Pattern = WARC_START) -> bool:
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
        if not _is_member_start(head, record_start):
            return False
        try:
            end = member_end(fh, pos)
        except zlib.error:
            return False
        if end is None:
            return False  # a member cut short
        pos = end
    return True


def member_end(fh, offset: int) -> int | None:
    """Where the gzip member at ``offset`` of ``fh`` ends (None: cut short); its content is inflated and dropped,
    at most 1 MiB at a time, so memory stays flat. A damaged member raises ``zlib.error``."""
    fh.seek(offset)
    inflater, consumed = zlib.decompressobj(31), 0
    while not inflater.eof:
        chunk = fh.read(_SCAN_CHUNK)
        if not chunk:
            return None
        inflater.decompress(chunk, 1)
        while inflater.unconsumed_tail and not inflater.eof:
            inflater.decompress(inflater.unconsumed_tail, 1 << 20)
        consumed += len(chunk)
    return offset + consumed - len(inflater.unused_data)


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


_UNREADABLE = (FileNotFoundError, PermissionError, IsADirectoryError, PermanentError)


def records(split: Split, s3: S3Settings, stats: Stats) -> Iterator:
    """Yield the WARC records of a split (``records.read`` counts them), resyncing after damage.

    warcio is the reader of last resort of a local file (:class:`_PassedOver`): a record FastWARC passed
    over between two records it read (a version line it rejects, ``warc/1.0``) is read again by warcio
    from its offset (:func:`~pipeline.reading.warcio_records.read_one`) and yielded
    (``read_errors.recovered.version_line``), or, when warcio cannot read it either, counted with its reason
    (``read_errors.rejected.<reason>``, a ``file_errors`` entry). A record whose target URI, record id or
    date FastWARC could only read with U+FFFD (header bytes that are not UTF-8) is read by warcio instead,
    which reads them as Latin-1 (``read_errors.recovered.header_bytes``). A remote file is read by FastWARC
    alone: such a record is kept as FastWARC read it and counted (``read_errors.header_bytes``), as is one
    warcio cannot read either.
    """
    start = split.start
    resumable = not is_remote(split.uri)
    passed_over = _PassedOver(split.uri)
    try:
        yield from _records(split, s3, stats, start, resumable, passed_over)
    finally:
        passed_over.close()


def _records(split: Split, s3: S3Settings, stats: Stats, start: int, resumable: bool,
             passed_over: "_PassedOver") -> Iterator:
    while True:
        last_pos, last_length, last_block, read_here = start, 0, 0, False
        read_before = stats.counts["records.read"]
        try:
            with open_stream(split.uri, s3) as stream:
                if start:
                    stream.seek(start)
                iterator = ArchiveIterator(stream, parse_http=True, quirks_mode=True,
                                           max_content_length=None, min_content_length=None)
                following = None  # the first record past the split's end, if any
                for record in iterator:
                    pos = record.stream_pos
                    if pos < start:  # offsets relative to where reading began
                        pos += start
                    if resumable:  # what FastWARC passed over before this record
                        yield from _last_resort(split, passed_over.between(last_pos, last_block, pos,
                                                                           first=not read_here), stats)
                    if split.end is not None and pos >= split.end:
                        following = pos
                        break
                    last_pos, last_length, read_here = pos, record.content_length, True
                    last_block = _block_length(record)
                    if _replaced_header(record):
                        record = _latin1_header(split.uri, pos, record, stats) if resumable else \
                            _counted(record, stats, "read_errors.header_bytes")
                    stats.add("records.read")
                    yield record
            if not resumable or following is not None:
                return
            if read_here:  # what FastWARC passed over after its last record
                tail = passed_over.between(last_pos, last_block, None)
                yield from _last_resort(split, tail, stats)
                last_pos, last_length = (tail[-1], 0) if tail else (last_pos, last_length)
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
            found = resync(split, exc, kind, last_pos, stats, resumable)
            if found is None:
                return
            start = found


def resync(split: Split, exc: Exception, kind: str, last_pos: int, stats: Stats, resumable: bool,
           record_start: re.Pattern = WARC_START) -> int | None:
    """After damage near ``last_pos``: ``read_errors.<kind>`` and a ``file_errors`` entry counted; the offset of the
    next gzip member that starts a record (``read_errors.resynced``), or None (a remote file, nothing left)."""
    stats.add(f"read_errors.{kind}")
    stats.file_errors.setdefault(split.uri, f"{type(exc).__name__}: {exc} (near byte {last_pos})")
    if not resumable:
        return None
    try:
        with open(split.uri, "rb") as fh:
            found = next_member_offset(fh, last_pos + 1, split.end, record_start)
    except OSError:
        return None
    if found is not None:
        stats.add("read_errors.resynced")
    return found


def _block_length(record) -> int:
    """A record's block length, its WARC Content-Length (FastWARC's ``content_length`` is the HTTP payload's once
    the HTTP headers are parsed)."""
    try:
        return int(record.headers.get("Content-Length") or record.content_length)
    except ValueError:
        return record.content_length


class _PassedOver:
    """Finds the records FastWARC passed over in a local file (one open file handle for a split's reading)."""

    def __init__(self, path: str) -> None:
        self.path, self.fh, self.size = path, None, 0

    def between(self, pos: int, length: int, following: int | None, first: bool = False) -> list[int]:
        """The offsets of the records FastWARC passed over between the record at ``pos`` (``length``: its WARC
        Content-Length) and the next one it read at ``following`` (None: the end of the file); ``first``:
        ``pos`` is where reading began, not a record FastWARC read.

        Gzipped: gzip members that start a record whose version line FastWARC rejects (:data:`_RECORD_LIKE`,
        not :data:`_FASTWARC_VERSION`), chained from the end of the member at ``pos`` to ``following`` (the
        bytes between are first only searched for a gzip header: a file without such records costs a second
        read of its compressed bytes, no inflating). Uncompressed: such a record right after the one at
        ``pos`` (its header, ``length`` bytes, blank lines). Records FastWARC would read but passed over (a
        Content-Length that swallowed them) are left to the damage accounting (:func:`_check_end`)."""
        try:
            if self.fh is None:
                self.fh = open(self.path, "rb")
                self.size = os.fstat(self.fh.fileno()).st_size
            end = self.size if following is None else min(following, self.size)
            if end <= pos:
                return []
            self.fh.seek(pos)
            head = self.fh.read(4096)
            if head.startswith(GZIP_MAGIC):
                return _passed_over_members(self.fh, pos, end, first)
            return _passed_over_first(pos, head) if first else _passed_over_records(self.fh, pos, head, length, end)
        except (OSError, zlib.error):
            return []

    def close(self) -> None:
        if self.fh is not None:
            self.fh.close()
            self.fh = None


def _passed_over_members(fh, pos: int, end: int, first: bool) -> list[int]:
    fh.seek(pos if first else pos + 1)
    gap = fh.read(end - fh.tell())
    hit = gap.find(GZIP_MAGIC)
    while hit >= 0:
        fh.seek(end - len(gap) + hit)
        if _is_member_start(fh.read(4096), _RECORD_LIKE):
            break
        hit = gap.find(GZIP_MAGIC, hit + 1)
    if hit < 0:
        return []
    starts, at = [], pos if first else member_end(fh, pos)
    while at is not None and at < end:  # the members from there must chain to the next record ...
        fh.seek(at)
        data = fh.read(4096)
        if not _is_member_start(data, _RECORD_LIKE) or _is_member_start(data, _FASTWARC_VERSION):
            return []  # ... each with a version line FastWARC rejects (else it was swallowed: _check_end's case)
        starts.append(at)
        at = member_end(fh, at)
    return starts if at == end else []


def _passed_over_first(pos: int, head: bytes) -> list[int]:
    """Uncompressed: the record where reading began (``head``, at ``pos``) when FastWARC rejects its version line."""
    skipped = len(head) - len(head.lstrip(b"\r\n"))
    line = head[skipped:skipped + 64]
    return [pos + skipped] if _RECORD_LIKE.match(line) and not _FASTWARC_VERSION.match(line) else []


def _passed_over_records(fh, pos: int, head: bytes, length: int, end: int) -> list[int]:
    header_end = head.find(b"\r\n\r\n")
    if header_end < 0:
        return []
    at = pos + header_end + 4 + length
    fh.seek(at)
    between = fh.read(max(0, end - at))
    skipped = len(between) - len(between.lstrip(b"\r\n"))
    head = between[skipped:skipped + 64]
    if skipped == len(between) or not _RECORD_LIKE.match(head) or _FASTWARC_VERSION.match(head):
        return []
    return [at + skipped]


def _last_resort(split: Split, offsets: list[int], stats: Stats) -> Iterator:
    """The split's records at ``offsets`` (passed over by FastWARC) as warcio reads them, each counted as
    recovered, or counted as rejected with warcio's reason."""
    for offset in offsets:
        if split.end is not None and offset >= split.end:
            return
        rescued, _, why, _ = read_one(split.uri, offset)
        if rescued is None:
            stats.add(f"read_errors.rejected.{rejection_reason(why or '')}")
            stats.file_errors.setdefault(split.uri, f"record at byte {offset} not read by FastWARC nor warcio: {why}")
            continue
        stats.add("read_errors.recovered.version_line")
        stats.add("records.read")
        yield rescued


# The header fields a page is made of: bytes in them that are not UTF-8 come out of FastWARC as U+FFFD.
PAGE_HEADERS = ("WARC-Target-URI", "WARC-Record-ID", "WARC-Date")


def _replaced_header(record) -> bool:
    """Whether a header a page is made of (:data:`PAGE_HEADERS`) holds U+FFFD."""
    return any("\ufffd" in (record.headers.get(name) or "") for name in PAGE_HEADERS)


def _counted(record, stats: Stats, key: str):
    stats.add(key)
    return record


def _latin1_header(path: str, pos: int, record, stats: Stats):
    """The record at ``pos`` as warcio reads it (``read_errors.recovered.header_bytes``) when its page's headers
    read without U+FFFD there, else ``record`` as FastWARC read it (``read_errors.header_bytes``)."""
    rescued, _, _, _ = read_one(path, pos)
    if rescued is None or _replaced_header(rescued):
        return _counted(record, stats, "read_errors.header_bytes")
    return _counted(rescued, stats, "read_errors.recovered.header_bytes")


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
            last_end = member_end(fh, last_pos)
            if last_end is None:
                error("truncated", f"last gzip member (byte {last_pos}) is cut short")
                return None
            if last_end >= end:
                return None
            found = next_member_offset(fh, last_end, end)
    except (OSError, zlib.error):
        return None
    if found is None:
        error("trailing_bytes", f"{end - last_end} bytes after the last record (byte {last_end}) "
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


class WarcReader(Reader):
    """WARC files: each HTML response record (HTTP status 200, an HTML type, at most ``input.max_html_bytes``) is a
    page of kind ``html``, its HTTP transfer and content codings undone, whose text the cascade extracts. The files
    of no other reader's name are read as WARC."""

    name = "warc"
    suffixes = (".warc.gz", ".warc")
    fallback = True
    page_kind = "html"
    pages_are = "HTML pages"
    page_types = (WarcRecordType.response,)  # the records that may be pages; the others: skip.not_response.<type>
    record_start = WARC_START  # how a gzip member that starts a record begins (split planning)

    def plan(self, shard: Shard, parallelism: int) -> list[Split]:
        """Cut the shard into splits at gzip member boundaries (local gzip files only).

        A boundary is an offset where a gzip member starts a WARC record and reading stays in
        sync from there (:func:`stays_in_sync`), never a member inside a record's payload.
        """
        uri, settings, whole = shard.uri, self.settings, [Split(shard.uri, 0, 1, shard_key=shard.key, reader=self.name)]
        wanted = settings.splits_per_shard or parallelism
        if is_remote(uri) or wanted <= 1:
            return whole
        try:
            size = os.path.getsize(uri)
            with open(uri, "rb") as fh:
                if fh.read(3) != GZIP_MAGIC:
                    return whole
                wanted = max(1, min(wanted, size // settings.min_split_bytes))
                bounds = [0]
                for i in range(1, wanted):
                    found = max(size * i // wanted, bounds[-1] + 1)
                    while True:
                        found = next_member_offset(fh, found, size, self.record_start)
                        if found is None or stays_in_sync(fh, found, size, record_start=self.record_start):
                            break
                        found += 1
                    if found is not None and found > bounds[-1]:
                        bounds.append(found)
        except OSError:
            return whole  # the reader reports the error
        ends: list[int | None] = [*bounds[1:], None]
        return [Split(uri, i, len(bounds), start, end, shard.key, self.name)
                for i, (start, end) in enumerate(zip(bounds, ends))]

    def read_file(self, split: Split, stats: Stats, skip_ids: frozenset[str] = frozenset()) -> Iterator[Page]:
        """The pages of the split (:meth:`Reader.read_file`); ``read_errors.<kind>`` counts damage and a shard that
        fails to parse gets a ``file_errors`` entry. A record whose WARC-Record-ID is in ``skip_ids`` or was
        already seen in this split is ``skip.duplicate_record_id`` before it is read further."""
        seen: set[str] = set()
        for record in self.records(split, stats):
            if self.settings.dedup_record_ids and record.record_type in self.page_types:
                record_id = record.record_id or ""
                if record_id in skip_ids or record_id in seen:
                    stats.add("skip.duplicate_record_id")
                    continue
                seen.add(record_id)
            page = self.page(record, stats) if record.record_type in self.page_types else self.skip(record, stats)
            if page is not None:
                yield page

    def record_ids(self, split: Split) -> list[str] | None:
        ids: dict[str, None] = {}
        try:
            for record in self.records(split, Stats()):
                if record.record_type in self.page_types:
                    ids.setdefault(record.record_id or "", None)
        except ShardReadError:
            return None
        return list(ids)

    def records(self, split: Split, stats: Stats) -> Iterator:
        """The records of ``split`` (:func:`records`: FastWARC, warcio for what it rejects)."""
        return records(split, self.s3, stats)

    @staticmethod
    def skip(record, stats: Stats) -> None:
        """A record that is not a page, counted."""
        stats.add(f"skip.not_response.{_record_type_name(record.record_type)}")

    def page(self, record, stats: Stats) -> Page | None:
        """The page of a response record, or None (counted under ``skip.<reason>``)."""
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
        return self.read_page(record, stats, record.http_charset, http=True)

    def read_page(self, record, stats: Stats, charset: str | None, http: bool) -> Page | None:
        """The record's payload as a page of this reader's kind (undecoded, at most ``input.max_html_bytes``), its HTTP
        codings undone when it is an ``http`` payload; None (counted) when it is too large, cannot be decoded, is empty
        or is not text."""
        max_bytes = self.settings.max_html_bytes
        if record.content_length > max_bytes + 65536:
            stats.add("skip.too_large")
            return None
        payload = record.reader.read(max_bytes + 1)
        if len(payload) > max_bytes:
            stats.add("skip.too_large")
            return None
        if http and payload.strip():
            payload = decode_http_payload(payload, record.http_headers, max_bytes, stats)
        if payload is None:
            return None
        if not payload.strip():
            stats.add("skip.empty_payload")
            return None
        if looks_binary(payload):
            stats.add("skip.binary_payload")
            return None
        return Page(record_id=record.record_id or "", url=_clean_uri(record.headers.get("WARC-Target-URI")),
                    warc_date=(record.headers.get("WARC-Date") or "").strip(), html=payload, http_charset=charset,
                    kind=self.page_kind, extractor=self.extractor)


WAT_SUFFIXES = (".wat.gz", ".wat")


def is_wat(uri: str) -> bool:
    """A Common Crawl WAT file (JSON metadata records), by its name."""
    return uri.split("?", 1)[0].lower().endswith(WAT_SUFFIXES)


def _record_type_name(record_type) -> str:
    return str(record_type).rsplit(".", 1)[-1]
