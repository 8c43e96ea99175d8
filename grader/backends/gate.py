"""A GPU's gate: a pair of `flock` files that the processes sharing one GPU take, shared
or alone (grader.course.gpus says who takes it how, and why). A request to hold it alone
closes a turnstile first, so that a steady stream of shared holders cannot keep it
waiting for ever. The kernel drops a dead process's locks with its file descriptors, so
a process killed while it holds the gate never blocks the others.

The GPU worker takes it alone itself from the shared-memory fill to the kernel's end
(`alone_at`, with the paths the grader gives in a run request): that stretch, not the
whole case with its copies and checks, is what another process's kernel must not enter.
A timing's likewise: from its first timed run to the last one's end, not the placing
and freeing of its buffers around them (grader.backends.window)."""

from __future__ import annotations

import contextlib
import fcntl
import os
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path


def paths(folder: Path, name: str) -> tuple[str, str]:
    """The turnstile's and the lock's files of gate `name` in `folder`."""
    return str(folder / f"{name}.turnstile"), str(folder / f"{name}.lock")


def opened(files: Sequence[str]) -> tuple[int, int]:
    return tuple(os.open(f, os.O_RDWR | os.O_CREAT, 0o600) for f in files)  # type: ignore[return-value]


@contextlib.contextmanager
def alone(turnstile: int, lock: int) -> Iterator[None]:
    fcntl.flock(turnstile, fcntl.LOCK_EX)
    try:
        fcntl.flock(lock, fcntl.LOCK_EX)
    finally:
        fcntl.flock(turnstile, fcntl.LOCK_UN)
    try:
        yield
    finally:
        fcntl.flock(lock, fcntl.LOCK_UN)


@contextlib.contextmanager
def shared(turnstile: int, lock: int) -> Iterator[None]:
    fcntl.flock(turnstile, fcntl.LOCK_EX)
    fcntl.flock(lock, fcntl.LOCK_SH)
    fcntl.flock(turnstile, fcntl.LOCK_UN)
    try:
        yield
    finally:
        fcntl.flock(lock, fcntl.LOCK_UN)


@contextlib.contextmanager
def alone_at(
    files: Sequence[str] | None, taken: Callable[[], None] | None = None
) -> Iterator[None]:
    """The gate at `files` (paths()) held alone, and `taken` called once it is; nothing
    where there is none."""
    if not files:
        yield
        return
    descriptors = opened(files)
    try:
        with alone(*descriptors):
            if taken is not None:
                taken()
            yield
    finally:
        for fd in descriptors:
            os.close(fd)
