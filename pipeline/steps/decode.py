"""Step ``decode``: the page's payload bytes -> ``doc.html`` (a page no decoder accepts is dropped)."""

from __future__ import annotations

from pipeline.document import Document
from pipeline.reading.decode import decode_html
from pipeline.steps.base import Step


class Decode(Step):
    name = "decode"

    def run(self, doc: Document) -> Document | None:
        try:
            doc.html = decode_html(doc.page.html, doc.page.http_charset)
        except Exception as exc:  # a payload no decoder accepts
            return self.drop(doc, f"error.decode_{type(exc).__name__}")
        return doc
