"""Text normalisation shared by LM training and sentence scoring.

The KenLM models are trained on text passed through :func:`normalize_for_lm`, and the
scorer passes every sentence through the same function. Changing it invalidates the
shipped models: bump ``NORMALIZATION_VERSION`` and rebuild them with ``make models``.
"""

from __future__ import annotations

import re
import unicodedata

NORMALIZATION_VERSION = 1

# Han, kana and hangul characters become one token each (they are written without
# spaces); other word characters form runs; each punctuation mark is a token.
_CJK = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af"
_TOKEN_RE = re.compile(rf"[{_CJK}]|[^\W{_CJK}]+|[^\w\s]")
_DIGIT_RE = re.compile(r"\d")


def lm_tokens(text: str) -> list[str]:
    """Return the LM tokens of ``text``: NFKC, lower-cased, every digit mapped to 0."""
    text = unicodedata.normalize("NFKC", text).lower()
    return _TOKEN_RE.findall(_DIGIT_RE.sub("0", text))


def normalize_for_lm(text: str) -> str:
    """Return ``text`` as the space-separated token line that KenLM trains and scores on."""
    return " ".join(lm_tokens(text))
