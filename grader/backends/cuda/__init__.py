"""The PyCUDA backend. Importing this package never imports PyCUDA: only the worker
process (`grader.backends.cuda.worker`) and the probe subprocess do."""

from grader.backends.cuda.backend import CudaBackend, sanitizer_available
from grader.backends.cuda.probe import probe

__all__ = ["CudaBackend", "probe", "sanitizer_available"]
