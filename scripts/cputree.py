"""CPU seconds of a command and of every process it starts (JVM, Python daemons and workers).

``measure(cmd)`` runs a command and returns what the whole process tree cost:

* the total, from a fresh cgroup the command is started in (cgroup v2 ``cpu.stat`` usage_usec,
  else a v1 ``cpuacct`` group; needs root): exact, whatever forks, daemonises or is reaped by
  whom. Without a cgroup the total is ``getrusage(RUSAGE_CHILDREN)`` of this process, which is
  the child subreaper so that orphans are reparented to it and reaped here, or the sum of the
  /proc samples below when that is larger (a Spark run's reaped rusage misses most of the JVM);
* a breakdown by role (JVM, driver, Python workers, other), sampling ``/proc`` of the tree every
  ``interval`` seconds (a process that ends between two samples loses at most one interval);
* the peak RSS (``VmHWM``) of every Python process but the driver, and the load average.

pyspark's daemon forks the Python workers and reaps them itself, so neither the driver's
``getrusage`` nor a JVM-side counter sees them: only the whole tree does.
"""

from __future__ import annotations

import ctypes
import os
import signal
import statistics
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

CLOCK_TICKS = os.sysconf("SC_CLK_TCK")
PR_SET_CHILD_SUBREAPER = 36
PR_GET_CHILD_SUBREAPER = 37


@dataclass
class TreeUsage:
    """What one command cost, over its whole process tree."""

    returncode: int
    wall_seconds: float
    cpu_seconds: float
    """Whole-tree CPU (user + system): the cgroup's, else the reaped children's rusage."""
    method: str
    """``cgroup2``, ``cgroup1-cpuacct``, ``rusage+subreaper`` or ``proc-sampling``."""
    rusage_cpu_seconds: float
    """Reaped children's user + system CPU, a cross-check of ``cpu_seconds``."""
    by_role: dict[str, float] = field(default_factory=dict)
    """Sampled CPU seconds per role: ``jvm``, ``driver``, ``python_workers``, ``other``."""
    worker_peak_rss_mb: list[float] = field(default_factory=list)
    """VmHWM of each Python process other than the driver (the pyspark daemon excluded)."""
    peak_rss_mb: dict[str, float] = field(default_factory=dict)
    """The largest VmHWM of one process per role: ``driver``, ``jvm``, ``python_workers``."""
    load_average: float = 0.0
    """Mean 1-minute load average over the run."""


class CpuCgroup:
    """A fresh cgroup to start a command in; reads the CPU its members used, living or dead."""

    def __init__(self, path: Path, kind: str) -> None:
        self.path = path
        self.kind = kind

    @classmethod
    def create(cls, name: str) -> "CpuCgroup | None":
        """A new cgroup ``name`` (v2 preferred, else v1 cpuacct), or None if none can be made."""
        for kind, root in _cgroup_roots():
            path = root / name
            try:
                path.mkdir()
            except OSError:
                continue
            group = cls(path, kind)
            try:
                group.usage_seconds()
                return group
            except (OSError, ValueError):
                group.remove()
        return None

    def attach(self, pid: int) -> None:
        (self.path / "cgroup.procs").write_text(str(pid))

    def usage_seconds(self) -> float:
        if self.kind == "cgroup2":
            for line in (self.path / "cpu.stat").read_text().splitlines():
                key, _, value = line.partition(" ")
                if key == "usage_usec":
                    return int(value) / 1e6
            raise ValueError(f"{self.path}/cpu.stat has no usage_usec")
        return int((self.path / "cpuacct.usage").read_text()) / 1e9

    def pids(self) -> list[int]:
        try:
            return [int(p) for p in (self.path / "cgroup.procs").read_text().split()]
        except OSError:
            return []

    def remove(self, timeout_s: float = 10.0) -> None:
        """Remove the group; an exiting member keeps it busy for a moment after leaving cgroup.procs."""
        deadline = time.monotonic() + timeout_s
        while True:
            try:
                self.path.rmdir()
                return
            except FileNotFoundError:
                return
            except OSError:
                if time.monotonic() > deadline:
                    print(f"cputree: warning: could not remove {self.path}", file=sys.stderr)
                    return
                time.sleep(0.1)


def _cgroup_roots() -> list[tuple[str, Path]]:
    """Writable cgroup mounts that count CPU: v2 first, then v1 cpuacct."""
    v2, v1 = [], []
    try:
        mounts = Path("/proc/self/mounts").read_text().splitlines()
    except OSError:
        return []
    for line in mounts:
        parts = line.split()
        if len(parts) < 4:
            continue
        mount, fstype, options = parts[1], parts[2], parts[3].split(",")
        if fstype == "cgroup2":
            v2.append(("cgroup2", Path(mount)))
        elif fstype == "cgroup" and "cpuacct" in options:
            v1.append(("cgroup1-cpuacct", Path(mount)))
    return v2 + v1


def _set_subreaper(on: bool) -> bool:
    """Make this process the child subreaper (or stop being it); return whether it was one before."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        before = ctypes.c_int(0)
        libc.prctl(PR_GET_CHILD_SUBREAPER, ctypes.byref(before), 0, 0, 0)
        libc.prctl(PR_SET_CHILD_SUBREAPER, int(on), 0, 0, 0)
        return bool(before.value)
    except (OSError, AttributeError):
        return False


def _children_cpu() -> float:
    import resource

    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _reap_orphans() -> None:
    """Reap every finished child (orphans reparented to us as subreaper)."""
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


@dataclass
class _Proc:
    ppid: int
    cpu_ticks: int
    role: str = "other"
    hwm_kb: int = 0


def _read_stat(pid: int) -> tuple[int, int] | None:
    """(ppid, utime + stime in ticks) of a live process."""
    try:
        raw = Path(f"/proc/{pid}/stat").read_bytes()
    except OSError:
        return None
    fields = raw[raw.rfind(b")") + 2:].split()
    return int(fields[1]), int(fields[11]) + int(fields[12])


def _read_hwm_kb(pid: int) -> int:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    except (OSError, ValueError):
        pass
    return 0


def _role(pid: int, root: int) -> str:
    if pid == root:
        return "driver"
    try:
        argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return "other"
    exe = os.path.basename(argv[0].decode(errors="replace")) if argv else ""
    if exe == "java":
        return "jvm"
    if exe.startswith("python"):
        return "python_workers"
    return "other"


def _descendants(roots: set[int], before: frozenset[int] = frozenset()) -> list[int]:
    """The live descendants of ``roots`` (from /proc), less the processes in ``before`` and theirs."""
    parents = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            stat = _read_stat(int(entry))
            if stat:
                parents[int(entry)] = stat[0]
    members = []
    for pid in parents:
        node, hops = pid, 0
        while node in parents and node not in before and hops < 64:
            node, hops = parents[node], hops + 1
            if node in roots:
                members.append(pid)
                break
    return members


class TreeSampler(threading.Thread):
    """Samples /proc for the descendants of ``root`` and of this process (its orphans are reparented here), or a
    cgroup's members, until stopped; ``before``, what this process had started before the command (in a test
    run, pyspark's gateway JVM), and its descendants are not the command's."""

    def __init__(self, root: int, cgroup: CpuCgroup | None, interval: float, before: frozenset[int] = frozenset()) -> None:
        super().__init__(daemon=True)
        self.root, self.cgroup, self.interval, self.before = root, cgroup, interval, before
        self.procs: dict[int, _Proc] = {}
        self.loads: list[float] = []
        self._done = threading.Event()

    def _members(self) -> list[int]:
        if self.cgroup is not None:
            return self.cgroup.pids()
        return _descendants({self.root, os.getpid()}, self.before)

    def sample(self) -> None:
        for pid in self._members():
            stat = _read_stat(pid)
            if stat is None:
                continue
            proc = self.procs.get(pid)
            if proc is None:
                proc = self.procs[pid] = _Proc(stat[0], stat[1])
            if proc.role != "jvm":  # a fork may exec later (python -> spark-submit script -> java)
                role = _role(pid, self.root)
                if role != "other":  # a zombie's cmdline is empty: keep what it was
                    proc.role = role
            proc.cpu_ticks = max(proc.cpu_ticks, stat[1])
            if proc.role in ("driver", "python_workers", "jvm"):
                proc.hwm_kb = max(proc.hwm_kb, _read_hwm_kb(pid))
        self.loads.append(os.getloadavg()[0])

    def run(self) -> None:
        while not self._done.wait(self.interval):
            self.sample()

    def stop(self) -> None:
        self._done.set()
        self.join()

    def by_role(self) -> dict[str, float]:
        roles: dict[str, float] = {}
        for proc in self.procs.values():
            roles[proc.role] = roles.get(proc.role, 0.0) + proc.cpu_ticks / CLOCK_TICKS
        return {role: round(seconds, 2) for role, seconds in sorted(roles.items())}

    def peak_rss_mb_by_role(self) -> dict[str, float]:
        """The largest peak RSS of one process of each role (``driver``, ``jvm``, ``python_workers``: a pyspark
        daemon, the parent of workers, left out)."""
        pythons = {pid for pid, p in self.procs.items() if p.role == "python_workers"}
        daemons = {p.ppid for p in self.procs.values() if p.ppid in pythons}
        peaks: dict[str, float] = {}
        for pid, proc in self.procs.items():
            if proc.hwm_kb and pid not in daemons:
                peaks[proc.role] = max(peaks.get(proc.role, 0.0), round(proc.hwm_kb / 1024, 1))
        return dict(sorted(peaks.items()))

    def worker_peak_rss_mb(self) -> list[float]:
        """Peak RSS of Python processes other than the driver; a pyspark daemon (parent of workers) is left out."""
        pythons = {pid for pid, p in self.procs.items() if p.role == "python_workers"}
        daemons = {p.ppid for p in self.procs.values() if p.ppid in pythons}
        return sorted(round(self.procs[pid].hwm_kb / 1024, 1) for pid in pythons - daemons if self.procs[pid].hwm_kb)


def measure(cmd: list[str], env: dict[str, str] | None = None, cwd: str | None = None,
            interval: float = 0.1, stdout=None, stderr=None, settle_s: float = 30.0) -> TreeUsage:
    """Run ``cmd`` to completion and return the CPU of its whole process tree.

    This process is the child subreaper only while ``cmd`` runs: left on, it would inherit (and
    never reap) the orphans of whatever else it starts later, such as Spark's daemons."""
    was_subreaper = _set_subreaper(True)
    _reap_orphans()
    cgroup = CpuCgroup.create(f"cputree-{os.getpid()}-{time.monotonic_ns()}")
    rusage_before = _children_cpu()
    started = time.perf_counter()
    # The child joins the cgroup before it execs, so everything it starts is counted.
    preexec = (lambda: cgroup.attach(os.getpid())) if cgroup is not None else None
    # What this process had started before is not the command's: never sampled, never killed.
    before = frozenset(_descendants({os.getpid()})) if cgroup is None else frozenset()
    proc = subprocess.Popen(cmd, env=env, cwd=cwd, stdout=stdout, stderr=stderr, preexec_fn=preexec)
    sampler = TreeSampler(proc.pid, cgroup, interval, before)
    sampler.start()
    try:
        returncode = proc.wait()
        wall = time.perf_counter() - started
        deadline = time.monotonic() + settle_s
        while True:  # wait for the tree to finish (a JVM may still be reaping its Python daemon)
            _reap_orphans()
            left = cgroup.pids() if cgroup is not None else [p for p in sampler._members() if p != proc.pid]
            if not left:
                break
            if time.monotonic() > deadline:
                for pid in left:  # only processes this command started
                    try:
                        os.kill(pid, signal.SIGKILL)
                    except ProcessLookupError:
                        pass
            time.sleep(0.05)
        _reap_orphans()
    finally:
        sampler.stop()
        _set_subreaper(was_subreaper)
    rusage = _children_cpu() - rusage_before
    if cgroup is not None:
        total, method = cgroup.usage_seconds(), cgroup.kind
        cgroup.remove()
    else:
        # Reaped rusage misses what no ancestor waited for (seen with Spark's JVM); the samples
        # then give the better lower bound.
        sampled = sum(sampler.by_role().values())
        total, method = max(rusage, sampled), "rusage+subreaper" if rusage >= sampled else "proc-sampling"
    return TreeUsage(
        returncode=returncode, wall_seconds=round(wall, 3), cpu_seconds=round(total, 3), method=method,
        rusage_cpu_seconds=round(rusage, 3), by_role=sampler.by_role(),
        worker_peak_rss_mb=sampler.worker_peak_rss_mb(), peak_rss_mb=sampler.peak_rss_mb_by_role(),
        load_average=round(statistics.fmean(sampler.loads), 2) if sampler.loads else os.getloadavg()[0])
