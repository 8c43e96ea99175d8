"""CUDA errors as the student should read them.

PyCUDA raises with the driver's text ("cuCtxSynchronize failed: an illegal memory access
was encountered"). `classify` maps that text to a diagnostic kind, a sentence, and
whether the error is sticky: after a sticky error the context is dead and the worker
that saw it must exit."""

from __future__ import annotations

from dataclasses import dataclass

from grader.model.result import Diagnostic, Kind

SANITIZE_HINT = (
    "Run `grader check` again with --sanitize (or with --backend cpu) to see the thread, "
    "the block and the line."
)


@dataclass(frozen=True)
class CudaError:
    pattern: str  # lower-case text of cuGetErrorString
    name: str  # the CUresult name, for searching the web
    kind: Kind
    sticky: bool
    explain: str


# Errors from the kernel itself leave the context unusable (sticky); launch-configuration
# errors are refused before the kernel starts and leave it intact.
KNOWN = (
    CudaError(
        "illegal memory access",
        "CUDA_ERROR_ILLEGAL_ADDRESS",
        Kind.CRASH,
        True,
        "a thread read or wrote an address outside every buffer, for example an index past "
        "the end of an array or a pointer that was never set.",
    ),
    CudaError(
        "misaligned address",
        "CUDA_ERROR_MISALIGNED_ADDRESS",
        Kind.CRASH,
        True,
        "a thread accessed memory at an address that is not a multiple of the access size, "
        "for example a float read through a pointer moved by a number of bytes that is not "
        "a multiple of 4.",
    ),
    CudaError(
        "illegal instruction",
        "CUDA_ERROR_ILLEGAL_INSTRUCTION",
        Kind.CRASH,
        True,
        "the GPU met an instruction it could not execute, often after a corrupted function "
        "pointer or stack.",
    ),
    CudaError(
        "hardware stack error",
        "CUDA_ERROR_HARDWARE_STACK_ERROR",
        Kind.CRASH,
        True,
        "a thread overflowed its stack: deep recursion or a very large local array.",
    ),
    CudaError(
        "device-side assert",
        "CUDA_ERROR_ASSERT",
        Kind.CRASH,
        True,
        "an assert() in your kernel failed.",
    ),
    CudaError(
        "invalid program counter",
        "CUDA_ERROR_INVALID_PC",
        Kind.CRASH,
        True,
        "a thread jumped to an invalid code address.",
    ),
    CudaError(
        "operation not supported on global/shared address space",
        "CUDA_ERROR_INVALID_ADDRESS_SPACE",
        Kind.CRASH,
        True,
        "a thread used a pointer in the wrong memory space, for example a shared-memory "
        "address where a global one was expected.",
    ),
    CudaError(
        "launch timed out",
        "CUDA_ERROR_LAUNCH_TIMEOUT",
        Kind.CRASH,
        True,
        "the kernel ran past the display watchdog's limit.",
    ),
    CudaError(
        "unspecified launch failure",
        "CUDA_ERROR_LAUNCH_FAILED",
        Kind.CRASH,
        True,
        "the GPU stopped the kernel, usually because a thread accessed memory it may not.",
    ),
    CudaError(
        "too many resources requested",
        "CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES",
        Kind.RESOURCES,
        False,
        "a block of this size needs more registers than a multiprocessor has. Use fewer "
        "threads per block, or fewer registers per thread (simpler code, or "
        "__launch_bounds__).",
    ),
    CudaError(
        "invalid argument",
        "CUDA_ERROR_INVALID_VALUE",
        Kind.RESOURCES,
        False,
        "the GPU refused the launch configuration: a block may have at most 1024 threads "
        "(and 64 along z), and a block's shared memory is limited.",
    ),
    CudaError(
        "out of memory",
        "CUDA_ERROR_OUT_OF_MEMORY",
        Kind.CRASH,
        False,
        "the GPU has no memory left for the buffers of this case.",
    ),
)


def lookup(message: str) -> CudaError | None:
    text = message.lower()
    return next((err for err in KNOWN if err.pattern in text), None)


def is_sticky(message: str) -> bool:
    """Unknown errors count as sticky: a fresh worker is cheaper than a wrong verdict."""
    known = lookup(message)
    return True if known is None else known.sticky


def driver_text(message: str) -> str:
    """'cuCtxSynchronize failed: an illegal memory access was encountered' -> the part
    after the function name."""
    head, sep, tail = message.partition(" failed: ")
    return tail.strip() if sep else message.strip()


def diagnostic(message: str, kernel: str, launch_shape: str, at_launch: bool) -> Diagnostic:
    """The diagnostic for a CUDA error that stopped `kernel`. `launch_shape` describes
    the launch, e.g. 'grid (33,33,1), block (16,16,1), 0 bytes of dynamic shared memory';
    `at_launch` says the launch call itself failed (a configuration the GPU refuses)."""
    known = lookup(message)
    text = driver_text(message)
    if known is None or (known.kind == Kind.RESOURCES and not at_launch):
        return Diagnostic(
            Kind.CRASH,
            f"{kernel} stopped with a CUDA error: {text}. {SANITIZE_HINT}",
            kernel=kernel,
        )
    if known.kind == Kind.RESOURCES:
        return Diagnostic(
            Kind.RESOURCES,
            f"The GPU refused to launch {kernel} with {launch_shape}: {text} "
            f"({known.name}). This means {known.explain}",
            kernel=kernel,
        )
    return Diagnostic(
        Kind.CRASH,
        f"{kernel} stopped with a CUDA error: {text} ({known.name}). This means "
        f"{known.explain} {SANITIZE_HINT}",
        kernel=kernel,
    )
