"""A GPU's gate: two readers-writer locks of `flock` files that the processes sharing one
GPU take (grader.course.gpus says who takes them how, and why), the GPU's and its
kernels'. Each is held shared or alone; a request to hold one alone closes its turnstile
first, so that a steady stream of shared holders cannot keep it waiting for ever. The
kernel drops a dead process's locks with its file descriptors, so a process killed while
it holds the gate never blocks the others.

The GPU worker takes the gate itself, with the paths the grader gives in the request. A
timing holds the GPU's lock alone from its first buffer placed to its last one freed
(`alone_at`): another process's copies, allocations and frees beside its timed runs made
them vary (a batch of matmul-tiled on an H100 timed the naive kernel for 9.3 rounds,
against 3.3 with them held out: bench/batch.py). A case holds the GPU's lock shared for
its copies, maps and frees, which other cases' may overlap, and the kernels' lock alone
from the shared-memory fill to its kernels' end, which no other process's kernel may
enter (`case_at`). The driver's own memsets and copies between may run there: they use
no shared memory. The sanitizer holds both shared (`running`). Loading a module and
starting a worker take no gate."""

from __future__ import annotations

import contextlib
import fcntl
import os
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

PARTS = ("turnstile", "lock", "kernels.turnstile", "kernels")


def paths(folder: Path, name: str) -> tuple[str, ...]:
    """The files of gate `name` in `folder`: the GPU's turnstile and lock, then its
    kernels'."""
    return tuple(str(folder / f"{name}.{part}") for part in PARTS)


def opened(files: Sequence[str]) -> tuple[int, ...]:
    return tuple(os.open(f, os.O_RDWR | os.O_CREAT, 0o600) for f in files)


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
def running(descriptors: Sequence[int]) -> Iterator[None]:
    """Both locks of an opened gate shared: kernels run beside other holders' but keep
    out a case's fill and kernels, and a timing."""
    with shared(*descriptors[:2]), shared(*descriptors[2:]):
        yield


@contextlib.contextmanager
def alone_at(
    files: Sequence[str] | None, taken: Callable[[], None] | None = None
) -> Iterator[None]:
    """The GPU's lock at `files` (paths()) held alone, and `taken` called once it is;
    nothing where there is none."""
    if not files:
        yield
        return
    descriptors = opened(files)
    try:
        with alone(*descriptors[:2]):
            if taken is not None:
                taken()
            yield
    finally:
        for fd in descriptors:
            os.close(fd)


@contextlib.contextmanager
def case_at(
    files: Sequence[str] | None, taken: Callable[[], None] | None = None
) -> Iterator[Callable[[], contextlib.AbstractContextManager]]:
    """The GPU's lock at `files` held shared, for a case's copies; what it gives, entered,
    takes the kernels' lock alone and calls `taken`. Nothing where there is no gate."""
    if not files:
        yield contextlib.nullcontext
        return
    descriptors = opened(files)

    @contextlib.contextmanager
    def running_alone() -> Iterator[None]:
        with alone(*descriptors[2:]):
            if taken is not None:
                taken()
            yield

    try:
        with shared(*descriptors[:2]):
            yield running_alone
    finally:
        for fd in descriptors:
            os.close(fd)
