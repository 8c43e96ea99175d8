"""The build cache's size bound. Everything the grader builds is kept under
`defaults.cache_dir()`, one folder per kind of build: `sandbox/` (the compilers' sandbox),
`cpu/` (the CPU backend's runner and compiled modules), `nvcc/` (nvcc's inspections),
`pycuda/` (PyCUDA's cubins), `nsight/` (what Nsight Compute counted), `profile/` (the CPU
model's profiles of the labs' own kernels), `reference/` (the reference's sums of the
cases every submission shares). Each child of those folders is one entry.

When a new entry is stored and the cache holds more than its bound (GRADER_CACHE_SIZE,
default 1 GiB), the least recently used entries are deleted until it fits. An entry's
last use is its modification time, which `used` refreshes on every hit. Never deleted:
entries used within the last GRACE seconds (a build in progress, a module about to be
run), and entries some process holds (`hold`: the runner every case of a batch runs)."""

from __future__ import annotations

import contextlib
import fcntl
import os
import re
import shutil
import stat
import time
from pathlib import Path

from grader import defaults
from grader.errors import SetupError

SIZE_ENV = "GRADER_CACHE_SIZE"
DEFAULT_SIZE = 1 << 30
GRACE = 3600.0  # seconds an entry is safe after its last use
PRUNE_EVERY = 60.0  # seconds between two prunes of one process
KINDS = ("sandbox", "cpu", "nvcc", "pycuda", "nsight", "profile", "reference")
LOCK = ".lock"  # in an entry's folder: shared while held, exclusive while deleted
_UNITS = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}
_held: list[int] = []  # lock descriptors, kept open for this process's life
_last_prune = -PRUNE_EVERY


def size_limit() -> int:
    """The bound in bytes: GRADER_CACHE_SIZE as 500M, 2G or a number of bytes."""
    text = os.environ.get(SIZE_ENV, "").strip()
    if not text:
        return DEFAULT_SIZE
    match = re.fullmatch(r"(\d+(?:\.\d+)?)\s*([kmgt]?)(?:i?b)?", text, re.IGNORECASE)
    if not match:
        raise SetupError(f"{SIZE_ENV}={text!r} is not a size; write it as 500M, 2G or bytes.")
    return int(float(match.group(1)) * _UNITS[match.group(2).lower()])


def used(path: Path) -> None:
    """Mark an entry as used now, so that it is evicted last."""
    with contextlib.suppress(OSError):
        os.utime(path)


def hold(folder: Path) -> bool:
    """Keep the entry `folder` from eviction for as long as this process lives. Returns
    False when the folder is not there (yet)."""
    try:
        fd = _lock_fd(Path(folder))
    except OSError:
        return False
    fcntl.flock(fd, fcntl.LOCK_SH)
    _held.append(fd)
    used(folder)
    return True


def stored() -> None:
    """Call after storing a new entry: prunes the cache, at most once a minute."""
    global _last_prune
    now = time.monotonic()
    if now - _last_prune >= PRUNE_EVERY:
        _last_prune = now
        prune()


def _lock_fd(folder: Path) -> int:
    return os.open(folder / LOCK, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)


def _size(path: Path, info: os.stat_result) -> int:
    """Bytes of an entry whose lstat is `info`: a file, or a folder's files."""
    if not stat.S_ISDIR(info.st_mode):
        return info.st_size
    total = 0
    for root, _, files in os.walk(path):
        for name in files:
            with contextlib.suppress(OSError):
                total += os.lstat(os.path.join(root, name)).st_size
    return total


def entries(root: Path | None = None) -> list[tuple[float, int, Path]]:
    """(last use, bytes, path) of every entry, least recently used first."""
    root = Path(root) if root else defaults.cache_dir()
    found = []
    for kind in KINDS:
        try:
            children = list((root / kind).iterdir())
        except OSError:
            continue
        for path in children:
            if path.name.startswith("."):
                continue  # lock files of the kind's folder
            with contextlib.suppress(OSError):
                info = path.lstat()
                found.append((info.st_mtime, _size(path, info), path))
    return sorted(found)


def _evict(path: Path) -> bool:
    """Delete one entry unless it was used meanwhile or a process holds it. A folder is
    first renamed away under its lock, so that no process finds half of it."""
    try:
        info = path.lstat()
        if time.time() - info.st_mtime < GRACE:
            return False
        if not stat.S_ISDIR(info.st_mode):
            path.unlink()
            return True
        fd = _lock_fd(path)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        doomed = path.with_name(f"{path.name}.evicted-{os.getpid()}")
        os.rename(path, doomed)
    except OSError:  # held (BlockingIOError), or gone already
        return False
    finally:
        os.close(fd)
    shutil.rmtree(doomed, ignore_errors=True)
    return True


def prune(root: Path | None = None, limit: int | None = None) -> int:
    """Evict least recently used entries until the cache fits `limit` (default: the
    configured bound). Returns the bytes freed."""
    limit = size_limit() if limit is None else limit
    found = entries(root)
    total = sum(size for _, size, _ in found)
    freed = 0
    for _, size, path in found:
        if total - freed <= limit:
            break
        if _evict(path):
            freed += size
    return freed
