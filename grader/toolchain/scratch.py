"""Scratch folders in the temporary directory that a killed grader does not leave behind
for ever.

A folder is named for the process that made it, grader-KIND-PID-START-HOST-XXXXXXXX:
START is when that process started (clock ticks after boot, /proc/PID/stat), so a reused
PID is told apart, and HOST stands for this boot and PID namespace, the only ones whose
processes /proc shows. A grader killed by SIGKILL cannot remove its folders; the next one
sweeps them. It removes only folders of this naming and HOST, owned by this user, that
are folders and not links, whose process is gone: no process has the PID, or the one that
has it started at another time. Nothing is followed through a link while removing.

A folder done with is removed in a thread of its own (`discard`): deleting the files a
worker just wrote takes as long as a small case's run, which need not wait for it."""

from __future__ import annotations

import hashlib
import os
import queue
import re
import shutil
import stat
import tempfile
import threading
from functools import cache
from pathlib import Path

_NAME = re.compile(r"grader-[a-z]+-(\d+)-(\d+)-([0-9a-f]{8})-[a-z0-9_]{8}")


def prefix(kind: str) -> str:
    """The name's start for a scratch folder of this process (mkdtemp's prefix); a plain
    one, never swept, where /proc cannot say when this process started."""
    pid, host = os.getpid(), _host()
    started = _started(pid) if host else None
    if started is None:
        return f"grader-{kind}-"
    return f"grader-{kind}-{pid}-{started}-{host}-"


_discarded: queue.Queue[Path] = queue.Queue()
_remover_started = threading.Lock()
_remover: threading.Thread | None = None


def discard(folder: Path) -> None:
    """Remove `folder` soon, in the background; `settle` waits until it is gone."""
    global _remover
    with _remover_started:
        if _remover is None:
            _remover = threading.Thread(target=_remove, name="grader-discard", daemon=True)
            _remover.start()
    _discarded.put(folder)


def settle() -> None:
    """Wait until every folder discarded so far is gone."""
    _discarded.join()


def _remove() -> None:
    while True:
        folder = _discarded.get()
        shutil.rmtree(folder, ignore_errors=True)
        _discarded.task_done()


def sweep() -> None:
    """Remove the scratch folders that this user's graders, now gone, left behind."""
    try:
        top = os.open(tempfile.gettempdir(), os.O_RDONLY | os.O_DIRECTORY)
    except OSError:
        return
    try:
        for name in os.listdir(top):
            if _orphaned(name, top):
                shutil.rmtree(name, dir_fd=top, ignore_errors=True)
    finally:
        os.close(top)


def _orphaned(name: str, top: int) -> bool:
    match = _NAME.fullmatch(name)
    if not match or match[3] != _host():
        return False
    try:
        info = os.stat(name, dir_fd=top, follow_symlinks=False)
    except OSError:
        return False
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.geteuid():
        return False
    try:
        return _started(int(match[1])) != match[2]
    except PermissionError:
        return False  # a process we may not see: it may be the owner


def _started(pid: int) -> str | None:
    """When process `pid` started (clock ticks after boot), None when there is no such
    process. A command name may hold spaces and parentheses: the fields start after the
    last ')'."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return None
    return text.rsplit(")", 1)[1].split()[19]


@cache
def _host() -> str:
    try:
        boot = Path("/proc/sys/kernel/random/boot_id").read_text().strip()
        namespace = os.readlink("/proc/self/ns/pid")
    except OSError:
        return ""
    return hashlib.sha256(f"{boot} {namespace}".encode()).hexdigest()[:8]
