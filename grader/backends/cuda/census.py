"""The GPU's census of what a kernel executed: the module's PTX, instrumented to count
every shared-memory load and every atomic operation that runs, so that a load in a
branch never taken counts nothing, as on the CPU backend (runtime/counts.cpp).

Before each instruction that reads shared memory (ld, ldu, ldmatrix, atom or red in the
.shared space, wmma.load from it, a copy out of it) or that is atomic (atom, red), the
module adds 1 to a counter in a global array of two, under the instruction's own guard
predicate; before a load or atomic in the generic space, it adds 1 only where the
address is in shared memory (isspacep.shared). The array has a name drawn for each
grading, so the submission's code cannot name it (faking a count would cost it no less
than one real shared load, which is all the rules ask for). The worker loads this PTX
beside the module it runs, launches the census case once with it, and reads the two
counters back after each kernel (grader.backends.cuda.worker)."""

from __future__ import annotations

import re
import secrets

from grader.toolchain import ptx

SHARED_LOADS, ATOMICS = 0, 1  # the counters' indices
_SPACES = {"global", "shared", "local", "const", "param", "tex", "surf"}
_GENERIC_ACCESS = ("ld", "ldu", "atom", "red")
_ADDRESS = re.compile(r"\[\s*(?P<register>%[\w$]+)\s*(?:[+-][^\]]*)?\]")


def module_key(key: str) -> str:
    """The worker's key for the census module of the module loaded as `key`."""
    return f"{key}:census"


def symbol() -> str:
    """A fresh name for the counters: the submission cannot know it."""
    return f"census_{secrets.token_hex(8)}"


def instrument(text: str, name: str) -> str:
    """`text` (a module's PTX) with its counters, the array `name`, added."""
    code = ptx.clean(text)
    inserts = []
    for function in ptx.functions(code).values():
        for ins in function.body:
            counted = _counting(ins, name)
            if counted:
                inserts.append((ins.start, counted))
    header = re.search(r"^[ \t]*\.address_size[^\n]*$", code, re.MULTILINE) or re.search(
        r"^[ \t]*\.target[^\n]*$", code, re.MULTILINE
    )
    at = header.end() if header else 0
    inserts.append((at, f"\n.visible .global .align 8 .u64 {name}[2] = {{0, 0}};\n"))
    out, last = [], 0
    for at, piece in sorted(inserts, key=lambda pair: pair[0]):
        out += [text[last:at], piece]
        last = at
    out.append(text[last:])
    return "".join(out)


def _counting(ins: ptx.Instruction, name: str) -> str:
    """The PTX that counts `ins` when it runs, placed before it (a generic load may
    overwrite its own address register)."""
    guard = f"{ins.guard} " if ins.guard else ""
    out = ""
    if ptx.reads_shared(ins) and ins.base != "cvta":  # cvta takes an address, reads nothing
        out += f"{guard}red.global.add.u64 [{name}+{8 * SHARED_LOADS}], 1; "
    elif ins.base in _GENERIC_ACCESS and not _SPACES & set(ins.modifiers):
        address = _ADDRESS.search(ins.operands)
        if address and address["register"].startswith("%rd"):  # nvcc's 64-bit registers
            flag = f"%{name}_p"
            out += (
                f"{{ .reg .pred {flag}; mov.pred {flag}, 0; "
                f"{guard}isspacep.shared {flag}, {address['register']}; "
                f"@{flag} red.global.add.u64 [{name}+{8 * SHARED_LOADS}], 1; }} "
            )
    if ptx.is_atomic(ins):
        out += f"{guard}red.global.add.u64 [{name}+{8 * ATOMICS}], 1; "
    return out
