"""HTTP payload decoding: undo ``Transfer-Encoding`` and ``Content-Encoding`` of a response body.

wget and Heritrix store bodies as they came over the wire: chunked, and compressed when the
server compressed them. Common Crawl stores them decoded and renames the headers it undid to
``X-Crawler-Transfer-Encoding`` / ``X-Crawler-Content-Encoding``; a coding named only there is
not undone again. Some archives (ClueWeb09) keep ``Content-Encoding: gzip`` on a body they
stored decoded: a body that does not decode but starts with markup is taken as it is.

Codings are undone in reverse order of application: transfer codings (chunked last applied,
first undone), then content codings. Decoders are libraries: :mod:`http.client` de-chunks,
:mod:`zlib` inflates gzip and both forms of deflate (zlib-wrapped, as RFC 9110 says, and raw,
as some servers send it), ``brotli`` and FastWARC's ``ZstdReader`` the rest. The decoded body
is capped at ``max_bytes``; a stream cut short keeps what decoded before the cut (zstd, which
decodes whole blocks only, fails instead).

Failures raise :class:`PayloadError` whose ``reason`` is counted as ``skip.payload.<reason>``;
what was done is listed in :attr:`Decoded.notes` and counted as ``payload.<note>``.
"""

from __future__ import annotations

import http.client
import io
import re
import zlib
from dataclasses import dataclass, field

import brotli
from fastwarc.stream_io import ZstdReader

# Content-coding names as sent, mapped to the decoder that undoes them.
CODING_ALIASES = {"gzip": "gzip", "x-gzip": "gzip", "deflate": "deflate", "br": "br", "zstd": "zstd"}
_IDENTITY = frozenset({"", "identity", "none"})
_CHUNK_HEADER = re.compile(rb"[0-9A-Fa-f]{1,16}[ \t]*(;[^\r\n]*)?\r?\n")


class PayloadError(ValueError):
    """A body that cannot be decoded; ``reason`` names it in the ``skip.payload.*`` counters."""

    def __init__(self, reason: str, detail: str = "") -> None:
        super().__init__(f"{reason}: {detail}" if detail else reason)
        self.reason = reason


@dataclass(frozen=True)
class Codings:
    """The codings still applied to a stored body, in the order they were applied."""

    transfer: tuple[str, ...] = ()
    content: tuple[str, ...] = ()
    crawler_decoded: bool = False  # the crawler undid codings and renamed their headers X-Crawler-*

    @classmethod
    def from_headers(cls, headers) -> "Codings":
        """From HTTP headers (FastWARC ``HeaderMap`` or anything with ``get_multiple``/``get``)."""
        def values(name: str) -> tuple[str, ...]:
            raw = headers.get_multiple(name) if hasattr(headers, "get_multiple") else [headers.get(name) or ""]
            tokens = (t.strip().lower() for v in raw for t in (v or "").split(","))
            return tuple(t for t in tokens if t not in _IDENTITY)

        crawler_te = bool(values("X-Crawler-Transfer-Encoding"))
        crawler_ce = bool(values("X-Crawler-Content-Encoding"))
        return cls(transfer=() if crawler_te else values("Transfer-Encoding"),
                   content=() if crawler_ce else values("Content-Encoding"),
                   crawler_decoded=crawler_te or crawler_ce)


@dataclass
class Decoded:
    """The decoded body and what was done to it (the ``payload.<note>`` counters)."""

    body: bytes
    notes: list[str] = field(default_factory=list)


def decode_payload(body: bytes, codings: Codings, max_bytes: int) -> Decoded:
    """Undo ``codings`` on ``body``; raises :class:`PayloadError` (reason ``too_large`` above ``max_bytes``)."""
    result = Decoded(body)
    if codings.crawler_decoded:
        result.notes.append("crawler_decoded")
    for coding in [*reversed(codings.transfer), *reversed(codings.content)]:
        if coding == "chunked":
            result.body = _dechunk(result.body, max_bytes, result.notes)
            continue
        name = CODING_ALIASES.get(coding)
        if name is None:
            raise PayloadError("unsupported_coding", coding)
        result.body = _decompress(name, result.body, max_bytes, result.notes)
    return result


def _looks_decoded(body: bytes) -> bool:
    """A body that already is markup (a stored-decoded body under a stale header)."""
    return body[:512].lstrip()[:1] == b"<"


class _Wire:
    """The socket side of :class:`http.client.HTTPResponse`: a stored HTTP message."""

    def __init__(self, message: bytes) -> None:
        self.message = message

    def makefile(self, mode: str) -> io.BytesIO:
        return io.BytesIO(self.message)


def _dechunk(body: bytes, max_bytes: int, notes: list[str]) -> bytes:
    """De-chunk with the standard library's HTTP client (chunk extensions, trailers, cut streams)."""
    if not _CHUNK_HEADER.match(body):
        notes.append("already_decoded.chunked")
        return body
    response = http.client.HTTPResponse(_Wire(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n" + body))
    response.begin()
    try:
        out, truncated = response.read(max_bytes + 1), False
    except http.client.IncompleteRead as exc:
        out, truncated = exc.partial, True
    _check_size(out, max_bytes)
    if truncated and not out:
        raise PayloadError("chunked", "malformed chunk header")
    notes.append("truncated.chunked" if truncated else "dechunked")
    return out


def _decompress(name: str, body: bytes, max_bytes: int, notes: list[str]) -> bytes:
    if name == "gzip":
        out, truncated = _inflate(body, 31, max_bytes)
    elif name == "deflate":  # RFC 9110 says zlib-wrapped; many servers send raw deflate
        zlib_header = len(body) >= 2 and body[0] & 0x0F == 8 and (body[0] << 8 | body[1]) % 31 == 0
        out, truncated = _inflate(body, 15 if zlib_header else -15, max_bytes)
    elif name == "br":
        out, truncated = _unbrotli(body, max_bytes)
    else:
        out, truncated = _unzstd(body, max_bytes)
    if out is None:
        if _looks_decoded(body):
            notes.append(f"already_decoded.{name}")
            return body
        raise PayloadError(name, "corrupt stream")
    notes.append(f"truncated.{name}" if truncated else f"decoded.{name}")
    return out


def _check_size(out: bytes, max_bytes: int) -> None:
    if len(out) > max_bytes:
        raise PayloadError("too_large", f"decodes to more than {max_bytes} bytes")


def _inflate(body: bytes, wbits: int, max_bytes: int) -> tuple[bytes | None, bool]:
    """zlib inflate of at most ``max_bytes`` + 1 bytes: (output, or None when nothing decodes; cut short)."""
    inflater = zlib.decompressobj(wbits)
    try:
        out = inflater.decompress(body, max_bytes + 1)
    except zlib.error:
        return None, False
    _check_size(out, max_bytes)
    if not out and not inflater.eof:
        return None, False
    return out, not inflater.eof


def _unbrotli(body: bytes, max_bytes: int) -> tuple[bytes | None, bool]:
    decompressor = brotli.Decompressor()
    try:
        out = decompressor.process(body, output_buffer_limit=max_bytes + 1)
    except brotli.error:
        return None, False
    _check_size(out, max_bytes)
    finished = decompressor.is_finished()
    return (out, not finished) if out or finished else (None, False)


def _unzstd(body: bytes, max_bytes: int) -> tuple[bytes | None, bool]:
    """zstd decodes whole blocks only: a frame cut short yields nothing and fails."""
    try:
        out = ZstdReader(io.BytesIO(body)).read(max_bytes + 1)
    except OSError:
        return None, False
    _check_size(out, max_bytes)
    return (out, False) if out else (None, False)
