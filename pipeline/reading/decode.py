"""Charset decoding of HTML payloads: the page's real encoding, never an exception.

The rule, in order (measured on every bench page by ``scripts/studies/check_decoding.py``):

1. A byte-order mark names the encoding (UTF-8, UTF-16, UTF-32).
2. UTF-16 without a BOM is recognised by its NUL bytes in every other position.
3. UTF-8 when the payload decodes as strict UTF-8, or when it is UTF-8 with a few stray bytes:
   valid multi-byte sequences outnumber invalid ones :data:`UTF8_MIN_RATIO` to one. Invalid
   UTF-8 is never an accident of another encoding's text; a page with many multi-byte UTF-8
   characters and one bad byte is a UTF-8 page, not cp1252 mojibake.
4. The declared charsets (HTTP header, then ``<meta>``) and then the content-based detection
   (resiliparse's uchardet), the first in which the payload decodes strictly. A UTF-16/32
   label without a BOM or NUL pattern is ignored (every even-length byte string "decodes").
5. Nothing decodes strictly: the detected encoding with invalid bytes replaced by U+FFFD.

Labels go through the WHATWG label table (``iso-8859-1`` means cp1252); a bogus label
(``none``, ``x-user-defined``, garbage) is ignored. NUL characters are dropped after
decoding, as an HTML parser drops them from text, and the result never holds lone
surrogates: decoding replaces what it cannot read, it never skips it.
"""

from __future__ import annotations

import codecs
import re

from resiliparse.parse.encoding import detect_encoding, map_encoding_to_html5

# A page is UTF-8 with stray bytes when valid multi-byte characters outnumber invalid
# sequences this many times over. On the bench, legacy-encoded pages have at most 0.6 valid
# sequences per invalid one (GBK about 0.27), UTF-8 pages with stray bytes 1.2 to 75.
UTF8_MIN_RATIO = 2
# Bytes fed to the content-based detector (half from each end of the payload).
DETECT_BYTES = 65536

_BOMS = ((codecs.BOM_UTF32_LE, "utf-32-le"), (codecs.BOM_UTF32_BE, "utf-32-be"), (codecs.BOM_UTF8, "utf-8"),
         (codecs.BOM_UTF16_LE, "utf-16-le"), (codecs.BOM_UTF16_BE, "utf-16-be"))
# The charset of a <meta charset=...> or <meta http-equiv content="...; charset=..."> in the head.
_META_CHARSET = re.compile(rb"""<meta[^>]*?charset\s*=\s*["']?\s*([A-Za-z0-9._:+-]+)""", re.IGNORECASE)
_META_SCAN = 4096
_UTF16_SNIFF = 4096


def normalize_label(label: str | None) -> str | None:
    """The Python codec for a charset label by the WHATWG table; None for a bogus or missing label."""
    if not label:
        return None
    name = map_encoding_to_html5(label.strip().strip("\"'"), fallback_utf8=False)
    try:
        return codecs.lookup(name).name if name else None
    except LookupError:
        return None


def meta_charset(html: bytes) -> str | None:
    """The charset label of the first ``<meta ... charset=...>`` in the page's head, as written."""
    match = _META_CHARSET.search(html, 0, _META_SCAN)
    return match.group(1).decode("ascii") if match else None


def bom_encoding(html: bytes) -> str | None:
    return next((name for bom, name in _BOMS if html.startswith(bom)), None)


def utf16_without_bom(html: bytes) -> str | None:
    """``utf-16-le``/``utf-16-be`` when NUL bytes fill the odd/even positions of the head (ASCII markup)."""
    head = html[:_UTF16_SNIFF]
    even, odd = head[0::2], head[1::2]
    if len(odd) < 8:
        return None
    nul_even, nul_odd = even.count(0) / len(even), odd.count(0) / len(odd)
    if nul_odd > 0.3 and nul_even < 0.05:
        return "utf-16-le"
    if nul_even > 0.3 and nul_odd < 0.05:
        return "utf-16-be"
    return None


def strict(html: bytes, encoding: str) -> str | None:
    try:
        return html.decode(encoding)
    except (UnicodeDecodeError, LookupError):
        return None


def mostly_utf8(html: bytes) -> str | None:
    """The payload as UTF-8 with its few invalid sequences replaced, or None when it is not UTF-8."""
    text = html.decode("utf-8", "replace")
    invalid = text.count("\ufffd") - html.count(b"\xef\xbf\xbd")
    multibyte = len(text) - len(text.encode("ascii", "ignore")) - text.count("\ufffd")
    return text if multibyte >= UTF8_MIN_RATIO * max(invalid, 1) else None


def detected_encoding(html: bytes) -> str:
    """resiliparse's (uchardet) content-based guess, as a Python codec name."""
    return normalize_label(detect_encoding(html, max_len=DETECT_BYTES)) or "cp1252"


def decode_html(html: bytes, http_charset: str | None = None) -> str:
    """Decode an HTML payload to text by the rule in this module's docstring; never raises."""
    encoding = bom_encoding(html) or utf16_without_bom(html)
    if encoding is not None:
        text = html.decode(encoding, "replace")
    else:
        text = _decode_by_content(html, http_charset)
    text = text.removeprefix("\ufeff")
    return text.replace("\x00", "") if "\x00" in text else text


def _decode_by_content(html: bytes, http_charset: str | None) -> str:
    text = strict(html, "utf-8")
    if text is None:
        text = mostly_utf8(html)
    if text is not None:
        return text
    candidates = [normalize_label(http_charset), normalize_label(meta_charset(html)), detected_encoding(html)]
    for encoding in dict.fromkeys(c for c in candidates if c and not c.startswith(("utf-8", "utf-16", "utf-32"))):
        text = strict(html, encoding)
        if text is not None:
            return text
    fallback = candidates[-1] if not candidates[-1].startswith(("utf-16", "utf-32")) else "utf-8"
    return html.decode(fallback, "replace")
