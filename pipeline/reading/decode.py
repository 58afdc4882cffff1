"""Charset decoding of HTML payloads: the page's real encoding, never an exception.

The rule, in order (measured on every bench page by ``scripts/studies/check_decoding.py``):

1. A byte-order mark names the encoding (UTF-8, UTF-16, UTF-32).
2. UTF-16 without a BOM is recognised by its NUL bytes in every other position.
3. UTF-8 when the payload decodes as strict UTF-8, or when it is UTF-8 with a few stray bytes:
   valid multi-byte sequences outnumber invalid ones :data:`UTF8_MIN_RATIO` to one. Invalid
   UTF-8 is never an accident of another encoding's text; a page with many multi-byte UTF-8
   characters and one bad byte is a UTF-8 page, not cp1252 mojibake. Surrogate code points
   written as bytes (CESU-8, as some Java and database exports write characters outside the
   BMP; WTF-8) are first read as what they encode: a high and low surrogate pair as its
   character (:func:`repair_surrogates`, noted ``cesu8``); a lone surrogate is removed
   (counted in ``removed["surrogate"]``).
4. The declared charsets (HTTP header, then ``<meta>``) and then the content-based detection
   (resiliparse's uchardet), the first in which the payload decodes strictly. A UTF-16/32
   label without a BOM or NUL pattern is ignored (every even-length byte string "decodes").
5. Nothing decodes strictly: the detected encoding with invalid bytes replaced by U+FFFD.
6. Bytes that lie: when the text came out of a single-byte Western encoding (:data:`WESTERN`) and
   reads as mojibake of another one (:func:`reads_as_mojibake`: Western words mix accented and
   ASCII letters, ``élèves``; Cyrillic, Greek, Hebrew or Arabic read as cp1252 gives word after word
   of accented letters alone, ``ëåòíèé``, and Polish gives symbols inside words, ``wi¹za³``), the
   detected encoding is used instead when it decodes strictly and reads clean (noted ``relabelled``).

Labels go through the WHATWG label table (``iso-8859-1`` means cp1252); a bogus label
(``none``, ``x-user-defined``, garbage) is ignored.

After decoding, what names no character is removed from the text and counted in
:attr:`Decoded.removed`, never turned into U+FFFD as HTML's rule for a browser does: NUL
characters (``nul``), and numeric character references to NUL, to a surrogate or past U+10FFFF
(``&#0;``, ``&#xD800;``, ``&#x110000;``: ``reference``, :func:`drop_bad_references`). The result
never holds lone surrogates. Bytes that are invalid in the page's encoding (a stray byte in a UTF-8
page) are still read as U+FFFD: decoding replaces what it cannot read in an encoding.
"""

from __future__ import annotations

import codecs
import re
from dataclasses import dataclass, field

from resiliparse.parse.encoding import detect_encoding, map_encoding_to_html5

from pipeline.reading.streamed import place_segments

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


# A high surrogate (U+D800-DBFF) then a low one (U+DC00-DFFF) as three-byte sequences, and any surrogate alone.
_SURROGATE_PAIR = re.compile(rb"\xed([\xa0-\xaf])([\x80-\xbf])\xed([\xb0-\xbf])([\x80-\xbf])")
_SURROGATE = re.compile(rb"\xed[\xa0-\xbf][\x80-\xbf]")


def _pair(match: re.Match) -> bytes:
    high = 0xD800 | (match[1][0] & 0x0F) << 6 | match[2][0] & 0x3F
    low = 0xDC00 | (match[3][0] & 0x0F) << 6 | match[4][0] & 0x3F
    return chr(0x10000 + ((high - 0xD800) << 10) + (low - 0xDC00)).encode("utf-8")


def repair_surrogates(html: bytes) -> tuple[bytes, int, int] | None:
    """``html`` with CESU-8 surrogate pairs as the UTF-8 of the characters they encode and lone surrogates
    removed, the number of lone surrogates and the number of pairs; None when it holds no surrogate bytes."""
    if b"\xed" not in html or _SURROGATE.search(html) is None:
        return None
    paired, pairs = _SURROGATE_PAIR.subn(_pair, html)
    return *_SURROGATE.subn(b"", paired), pairs


# Numeric character references that may name no character: NUL, a surrogate (U+D800-DFFF), past U+10FFFF.
# Candidates only (decimal 55000-57999 and 1,000,000 up, hex of six digits and more): _names_no_character decides.
_BAD_REFERENCE = re.compile(
    r"&#(?:[xX]0*(?:0|[dD][89a-fA-F][0-9a-fA-F]{2}|[0-9a-fA-F]{6,})(?![0-9a-fA-F])"
    r"|0*(?:0|5[5-7][0-9]{3}|[0-9]{7,})(?![0-9]));?")


def _names_no_character(reference: str) -> bool:
    digits = reference[2:].rstrip(";")
    code = int(digits[1:], 16) if digits[0] in "xX" else int(digits)
    return code == 0 or 0xD800 <= code <= 0xDFFF or code > 0x10FFFF


def drop_bad_references(text: str) -> tuple[str, int]:
    """``text`` without its numeric character references to NUL, to a surrogate or past U+10FFFF (with or
    without the closing ``;``, as HTML reads them), and how many were removed."""
    if "&#" not in text:
        return text, 0
    removed = 0

    def drop(match: re.Match) -> str:
        nonlocal removed
        if _names_no_character(match.group(0)):
            removed += 1
            return ""
        return match.group(0)

    return _BAD_REFERENCE.sub(drop, text), removed


# Single-byte encodings of Western European text: a page read in one of them may be another encoding's bytes.
WESTERN = frozenset({"cp1252", "iso8859-1", "iso8859-15", "mac-roman", "cp850"})
# Mojibake: at least this many words, and this share of the words with a Latin-1 letter, made only of them.
MOJIBAKE_MIN_WORDS = 5
MOJIBAKE_MIN_SHARE = 0.2
_TAGS = re.compile(r"<(script|style)\b.*?</\1\s*>|<!--.*?-->|<[^>]*>", re.IGNORECASE | re.DOTALL)
_WORDS = re.compile(r"[^\W\d_]{3,}")
_LATIN1_LETTER = re.compile(r"[\u00c0-\u00ff]")
# A Latin-1 symbol between two letters (the middle dot of Catalan l·l excepted).
_SYMBOL_IN_WORD = re.compile(r"(?<=[^\W\d_])[\u00a1-\u00b6\u00b8-\u00bf](?=[^\W\d_])")


def reads_as_mojibake(text: str) -> bool:
    """Words of Latin-1 letters only (:func:`mojibake_words`), or Latin-1 symbols inside words (``wi¹za³``:
    ą and ł of cp1250 read as cp1252), at least :data:`MOJIBAKE_MIN_WORDS` times and in at least
    :data:`MOJIBAKE_MIN_SHARE` of the words with a Latin-1 letter."""
    visible = _TAGS.sub(" ", text)
    words = [w for w in _WORDS.findall(visible) if _LATIN1_LETTER.search(w)]
    foreign = sum(1 for w in words if all("\u00c0" <= c <= "\u00ff" for c in w))
    foreign = max(foreign, len(_SYMBOL_IN_WORD.findall(visible)))
    return foreign >= MOJIBAKE_MIN_WORDS and foreign >= MOJIBAKE_MIN_SHARE * len(words)


@dataclass(frozen=True)
class Decoded:
    """A payload's text, the encoding it was read in, what decoding had to do (``relabelled``: another
    encoding than the one that read as mojibake; ``cesu8``: surrogate bytes read as characters), and how
    many characters it removed, by reason (``nul``, ``reference``, ``surrogate``; only reasons that occurred)."""

    text: str
    encoding: str
    note: str | None = None
    removed: dict[str, int] = field(default_factory=dict)


def decode_html(html: bytes, http_charset: str | None = None) -> str:
    """Decode an HTML payload to text by the rule in this module's docstring; never raises."""
    return decode(html, http_charset).text


def page_html(html: bytes, http_charset: str | None = None) -> str:
    """The page as the ``decode`` step leaves it for the extractors: decoded (:func:`decode_html`), React's
    streamed parts in place (:func:`pipeline.reading.streamed.place_segments`). For readers of bench pages
    (training, calibration) that must see what a run sees."""
    return place_segments(decode_html(html, http_charset))[0]


def decode(html: bytes, http_charset: str | None = None) -> Decoded:
    """:func:`decode_html` with the encoding used and what decoding had to do."""
    encoding = bom_encoding(html) or utf16_without_bom(html)
    if encoding is not None:
        decoded = Decoded(html.decode(encoding, "replace"), encoding)
    else:
        decoded = _decode_by_content(html, http_charset)
    removed = dict(decoded.removed)
    text = decoded.text.removeprefix("\ufeff")
    if "\x00" in text:
        removed["nul"] = text.count("\x00")
        text = text.replace("\x00", "")
    text, references = drop_bad_references(text)
    if references:
        removed["reference"] = references
    return Decoded(text, decoded.encoding, decoded.note, removed) if text is not decoded.text else decoded


def _decode_by_content(html: bytes, http_charset: str | None) -> Decoded:
    text = strict(html, "utf-8")
    if text is not None:
        return Decoded(text, "utf-8")
    repaired = repair_surrogates(html)
    if repaired is not None:
        utf8, lone, pairs = repaired
        text = strict(utf8, "utf-8") or mostly_utf8(utf8)
        if text is not None:
            return Decoded(text, "utf-8", "cesu8" if pairs else None, {"surrogate": lone} if lone else {})
    text = mostly_utf8(html)
    if text is not None:
        return Decoded(text, "utf-8")
    detected = detected_encoding(html)
    candidates = [normalize_label(http_charset), normalize_label(meta_charset(html)), detected]
    for encoding in dict.fromkeys(c for c in candidates if c and not c.startswith(("utf-8", "utf-16", "utf-32"))):
        text = strict(html, encoding)
        if text is not None:
            return _unless_mojibake(html, Decoded(text, encoding), detected)
    fallback = detected if not detected.startswith(("utf-16", "utf-32")) else "utf-8"
    return _unless_mojibake(html, Decoded(html.decode(fallback, "replace"), fallback), detected)


def _unless_mojibake(html: bytes, decoded: Decoded, detected: str) -> Decoded:
    """``decoded``, or the payload in the ``detected`` encoding when ``decoded`` came out of a Western
    single-byte encoding as mojibake and the detected one reads it strictly and clean."""
    if decoded.encoding not in WESTERN or detected in WESTERN or detected.startswith(("utf-", "ascii")) or \
            decoded.text.isascii() or not reads_as_mojibake(decoded.text):
        return decoded
    text = strict(html, detected)
    if text is None or reads_as_mojibake(text):
        return decoded
    return Decoded(text, detected, "relabelled")
