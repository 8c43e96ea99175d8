"""What this process may use of the machine: cores and memory.

Every pool the grader sizes (the CPU backend's threads, batch's default --jobs, the
runtime's parallel build) asks here, never os.cpu_count(): under `taskset`, a container's
CPU quota or a Slurm allocation the machine's total is the wrong figure. Cores are the
CPUs this process may run on (sched_getaffinity), cut down by a CPU quota (cgroup v2
cpu.max, or v1 cpu.cfs_quota_us) on its cgroup or any above it; memory is the physical
memory, cut down likewise by memory.max (v1: memory.limit_in_bytes)."""

from __future__ import annotations

import math
import os
from functools import cache
from pathlib import Path

CGROUP_ROOT = Path("/sys/fs/cgroup")
PROC_CGROUP = Path("/proc/self/cgroup")


def cores() -> int:
    """How many CPUs this process may keep busy at once (at least 1)."""
    try:
        usable = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        usable = os.cpu_count() or 1
    quotas = [q for folder in _chain("cpu") if (q := _quota(folder)) is not None]
    return max(1, min([usable, *quotas]))


def memory() -> int:
    """Bytes of memory this process may use: physical memory, or less under a cgroup."""
    try:
        total = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError):
        total = 1 << 62
    names = ("memory.max", "memory.limit_in_bytes")
    limits = [_number(folder / name) for folder in _chain("memory") for name in names]
    return min([total, *(v for v in limits if v is not None)])


def _quota(folder: Path) -> int | None:
    """Whole CPUs a cgroup's quota allows (at least 1), or None without a quota."""
    try:
        quota, period = (folder / "cpu.max").read_text().split()[:2]
    except (OSError, ValueError):
        quota, period = (str(_number(folder / f"cpu.cfs_{k}_us")) for k in ("quota", "period"))
    if not (quota.isdigit() and period.isdigit()) or int(period) == 0:
        return None  # "max", -1, or no such files
    return max(1, math.floor(int(quota) / int(period)))


def _number(path: Path) -> int | None:
    try:
        text = path.read_text().strip()
    except OSError:
        return None
    return int(text) if text.lstrip("-").isdigit() else None


@cache
def _chain(controller: str) -> tuple[Path, ...]:
    """The folders of this process's cgroup for `controller`, and those above it up to the
    mount point: the v2 hierarchy's, and the v1 one's where that controller is mounted."""
    try:
        lines = PROC_CGROUP.read_text().splitlines()
    except OSError:
        return ()
    found: list[Path] = []
    for line in lines:
        _, controllers, own = line.split(":", 2)
        if controllers == "":
            mount = CGROUP_ROOT if (CGROUP_ROOT / "cgroup.controllers").exists() else None
        else:
            mount = CGROUP_ROOT / controllers if controller in controllers.split(",") else None
        if mount is None or not mount.is_dir():
            continue
        leaf = mount / own.lstrip("/")
        if not leaf.is_dir():  # a cgroup namespace: the mount is our own cgroup
            found.append(mount)
            continue
        found += [leaf, *(p for p in leaf.parents if p.is_relative_to(mount))]
    return tuple(found)


def slots(memory_each: int) -> int:
    """How many workers needing `memory_each` bytes fit: one per core, fewer where
    memory is short (at least 1)."""
    return max(1, min(cores(), memory() // memory_each))
