"""What the corpus stages' compiled normaliser and quality signals must compute, written plainly in Python with
regular expressions and ``unicodedata``: the tests' statement of the rules (``tests/test_native.py`` runs both on every
code point, edge cases and the real pages). The pipeline runs only the compiled code (``pipeline/_native/text.pyx``)."""

from __future__ import annotations

import re
import unicodedata
from collections import Counter
from functools import lru_cache

from pipeline.corpus.characters import is_digit, is_mark, words
from pipeline.corpus.signals import BULLETS, LINE_BREAK, LINE_SPACE, TERMINAL


# normalize.py: lower case, every decimal digit to 0, runs of punctuation and symbols to one space, words
# (split on Unicode White_Space) joined by one space.

def _bmp_class(predicate) -> str:
    """A regex class of every code point of the Basic Multilingual Plane whose category matches (a bitmap
    for the regex engine; ranges beyond the BMP would be tested one by one)."""
    spans, start = [], None
    for code in range(0x10000 + 1):
        inside = code < 0x10000 and predicate(unicodedata.category(chr(code)))
        if inside and start is None:
            start = code
        elif not inside and start is not None:
            spans.append(re.escape(chr(start)) + ("-" + re.escape(chr(code - 1)) if code - 1 > start else ""))
            start = None
    return f"[{''.join(spans)}]"


@lru_cache(maxsize=1)
def _patterns() -> tuple[re.Pattern, re.Pattern]:
    return re.compile(_bmp_class(is_digit)), re.compile(_bmp_class(is_mark) + "+")


_ASTRAL = re.compile("[\U00010000-\U0010ffff]")


def _astral(match: re.Match) -> str:
    category = unicodedata.category(match.group())
    return "0" if is_digit(category) else " " if is_mark(category) else match.group()


def normalized_lines(text: str) -> list[str]:
    """Each line of ``text`` normalised, aligned with ``text.split("\\n")``."""
    digits, marks = _patterns()
    lowered = text.lower()  # lower-casing and the replacements never cross or create a line break
    if _ASTRAL.search(lowered):
        lowered = _ASTRAL.sub(_astral, lowered)
    replaced = marks.sub(" ", digits.sub("0", lowered))
    return [" ".join(words(line)) for line in replaced.split("\n")]


# signals.py: the Gopher/C4-style quality signals, in the order of signals.SIGNAL_COLUMNS.

_LINE_END = f"[{re.escape(LINE_SPACE)}]*[{LINE_BREAK}]?\\Z"
_TERMINAL = re.compile(f"[{re.escape(TERMINAL)}]" + _LINE_END)
_BULLET = re.compile(f"[{re.escape(LINE_SPACE)}]*[{re.escape(BULLETS)}]")
_ELLIPSIS_END = re.compile(r"(?:\.\.\.|…)" + _LINE_END)
_SYMBOL = re.compile(r"#|\.\.\.|…")


def _share(part: int, whole: int) -> float:
    return part / whole if whole > 0 else 0.0


def _stripped(word: str) -> str:
    """``word`` without leading and trailing punctuation and symbols (how it is matched against stop words)."""
    start, end = 0, len(word)
    while start < end and is_mark(unicodedata.category(word[start])):
        start += 1
    while end > start and is_mark(unicodedata.category(word[end - 1])):
        end -= 1
    return word[start:end]


def signals(text: str, stop: frozenset[str] | None, ngram_words: int) -> tuple:
    lines = text.split("\n")
    tokens = words(text)
    n_lines, n_words = len(lines), len(tokens)
    lowered = words(text.lower())
    n_grams = len(lowered) - ngram_words + 1
    if n_grams > 1:
        grams = zip(*(lowered[i:] for i in range(ngram_words)))
        duplicate_ngrams = _share(n_grams - len(set(grams)), n_grams)
    else:  # one n-gram (the whole text when it is shorter than n words) or none: nothing repeats
        duplicate_ngrams = 0.0
    n_stop = None if stop is None else sum(n for word, n in Counter(lowered).items() if _stripped(word) in stop)
    return (
        n_words,
        n_lines,
        _share(sum(map(len, tokens)), n_words),
        _share(len(_SYMBOL.findall(text)), n_words),
        _share(sum(1 for line in lines if _TERMINAL.search(line)), n_lines),
        _share(sum(1 for line in lines if _BULLET.match(line)), n_lines),
        _share(sum(1 for line in lines if _ELLIPSIS_END.search(line)), n_lines),
        _share(n_lines - len(set(lines)), n_lines),
        duplicate_ngrams,
        n_stop,
        None if n_stop is None else _share(n_stop, n_words),
    )
