"""ARC files written byte by byte from the responses of real WARCs, and a WARC of the same pages.

    python tests/make_arc.py OUT_DIR [WARC ...]

An ARC (version 1) file is a ``filedesc://`` header record, then one record per response: the line
``URL IP-address date content-type length``, the HTTP response exactly as the WARC stored it, a newline.
``arc_bytes(..., gzipped=True)`` writes each record as its own gzip member, as the Internet Archive does.
"""

from __future__ import annotations

import gzip
import re
import sys
import zlib
from dataclasses import dataclass
from pathlib import Path

from fastwarc.warc import ArchiveIterator, WarcRecordType


@dataclass(frozen=True)
class Response:
    """A response record of a real WARC: its target, date, IP address and HTTP block (status, headers, body)."""

    url: str
    date: str  # WARC-Date, e.g. 2020-08-08T18:31:11Z
    ip: str
    block: bytes


def responses(path: Path, limit: int | None = None) -> list[Response]:
    """The response records of a real WARC, in file order (at most ``limit``)."""
    found = []
    with open(path, "rb") as fh:
        for record in ArchiveIterator(fh, record_types=WarcRecordType.response, parse_http=False):
            found.append(Response(record.headers.get("WARC-Target-URI", "").strip("<>"),
                                  record.headers.get("WARC-Date", ""), record.headers.get("WARC-IP-Address") or
                                  "0.0.0.0", record.reader.read()))
            if limit and len(found) == limit:
                break
    return found


def _arc_date(warc_date: str) -> str:
    return re.sub(r"\D", "", warc_date)[:14].ljust(14, "0")


def _mime(block: bytes) -> str:
    match = re.search(rb"(?im)^content-type:\s*([^;\s]+)", block.split(b"\r\n\r\n", 1)[0])
    return match.group(1).decode("latin-1").lower() if match else "no-type"


def arc_record(response: Response) -> bytes:
    line = f"{response.url} {response.ip} {_arc_date(response.date)} {_mime(response.block)} {len(response.block)}\n"
    return line.encode("utf-8") + response.block + b"\n"


def filedesc(name: str, date: str = "20080101000000") -> bytes:
    body = b"1 0 warcplex tests\nURL IP-address Archive-date Content-type Archive-length\n"
    return f"filedesc://{name} 0.0.0.0 {date} text/plain {len(body)}\n".encode() + body + b"\n"


def arc_bytes(items: list[Response], name: str, gzipped: bool) -> bytes:
    """An ARC file of ``items``: one gzip member per record when ``gzipped``."""
    records = [filedesc(name), *(arc_record(item) for item in items)]
    if gzipped:
        return b"".join(gzip.compress(record, mtime=0) for record in records)
    return b"".join(records)


def warc_bytes(items: list[Response], gzipped: bool = True) -> bytes:
    """A WARC of the same responses (the same HTTP blocks), one gzip member per record."""
    out = []
    for index, item in enumerate(items):
        head = (f"WARC/1.0\r\nWARC-Type: response\r\nWARC-Record-ID: <urn:uuid:00000000-0000-4000-8000-{index:012d}>"
                f"\r\nWARC-Date: {item.date}\r\nWARC-Target-URI: {item.url}\r\nWARC-IP-Address: {item.ip}\r\n"
                f"Content-Type: application/http; msgtype=response\r\nContent-Length: {len(item.block)}\r\n\r\n")
        record = head.encode("utf-8") + item.block + b"\r\n\r\n"
        out.append(gzip.compress(record, mtime=0) if gzipped else record)
    return b"".join(out)


def main(argv: list[str]) -> int:
    out = Path(argv[0])
    out.mkdir(parents=True, exist_ok=True)
    items = [item for path in argv[1:] for item in responses(Path(path))]
    (out / "pages.arc.gz").write_bytes(arc_bytes(items, "pages.arc.gz", gzipped=True))
    (out / "pages.arc").write_bytes(arc_bytes(items, "pages.arc", gzipped=False))
    (out / "pages.warc.gz").write_bytes(warc_bytes(items))
    print(f"{len(items)} responses -> {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
