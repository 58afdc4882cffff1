"""Step ``decode``: the page's payload bytes -> ``doc.html`` (a page no decoder accepts is dropped).

Counted: ``stage.decode.relabelled`` (a declared Western single-byte charset that read as mojibake,
replaced by the detected encoding; ``relabelled_to.<encoding>``), ``stage.decode.cesu8`` (surrogate
code points written as bytes, read as the characters they encode), and the characters removed because
they name no character, never turned into U+FFFD: ``stage.decode.removed.<reason>`` (``nul``: NUL
characters, ``reference``: ``&#0;``, ``&#xD800;``, ``&#x110000;`` and their like, ``surrogate``: a lone
surrogate written as bytes) and ``stage.decode.pages_with_removed`` (pages that lost at least one);
``stage.decode.streamed_pages`` and ``streamed_segments``: React's streamed parts put in place
(:mod:`pipeline.reading.streamed`).
"""

from __future__ import annotations

from pipeline.document import Document
from pipeline.reading.decode import decode
from pipeline.reading.streamed import place_segments
from pipeline.steps.base import Step


class Decode(Step):
    name = "decode"

    def run(self, doc: Document) -> Document | None:
        try:
            decoded = decode(doc.page.html, doc.page.http_charset)
        except Exception as exc:  # a payload no decoder accepts
            return self.drop(doc, f"error.decode_{type(exc).__name__}")
        doc.html, placed = place_segments(decoded.text)
        if placed:
            self.count("streamed_pages")
            self.count("streamed_segments", placed)
        for reason, removed in decoded.removed.items():
            self.count(f"removed.{reason}", removed)
        if decoded.removed:
            self.count("pages_with_removed")
        if decoded.note is not None:
            self.count(decoded.note)
            if decoded.note == "relabelled":
                self.count(f"relabelled_to.{decoded.encoding.replace('.', '_')}")
        return doc
