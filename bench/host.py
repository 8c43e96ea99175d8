"""Which host a bench ran on, and how fast its CPU was then, in one line. On two H100
machines of one day, with the same code, a warm `grader check` of conv2d's reference took
0.49 and 0.77 s, and a batch graded 340 and 234 submissions a minute: their GPUs equal,
their host CPUs not. So the benches print this line, and figures from hosts whose lines
differ are not compared."""

from __future__ import annotations

import compileall
import os
import platform
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
HASHED = 1 << 25  # bytes: histogram's timed input, which its check hashes every launch


def cpu_model(cpuinfo: Path = Path("/proc/cpuinfo")) -> str:
    """The CPU's model name, as the kernel tells it."""
    try:
        for line in cpuinfo.read_text().splitlines():
            key, _, value = line.partition(":")
            if key.strip() == "model name" and value.strip():
                return value.strip()
    except OSError:
        pass
    return platform.processor() or "an unnamed CPU"


def hash_ms(repeat: int = 5) -> float:
    """Median milliseconds one thread takes to draw histogram's timed input on the host,
    as its timing's check does for every launch."""
    import numpy as np

    from grader.backends.timing import drawn_array

    found = []
    for key in range(repeat):
        started = time.perf_counter()
        drawn_array((key, 1), HASHED, np.uint8)
        found.append(1000 * (time.perf_counter() - started))
    return statistics.median(found)


def compile_bytecode(root: Path = ROOT) -> None:
    """Write the bytecode of the grader and the labs under `root` now, as an installed
    grader has it: the GPU machine sets PYTHONDONTWRITEBYTECODE, and there each `grader
    check` a bench timed compiled them again (the likely reason every lab's warm check
    took 0.1-0.2 s longer in two calls that ran bench/gpu_labs.py alone)."""
    for folder in ("grader", "reference_kernels", "bench"):
        compileall.compile_dir(str(root / folder), quiet=2)


def gpu_missing(need: str = "") -> bool:
    """Whether this machine lacks a usable NVIDIA GPU, said on stderr if so (`need`: what
    for), as a GPU bench says it before it exits 2."""
    from grader.backends import gpu_status

    usable, why = gpu_status()
    if not usable:
        print(f"needs a usable NVIDIA GPU{need}: {why}", file=sys.stderr)
    return not usable


def describe() -> str:
    """The host line: CPU model, the cores this process may use, the load, and hash_ms."""
    from grader import machine

    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    return (
        f"host: {cpu_model()}, {machine.cores()} cores, load {load:.1f}; "
        f"drawing 32 MiB as histogram's check does: {hash_ms():.0f} ms on one thread"
    )
