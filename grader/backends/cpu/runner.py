"""The runner: the CPU backend's worker executable (runtime/runner.cpp says what it does),
built once per machine from runtime/*.cpp, the toolchain's sandbox, which it applies to
itself, and contract.h, written here from grader.backends.cpu.contract; cached under
`grader.defaults.cache_dir()/cpu/runner-HASH/`, where HASH covers all of them and the
compiler's version."""

from __future__ import annotations

import platform
import tempfile
from functools import cache
from pathlib import Path

from grader import defaults
from grader.backends.cpu import contract
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
# -Werror=switch: a switch over an enum of contract.h (read_job's over the job's keys)
# handles every member
FLAGS = ("-std=gnu++17", "-O2", "-g", "-pthread", "-fno-omit-frame-pointer", "-Werror=switch")
HEADER = "contract.h"


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
    return cxx.source_hash([*runtime, *sandbox.SOURCES, *sandbox.HEADERS], header())


@cache
def executable() -> Path:
    """The runner executable, built on first use."""
    sandbox.require_linux()
    folder = defaults.cache_dir() / "cpu" / f"runner-{runtime_hash()}"
    return cxx.built_once(folder / "runner", _build)


def _build(folder: Path) -> None:
    own = [RUNTIME / s for s in (*SOURCES, *([fiber_source()] if fiber_source() else []))]
    with tempfile.TemporaryDirectory(prefix="grader-contract-", dir=folder.parent) as generated:
        (Path(generated) / HEADER).write_text(header())
        cxx.build_program(
            folder,
            "runner",
            [*own, *sandbox.LINKED],
            [*FLAGS, *include_flags(Path(generated))],
            ["-rdynamic", "-ldl"],
            "The CPU backend could not build its runner",
        )


def include_flags(generated: Path) -> list[str]:
    """Where the runtime's sources find their headers: contract.h in `generated`, the
    shim's codes (include/grader_codes.h) and the sandbox's."""
    return ["-I", str(generated), "-I", str(RUNTIME), "-I", str(sandbox.FOLDER)]


# -- contract.h ----------------------------------------------------------------------------


def header() -> str:
    """contract.h: the contract's names for the runner, and the check of the shim's."""
    exits = [f"    EXIT_{e.name} = {e.value}," for e in contract.Exit]
    numbers = [f"constexpr {t} {n} = {v:#x}u;" for n, (t, v) in contract.NUMBERS.items()]
    keys = [f"    JOB_{k.upper()}," for k in contract.JOB_KEYS]
    rules = [f'    {{"{k}", {a}, {b}}},' for k, (a, b) in contract.JOB_KEYS.items()]
    files = [f'constexpr const char* FILE_{n.upper()} = "{f}";' for n, f in contract.FILES.items()]
    checks = [
        f'static_assert({name} == {code:#x}, "grader_codes.h: {name} is not the contract\'s");'
        for name, code in shim_codes().items()
    ]
    return "\n".join(
        [
            "/* Written by grader/backends/cpu/runner.py from grader/backends/cpu/contract.py,",
            "   the one table of what the runner and the grader share: edit that, not this. */",
            "#ifndef GRADER_CONTRACT_H",
            "#define GRADER_CONTRACT_H",
            "",
            "#include <stddef.h>",
            "#include <stdint.h>",
            "",
            '#include "include/grader_codes.h"',
            "",
            "namespace rt {",
            "",
            "enum Exit {",
            *exits,
            "};",
            "",
            *numbers,
            "",
            "/* The keys of job.txt, and how many lines of each a job has (most -1: any). */",
            "enum JobKey {",
            *keys,
            "};",
            f"constexpr int JOB_KEYS = {len(contract.JOB_KEYS)};",
            "struct JobKeyRule {",
            "    const char* word;",
            "    int least, most;",
            "};",
            "constexpr JobKeyRule JOB_KEY_RULES[JOB_KEYS] = {",
            *rules,
            "};",
            "",
            "/* The files of the job folder; each {} is a part of the name (runner.cpp). */",
            *files,
            "",
            "}  // namespace rt",
            "",
            *checks,
            "",
            "#endif",
            "",
        ]
    )


def shim_codes() -> dict[str, int]:
    """Each code the shim's grader_codes.h names, by its name there."""
    return {
        spelling.format(member.name): member.value
        for kind, spelling in contract.SHIM_NAMES.items()
        for member in kind
    }
