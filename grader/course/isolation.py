"""Keeping grading workers apart from the batch that starts them: the process flag that
hides their memory, stopping a worker with everything it started, and a worker's death
with its batch's, however the batch ended.

The batch holds the secret; a worker gets it over a pipe, never in its environment or
command line (its start and environment are grader.spawn's)."""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import sys
from pathlib import Path

_PR_SET_PDEATHSIG = 1
_PR_SET_DUMPABLE = 4
ORPHANED = signal.SIGTERM  # what a worker gets when its batch dies
_KILL_ROUNDS = 5  # a fork bomb may add processes while the first round stops the others


def make_undumpable() -> None:
    """Forbid other processes of the same user to read this one's memory and environment
    (/proc/PID/mem, environ, ptrace). Only Linux has the switch; elsewhere this is a no-op
    and the sandbox of the CPU backend is the only wall."""
    if not sys.platform.startswith("linux"):
        return
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(_PR_SET_DUMPABLE, 0, 0, 0, 0)


def _parents() -> dict[int, list[int]]:
    """Children of every process, from /proc (empty where there is no /proc)."""
    children: dict[int, list[int]] = {}
    proc = Path("/proc")
    if not proc.is_dir():
        return children
    for entry in proc.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue  # it exited while we looked
        # the command name may hold spaces and parentheses: the fields start after the last ')'
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        children.setdefault(ppid, []).append(int(entry.name))
    return children


def descendants(pid: int) -> list[int]:
    tree = _parents()
    found, todo = [], [pid]
    while todo:
        for child in tree.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found


def _signal(pids: list[int], sig: signal.Signals) -> None:
    for pid in pids:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, sig)


def _frozen(pid: int, itself: bool) -> list[int]:
    """Stop (SIGSTOP) every descendant of `pid`, and `pid` where `itself`, so that none
    can fork or be re-parented away while the others die; returns them."""
    stopped: set[int] = set()
    for _ in range(_KILL_ROUNDS):
        found = [pid, *descendants(pid)] if itself else descendants(pid)
        fresh = [p for p in found if p not in stopped]
        if not fresh:
            break
        _signal(fresh, signal.SIGSTOP)
        stopped.update(fresh)
    return sorted(stopped)


def kill_tree(pid: int) -> None:
    """Stop `pid`, its process group and every descendant, also those that left the
    group (a sandbox or a CUDA worker starts its own session). All are frozen first."""
    stopped = _frozen(pid, itself=True)
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)
    _signal(stopped, signal.SIGKILL)


def die_with_parent(parent: int) -> None:
    """End this process, and all it started, when `parent` (the batch) dies, even by
    SIGKILL, which leaves the batch no chance to stop its workers: Linux then sends this
    process ORPHANED (PR_SET_PDEATHSIG), whose handler kills its descendants and exits,
    instead of running a hung case to its timeout. Elsewhere a no-op."""
    if not sys.platform.startswith("linux"):
        return
    signal.signal(ORPHANED, _orphaned)
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(_PR_SET_PDEATHSIG, int(ORPHANED), 0, 0, 0)
    if os.getppid() != parent:  # it died before the signal was asked for
        _orphaned()


def _orphaned(*_: object) -> None:
    _signal(_frozen(os.getpid(), itself=False), signal.SIGKILL)
    os._exit(128 + ORPHANED)
