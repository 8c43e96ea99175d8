"""Rules and defaults that several labs share."""

from __future__ import annotations

from grader.model.interface import Interface
from grader.model.lab import Requirement

# Libraries that would do the lab for the student, named early from the text where the `#`
# and its `include` share a line (a courtesy: no_library() reads what the compiled module
# holds, whatever the include's spelling, as for reduction's cub_spliced_include).
FORBIDDEN = (
    (
        r"#[^\S\n]*include\s*[<\"](?:cccl/)?(cublas|cudnn|cutlass|cute/|thrust/|cub/|cufft|npp)",
        "This lab is about writing the kernel yourself: remove the include of a CUDA library "
        "(cuBLAS, cuDNN, CUTLASS, Thrust, CUB, cuFFT, NPP).",
    ),
    (
        r"\bint\s+main\s*\(",
        "Remove main(): the grader allocates the buffers and launches your kernel itself, "
        "so a submission holds only the kernel and its helpers.",
    ),
)


def _uses_shared_memory(interface: Interface, kernel: str) -> str | None:
    sig = interface.kernels.get(kernel)
    if sig is None or sig.reads_shared is not False:
        return None  # missing (the interface check says so), or decided by the runs
    return (
        f"{kernel} reads no shared memory. This lab is about tiling: load tiles of the "
        "inputs into __shared__ arrays, synchronise, and compute from them."
    )


def _executed_no_shared_load(kernel: str, case: str) -> str:
    return (
        f"{kernel} executed no load from shared memory in case {case}: no read of a "
        "__shared__ array ran (if your code has one, it sits in a branch no thread takes). "
        "This lab is about tiling: every block loads tiles of the inputs into __shared__ "
        "arrays, synchronises, and computes from them."
    )


def module_shows(attribute: str):
    """Whether the module shows the kernel's `attribute` (KernelSig); a missing kernel is
    the interface check's to report."""

    def known(interface: Interface, kernel: str) -> bool:
        sig = interface.kernels.get(kernel)
        return sig is None or getattr(sig, attribute) is not None

    return known


def shared_memory() -> Requirement:
    """The kernel (or a function it calls) reads __shared__ memory, static or dynamic: an
    instruction that does is in the compiled module, and in every case one ran."""
    return Requirement(
        "shared_memory",
        _uses_shared_memory,
        says="the kernel reads shared memory",
        executes="shared_loads",
        not_executed=_executed_no_shared_load,
        known=module_shows("reads_shared"),
    )


def _mask_in_constant(interface: Interface, kernel: str, symbol: str) -> str | None:
    const = interface.constants.get(symbol)
    if const is None:
        return None  # the interface check says it is missing
    if const.space != "const":
        return (
            f"The mask {symbol} is declared in {const.space} memory. The lab asks for "
            f"__constant__ memory: declare it as `__constant__ float {symbol}[...]` so that "
            "every thread of a warp reads the same mask value through the constant cache."
        )
    sig = interface.kernels.get(kernel)
    reads = sig.reads_constants if sig else None
    if reads is None or symbol in reads:
        return None
    return (
        f"{kernel} never reads the __constant__ mask {symbol}: the grader fills {symbol} with "
        "the mask of each case, so read the mask's values from it."
    )


def mask_in_constant(symbol: str) -> Requirement:
    """The module puts `symbol` in the __constant__ space, and the kernel reads it."""
    return Requirement(
        "constant_mask",
        lambda interface, kernel: _mask_in_constant(interface, kernel, symbol),
        says=f"the kernel reads the mask {symbol} from __constant__ memory",
        known=module_shows("reads_constants"),
    )


def _holds_no_library(interface: Interface, kernel: str) -> str | None:
    if not interface.libraries:
        return None
    shown = "; ".join(f"{lib}: {why}" for lib, why in interface.libraries.items())
    return (
        f"This lab is about writing the kernel yourself, and your file uses a CUDA library "
        f"({shown}). Remove it and write the kernel's work yourself: no case is run "
        "while a library does it."
    )


def no_library() -> Requirement:
    """The module holds no CUDA library (CUB, Thrust, CUTLASS, cuBLAS...), by the headers
    its compile read and the names it holds (grader.toolchain.libraries); no case runs otherwise."""
    return Requirement(
        "no_library", _holds_no_library, says="the kernel uses no CUDA library", blocks=True
    )
