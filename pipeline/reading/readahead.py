"""Produce items in a thread of their own, so that the per-page guards watch only the work they are for.

The extraction guards (``extract.timeout_s``) interrupt the thread that cleans pages. A remote read that
backs off for longer than that (S3 ``SlowDown``, a 5xx, a reconnect) must not be interrupted, nor the
caller's work on a cleaned page (writing it, a slow S3 write, counting). :func:`read_ahead` runs an
iterator in its own thread and hands its items over, a few ahead or each when asked for: the reader's pages
to the cleaning thread, and the cleaning thread's documents to the caller (pipeline.steps.loop).
"""

from __future__ import annotations

import queue
import threading
from typing import Callable, Iterable, Iterator, TypeVar

T = TypeVar("T")
_DONE = object()
_POLL_S = 0.1


def read_ahead(items: Iterable[T], idle: Callable[[], None] = lambda: None, depth: int = 8,
               waiting: Callable[[], None] = lambda: None, name: str = "warcplex-reader") -> Iterator[T]:
    """Yield ``items`` as produced by a thread of their own; its exceptions are raised here, in order.

    The thread works up to ``depth`` items ahead of what was asked for (0: it makes each item only when asked, so
    the two threads take turns instead of running side by side). ``idle`` is called here while no item is ready,
    ``waiting`` in that thread while it may not make the next one (each every 0.1 s). ``name`` is the thread's."""
    handoff: queue.Queue = queue.Queue()
    credits = threading.Semaphore(depth)  # items the thread may make before it is asked for more
    stop = threading.Event()

    def may_go_on() -> bool:
        while not stop.is_set():
            waiting()
            if credits.acquire(timeout=_POLL_S):
                return True
        return False

    def reader() -> None:
        iterator = iter(items)
        try:
            while may_go_on():
                item = next(iterator, _DONE)
                handoff.put((item, None))
                if item is _DONE:
                    break
        except BaseException as exc:  # handed to the consumer, which raises it
            handoff.put((_DONE, exc))
        finally:
            close = getattr(iterator, "close", None)
            if close is not None:
                close()

    thread = threading.Thread(target=reader, name=name, daemon=True)
    thread.start()
    try:
        while True:
            credits.release()
            while True:
                try:
                    item, error = handoff.get(timeout=_POLL_S)
                    break
                except queue.Empty:
                    idle()
            if item is _DONE:
                if error is not None:
                    raise error
                return
            yield item
    finally:
        stop.set()
        thread.join()
