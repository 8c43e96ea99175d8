"""Rules and defaults that several labs share."""

from __future__ import annotations

import re

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


def _uses_shared_memory(source: str, interface: Interface, kernel: str) -> str | None:
    sig = interface.kernels.get(kernel)
    static_bytes = sig.resources.shared_bytes if sig and sig.resources else 0
    if static_bytes > 0 or re.search(r"\b__shared__\b", source):
        return None
    return (
        f"{kernel} uses no shared memory. This lab is about tiling: load tiles of the "
        "inputs into __shared__ arrays, synchronise, and compute from them."
    )


def shared_memory(kernel: str) -> Requirement:
    return Requirement(
        "shared_memory", lambda source, interface: _uses_shared_memory(source, interface, kernel)
    )


def _mask_in_constant(source: str, interface: Interface, symbol: str) -> str | None:
    const = interface.constants.get(symbol)
    if const is None or const.space == "const":
        return None
    return (
        f"The mask {symbol} is declared in {const.space} memory. The lab asks for "
        f"__constant__ memory: declare it as `__constant__ float {symbol}[...]` so that "
        "every thread of a warp reads the same mask value through the constant cache."
    )


def mask_in_constant(symbol: str) -> Requirement:
    return Requirement(
        "constant_mask", lambda source, interface: _mask_in_constant(source, interface, symbol)
    )
