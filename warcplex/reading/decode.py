"""Payload decoding: the bytes of an HTTP body -> text."""

from __future__ import annotations


def decode_html(html: bytes, http_charset: str | None = None) -> str:
    """Decode HTML bytes with resiliparse's content-based encoding detection.

    The declared charset is only a fallback: declarations lie (UTF-8 pages that are cp1252).
    """
    from resiliparse.parse.encoding import bytes_to_str, detect_encoding

    encoding = detect_encoding(html, max_len=65536)
    fallbacks = [e for e in (http_charset, "utf-8", "cp1252") if e]
    return bytes_to_str(html, encoding, fallback_encodings=fallbacks)
