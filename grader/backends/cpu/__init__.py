"""The CPU backend: run unmodified CUDA kernels without a GPU (see backend.py)."""

from grader.backends.cpu.backend import CpuBackend

__all__ = ["CpuBackend"]
