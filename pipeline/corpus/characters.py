"""What a character is to the corpus stages: white space between words, a mark (punctuation or a symbol), a decimal
digit, and so each character's kind for the normalisation (:mod:`pipeline.corpus.normalize`) and the quality
signals (:mod:`pipeline.corpus.signals`).

Character classes are spelled out so that they do not depend on the regex engine's defaults:
words are separated by Unicode ``White_Space``.
"""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache

# Unicode White_Space separates words. Python's str.split() also splits at the four information
# separators \x1c-\x1f, so a text holding one of them is split with the regex instead.
WHITE_SPACE = ("\t\n\x0b\x0c\r \x85\xa0\u1680" + "".join(map(chr, range(0x2000, 0x200B)))
               + "\u2028\u2029\u202f\u205f\u3000")
_WORD = re.compile(f"[^{re.escape(WHITE_SPACE)}]+")
_NOT_WHITE_SPACE = "\x1c\x1d\x1e\x1f"


def words(text: str) -> list[str]:
    """The words of ``text``: maximal runs of characters that are not Unicode White_Space."""
    if any(separator in text for separator in _NOT_WHITE_SPACE):
        return _WORD.findall(text)
    return text.split()


def is_mark(category: str) -> bool:
    """Whether a Unicode general category is punctuation or a symbol (stripped from words by the signals, a gap
    between words in the normalisation)."""
    return category[0] in "PS"


def is_digit(category: str) -> bool:
    """Whether a Unicode general category is a decimal digit's (0 in the normalisation)."""
    return category == "Nd"


# What each character is to the normalisation (and the compiled normaliser and signals): part of a word, a decimal
# digit (becomes 0), or a gap between words (punctuation, symbols and white space, as words() splits).
WORD, DIGIT, GAP = 0, 1, 2


def character_kind(char: str) -> int:
    """WORD, DIGIT or GAP: the kind of one (lower-cased) character."""
    category = unicodedata.category(char)
    return DIGIT if is_digit(category) else GAP if is_mark(category) or not words(char) else WORD


@lru_cache(maxsize=1)
def character_kinds() -> bytes:
    """:func:`character_kind` of every character of the Basic Multilingual Plane, by code point."""
    return bytes(character_kind(chr(code)) for code in range(0x10000))
