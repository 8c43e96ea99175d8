"""Choosing a backend. Imports are lazy so that the CPU path never imports PyCUDA."""

from __future__ import annotations

from typing import TYPE_CHECKING

from grader.errors import SetupError, UsageError

if TYPE_CHECKING:  # each backend is imported where chosen: start_early comes before them
    from grader.backends.base import Backend

NAMES = ("auto", "cuda", "cpu")


def gpu_status() -> tuple[bool, str]:
    """Whether a CUDA device is usable here, and if not, a sentence saying why."""
    from grader.backends.cuda import probe

    return probe()


def start_early(name: str) -> None:
    """Start now what the backend `name` starts first, where that is the cuda backend
    (`cuda`, or `auto` with a usable GPU): its GPU worker, which the backend then takes
    (grader.backends.cuda.client.start_early). Nothing for the CPU backend."""
    if name in ("cuda", "auto") and gpu_status()[0]:
        from grader.backends.cuda.client import start_early as start_worker

        start_worker()


def get_backend(name: str, *, jobs: int | None = None, allow_unsandboxed: bool = False) -> Backend:
    if name not in NAMES:
        raise UsageError(f"Unknown backend {name!r}: choose one of {', '.join(NAMES)}.")
    if name in ("cuda", "auto"):
        usable, why = gpu_status()
        if usable:
            from grader.backends.cuda import CudaBackend

            return CudaBackend(allow_unsandboxed=allow_unsandboxed)
        if name == "cuda":
            why = why if why.endswith(".") else f"{why}."
            raise SetupError(
                f"--backend cuda needs a usable NVIDIA GPU, and this machine has none: {why} "
                "Use --backend cpu (or auto) to check correctness on the CPU."
            )
    from grader.backends.cpu import CpuBackend

    return CpuBackend(jobs=jobs, allow_unsandboxed=allow_unsandboxed)
