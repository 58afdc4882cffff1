"""Step ``mojibake``: text that was encoded twice is read as what it says (``Israelâ€™s`` -> ``Israel’s``).

A page can declare and use the right charset and still hold mojibake: its text was written through a second, wrong
encoding before the page was (a CMS that stored UTF-8 bytes as cp1252 characters). Decoding cannot see that
(:mod:`pipeline.reading.decode` reads the bytes the page holds); the text can. Each line of the extracted text that
holds a character pair UTF-8 read as cp1252 or Latin-1 gives (:data:`SUSPECT`) is repaired by ftfy's
``fix_encoding``, which changes a line only when the result reads better by its measure of how unlikely such text is.
Lines stay lines (the block stage's evidence is by line), and every other line is left as it is.

The block stage's reader comments (the row's ``comments`` column) are repaired the same way.

Counted: ``stage.mojibake.pages`` (pages with a line repaired), ``stage.mojibake.lines`` and
``stage.mojibake.comment_lines``.
Place it after ``cascade`` in ``pipeline.steps`` (it is there by default), so the filter scores the repaired text.
"""

from __future__ import annotations

import re

from pipeline.document import Document
from pipeline.steps.base import Step
from pipeline.steps.blocks.extractor import written_reading

# A lead byte of a 2-4 byte UTF-8 sequence (0xC2-0xF4) read as a Latin-1 letter, followed by a continuation byte
# (0x80-0xBF) read as cp1252 or Latin-1: the pairs mojibake of UTF-8 is made of (`Ã©`, `â€`, `Â£`). Only the lines
# holding one go to ftfy.
SUSPECT = re.compile("[\u00c2-\u00f4][\u0080-\u00bf\u0152\u0153\u0160\u0161\u0178\u017d\u017e\u0192\u02c6\u02dc"
                     "\u2013\u2014\u2018\u2019\u201a\u201c\u201d\u201e\u2020\u2021\u2022\u2026\u2030\u2039\u203a"
                     "\u20ac\u2122]")


def repaired_lines(text: str) -> tuple[str, int]:
    """``text`` with each suspect line repaired (ftfy's ``fix_encoding``), and the number of lines it changed."""
    if SUSPECT.search(text) is None:
        return text, 0
    from ftfy import fix_encoding  # 30 ms to import: only on a page that needs it

    lines = text.split("\n")
    changed = 0
    for i, line in enumerate(lines):
        if SUSPECT.search(line) is not None:
            fixed = fix_encoding(line)
            if fixed != line and "\n" not in fixed:
                lines[i] = fixed
                changed += 1
    return ("\n".join(lines), changed) if changed else (text, 0)


class Mojibake(Step):
    name = "mojibake"

    def run(self, doc: Document) -> Document | None:
        doc.text, changed = repaired_lines(doc.text)
        written = written_reading(doc)
        in_comments = 0
        if written is not None and written.comments:
            written.comments, in_comments = repaired_lines(written.comments)
        if changed or in_comments:
            self.count("pages")
        if changed:
            self.count("lines", changed)
        if in_comments:
            self.count("comment_lines", in_comments)
        return doc
