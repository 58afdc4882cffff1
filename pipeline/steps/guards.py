"""resiliparse's per-record time and memory guards around the page loop.

The guards watch this thread for a whole split and only raise exceptions (never signals,
which would kill a Spark Python worker). :func:`restart` starts a fresh time limit: the loop
calls it for each page and the cascade for each stage. A native call that never returns is
not interruptible.
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import Iterator

from resiliparse.process_guard import ExecutionTimeout, InterruptType, MemoryLimitExceeded, mem_guard, time_guard

from pipeline.config import ExtractSettings
from pipeline.document import Document

GUARD_INTERRUPTS = (ExecutionTimeout, MemoryLimitExceeded)

_active: list = []  # the time guard of the running loop in this thread, if any


def guard_kind(exc: BaseException) -> str:
    return "timeout" if isinstance(exc, ExecutionTimeout) else "memory"


def interrupted(doc: Document, exc: BaseException) -> Document:
    """What is left of ``doc`` after a guard interrupt outside an extraction stage: its page, ended as
    ``error.timeout`` or ``error.memory`` (the time limit restarted for the next page)."""
    restart()
    return Document(doc.page, outcome=f"error.{guard_kind(exc)}")


def restart() -> None:
    """Give the work that follows a fresh time limit (no-op outside :func:`record_guards`)."""
    if _active:
        _active[-1].progress()


@contextmanager
def record_guards(extract: ExtractSettings) -> Iterator[None]:
    """The guards of ``extract.timeout_s`` and ``extract.memory_limit_mb`` around a run of pages."""
    timeout_ms = max(1, int(extract.timeout_s * 1000))
    with time_guard(timeout_ms=timeout_ms, grace_period_ms=timeout_ms, interrupt_type=InterruptType.exception,
                    check_interval=max(10, min(500, timeout_ms // 4))) as guard, \
            mem_guard(extract.memory_limit_mb * 1024, absolute=False, interrupt_type=InterruptType.exception,
                      secondary_grace_period_ms=1000, check_interval=200):
        _active.append(guard)
        try:
            yield
        finally:
            _active.pop()
