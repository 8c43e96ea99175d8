"""Waiting for a child process to end, woken the moment it does, or the moment the work
it was started for is no longer wanted.

`Popen.wait(timeout)` polls, sleeping up to 50 ms between looks, so each wait ends on
average 25 ms after the child did: a second of every grading, which waits for a compiler
or a worker some fifty times. A pidfd (Linux 5.3+) instead becomes readable when the
child ends.

A thread that works `under` a Cancel (a build made ahead, grader.ahead) has its waits
ended by it: once the Cancel is set, every wait of that thread, and of the threads it
starts with the same context, raises Cancelled, and the caller stops its child."""

from __future__ import annotations

import contextvars
import os
import select
import subprocess
import threading
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")

_UNDER: contextvars.ContextVar[Cancel | None] = contextvars.ContextVar("cancel", default=None)


class Cancelled(Exception):
    """A wait ended by its thread's Cancel: what the child was making is not wanted."""


class Cancel:
    """Set once, for good. Its pipe's write end is closed to set it, which leaves the read
    end readable (at its end) for every poll from then on."""

    def __init__(self) -> None:
        read, write = os.pipe()
        self._read = os.fdopen(read, "rb", buffering=0)  # closed with this object
        self._write = os.fdopen(write, "wb", buffering=0)
        self._lock = threading.Lock()

    def set(self) -> None:
        with self._lock:
            self._write.close()

    def fileno(self) -> int:
        return self._read.fileno()


def under(cancel: Cancel, work: Callable[[], T]) -> T:
    """`work()`, its waits (and those of the threads it starts) ended by `cancel`."""
    context = contextvars.copy_context()
    context.run(_UNDER.set, cancel)
    return context.run(work)


def wait(proc: subprocess.Popen, timeout: float) -> int:
    """`proc`'s exit status; raises subprocess.TimeoutExpired after `timeout` seconds, as
    Popen.wait does (which this falls back to where there is no pidfd), and Cancelled
    where the thread's Cancel is set first."""
    if proc.returncode is not None:  # reaped: its pid may be another process's by now
        return proc.returncode
    cancel = _UNDER.get()
    try:
        fd = os.pidfd_open(proc.pid)
    except (AttributeError, OSError):
        return proc.wait(timeout)
    try:
        poller = select.poll()
        poller.register(fd, select.POLLIN)
        if cancel is not None:
            poller.register(cancel.fileno(), select.POLLIN)
        ready = {ready_fd for ready_fd, _ in poller.poll(max(0, timeout) * 1000)}
    finally:
        os.close(fd)
    if fd not in ready and ready:
        raise Cancelled
    if fd not in ready:
        raise subprocess.TimeoutExpired(proc.args, timeout)
    return proc.wait()
