"""Progress of a local run on the driver: splits done of total, pages, pages/s and ETA.

A driver thread polls Spark's status tracker for the job group of the split tasks, and a
Spark accumulator that each finished split adds its HTML pages to. On a terminal the line is
rewritten in place; otherwise (a log file, a pipe) a plain line is printed whenever another
split finishes, at most every ``plain_interval_s``.
"""

from __future__ import annotations

import sys
import threading
import time
from typing import Any, TextIO

JOB_GROUP = "warcplex-splits"


def _duration(seconds: float) -> str:
    seconds = int(round(seconds))
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours}h{minutes:02d}m" if hours else f"{minutes}m{secs:02d}s" if minutes else f"{secs}s"


def progress_line(done: int, total: int, pages: int, elapsed: float) -> str:
    """``splits 3/8, 1,204 pages, 41.2 pages/s, ETA 1m05s`` (no ETA before the first split ends)."""
    rate = pages / elapsed if elapsed > 0 else 0.0
    eta = _duration(elapsed / done * (total - done)) if 0 < done < total else "-" if done < total else "done"
    return f"warcplex: splits {done}/{total}, {pages:,} pages, {rate:.1f} pages/s, ETA {eta}"


class Progress:
    """A context manager that reports the split tasks' progress while they run."""

    def __init__(self, sc: Any, total: int, pages: Any, stream: TextIO | None = None,
                 poll_s: float = 0.5, plain_interval_s: float = 10.0) -> None:
        self.sc = sc
        self.total = total
        self.pages = pages  # a Spark accumulator of finished splits' HTML pages
        self.stream = stream or sys.stderr
        self.tty = self.stream.isatty()
        self.poll_s = poll_s
        self.plain_interval_s = plain_interval_s
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="warcplex-progress", daemon=True)
        self._started = 0.0
        self._last: tuple[int, int] | None = None
        self._last_plain = 0.0

    def done_splits(self) -> int:
        tracker = self.sc.statusTracker()
        done = 0
        for job_id in tracker.getJobIdsForGroup(JOB_GROUP):
            job = tracker.getJobInfo(job_id)
            for stage_id in (job.stageIds if job else []):
                stage = tracker.getStageInfo(stage_id)
                if stage is not None:
                    done += stage.numCompletedTasks
        return min(done, self.total)

    def _show(self, done: int, final: bool = False) -> None:
        pages = int(self.pages.value)
        state = (done, pages)
        now = time.monotonic()
        if self.tty:
            if state != self._last or final:
                self.stream.write("\r" + progress_line(done, self.total, pages, now - self._started) + "\033[K"
                                  + ("\n" if final else ""))
                self.stream.flush()
        elif (state != self._last and now - self._last_plain >= self.plain_interval_s) or final:
            self.stream.write(progress_line(done, self.total, pages, now - self._started) + "\n")
            self.stream.flush()
            self._last_plain = now
        self._last = state

    def _loop(self) -> None:
        while not self._stop.wait(self.poll_s):
            try:
                self._show(self.done_splits())
            except Exception:  # the context is stopping; the final line is printed by __exit__
                return

    def __enter__(self) -> "Progress":
        self._started = time.monotonic()
        self._last_plain = self._started - self.plain_interval_s
        self.sc.setJobGroup(JOB_GROUP, "warcplex: clean splits")
        self._thread.start()
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        self._stop.set()
        self._thread.join()
        if exc_type is None:
            self._show(self.total, final=True)
        elif self.tty and self._last is not None:
            self.stream.write("\n")
