"""The system C++ compiler, and what is built with it once per machine: the runner
executable, and the CUDA shim as a precompiled header.

The runner (runtime/*.cpp) is compiled once per machine and cached under
`grader.defaults.cache_dir()/cpu/runner-HASH/`, where HASH covers every runtime source
and the compiler's version: editing the runtime or changing compilers rebuilds it. The
shim's precompiled header sits beside it in `cpu/shim-HASH/`, HASH covering the same and
the flags it was built with."""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from grader import defaults, machine
from grader.errors import SetupError
from grader.toolchain import build_cache

# The CPU backend's runtime: the runner is built from it here, since every compiler runs
# inside the runner (grader.toolchain.sandbox), nvcc on a GPU machine too.
RUNTIME = Path(__file__).resolve().parents[1] / "backends" / "cpu" / "runtime"
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
    "counts.cpp",
    "stores.cpp",
    "hazards.cpp",
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
    # calls into the runner (a store hook before every store) go through the GOT, not a
    # PLT stub: the matmul-tiled reference's Width-517 launch 1.33 s -> 1.15 s
    "-fno-plt",
    # printf is the runner's by assembler name (include/grader_cuda.h): no call of it may
    # become puts, or __printf_chk under _FORTIFY_SOURCE
    "-fno-builtin-printf",
    "-U_FORTIFY_SOURCE",
)
# An integer division by zero traps on x86-64 but silently gives 0 on aarch64; there the
# compiler inserts a trap before each division, which the runner reports as one.
if platform.machine().lower() in ("aarch64", "arm64"):
    MODULE_FLAGS += ("-fsanitize=integer-divide-by-zero", "-fsanitize-undefined-trap-on-error")


def _cpu_has(*features: str) -> bool:
    """Whether this machine's processors have every one of `features`: the first
    processor's flags in /proc/cpuinfo, read no further."""
    try:
        with open("/proc/cpuinfo", errors="replace") as info:
            flags = next((line for line in info if line.startswith("flags")), "")
    except OSError:
        return False
    return set(features) <= set(flags.partition(":")[2].split())


# On x86-64 with FMA3 (every such processor since 2013), fmaf() is one instruction rather
# than a call of libm's: the conv and matmul references call it in their inner loops (the
# matmul-tiled reference's Width-517 launch 0.89 s -> 0.58 s). No other product and sum is
# fused, so every value a module computes stays what it was.
if platform.machine().lower() in ("x86_64", "amd64") and _cpu_has("fma", "avx"):
    MODULE_FLAGS += ("-mfma", "-ffp-contract=off")
# CUDA's macro for the architecture nvcc targets, which a module is compiled for.
ARCH_MACRO = f"-D__CUDA_ARCH__={defaults.ARCH.removeprefix('sm_')}0"
# Every module calls the runner's __asan_storeN_noabort before each store it makes
# (runtime/stores.cpp: which block stored each output element), and a census module also
# __asan_loadN_noabort before every load (runtime/counts.cpp); nothing else of a sanitizer
# (no shadow memory, no red zones).
_HOOK_FLAGS = {
    "g++": ("-fsanitize=kernel-address",
            "--param", "asan-instrumentation-with-call-threshold=0",
            "--param", "asan-stack=0", "--param", "asan-globals=0"),
    "clang++": ("-fsanitize=kernel-address",
                "-mllvm", "-asan-instrumentation-with-call-threshold=0",
                "-mllvm", "-asan-stack=0", "-mllvm", "-asan-globals=0"),
}  # fmt: skip
# Stores of an if and its else into the same place stay in their branches, so that a
# fault names the store's own line, not the line after the if (gcc sinks them into one;
# clang's equivalent is left as it is, untried).
_OWN_LINES = {"g++": ("-fno-tree-cselim",), "clang++": ()}
_NO_LOAD_HOOKS = {
    "g++": ("--param", "asan-instrument-reads=0"),
    "clang++": ("-mllvm", "-asan-instrument-reads=0"),
}
# The shim parsed once into a precompiled header (g++ only): a module's compile then
# parses the student's file alone, half its time. Built with a module's flags less the
# linker's; a census module's extra load hooks change no parse, so it uses it too.
PCH_FLAGS = (
    *(f for f in MODULE_FLAGS if f != "-shared" and not f.startswith("-Wl,")),
    *_OWN_LINES["g++"],
    *_HOOK_FLAGS["g++"],
    *_NO_LOAD_HOOKS["g++"],
    ARCH_MACRO,
)
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


def module_flags(census: bool) -> tuple[str, ...]:
    """How the student's module is compiled: with its store hooks, and with `census` its
    load hooks too, so that it counts its shared-memory loads."""
    kind = "clang++" if compiler().version.startswith("clang++") else "g++"
    loads = () if census else _NO_LOAD_HOOKS[kind]
    return (*MODULE_FLAGS, *_OWN_LINES[kind], *_HOOK_FLAGS[kind], *loads)


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


@cache
def runner() -> Path:
    """The runner executable, built on first use."""
    if not sys.platform.startswith("linux"):
        raise SetupError(
            "The CPU backend runs student code only on Linux, whose landlock and seccomp "
            "sandbox it; on this system, grade inside a Linux container or virtual machine."
        )
    folder = defaults.cache_dir() / "cpu" / f"runner-{runtime_hash()}"
    return _built_once(folder / "runner", _build_runner)


def shim_include() -> tuple[list[str], list[str]]:
    """The flags that force the shim into a module's compile, from its precompiled header
    where there is one (g++ looks in that folder first), and the folders the compile
    reads for them besides the toolchain's."""
    flags = ["-I", str(INCLUDE), "-include", SHIM, ARCH_MACRO]
    precompiled = precompiled_shim()
    if precompiled is None:
        return flags, []
    return [f"-I{precompiled}", *flags], [str(precompiled)]


@cache
def precompiled_shim() -> Path | None:
    """The folder of the shim's precompiled header, built on first use; None with clang++
    (which does not look for one in an include folder), or where it could not be built
    (a module then compiles from the header)."""
    if compiler().version.startswith("clang++"):
        return None
    key = json.dumps([runtime_hash(), str(INCLUDE), PCH_FLAGS])  # a foreign INCLUDE: its logs
    folder = defaults.cache_dir() / "cpu" / f"shim-{hashlib.sha256(key.encode()).hexdigest()[:16]}"
    header = _built_once(folder / f"{SHIM}.gch", _build_shim)
    return folder if header.exists() else None


def _built_once(product: Path, make: Callable[[Path], None]) -> Path:
    """`product`, made with its folder by `make(folder)` (which stages it and renames the
    folder into place) under a lock, unless another process made it first; then held, so
    that it is never evicted while this process lives."""
    folder = product.parent
    if product.exists():
        build_cache.hold(folder)
        if product.exists():
            return product
    folder.parent.mkdir(parents=True, exist_ok=True)
    with open(folder.parent / f".{product.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not product.exists():
            make(folder)
    build_cache.hold(folder)
    build_cache.stored()
    return product


def _build_shim(folder: Path) -> None:
    """The grader's own header, so not sandboxed; a failure leaves no folder."""
    with tempfile.TemporaryDirectory(prefix="grader-shim-", dir=folder.parent) as tmp:
        staged = Path(tmp) / "out"
        staged.mkdir()
        cmd = [compiler().path, *PCH_FLAGS, "-I", str(INCLUDE), "-x", "c++-header"]
        cmd += [str(INCLUDE / SHIM), "-o", str(staged / f"{SHIM}.gch")]
        if subprocess.run(cmd, capture_output=True, env=clean_env()).returncode == 0:
            os.replace(staged, folder)


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
        with ThreadPoolExecutor(max_workers=machine.cores()) as pool:
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
