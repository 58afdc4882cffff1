"""Read pages in a background thread, so reading never runs under the per-page guards.

The extraction guards (``extract.timeout_s``) interrupt the thread that cleans pages. A
remote read that backs off for longer than that (S3 ``SlowDown``, a 5xx, a reconnect) must
not be interrupted: :func:`read_ahead` runs the page iterator in its own thread and hands
pages over through a small queue, calling ``idle`` while the cleaning thread waits.
"""

from __future__ import annotations

import queue
import threading
from typing import Callable, Iterable, Iterator, TypeVar

T = TypeVar("T")
_DONE = object()
_POLL_S = 0.1


def read_ahead(items: Iterable[T], idle: Callable[[], None] = lambda: None, depth: int = 8) -> Iterator[T]:
    """Yield ``items`` as produced by a reader thread; its exceptions are raised here, in order."""
    handoff: queue.Queue = queue.Queue(maxsize=depth)
    stop = threading.Event()

    def put(entry) -> bool:
        while not stop.is_set():
            try:
                handoff.put(entry, timeout=_POLL_S)
                return True
            except queue.Full:
                continue
        return False

    def reader() -> None:
        iterator = iter(items)
        try:
            for item in iterator:
                if not put((item, None)):
                    break
            else:
                put((_DONE, None))
        except BaseException as exc:  # handed to the consumer, which raises it
            put((_DONE, exc))
        finally:
            close = getattr(iterator, "close", None)
            if close is not None:
                close()

    thread = threading.Thread(target=reader, name="warcplex-reader", daemon=True)
    thread.start()
    try:
        while True:
            try:
                item, error = handoff.get(timeout=_POLL_S)
            except queue.Empty:
                idle()
                continue
            if item is _DONE:
                if error is not None:
                    raise error
                return
            yield item
    finally:
        stop.set()
        thread.join()
