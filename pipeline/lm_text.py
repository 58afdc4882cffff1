"""The LM's text: the normalisation and tokens shared by LM training and sentence scoring.

The KenLM models are trained on text passed through :func:`normalize_for_lm`, and the
scorer passes every sentence through the same function. Changing it invalidates the
shipped models: bump ``NORMALIZATION_VERSION`` and rebuild them with ``make models``.

The rule is the compiled ``lm_line`` (``pipeline/_native/text.pyx``): NFKC, lower-cased, every decimal digit 0; then
a token per Han, kana or hangul character (written without spaces), per run of other word characters and per other
character that is neither a word character nor white space (punctuation).
"""

from __future__ import annotations

from pipeline import _native

NORMALIZATION_VERSION = 1

_text = _native.compiled("text")  # the compiled text kernels (pipeline/_native/text.pyx)


def lm_line(text: str) -> tuple[str, int]:
    """:func:`normalize_for_lm` of ``text`` and its number of tokens."""
    return _text.lm_line(text)


def lm_tokens(text: str) -> list[str]:
    """Return the LM tokens of ``text``: NFKC, lower-cased, every digit mapped to 0."""
    line = _text.lm_line(text)[0]
    return line.split(" ") if line else []


def normalize_for_lm(text: str) -> str:
    """Return ``text`` as the space-separated token line that KenLM trains and scores on."""
    return _text.lm_line(text)[0]
