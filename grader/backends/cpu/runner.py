"""The runner: the CPU backend's worker executable (runtime/runner.cpp says what it does),
built once per machine from runtime/*.cpp and the toolchain's sandbox, which it applies
to itself, and cached under `grader.defaults.cache_dir()/cpu/runner-HASH/`, where HASH
covers every source of both and the compiler's version."""

from __future__ import annotations

import platform
from functools import cache
from pathlib import Path

from grader import defaults
from grader.toolchain import cxx, sandbox

RUNTIME = Path(__file__).resolve().parent / "runtime"
SOURCES = (
    "runner.cpp",
    "scheduler.cpp",
    "pool.cpp",
    "signals.cpp",
    "output.cpp",
    "module.cpp",
    "memory.cpp",
    "fiber.cpp",
    "counts.cpp",
    "stores.cpp",
    "hazards.cpp",
)
FLAGS = ("-std=gnu++17", "-O2", "-g", "-pthread", "-fno-omit-frame-pointer")


def fiber_source() -> str | None:
    """The context switch in assembly for this machine, or None for the ucontext one."""
    machine = platform.machine().lower()
    if machine in ("x86_64", "amd64"):
        return "fiber_x86_64.S"
    if machine in ("aarch64", "arm64"):
        return "fiber_aarch64.S"
    return None


def runtime_hash() -> str:
    """What the runner and the shim are built from: every runtime source, the sandbox's,
    and the compiler's version."""
    runtime = [p for p in RUNTIME.rglob("*") if p.is_file()]
    return cxx.source_hash([*runtime, *sandbox.SOURCES, *sandbox.HEADERS])


@cache
def executable() -> Path:
    """The runner executable, built on first use."""
    sandbox.require_linux()
    folder = defaults.cache_dir() / "cpu" / f"runner-{runtime_hash()}"
    return cxx.built_once(folder / "runner", _build)


def _build(folder: Path) -> None:
    own = [RUNTIME / s for s in (*SOURCES, *([fiber_source()] if fiber_source() else []))]
    cxx.build_program(
        folder,
        "runner",
        [*own, *sandbox.LINKED],
        [*FLAGS, "-I", str(sandbox.FOLDER)],
        ["-rdynamic", "-ldl"],
        "The CPU backend could not build its runner",
    )
