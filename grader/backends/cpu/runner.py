"""The runner: the CPU backend's worker executable (runtime/runner.cpp says what it does),
built once per machine from runtime/*.cpp, the toolchain's sandbox, which it applies to
itself, and contract.h, written here from grader.backends.cpu.contract; cached under
`grader.defaults.cache_dir()/cpu/runner-HASH/`, where HASH covers all of them and the
compiler's version."""

from __future__ import annotations

import platform
from functools import cache
from pathlib import Path

from grader import defaults
from grader.backends.cpu import contract
from grader.toolchain import cxx, header, sandbox

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
    "atomics.cpp",
    "copies.cpp",
    "hazards.cpp",
    "profile.cpp",
)
# -Werror=switch: a switch over an enum of contract.h (read_job's over the job's keys)
# handles every member. -fvisibility=hidden: the runner exports (-rdynamic) to the module
# only what the runtime marks default, the names build.RUNTIME_SYMBOLS allows, and none
# of its own functions and tables that a kernel might call or write.
FLAGS = (
    "-std=gnu++17", "-O2", "-g", "-pthread", "-fno-omit-frame-pointer", "-Werror=switch",
    "-fvisibility=hidden",
)  # fmt: skip
LINK = ("-rdynamic", "-ldl")
HEADER = "contract.h"
# Where the runtime's sources find the shim's codes (include/grader_codes.h) and the
# sandbox's headers; contract.h is beside the objects.
INCLUDES = ("-I", str(RUNTIME), "-I", str(sandbox.FOLDER))


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
    contract.h, the runner's flags and the compiler's version."""
    return cxx.source_hash(
        [*_runtime_files(), *sandbox.SOURCES, *sandbox.HEADERS],
        contract_header(),
        repr((FLAGS, LINK)),
    )


@cache
def _runtime_files() -> tuple[Path, ...]:
    """Every file of the runtime, listed once a process, as the runner is built once."""
    return tuple(p for p in RUNTIME.rglob("*") if p.is_file())


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
        [*FLAGS, *INCLUDES],
        list(LINK),
        "The CPU backend could not build its runner",
        {HEADER: contract_header()},
    )


# -- contract.h ----------------------------------------------------------------------------


def contract_header() -> str:
    """contract.h: the contract's names for the runner, and the check of the shim's codes
    against it."""
    numbers = [f"constexpr {t} {n} = {v:#x}u;" for n, (t, v) in contract.NUMBERS.items()]
    files = [f'constexpr const char* FILE_{n.upper()} = "{f}";' for n, f in contract.FILES.items()]
    checks = [
        f'static_assert({name} == {code:#x}, "grader_codes.h: {name} is not the contract\'s");'
        for name, code in shim_codes().items()
    ]
    return header.document(
        "GRADER_CONTRACT_H",
        "grader/backends/cpu/contract.py",
        ["<stddef.h>", "<stdint.h>", '"include/grader_codes.h"', '"keys.h"'],
        [
            *header.enum("Exit", "EXIT", contract.Exit),
            "",
            *numbers,
            "",
            "/* The keys of job.txt (read_job). */",
            *header.words("JobKey", "JOB", contract.JOB_KEYS),
            "",
            "/* The files of the job folder; each {} is a part of the name (runner.cpp). */",
            *files,
            "",
            "/* The shim's own copies of its codes, which every module is compiled against. */",
            *checks,
        ],
    )


def shim_codes() -> dict[str, int]:
    """Each code the shim's grader_codes.h names, by its name there."""
    return {
        spelling.format(member.name): member.value
        for kind, spelling in contract.SHIM_NAMES.items()
        for member in kind
    }
