"""The system C++ compiler, and the runner executable built with it.

The runner (runtime/*.cpp) is compiled once per machine and cached under
`grader.defaults.cache_dir()/cpu/runner-HASH/`, where HASH covers every runtime source
and the compiler's version: editing the runtime or changing compilers rebuilds it."""

from __future__ import annotations

import fcntl
import hashlib
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from grader import build_cache, defaults
from grader.errors import SetupError

RUNTIME = Path(__file__).parent / "runtime"
INCLUDE = RUNTIME / "include"
SHIM = "grader_cuda.h"
RUNNER_SOURCES = (
    "runner.cpp",
    "scheduler.cpp",
    "pool.cpp",
    "signals.cpp",
    "output.cpp",
    "module.cpp",
    "memory.cpp",
    "report.cpp",
    "sandbox.cpp",
    "fiber.cpp",
)
# The student's module: optimised like nvcc's host side, with the line tables addr2line
# needs, frame pointers for finding the kernel's frame from a library function, no
# assumption that loops end (a hung kernel must hang here too), and no errno from maths.
# Hidden symbols without interposition let the kernel be inlined into the loop that
# runs a block's threads (only the registration's grader_* symbols are exported).
MODULE_FLAGS = (
    "-std=gnu++17",
    "-O2",
    "-g",
    "-fPIC",
    "-shared",
    "-fvisibility=hidden",
    "-fno-semantic-interposition",
    "-fno-strict-aliasing",
    "-fno-omit-frame-pointer",
    "-fno-math-errno",
    "-fno-finite-loops",
    "-w",
    "-Wl,-z,now",
)
# An integer division by zero traps on x86-64 but silently gives 0 on aarch64; there the
# compiler inserts a trap before each division, which the runner reports as one.
if platform.machine().lower() in ("aarch64", "arm64"):
    MODULE_FLAGS += ("-fsanitize=integer-divide-by-zero", "-fsanitize-undefined-trap-on-error")
RUNNER_FLAGS = ("-std=gnu++17", "-O2", "-g", "-pthread", "-fno-omit-frame-pointer")


@dataclass(frozen=True)
class Compiler:
    path: str
    version: str  # e.g. "g++ 12.2.0"


@cache
def compiler() -> Compiler:
    """The C++ compiler: $CXX, else g++, c++ or clang++ on PATH."""
    wanted = os.environ.get("CXX")
    names = [wanted] if wanted else ["g++", "c++", "clang++"]
    for name in names:
        path = shutil.which(name) if name else None
        if path:
            return Compiler(path, _version(path))
    raise SetupError(
        "The CPU backend needs a C++ compiler, and none was found: install g++ or clang++, "
        "or name one in the CXX environment variable."
    )


def _version(path: str) -> str:
    try:
        out = subprocess.run([path, "--version"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return Path(path).name
    first = (out.stdout or out.stderr).splitlines()[0] if (out.stdout or out.stderr) else ""
    number = re.search(r"\d+\.\d+(\.\d+)?", first)
    kind = "clang++" if "clang" in first.lower() else Path(path).name
    return f"{kind} {number.group(0)}" if number else first.strip() or kind


def fiber_source() -> str | None:
    """The context switch in assembly for this machine, or None for the ucontext one."""
    machine = platform.machine().lower()
    if machine in ("x86_64", "amd64"):
        return "fiber_x86_64.S"
    if machine in ("aarch64", "arm64"):
        return "fiber_aarch64.S"
    return None


def runtime_hash() -> str:
    digest = hashlib.sha256()
    for path in sorted(RUNTIME.rglob("*")):
        if path.is_file():
            digest.update(path.relative_to(RUNTIME).as_posix().encode())
            digest.update(path.read_bytes())
    digest.update(compiler().version.encode())
    return digest.hexdigest()[:16]


def clean_env() -> dict[str, str]:
    """What a compiler or worker gets of the environment: a PATH, and nothing of the
    grader's (never GRADER_SECRET)."""
    return {"PATH": "/usr/local/bin:/usr/bin:/bin", "LC_ALL": "C"}


# What the compiler may read besides the build folder: the system's toolchain and
# headers, and the CUDA shim.
COMPILER_READS = ("/usr", "/lib", "/lib64", "/lib32", "/etc/ld.so.cache", "/etc/alternatives")


def sandboxed(cmd: list[str], folder: Path) -> tuple[list[str], dict[str, str]]:
    """`cmd` (a compiler run on student source) wrapped by `runner exec`, which lets it
    read only the toolchain, the shim and `folder`: a submission's `#include` of some
    other file (the grader's /proc/PID/environ, a hidden case) cannot reach it. Returns
    the command and its environment."""
    program = Path(os.path.realpath(cmd[0]))
    reads = [p for p in COMPILER_READS if Path(p).exists()]
    reads += [str(INCLUDE), str(program.parent.parent)]
    wrapped = [str(runner()), "exec", str(folder)]
    for path in dict.fromkeys(reads):
        wrapped += ["--read", path]
    env = {**clean_env(), "TMPDIR": str(folder)}
    return [*wrapped, "--", str(program), *cmd[1:]], env


@cache
def runner() -> Path:
    """The runner executable, built on first use."""
    if not sys.platform.startswith("linux"):
        raise SetupError(
            "The CPU backend runs student code only on Linux, whose landlock and seccomp "
            "sandbox it; on this system, grade inside a Linux container or virtual machine."
        )
    folder = defaults.cache_dir() / "cpu" / f"runner-{runtime_hash()}"
    exe = folder / "runner"
    if exe.exists():
        build_cache.hold(folder)  # every case runs it: never evicted while this process lives
        if exe.exists():
            return exe
    folder.parent.mkdir(parents=True, exist_ok=True)
    with open(folder.parent / ".runner.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not exe.exists():
            _build_runner(folder)
    build_cache.hold(folder)
    build_cache.stored()
    return exe


def _build_runner(folder: Path) -> None:
    cxx = compiler().path
    sources = [*RUNNER_SOURCES, *([fiber_source()] if fiber_source() else [])]
    with tempfile.TemporaryDirectory(prefix="grader-runner-", dir=folder.parent) as tmp:
        objects = [Path(tmp) / f"{Path(s).stem}.o" for s in sources]

        def compile_one(pair: tuple[str, Path]) -> subprocess.CompletedProcess:
            source, obj = pair
            cmd = [cxx, *RUNNER_FLAGS, "-c", str(RUNTIME / source), "-o", str(obj)]
            return subprocess.run(cmd, capture_output=True, text=True, env=clean_env())

        # The runtime is ten files; compiling them side by side halves the wait.
        with ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
            results = list(pool.map(compile_one, zip(sources, objects, strict=True)))
        failed = [r for r in results if r.returncode != 0]
        if not failed:
            link = [cxx, *RUNNER_FLAGS, "-rdynamic", *map(str, objects), "-o", f"{tmp}/runner"]
            failed = [subprocess.run(link + ["-ldl"], capture_output=True, text=True)]
            failed = [r for r in failed if r.returncode != 0]
        if failed:
            raise SetupError(
                "The CPU backend could not build its runner with "
                f"{compiler().version}: {failed[0].stderr.strip()[:2000]}"
            )
        staged = Path(tmp) / "out"
        staged.mkdir()
        shutil.move(f"{tmp}/runner", staged / "runner")
        os.replace(staged, folder)
