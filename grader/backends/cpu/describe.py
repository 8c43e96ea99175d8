"""What a compiled module offers, read from its ELF file: each registered kernel's
parameter types and __launch_bounds__, each __constant__ and __device__ variable, the
launch macros' values, and each kernel's static shared memory (its thread_local
symbols). Nothing of the module runs."""

from __future__ import annotations

import re
import struct
from dataclasses import dataclass, field
from pathlib import Path

from grader.backends.cpu.contract import BASE_TYPES, Magic
from grader.backends.cpu.elf import STT_TLS, Elf, ElfError
from grader.model.interface import ConstantSig, Interface, KernelSig, ParamSig, canonical_ctype
from grader.model.result import KernelResources
from grader.model.source import LAUNCH_SYMBOL, launch_values

_ANCHOR = "grader_tls_anchor"
_SHARED_DECL = "grader_shared_"  # a static __shared__ declaration's descriptor (scan.py)


@dataclass
class Variable:
    size: int
    space: str  # "const" or "global"
    writable: bool


@dataclass
class Description:
    interface: Interface
    codes: dict[str, list[int]] = field(default_factory=dict)  # kernel -> type codes
    variables: dict[str, Variable] = field(default_factory=dict)
    # Whether the module can set the flag that makes the race check tolerant: only one
    # that uses float atomics refers to it.
    float_atomics: bool = False


def ctype_of(code: int) -> str | None:
    """The C type a registration type code stands for; None for other structs."""
    base = BASE_TYPES.get(code & 0xFF)
    if base is None:
        return None
    depth = (code >> 8) & 0xF
    const = "const " if (code >> 12) & 1 else ""
    return canonical_ctype(f"{const}{base}{'*' * depth}") if depth else canonical_ctype(base)


def describe(path: Path) -> Description:
    """Raises ElfError for a module the grader cannot read, or one whose grader_ symbols
    are not what the registration wrote: the submission defined one of its own."""
    elf = Elf(path)
    shared = _shared_bytes(elf)
    common = shared.pop(None, 0)
    out = Description(Interface())
    for name, symbol in sorted(elf.symbols.items()):
        if name.startswith("grader_sig_"):
            kernel = name[len("grader_sig_") :]
            data = elf.read(symbol)
            magic, count, bounds, _ = _unpack("<4i", data, 0, name)
            if magic != Magic.SIG:
                continue
            if count < 0:
                raise _forged(name)
            codes = list(_unpack(f"<{count}i", data, 16, name))
            sizes = list(_unpack(f"<{count}i", data, 16 + 4 * (count + 1), name))
            params = [
                ParamSig(size, ctype_of(code)) for code, size in zip(codes, sizes, strict=True)
            ]
            resources = KernelResources(shared_bytes=shared.get(kernel, 0) + common)
            out.interface.kernels[kernel] = KernelSig(
                kernel, kernel, params, resources, bounds if bounds > 0 else None
            )
            out.codes[kernel] = codes
        elif name.startswith("grader_var_"):
            var = name[len("grader_var_") :]
            magic, space, writable, _, size = _unpack("<4iq", elf.read(symbol), 0, name)
            if magic != Magic.VAR:
                continue
            out.variables[var] = Variable(size, "const" if space == 1 else "global", writable == 1)
            if var != LAUNCH_SYMBOL:
                out.interface.constants[var] = ConstantSig(var, size, out.variables[var].space)
    undefined = elf.undefined()
    # Reads are not visible in machine code: a kernel's reads_shared stays unknown, and
    # the rule falls back to whether it has shared memory at all.
    out.interface.dynamic_shared = "grader_rt_dynamic_shared" in undefined
    out.float_atomics = "grader_rt_float_atomics" in undefined
    launch = elf.symbols.get(LAUNCH_SYMBOL)
    if launch is not None and launch.size >= 24:
        raw = _unpack("<6i", elf.read(launch), 0, LAUNCH_SYMBOL)
        out.interface.launch = launch_values(list(raw))
    return out


def _unpack(layout: str, data: bytes, offset: int, name: str) -> tuple:
    if struct.calcsize(layout) + offset > len(data):
        raise _forged(name)
    return struct.unpack_from(layout, data, offset)


def _forged(name: str) -> ElfError:
    return ElfError(
        f"The compiled module defines {name}, which is not the grader's own: names that "
        "start with grader_ are reserved for the grader; rename it."
    )


def _shared_bytes(elf: Elf) -> dict[str | None, int]:
    """Static __shared__ bytes per function that declares them; None for those at file
    scope (counted for every kernel). A rewritten declaration has a descriptor
    (grader_shared_decl in the shim) holding its size; one left as it was is thread_local."""
    out: dict[str | None, int] = {}
    for name, symbol in elf.symbols.items():
        if symbol.type == STT_TLS and _ANCHOR not in name:
            size = symbol.size
        elif _SHARED_DECL in name and symbol.size >= 16:
            magic, _slot, size = _unpack("<iiq", elf.read(symbol), 0, name)
            if magic != Magic.SHARED:
                continue
        else:
            continue
        owner = _owner(name)
        out[owner] = out.get(owner, 0) + size
    return out


def _owner(symbol: str) -> str | None:
    """The function a function-local static belongs to, from its mangled name:
    _ZZ6matmulPKfS0_PfiE2Ms -> matmul, _ZZN2ns1kEvE1s -> k."""
    if not symbol.startswith("_ZZ"):
        return None
    rest = symbol[3:]
    nested = rest.startswith("N")
    rest = rest[1:] if nested else rest
    name = None
    while True:
        match = re.match(r"(\d{1,9})", rest)  # a length; int() refuses thousands of digits
        if not match:
            break
        length = int(match.group(1))
        name = rest[match.end() : match.end() + length]
        rest = rest[match.end() + length :]
        if not nested:
            break
    return name
