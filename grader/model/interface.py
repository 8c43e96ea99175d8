"""What a compiled module offers (kernels, their parameters, `__constant__` symbols,
launch macros), and the check of that against what a lab expects.

Backends fill an `Interface` (from `nvcc -ptx`, or from the CPU build's own
registration); `check` turns every difference into a sentence for the student."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import NamedTuple

from grader import defaults
from grader.model.result import Diagnostic, KernelResources, Kind

LAUNCH_MACROS = ("BLOCK_X", "BLOCK_Y", "BLOCK_Z", "TILE_X", "TILE_Y", "TILE_Z")
MAX_THREADS_PER_BLOCK = 1024
MAX_STATIC_SHARED = 48 * 1024
MAX_CONSTANT = 64 * 1024
# A thread's local memory (its stack frame: local arrays, spilled registers): the GPU
# reserves it for every thread it can hold at once (16 GiB at this on an H200, out of
# what a batch's submissions share), and the CPU backend's fiber stack is this large
# (FIBER_STACK, grader.backends.cpu.contract).
MAX_LOCAL = 64 * 1024


class LaunchDefaults(NamedTuple):
    """A lab's launch macros for a file that does not define them: BLOCK_* as numbers,
    TILE_* as C expressions (TILE = BLOCK unless the lab says otherwise)."""

    block: tuple[int, int, int]
    tile: tuple[str, str, str] = ("BLOCK_X", "BLOCK_Y", "BLOCK_Z")


@dataclass
class ParamSig:
    size: int  # bytes
    ctype: str | None = None  # canonical C type when the backend knows it

    @property
    def is_pointer(self) -> bool | None:
        return None if self.ctype is None else self.ctype.endswith("*")


@dataclass
class KernelSig:
    name: str
    symbol: str  # the name in the module (mangled unless extern "C")
    params: list[ParamSig]
    resources: KernelResources | None = None
    max_threads: int | None = None  # from __launch_bounds__
    # What the compiled code reads, it or a function it calls (from PTX); None where the
    # module does not show it (the CPU build without nvcc).
    reads_shared: bool | None = None
    reads_constants: frozenset[str] | None = None  # __constant__ variables
    atomics: bool | None = None  # executes an atomic read-modify-write (atom, red)
    # Where its every global store is at its thread's element along x: each pointer
    # parameter stored through (its index) -> the element's bytes (toolchain.thread_stores).
    stores_by_thread: dict[int, int] | None = None


@dataclass
class Executed:
    """What one kernel executed in one run, where the backend counted it (None where it
    did not): loads from shared memory, and atomic read-modify-write operations. Counts
    come from the run, so a branch never taken counts nothing."""

    shared_loads: int | None = None
    atomics: int | None = None

    def plus(self, other: Executed) -> Executed:
        """Both runs' counts together (a kernel launched twice in one launch)."""

        def add(a: int | None, b: int | None) -> int | None:
            return None if a is None and b is None else (a or 0) + (b or 0)

        return Executed(
            add(self.shared_loads, other.shared_loads), add(self.atomics, other.atomics)
        )


@dataclass
class ConstantSig:
    name: str
    size: int  # bytes
    space: str = "const"  # "const" for __constant__, "global" for __device__


@dataclass
class Interface:
    kernels: dict[str, KernelSig] = field(default_factory=dict)
    constants: dict[str, ConstantSig] = field(default_factory=dict)
    launch: dict[str, int] = field(default_factory=dict)  # BLOCK_X .. TILE_Z
    dynamic_shared: bool = False  # the module declares extern __shared__ memory
    # CUDA libraries the module holds, each with what shows it (grader.toolchain.libraries)
    libraries: dict[str, str] = field(default_factory=dict)

    def block(self) -> tuple[int, int, int]:
        return (self.launch["BLOCK_X"], self.launch["BLOCK_Y"], self.launch["BLOCK_Z"])

    def tile(self) -> tuple[int, int, int]:
        return (self.launch["TILE_X"], self.launch["TILE_Y"], self.launch["TILE_Z"])

    def device_variables(self) -> list[str]:
        """The module's __device__ (and __managed__) variables, by symbol: the state its
        kernels keep. The compiler's own ($str, printf's formats) are no identifiers."""
        return [n for n, c in self.constants.items() if c.space == "global" and n.isidentifier()]


_CANONICAL = {
    "unsigned long": "size_t",
    "unsigned long long": "size_t",
    "unsigned int": "unsigned",
    "long long": "long",
    "signed int": "int",
}


def canonical_ctype(text: str) -> str:
    """'float const*' and 'const float *__restrict__' both become 'const float*'."""
    text = re.sub(r"\b(__restrict__|__restrict|restrict|volatile)\b", " ", text)
    stars = text.count("*")
    words = re.sub(r"[*&]", " ", text).split()
    is_const = "const" in words
    base = " ".join(w for w in words if w != "const")
    base = _CANONICAL.get(base, base)
    if stars:
        return f"{'const ' if is_const else ''}{base}{'*' * stars}"
    return base


def _pointee(ctype: str) -> str:
    return ctype.replace("const ", "").rstrip("*")


def _param_problem(expected_ctype: str, expected_size: int, got: ParamSig) -> str | None:
    """A clause saying why `got` cannot carry the lab's parameter, or None."""
    expected_ctype = canonical_ctype(expected_ctype)
    want_ptr = expected_ctype.endswith("*")
    if got.ctype is not None:
        if got.is_pointer != want_ptr:
            return "a pointer" if got.is_pointer else "not a pointer"
        if want_ptr and _pointee(got.ctype) != _pointee(expected_ctype):
            return f"a pointer to {_pointee(got.ctype)}"
    if got.size != expected_size:
        return f"{got.size} bytes wide, where the grader passes {expected_size} bytes"
    return None


def _ctype_size(ctype: str) -> int:
    return 8 if ctype.endswith("*") or ctype == "size_t" else 4


def check_kernel(expected, sig: KernelSig | None, defined: list[str]) -> list[Diagnostic]:
    """`expected` is the lab's grader.model.lab.Kernel."""
    want = expected.signature()
    if sig is None:
        others = f" It defines: {', '.join(defined)}." if defined else " It defines no kernel."
        return [
            Diagnostic(
                Kind.INTERFACE,
                f"The lab launches a kernel named {expected.name}, but your file does not "
                f"define one.{others} Expected: {want}",
                kernel=expected.name,
            )
        ]
    if len(sig.params) != len(expected.params):
        return [
            Diagnostic(
                Kind.INTERFACE,
                f"{expected.name} takes {len(sig.params)} parameters in your file, but the "
                f"grader passes {len(expected.params)}. Expected: {want}",
                kernel=expected.name,
            )
        ]
    out = []
    for pos, (param, got) in enumerate(zip(expected.params, sig.params, strict=True), 1):
        problem = _param_problem(param.ctype, _ctype_size(param.ctype), got)
        if problem:
            shown = f"`{got.ctype}`, " if got.ctype else ""
            out.append(
                Diagnostic(
                    Kind.INTERFACE,
                    f"Parameter {pos} of {expected.name} ({param.name}) is {shown}{problem}; "
                    f"the lab passes `{param.signature()}`. Expected: {want}",
                    kernel=expected.name,
                )
            )
    return out


def check_constants(constants, interface: Interface, sizes) -> list[Diagnostic]:
    """`constants` are the lab's grader.model.lab.Constant entries."""
    out = []
    filled = {const.name for const in constants}
    # the file's own __constant__ arrays, which may be the one it meant (mangled: no name)
    own = [
        c for name, c in interface.constants.items()
        if c.space == "const" and name not in filled and not name.startswith("_Z")
    ]  # fmt: skip
    for const in constants:
        want_bytes = 4 * const.elements(sizes)
        got = interface.constants.get(const.name)
        if got is None and own:
            yours = ", ".join(c.name for c in own)
            out.append(
                Diagnostic(
                    Kind.INTERFACE,
                    f"The grader fills the __constant__ array {const.name} by its name, and "
                    f"your file declares no {const.name}; its own __constant__: {yours}. "
                    f"Name the array the lab fills {const.name}: "
                    f"`__constant__ float {const.declaration};` at file scope.",
                )
            )
        elif got is None:
            out.append(
                Diagnostic(
                    Kind.INTERFACE,
                    f"The grader fills the __constant__ array {const.name}, but your file "
                    f"does not declare it. Declare `__constant__ float {const.declaration};` "
                    "at file scope.",
                )
            )
        elif got.size != want_bytes:
            macros = ", ".join(f"{k}={v}" for k, v in sizes.items() if k.isupper())
            out.append(
                Diagnostic(
                    Kind.INTERFACE,
                    f"{const.name} holds {got.size // 4} floats in your file, but the lab "
                    f"fills {want_bytes // 4}{f' ({macros})' if macros else ''}. Declare it "
                    f"as {const.declaration} and do not #define the lab's macros yourself: "
                    "the grader sets them, and hidden cases use other values.",
                )
            )
    return out


def check_launch(interface: Interface, kernels: list[str]) -> list[Diagnostic]:
    """Block and tile macros must be positive, the block must fit the hardware and the
    __launch_bounds__ of each of `kernels` (the lab's, in the module, launched in order)."""
    launch = interface.launch
    bad = [name for name in LAUNCH_MACROS if launch.get(name, 0) <= 0]
    if bad:
        values = ", ".join(f"{n}={launch.get(n)}" for n in bad)
        return [Diagnostic(Kind.RESOURCES, f"Launch macros must be positive: {values}.")]
    threads = launch["BLOCK_X"] * launch["BLOCK_Y"] * launch["BLOCK_Z"]
    shape = "x".join(str(launch[n]) for n in LAUNCH_MACROS[:3])
    out = []
    if threads > MAX_THREADS_PER_BLOCK:
        out.append(
            Diagnostic(
                Kind.RESOURCES,
                f"A block of {shape} = {threads} threads is more than the "
                f"{MAX_THREADS_PER_BLOCK} a GPU allows. Make BLOCK_X*BLOCK_Y*BLOCK_Z smaller.",
                kernel=kernels[0],
            )
        )
    for kernel in kernels:
        sig = interface.kernels[kernel]
        if sig.max_threads and threads > sig.max_threads:
            out.append(
                Diagnostic(
                    Kind.RESOURCES,
                    f"{kernel} is declared __launch_bounds__({sig.max_threads}), but the "
                    f"grader launches blocks of {shape} = {threads} threads, as BLOCK_X, "
                    "BLOCK_Y and BLOCK_Z say.",
                    kernel=kernel,
                )
            )
    return out


def check_limits(lab, interface: Interface, kernel: str) -> list[Diagnostic]:
    """Launch macros outside the range the lab accepts (`lab.limits`, `lab.minimums`)."""
    out = []
    for name, value in interface.launch.items():
        low, high = lab.minimums.get(name), lab.limits.get(name)
        if high is not None and value > high:
            found = f"this lab accepts {name} up to {high}. Make {name} at most {high}."
        elif low is not None and value < low:
            found = (
                f"this lab needs {name} of at least {low}: with less, each block leaves the "
                f"lab's work to the grader. Make {name} at least {low}."
            )
        else:
            continue
        message = f"This file sets {name} = {value}, and {found}"
        out.append(Diagnostic(Kind.RESOURCES, message, kernel=kernel))
    return out


def check_resources(interface: Interface) -> list[Diagnostic]:
    out = []
    for sig in interface.kernels.values():
        res = sig.resources
        if res and res.local_bytes > MAX_LOCAL:
            out.append(
                Diagnostic(
                    Kind.RESOURCES,
                    f"{sig.name} keeps {res.local_bytes} bytes of local memory per thread (its "
                    f"local arrays and spilled registers); a thread may have at most {MAX_LOCAL} "
                    "(64 KB), since the GPU reserves it for every thread it can hold at once. "
                    "Keep large arrays in the buffers the grader passes or in shared memory.",
                    kernel=sig.name,
                )
            )
        if res and res.shared_bytes > MAX_STATIC_SHARED:
            out.append(
                Diagnostic(
                    Kind.RESOURCES,
                    f"{sig.name} declares {res.shared_bytes} bytes of static shared memory; "
                    f"a block may have at most {MAX_STATIC_SHARED} (48 KB).",
                    kernel=sig.name,
                )
            )
    total_const = sum(c.size for c in interface.constants.values() if c.space == "const")
    if total_const > MAX_CONSTANT:
        out.append(
            Diagnostic(
                Kind.RESOURCES,
                f"Your __constant__ arrays take {total_const} bytes; constant memory holds "
                f"{MAX_CONSTANT} (64 KB).",
            )
        )
    total_device = sum(c.size for c in interface.constants.values() if c.space == "global")
    if total_device > defaults.DEVICE_DATA_BYTES:
        out.append(
            Diagnostic(
                Kind.RESOURCES,
                f"Your __device__ variables take {_mib(total_device)}; a module may hold at "
                f"most {_mib(defaults.DEVICE_DATA_BYTES)} of them. Compute in the buffers the "
                "grader passes, or declare a smaller scratch array.",
            )
        )
    return out


def module_size(size: int, interface: Interface | None) -> Diagnostic | None:
    """A compile error for a compiled module (a CPU module, a cubin) of `size` bytes when
    it is over defaults.MODULE_BYTES, naming its largest variable."""
    if size <= defaults.MODULE_BYTES:
        return None
    variables = interface.constants.values() if interface else []
    largest = max(variables, key=lambda v: v.size, default=None)
    cap = _mib(defaults.MODULE_BYTES)
    if largest and largest.size > defaults.MODULE_BYTES:
        # the variable's size, the same in every build of the file (a census build's
        # module, or another compiler's, is not), so that its builds say one sentence
        said = f"The compiled kernel is more than the {cap} a submission's module may be: "
        said += f"{largest.name} alone is {_mib(largest.size)}"
    else:
        named = f"; {largest.name} alone is {_mib(largest.size)}" if largest else ""
        said = f"The compiled kernel is {_mib(size)}, more than the {cap} a submission's "
        said += f"module may be{named}"
    return Diagnostic(
        Kind.COMPILE_ERROR,
        f"{said}. A __device__ array with an initializer is stored whole in the module: "
        "declare a large one without an initializer and fill it in a kernel.",
    )


def _mib(size: int) -> str:
    return f"{size / (1 << 20):.3g} MiB"


def check(lab, interface: Interface, sizes) -> list[Diagnostic]:
    """Every way the module does not fit `lab` (a grader.model.lab.Lab) at `sizes`. The
    lab's rules are read from the module too, never from the text."""
    kernel = lab.kernel.name
    defined = sorted(interface.kernels)
    out = []
    for expected in lab.kernels:
        out += check_kernel(expected, interface.kernels.get(expected.name), defined)
    out += check_constants(lab.constants, interface, sizes)
    launched = list(dict.fromkeys(k.name for k in lab.kernels if k.name in interface.kernels))
    if launched:
        out += check_launch(interface, launched)
    out += check_limits(lab, interface, kernel)
    out += check_resources(interface)
    for req in lab.requirements:
        message = req.check(interface, kernel)
        if message:
            out.append(Diagnostic(Kind.REQUIREMENT, message, kernel=kernel))
    return out
