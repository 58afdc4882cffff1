#!/usr/bin/env python3
"""Generate a corpus of damaged WARC files from real WARCs (by default the ones shipped in tests/data/).

    python tests/make_fuzz_corpus.py OUT_DIR [--count 240] [--seed 7] [--seeds DIR ...]

Deterministic for a given ``--seed``. Each file takes a few real records (one gzip member
per record, as Common Crawl writes them) and damages them in one way: truncated gzip
members, garbage between members, wrong Content-Length, missing or duplicated WARC headers,
HTTP headers without a body, binary payloads labelled text/html, deeply nested HTML, lying
charsets, empty and non-WARC files, HTTP-coded bodies and charset traps, a gzipped WARC as a
record's payload, real pages whose bytes lie about their charset (a Cyrillic page in cp1251
labelled Latin-1, CESU-8 surrogates, character references and surrogate bytes that name no character,
Latin-1 bytes in WARC headers), plus one 50 MB page (stored compressed). ``manifest.json``
lists every file with its damage and ``intact``: how many of its records were written
undamaged and must be read back.
"""

from __future__ import annotations

import argparse
import gzip
import io
import json
import random
import re
import sys
import uuid
import zlib
from dataclasses import dataclass
from pathlib import Path

import brotli
from fastwarc.stream_io import ZstdWriter

# The real crawls shipped with the tests (tests/data/README.md): Common Crawl's, ClueWeb09's, wget's.
DATA = Path(__file__).resolve().parent / "data"
DEFAULT_SEEDS = (DATA / "cc-genuine", DATA / "other-real")
BIG_PAGE_BYTES = 50 * 1024 * 1024
NESTING_DEPTH = 100_000

# Text written for this corpus (no third-party text) for the charset cases.
FRENCH = ("Les élèves ont présenté leur projet à la fête de l’école : « Ça marche ! » dit la maîtresse. "
          "Le café était déjà froid, mais personne ne s’en plaignait — c’était un beau début d’été.")
GERMAN = "Größere Städte haben über fünfzig Brücken; die Straßenbahn fährt täglich um 6 Uhr ab."
JAPANESE = ("今日は天気がとても良いので、公園を散歩しました。桜の花がきれいに咲いていて、"
            "たくさんの人が写真を撮っていました。明日は雨が降るそうです。")


@dataclass
class Record:
    """One WARC record split into its header lines and its content block."""

    version: bytes
    headers: list[tuple[bytes, bytes]]
    block: bytes

    def header(self, name: bytes) -> bytes | None:
        return next((v for k, v in self.headers if k.lower() == name.lower()), None)

    def to_bytes(self, content_length: int | None = None) -> bytes:
        length = len(self.block) if content_length is None else content_length
        lines = [self.version]
        lines += [k + b": " + (str(length).encode() if k.lower() == b"content-length" else v)
                  for k, v in self.headers]
        return b"\r\n".join(lines) + b"\r\n\r\n" + self.block + b"\r\n\r\n"


def parse_record(raw: bytes) -> Record | None:
    head, sep, rest = raw.partition(b"\r\n\r\n")
    if not sep:
        return None
    lines = head.split(b"\r\n")
    headers = []
    for line in lines[1:]:
        key, colon, value = line.partition(b":")
        if colon:
            headers.append((key.strip(), value.strip()))
    length = next((int(v) for k, v in headers if k.lower() == b"content-length"), None)
    if length is None:
        return None
    return Record(lines[0], headers, rest[:length])


def load_records(seed_dirs: tuple[Path, ...] | list[Path], per_file: int = 60) -> list[Record]:
    """Records of the seed WARCs (``*.warc.gz`` in each directory and below), one per gzip member (the first
    ``per_file`` of each file)."""
    records = []
    files = [path for seed_dir in seed_dirs for path in sorted(Path(seed_dir).rglob("*.warc.gz"))]
    for path in files:
        if path.name.endswith((".wat.gz", ".wet.gz")):
            continue
        with open(path, "rb") as fh:
            data = fh.read(4 * 1024 * 1024)  # the head of big shards is plenty
        taken = 0
        while data and taken < per_file:
            inflater = zlib.decompressobj(31)
            try:
                raw = inflater.decompress(data)
            except zlib.error:
                break
            if not inflater.eof:
                break
            data = inflater.unused_data
            record = parse_record(raw)
            if record is not None:
                records.append(record)
                taken += 1
    if not records:
        raise SystemExit(f"make_fuzz_corpus: error: no WARC records found under {', '.join(map(str, seed_dirs))}")
    return records


def responses(records: list[Record]) -> list[Record]:
    return [r for r in records if r.header(b"WARC-Type") == b"response" and b"text/html" in r.block[:2000].lower()]


def member(data: bytes) -> bytes:
    return gzip.compress(data, compresslevel=6, mtime=0)


def new_record(url: str, http_head: bytes, body: bytes, rng: random.Random) -> Record:
    record_id = b"<urn:uuid:" + str(uuid.UUID(int=rng.getrandbits(128))).encode() + b">"
    return Record(b"WARC/1.0", [(b"WARC-Type", b"response"), (b"WARC-Date", b"2024-05-17T23:31:27Z"),
                                (b"WARC-Record-ID", record_id), (b"WARC-Target-URI", url.encode()),
                                (b"Content-Type", b"application/http; msgtype=response"),
                                (b"Content-Length", b"0")], http_head + body)


def http_head(content_type: str, extra: str = "") -> bytes:
    return (f"HTTP/1.1 200 OK\r\nContent-Type: {content_type}\r\n{extra}\r\n").encode("latin-1")


class Corpus:
    """Builds the damaged files; each builder returns (bytes, intact record count, note)."""

    def __init__(self, records: list[Record], rng: random.Random) -> None:
        self.records = records
        self.pages = responses(records)
        self.rng = rng

    def pick(self, low: int = 3, high: int = 10) -> list[Record]:
        return [self.rng.choice(self.records) for _ in range(self.rng.randint(low, high))]

    def gz(self, records: list[Record]) -> list[bytes]:
        return [member(r.to_bytes()) for r in records]

    def warc_in_record(self) -> tuple[bytes, int, str]:
        """A response whose payload is a whole gzipped WARC: deflate stores incompressible data
        verbatim, so the inner file's gzip members appear in the outer file. Not damage, a trap
        for split planning and resync: only the outer records exist."""
        inner = b"".join(self.gz([self.rng.choice(self.pages) for _ in range(40)]))
        wrapper = new_record("http://fuzz.example/inner.warc.gz", http_head("application/warc"), inner, self.rng)
        recs = [*self.pick(2, 4), wrapper, *self.pick(2, 4)]
        return b"".join(self.gz(recs)), len(recs), f"a {len(inner)} byte gzipped WARC as one record's payload"

    def intact(self) -> tuple[bytes, int, str]:
        recs = self.pick()
        return b"".join(self.gz(recs)), len(recs), "undamaged control"

    def truncated_member(self) -> tuple[bytes, int, str]:
        recs = self.pick(4, 10)
        members = self.gz(recs)
        i = self.rng.randrange(len(members))
        cut = self.rng.randint(10, max(11, len(members[i]) - 10))
        members[i] = members[i][:cut]
        return b"".join(members), len(recs) - 1, f"member {i} of {len(recs)} cut at byte {cut}"

    def truncated_file(self) -> tuple[bytes, int, str]:
        recs = self.pick(3, 8)
        data = b"".join(self.gz(recs))
        last = len(member(recs[-1].to_bytes()))
        cut = len(data) - self.rng.randint(1, last - 1)
        return data[:cut], len(recs) - 1, f"file cut at byte {cut} of {len(data)}"

    def garbage_between(self) -> tuple[bytes, int, str]:
        recs = self.pick(4, 10)
        members = self.gz(recs)
        i = self.rng.randrange(1, len(members))
        kind = self.rng.choice(["random", "text", "gzip_magic", "warc_line"])
        size = self.rng.randint(1, 5000)
        garbage = {"random": lambda: self.rng.randbytes(size),
                   "text": lambda: b"<html>not a record</html>\n" * (size // 26 + 1),
                   "gzip_magic": lambda: b"\x1f\x8b\x08\x00" + self.rng.randbytes(size),
                   "warc_line": lambda: b"WARC/1.0\r\nWARC-Type: response\r\n" + self.rng.randbytes(size)}[kind]()
        members.insert(i, garbage)
        return b"".join(members), len(recs), f"{len(garbage)} bytes of {kind} garbage before member {i}"

    def wrong_content_length(self) -> tuple[bytes, int, str]:
        recs = self.pick(3, 8)
        i = self.rng.randrange(len(recs))
        true = len(recs[i].block)
        wrong = self.rng.choice([0, max(0, true - self.rng.randint(1, 400)), true + self.rng.randint(1, 400),
                                 true * 10 + 12345, 2 ** 40])
        members = self.gz(recs)
        members[i] = member(recs[i].to_bytes(content_length=wrong))
        return b"".join(members), len(recs) - 1, f"record {i} Content-Length {wrong} (true {true})"

    def _edit_headers(self, remove: bool) -> tuple[bytes, int, str]:
        recs = self.pick(3, 8)
        i = self.rng.randrange(len(recs))
        rec = recs[i]
        names = [k for k, _ in rec.headers]
        name = self.rng.choice(names)
        if remove:
            headers = [(k, v) for k, v in rec.headers if k != name]
            note = f"record {i} lost {name.decode()}"
        else:
            value = rec.header(name) or b""
            dup = self.rng.choice([value, b"x" + value[::-1], b""])
            pos = self.rng.randrange(len(rec.headers) + 1)
            headers = rec.headers[:pos] + [(name, dup)] + rec.headers[pos:]
            note = f"record {i} has {name.decode()} twice"
        damaged = Record(rec.version, headers, rec.block)
        members = self.gz(recs)
        members[i] = member(damaged.to_bytes())
        return b"".join(members), len(recs) - 1, note

    def missing_header(self) -> tuple[bytes, int, str]:
        return self._edit_headers(remove=True)

    def duplicated_header(self) -> tuple[bytes, int, str]:
        return self._edit_headers(remove=False)

    def http_headers_no_body(self) -> tuple[bytes, int, str]:
        recs = self.pick(2, 6)
        extra = self.rng.choice(["", "Content-Length: 5000\r\n", "Transfer-Encoding: chunked\r\n"])
        bare = new_record("http://fuzz.example/no-body", http_head("text/html; charset=utf-8", extra), b"", self.rng)
        recs.insert(self.rng.randrange(len(recs) + 1), bare)
        return b"".join(self.gz(recs)), len(recs), f"HTTP headers without body ({extra.strip() or 'no length'})"

    def binary_as_html(self) -> tuple[bytes, int, str]:
        recs = self.pick(2, 6)
        kind = self.rng.choice(["random", "png", "gzip", "nul", "pdf"])
        size = self.rng.randint(100, 200_000)
        body = {"random": lambda: self.rng.randbytes(size),
                "png": lambda: b"\x89PNG\r\n\x1a\n" + self.rng.randbytes(size),
                "gzip": lambda: gzip.compress(self.rng.choice(self.pages).block[-20000:], mtime=0),
                "nul": lambda: b"\x00" * size,
                "pdf": lambda: b"%PDF-1.7\n" + self.rng.randbytes(size)}[kind]()
        bad = new_record(f"http://fuzz.example/{kind}", http_head("text/html"), body, self.rng)
        recs.insert(self.rng.randrange(len(recs) + 1), bad)
        return b"".join(self.gz(recs)), len(recs), f"{len(body)} bytes of {kind} labelled text/html"

    def nested_html(self) -> tuple[bytes, int, str]:
        depth = self.rng.choice([NESTING_DEPTH, NESTING_DEPTH // 10, 5000])
        tag = self.rng.choice(["div", "span", "b", "table"])
        body = (b"<!doctype html><html><body>" + f"<{tag}>".encode() * depth
                + b"<p>Deep text at the bottom of the nesting.</p>" + f"</{tag}>".encode() * self.rng.randint(0, depth)
                + b"</body></html>")
        page = new_record("http://fuzz.example/nested", http_head("text/html; charset=utf-8"), body, self.rng)
        recs = self.pick(1, 3) + [page]
        return b"".join(self.gz(recs)), len(recs), f"{depth} nested <{tag}>"

    def lying_charset(self) -> tuple[bytes, int, str]:
        encoding, text = self.rng.choice([("cp1252", FRENCH), ("cp1252", GERMAN), ("shift_jis", JAPANESE),
                                          ("euc_jp", JAPANESE), ("latin-1", GERMAN)])
        declared = self.rng.choice(["utf-8", "UTF-8", "utf8"])
        paras = "".join(f"<p>{text}</p>\n" for _ in range(self.rng.randint(1, 30)))
        html = (f'<html><head><meta charset="{declared}"><title>{text[:20]}</title></head>'
                f"<body><article>{paras}</article></body></html>").encode(encoding)
        page = new_record(f"http://fuzz.example/{encoding}", http_head(f"text/html; charset={declared}"), html,
                          self.rng)
        recs = self.pick(1, 4)
        recs.insert(self.rng.randrange(len(recs) + 1), page)
        return b"".join(self.gz(recs)), len(recs), f"declared {declared}, really {encoding}"

    def uncompressed_damaged(self) -> tuple[bytes, int, str]:
        recs = self.pick(3, 8)
        raw = b"".join(r.to_bytes() for r in recs)
        cut = len(raw) - self.rng.randint(1, len(recs[-1].to_bytes()) - 1)
        return raw[:cut], len(recs) - 1, f"uncompressed WARC cut at byte {cut}"

    def empty(self) -> tuple[bytes, int, str]:
        kind = self.rng.choice(["zero", "gzip_empty", "newlines", "warc_version_only"])
        data = {"zero": b"", "gzip_empty": gzip.compress(b"", mtime=0), "newlines": b"\r\n" * 10,
                "warc_version_only": member(b"WARC/1.0\r\n\r\n")}[kind]
        return data, 0, f"empty ({kind})"

    def not_warc(self) -> tuple[bytes, int, str]:
        kind = self.rng.choice(["random", "html", "json", "gzip_text", "png", "zip"])
        size = self.rng.randint(10, 50_000)
        data = {"random": lambda: self.rng.randbytes(size),
                "html": lambda: self.rng.choice(self.pages).block,
                "json": lambda: b"\n".join(json.dumps({"i": i, "url": f"http://x/{i}"}).encode()
                                           for i in range(size // 30)),
                "gzip_text": lambda: gzip.compress(b"just some text, not a WARC\n" * (size // 27 + 1), mtime=0),
                "png": lambda: b"\x89PNG\r\n\x1a\n" + self.rng.randbytes(size),
                "zip": lambda: b"PK\x03\x04" + self.rng.randbytes(size)}[kind]()
        return data, 0, f"not a WARC ({kind})"

    def big_page(self) -> tuple[bytes, int, str]:
        """A 50 MB HTML page (inline data like real huge pages, plus real text), gzip-compressed."""
        text_pages = [p for p in self.pages if len(p.block) > 5000][:20] or self.pages[:20]
        body_text = b"".join(re.sub(rb"(?s)^.*?\r\n\r\n", b"", p.block) for p in text_pages)
        head = b"<!doctype html><html><head><title>Big page</title></head><body><article>"
        tail = b"</article></body></html>"
        chunk = b"<script>var data = [" + b",".join(b'{"id": %d, "v": "%s"}' % (i, b"x" * (i % 50))
                                                    for i in range(2000)) + b"];</script>\n"
        filler_size = BIG_PAGE_BYTES - len(head) - len(tail) - len(body_text)
        filler = (chunk * (filler_size // len(chunk) + 1))[:filler_size]
        split = len(filler) // 2
        split = filler.rfind(b"</script>\n", 0, split) + len(b"</script>\n")
        html = head + filler[:split] + body_text + filler[split:] + tail
        page = new_record("http://fuzz.example/big", http_head("text/html; charset=utf-8"), html, self.rng)
        recs = [self.rng.choice(self.pages), page, self.rng.choice(self.pages)]
        return b"".join(self.gz(recs)), len(recs), f"{len(html)} byte HTML page"


def chunked(body: bytes, size: int = 1000) -> bytes:
    """``body`` as an HTTP chunked transfer coding, ``size`` bytes a chunk."""
    return b"".join(b"%x\r\n%s\r\n" % (len(body[i:i + size]), body[i:i + size])
                    for i in range(0, len(body), size)) + b"0\r\n\r\n"


def zstd(body: bytes) -> bytes:
    out = io.BytesIO()
    writer = ZstdWriter(out)
    writer.write(body)
    writer.close()
    return out.getvalue()


def deflate_raw(body: bytes) -> bytes:
    compressor = zlib.compressobj(wbits=-15)
    return compressor.compress(body) + compressor.flush()


def _page(text: str, charset: str, paras: int = 8) -> str:
    return (f'<html><head><meta charset="{charset}"><title>{text[:20]}</title></head><body><article>'
            + "".join(f"<p>{text}</p>\n" for _ in range(paras)) + "</article></body></html>")


def encoded_payload_cases() -> dict[str, tuple[str, str, bytes, str | None]]:
    """name -> (Content-Type, extra HTTP headers, stored body, a word the text keeps or None for a
    counted skip): HTTP codings (chunked, gzip, deflate both ways, br, zstd, Common Crawl's renamed
    headers, a stale header) and charset traps (UTF-16 without BOM, bogus labels, stray bytes, NULs,
    surrogate bytes), plus bodies that must be counted skips."""
    french = _page(FRENCH, "utf-8").encode()
    german_stray = _page(GERMAN + " Preis: 12@ Euro.", "utf-8").encode().replace(b"@", b"\x9f")
    utf16 = _page(GERMAN, "utf-16")
    html = "text/html; charset=utf-8"
    return {
        "chunked": (html, "Transfer-Encoding: chunked\r\n", chunked(french, 700), "élèves"),
        "chunked_gzip": (html, "Content-Encoding: gzip\r\nTransfer-Encoding: chunked\r\n",
                         chunked(gzip.compress(french, mtime=0), 300), "élèves"),
        "gzip": (html, "Content-Encoding: gzip\r\n", gzip.compress(french, mtime=0), "élèves"),
        "deflate_zlib": (html, "Content-Encoding: deflate\r\n", zlib.compress(french), "élèves"),
        "deflate_raw": (html, "Content-Encoding: deflate\r\n", deflate_raw(french), "élèves"),
        "br": (html, "Content-Encoding: br\r\n", brotli.compress(french), "élèves"),
        "zstd": (html, "Content-Encoding: zstd\r\n", zstd(french), "élèves"),
        "cc_renamed": (html, "X-Crawler-Content-Encoding: gzip\r\nX-Crawler-Transfer-Encoding: chunked\r\n",
                       french, "élèves"),
        "stale_gzip_header": (html, "Content-Encoding: gzip\r\n", french, "élèves"),
        "utf16le_nobom": ("text/html", "", utf16.encode("utf-16-le"), "Größere"),
        "utf16be_nobom": ("text/html", "", utf16.encode("utf-16-be"), "Größere"),
        "label_none_stray_byte": ("text/html; charset=none", "", german_stray, "Größere"),
        "label_user_defined_stray_byte": ("text/html; charset=x-user-defined", "", german_stray, "Größere"),
        "utf8_stray_byte_latin1_label": ("text/html; charset=iso-8859-1", "", german_stray, "Größere"),
        "nul_bytes": (html, "", _page(JAPANESE, "utf-8").encode().replace("。".encode(), "。\x00".encode()), "天気"),
        "surrogate_bytes": (html, "", _page(JAPANESE, "utf-8").encode().replace("、".encode(), b"\xed\xa0\x80"),
                            "天気"),
        "corrupt_gzip": (html, "Content-Encoding: gzip\r\n", b"\x1f\x8b\x08\x00" + bytes(range(200, 256)) * 40, None),
        "gzip_bomb": (html, "Content-Encoding: gzip\r\n", gzip.compress(b"<html>" + b" " * (9 << 20), mtime=0), None),
        "unsupported_coding": (html, "Content-Encoding: compress\r\n", french, None),
    }


def encoded_payload(corpus: Corpus, occurrence: int, per_file: int = 4) -> tuple[bytes, int, str]:
    """Coded and charset-trap bodies among real records; successive files rotate through the cases."""
    cases = list(encoded_payload_cases().items())
    chosen = [cases[(occurrence * per_file + j) % len(cases)] for j in range(per_file)]
    recs = corpus.pick(1, 3)
    for name, (content_type, extra, body, _) in chosen:
        page = new_record(f"http://fuzz.example/enc/{name}", http_head(content_type, extra), body, corpus.rng)
        recs.insert(corpus.rng.randrange(len(recs) + 1), page)
    return b"".join(corpus.gz(recs)), len(recs), "encoded: " + ", ".join(name for name, _ in chosen)


def write_encoded_payloads(out_dir: Path, corpus: Corpus, files: int, first: int) -> list[dict]:
    """``files`` files of kind ``encoded_payload`` (their own RNG: the other kinds' files do not move)."""
    manifest = []
    for occurrence in range(files):
        data, intact, note = encoded_payload(corpus, occurrence)
        name = f"fuzz-{first + occurrence:04d}-encoded_payload.warc.gz"
        (out_dir / name).write_bytes(data)
        manifest.append({"file": name, "kind": "encoded_payload", "intact": intact, "note": note, "bytes": len(data)})
    return manifest


def _split_http(record: Record) -> tuple[bytes, bytes] | None:
    """A real HTML response's HTTP head (with its blank line) and body."""
    head, sep, body = record.block.partition(b"\r\n\r\n")
    return (head + sep, body) if sep and b"text/html" in head.lower() else None


def _cesu8(text: str) -> bytes:
    """``text`` in CESU-8: characters outside the BMP as two three-byte surrogates."""
    return b"".join(ch.encode("utf-8") if ord(ch) < 0x10000 else
                    b"".join(chr(unit).encode("utf-8", "surrogatepass")
                             for unit in (0xD800 + ((ord(ch) - 0x10000) >> 10), 0xDC00 + ((ord(ch) - 0x10000) & 0x3FF)))
                    for ch in text)


# Code pages of alphabets whose bytes, read as cp1252, come out as accented Latin letters.
LYING_CODE_PAGES = ("cp1251", "koi8-r", "iso8859-5", "cp1253", "iso8859-7", "cp1255", "cp1256")


def _say_latin1(head: bytes, body: bytes) -> tuple[bytes, bytes]:
    """The HTTP Content-Type and every meta charset of a page changed to say Latin-1."""
    head = re.sub(rb"(?i)content-type:[^\r\n]*", b"Content-Type: text/html; charset=latin1", head)
    return head, re.sub(rb"(?i)(<meta[^>]*charset\s*=\s*[\"']?)[\w-]+", rb"\1iso-8859-1", body)


def real_page_traps(corpus: "Corpus") -> dict[str, tuple[Record, str, str | None]]:
    """Charset lies built from the seeds' real pages: name -> (record, its URL, a word the decoded text must
    keep, or None: its letters must be the page's alphabet, none of them Latin-1 mojibake).
    ``code_page_as_latin1``: the real page in a non-Latin code page (cp1251, ...) with the most letters,
    its bytes as they are and both its HTTP header and its meta saying Latin-1 (without such a page: the
    UTF-8 page with most Cyrillic or Greek letters written in cp1251 or cp1253); ``cesu8``: a mostly-ASCII
    real page with an emoji written as a CESU-8 surrogate pair after every paragraph and one lone surrogate
    (more invalid UTF-8 sequences than valid ones: it read as cp1252 before). The bad-bytes cases
    (:data:`BAD_BYTES`), each on the same real page, after every paragraph's last word: a character reference
    to NUL (``reference_nul``), to a surrogate (``reference_surrogate``), past U+10FFFF
    (``reference_out_of_range``), and lone surrogates written as bytes (``surrogate_bytes``); their word is
    that last word, which must come out whole, without U+FFFD."""
    from pipeline.reading.decode import decode

    pages = []
    for record in corpus.pages:
        split = _split_http(record)
        if split is not None:
            charset = re.search(rb"(?i)content-type:[^\r\n]*charset=([\w-]+)", split[0])
            decoded = decode(split[1], charset.group(1).decode() if charset else None)
            letters = sum(1 for ch in decoded.text if ch.isalpha() and not ch.isascii())
            pages.append((record, *split, decoded, letters))
    pages.sort(key=lambda p: (-p[4], p[0].header(b"WARC-Target-URI") or b""))
    traps: dict[str, tuple[Record, str, str | None]] = {}
    url = "http://fuzz.example/real/code_page_as_latin1"
    native = [p for p in pages if p[3].encoding in LYING_CODE_PAGES and p[4] >= 200]
    if native:
        record, head, body, decoded, _ = native[0]
        head, body = _say_latin1(head, body)
        traps["code_page_as_latin1"] = (_with_block(record, url, head + body), url, None)
    else:
        for record, head, body, decoded, _ in pages:
            code_page = next((c for c in ("cp1251", "cp1253") if sum(
                1 for ch in decoded.text if ch.isalpha() and not ch.encode(c, "ignore").isascii()) >= 200), None)
            if decoded.encoding == "utf-8" and code_page:
                head, body = _say_latin1(head, decoded.text.encode(code_page, "xmlcharrefreplace"))
                traps["code_page_as_latin1"] = (_with_block(record, url, head + body), url, None)
                break
    plain = sorted((p for p in pages if p[3].encoding == "utf-8" and p[3].text.count("</p>") >= 5 and 0 < p[4] < 100),
                   key=lambda p: (len(p[2]), p[0].header(b"WARC-Target-URI") or b""))
    if plain:
        record, head, _, decoded, _ = plain[0]
        emoji = "\U0001F600"
        body = _cesu8(decoded.text.replace("</p>", f" {emoji}</p>")).replace(b"</body>", b"\xed\xb0\x80</body>", 1)
        url = "http://fuzz.example/real/cesu8"
        traps["cesu8"] = (_with_block(record, url, head + body), url, emoji)
        word = re.findall(r"(\w{3,})[.:!?]?</p>", decoded.text)[0]
        for name, bad in BAD_BYTES.items():
            url = f"http://fuzz.example/real/{name}"
            body = decoded.text.encode("utf-8").replace(b"</p>", bad + b"</p>")
            traps[name] = (_with_block(record, url, head + body), url, word)
    return traps


# What names no character, written after a paragraph: name -> bytes (HTML would read each as U+FFFD).
BAD_BYTES = {"reference_nul": b"&#0;", "reference_surrogate": b"&#xD800;&#56320;",
             "reference_out_of_range": b"&#x110000;&#99999999999;", "surrogate_bytes": b"\xed\xa0\x80 \xed\xbf\xbf"}


def _with_block(record: Record, url: str, block: bytes) -> Record:
    headers = [(k, url.encode() if k.lower() == b"warc-target-uri" else
                b"<urn:uuid:" + str(uuid.uuid5(uuid.NAMESPACE_URL, url)).encode() + b">"
                if k.lower() == b"warc-record-id" else v)
               for k, v in record.headers if k.lower() not in (b"warc-block-digest", b"warc-payload-digest")]
    return Record(record.version, headers, block)


def damaged_headers(corpus: "Corpus") -> tuple[list[Record], dict[str, list[str]]]:
    """Four real HTML responses with damaged WARC headers, among two intact ones: a lower-case version line, a
    Latin-1 byte in the target URI and one in the record id (FastWARC rejects the first and reads U+FFFD for the
    others; warcio reads all three), and a version line of WARC/2.0 (neither reads it: counted). Returns the
    records and the URLs of the pages that must come out (``recovered``) and of the one that must be counted
    (``rejected``)."""
    pages = sorted((p for p in corpus.pages if _split_http(p) is not None), key=lambda p: p.header(b"WARC-Target-URI"))
    chosen = pages[:6]

    def renamed(record: Record, url: str, version: bytes = b"WARC/1.0") -> Record:
        moved = _with_block(record, url, record.block)
        return Record(version, [(k, url.encode("latin-1") if k.lower() == b"warc-target-uri" else v)
                                for k, v in moved.headers], moved.block)

    lower = renamed(chosen[1], "http://fuzz.example/real/lower-case-version", b"warc/1.0")
    future = renamed(chosen[2], "http://fuzz.example/real/version-2", b"WARC/2.0")
    latin1 = renamed(chosen[3], "http://fuzz.example/real/stra\xdfe")
    latin1_id = renamed(chosen[5], "http://fuzz.example/real/latin1-record-id")
    latin1_id.headers = [(k, v[:-1] + b"\xe9>" if k.lower() == b"warc-record-id" else v) for k, v in latin1_id.headers]
    return [chosen[0], lower, future, latin1, latin1_id, chosen[4]], {
        "recovered": ["http://fuzz.example/real/lower-case-version", "http://fuzz.example/real/stra\xdfe",
                      "http://fuzz.example/real/latin1-record-id"],
        "rejected": ["http://fuzz.example/real/version-2"]}


def write_real_page_traps(out_dir: Path, corpus: "Corpus", first: int) -> list[dict]:
    """One file of kind ``real_page_trap`` per case of :func:`real_page_traps`, the trap among real records, and one
    of :func:`damaged_headers`."""
    manifest = []
    for offset, (name, (record, url, word)) in enumerate(sorted(real_page_traps(corpus).items())):
        recs = corpus.pick(1, 3)
        recs.insert(corpus.rng.randrange(len(recs) + 1), record)
        data = b"".join(corpus.gz(recs))
        file = f"fuzz-{first + offset:04d}-real_page_trap.warc.gz"
        (out_dir / file).write_bytes(data)
        manifest.append({"file": file, "kind": "real_page_trap", "intact": len(recs), "bytes": len(data),
                         "note": f"{name}: {url}", "url": url, "word": word})
    recs, urls = damaged_headers(corpus)
    data = b"".join(corpus.gz(recs))
    file = f"fuzz-{first + len(manifest):04d}-real_page_trap.warc.gz"
    (out_dir / file).write_bytes(data)
    manifest.append({"file": file, "kind": "real_page_trap", "intact": len(recs) - len(urls["rejected"]),
                     "bytes": len(data), "note": "damaged_headers: " + ", ".join(urls["recovered"] + urls["rejected"]),
                     **urls})
    return manifest


KINDS = ["intact", "truncated_member", "truncated_file", "garbage_between", "wrong_content_length",
         "missing_header", "duplicated_header", "http_headers_no_body", "binary_as_html", "nested_html",
         "lying_charset", "uncompressed_damaged", "empty", "not_warc", "warc_in_record"]


def generate(out_dir: Path, count: int = 240, seed: int = 7, seed_dirs: tuple[Path, ...] = DEFAULT_SEEDS,
             big_page: bool = True, encoded: int = 10) -> list[dict]:
    """Write ``count`` damaged files (plus the big page and ``encoded`` files of coded payloads)
    and ``manifest.json``; return the manifest."""
    rng = random.Random(seed)
    corpus = Corpus(load_records(seed_dirs), rng)
    out_dir.mkdir(parents=True, exist_ok=True)
    plan = [KINDS[i % len(KINDS)] for i in range(count)]
    if big_page:
        plan.append("big_page")
    manifest = []
    for i, kind in enumerate(plan):
        data, intact, note = getattr(corpus, kind)()
        suffix = ".warc" if kind == "uncompressed_damaged" else ".bin" if kind == "not_warc" else ".warc.gz"
        name = f"fuzz-{i:04d}-{kind}{suffix}"
        (out_dir / name).write_bytes(data)
        manifest.append({"file": name, "kind": kind, "intact": intact, "note": note, "bytes": len(data)})
    manifest += write_encoded_payloads(out_dir, Corpus(corpus.records, random.Random(seed + 1)), encoded,
                                       first=len(manifest))
    manifest += write_real_page_traps(out_dir, Corpus(corpus.records, random.Random(seed + 2)), first=len(manifest))
    (out_dir / "manifest.json").write_text(json.dumps(manifest, indent=1) + "\n")
    return manifest


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out_dir", type=Path)
    parser.add_argument("--count", type=int, default=240, help="damaged files besides the 50 MB page")
    parser.add_argument("--seed", type=int, default=7, help="RNG seed (the corpus is deterministic)")
    parser.add_argument("--seeds", type=Path, nargs="+", default=list(DEFAULT_SEEDS),
                        help="directories of real WARCs (default: tests/data/cc-genuine and other-real)")
    parser.add_argument("--no-big-page", action="store_true", help="leave out the 50 MB page")
    parser.add_argument("--encoded", type=int, default=10, help="files of HTTP-coded and charset-trap payloads")
    args = parser.parse_args(argv)
    missing = [str(d) for d in args.seeds if not d.is_dir()]
    if missing:
        print(f"make_fuzz_corpus: error: seed directory {', '.join(missing)} not found", file=sys.stderr)
        return 2
    manifest = generate(args.out_dir, args.count, args.seed, args.seeds, not args.no_big_page, args.encoded)
    total = sum(m["bytes"] for m in manifest)
    print(f"{len(manifest)} files, {total / 1e6:.1f} MB in {args.out_dir}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
