"""Rules and defaults that several labs share."""

from __future__ import annotations

from grader.interface import Interface
from grader.labs.model import Requirement

# Libraries that would do the lab for the student.
FORBIDDEN = (
    (
        r"#\s*include\s*[<\"](cublas|cudnn|cutlass|cute/|thrust/|cub/|cufft|npp)",
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
    if sig is None:
        return None  # the interface check says the kernel is missing
    if sig.reads_shared is not None:
        uses = sig.reads_shared
    else:  # the CPU build without nvcc: whether the kernel has any shared memory
        static = sig.resources.shared_bytes if sig.resources else 0
        uses = static > 0 or interface.dynamic_shared
    if uses:
        return None
    return (
        f"{kernel} reads no shared memory. This lab is about tiling: load tiles of the "
        "inputs into __shared__ arrays, synchronise, and compute from them."
    )


def shared_memory() -> Requirement:
    """The compiled kernel (or a function it calls) reads __shared__ memory, static or
    dynamic."""
    return Requirement("shared_memory", _uses_shared_memory)


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
        "constant_mask", lambda interface, kernel: _mask_in_constant(interface, kernel, symbol)
    )
