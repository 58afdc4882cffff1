"""Secret redaction: the one function every written or printed value goes through.

A mapping value whose key names a secret (``secret``, ``password``, ``token``, ``key``,
``credential``; e.g. ``spark.hadoop.fs.s3a.secret.key``) is replaced whole, and credentials
inside any string (``scheme://user:password@host``, ``?X-Amz-Signature=...&token=...`` query
parameters) are masked. stats.json, the summary, the report, the output stamp, one-line
errors and the log handler all use :func:`redact`.
"""

from __future__ import annotations

import logging
import re
from typing import Any

MASK = "***"
SECRET_NAME = re.compile(r"secret|passw|token|key|credential|signature", re.IGNORECASE)
_URL_USERINFO = re.compile(r"(?<=://)[^/@\s:'\"]+(?::[^/@\s'\"]*)?@")
# the same credentials once a library has cut the scheme off ("got a URI: 'user:password@bucket/key'")
_BARE_USERINFO = re.compile(r"(?:^|(?<=[\s'\"(=]))[^/@\s:'\"(=]+:[^/@\s'\"]+@(?=[\w.-]+[/:'\"\s]|[\w.-]+$)")
_SECRET_PARAM = re.compile(r"([?&;][^=&\s#'\"]*(?:secret|passw|token|key|credential|signature)[^=&\s#'\"]*=)"
                           r"[^&\s#'\"]*", re.IGNORECASE)
_SECRET_ASSIGNMENT = re.compile(r"((?:^|[\s,;{(])[\w.\-]*(?:secret|passw|token|key|credential)[\w.\-]*\s*[=:]\s*)"
                                r"(?!\*\*\*)[^\s,;})'\"]+", re.IGNORECASE)


def redact_text(text: str) -> str:
    """``text`` with URL credentials, secret query parameters and ``secret.key=value`` pairs masked."""
    text = _URL_USERINFO.sub(MASK + "@", text)
    text = _BARE_USERINFO.sub(MASK + "@", text)
    text = _SECRET_PARAM.sub(lambda m: m.group(1) + MASK, text)
    return _SECRET_ASSIGNMENT.sub(lambda m: m.group(1) + MASK, text)


def redact(value: Any, secret_keys: bool = True) -> Any:
    """A copy of ``value`` (JSON-like) with every secret masked.

    With ``secret_keys`` (config trees), a mapping entry whose key names a secret is masked
    whole; without it (counter trees such as stats, whose keys are counter names) only the
    strings are cleaned.
    """
    if isinstance(value, dict):
        return {redact_text(str(k)) if isinstance(k, str) else k:
                (MASK if secret_keys and isinstance(k, str) and SECRET_NAME.search(k) and v not in (None, "", {})
                 and not isinstance(v, (dict, bool, int, float))
                 else redact(v, secret_keys))
                for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [redact(v, secret_keys) for v in value]
    if isinstance(value, str):
        return redact_text(value)
    return value


class RedactingFilter(logging.Filter):
    """A logging filter that masks secrets in every record's rendered message."""

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        cleaned = redact_text(message)
        if cleaned != message:
            record.msg, record.args = cleaned, None
        return True


def install_log_redaction() -> None:
    """Attach :class:`RedactingFilter` to every handler of the root logger (idempotent)."""
    for handler in logging.getLogger().handlers:
        if not any(isinstance(f, RedactingFilter) for f in handler.filters):
            handler.addFilter(RedactingFilter())
