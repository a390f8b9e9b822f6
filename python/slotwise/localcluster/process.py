"""Starting and stopping the cluster's JVMs, and telling them apart.

Every JVM of a cluster carries ``-Dslotwise.cluster.dir=DIR`` on its command
line: the daemons, and through the MapReduce admin options every AM and task
container. A pid is only ever signalled after ``/proc/PID/cmdline`` shows
that marker, so a pid recycled by the kernel is never hit, and ``down`` can
find containers (and daemons whose state file was lost) by scanning /proc.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path
from typing import Iterable, Mapping

from .config import marker


def cmdline(pid: int) -> list[str] | None:
    """The arguments of a live process; None if gone or a zombie."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            stat = f.read()
        # The state is the first field after the parenthesised command name.
        if stat[stat.rindex(b")") + 2:][:1] in (b"Z", b"X"):
            return None
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            raw = f.read()
    except (OSError, ValueError):
        return None
    return [a.decode(errors="replace") for a in raw.split(b"\0") if a] or None


def rss_mb(pid: int | str = "self") -> float | None:
    """A process's resident memory in MB (its VmRSS); None if gone."""
    try:
        with open(f"/proc/{pid}/status") as f:
            return next(int(x.split()[1]) / 1024 for x in f if x.startswith("VmRSS:"))
    except (OSError, StopIteration):
        return None


def is_ours(pid: int | None, cluster_dir: Path) -> bool:
    if not pid:
        return False
    args = cmdline(pid)
    return bool(args) and marker(cluster_dir) in args


def find_ours(cluster_dir: Path) -> list[int]:
    """Every live process of this cluster: daemons and containers."""
    if not os.path.isdir("/proc"):
        return []
    me = os.getpid()
    pids = []
    for entry in os.listdir("/proc"):
        if entry.isdigit() and int(entry) != me and is_ours(int(entry), cluster_dir):
            pids.append(int(entry))
    return sorted(pids)


def spawn(argv: list[str], *, env: Mapping[str, str], out: Path, cwd: Path) -> subprocess.Popen:
    """Start a daemon detached from the caller's terminal and session, so it
    outlives ``slotwise cluster up`` and a Ctrl-C in that terminal."""
    out.parent.mkdir(parents=True, exist_ok=True)
    cwd.mkdir(parents=True, exist_ok=True)
    with open(out, "ab") as f:
        return subprocess.Popen(argv, env=dict(env), cwd=cwd, stdin=subprocess.DEVNULL,
                                stdout=f, stderr=subprocess.STDOUT, start_new_session=True)


def _signal(pid: int, sig: int) -> None:
    try:
        os.kill(pid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def kill(pid: int, cluster_dir: Path, *, children: Mapping[int, subprocess.Popen] | None = None) -> None:
    """SIGKILL, as a crash would; returns once the process is gone."""
    if not is_ours(pid, cluster_dir):
        return
    _signal(pid, signal.SIGKILL)
    end = time.monotonic() + 30
    while is_ours(pid, cluster_dir) and time.monotonic() < end:
        if children and pid in children:
            children[pid].poll()
        time.sleep(0.1)


def stop(pids: Iterable[int], cluster_dir: Path, *, timeout: float = 30.0,
         children: Mapping[int, subprocess.Popen] | None = None) -> tuple[list[int], list[int]]:
    """SIGTERM the processes that are ours, SIGKILL what is left after
    ``timeout`` seconds. Returns (stopped gracefully, killed)."""
    children = children or {}
    live = [p for p in dict.fromkeys(pids) if is_ours(p, cluster_dir)]
    for pid in live:
        _signal(pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout
    pending = set(live)
    while pending and time.monotonic() < deadline:
        for pid in list(pending):
            if pid in children:
                children[pid].poll()  # reap our own child so it is not a zombie
            if not is_ours(pid, cluster_dir):
                pending.discard(pid)
        if pending:
            time.sleep(0.2)
    killed = sorted(pending)
    for pid in killed:
        _signal(pid, signal.SIGKILL)
    for pid in killed:
        end = time.monotonic() + 10
        while is_ours(pid, cluster_dir) and time.monotonic() < end:
            if pid in children:
                children[pid].poll()
            time.sleep(0.1)
    for pid in live:
        if pid in children:
            try:
                children[pid].wait(timeout=5)
            except subprocess.TimeoutExpired:
                pass
    return [p for p in live if p not in pending], killed


def tail(path: Path, lines: int = 20) -> str:
    """The last lines of a log file, for error messages."""
    try:
        with open(path, "rb") as f:
            f.seek(0, os.SEEK_END)
            size = f.tell()
            f.seek(max(0, size - 64 * 1024))
            text = f.read().decode(errors="replace")
    except OSError:
        return ""
    return "\n".join(text.splitlines()[-lines:])
