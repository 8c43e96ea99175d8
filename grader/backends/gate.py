"""A GPU's gate: a pair of `flock` files that the processes sharing one GPU take, shared
or alone (grader.course.gpus says who takes it how, and why). A request to hold it alone
closes a turnstile first, so that a steady stream of shared holders cannot keep it
waiting for ever. The kernel drops a dead process's locks with its file descriptors, so
a process killed while it holds the gate never blocks the others.

The GPU worker takes it alone itself for all of a run or time request's GPU work
(`alone_at`, with the paths the grader gives in the request): a case's from its buffers
placed to their freeing, with the shared-memory fill and the kernels between, which
another process's kernel must not enter; a timing's likewise, since another process's
copies, allocations and frees beside its timed runs made them vary (a batch of
matmul-tiled on an H100 timed the naive kernel for 9.3 rounds, against 3.3 with them
held out: bench/batch.py). Loading a module and starting a worker take no gate."""

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
