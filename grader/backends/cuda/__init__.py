"""The PyCUDA backend. Importing this package never imports PyCUDA: only the worker
process (`grader.backends.cuda.worker`) and the probe subprocess do. The backend's own
names load with their module when first asked for, so that neither the worker process
nor the grader's early start of it (client.start_early) imports the backend's other
modules."""

from importlib import import_module

from grader.backends.cuda.probe import probe

__all__ = ["CudaBackend", "probe", "sanitizer_available"]
_IN_BACKEND = ("CudaBackend", "sanitizer_available")


def __getattr__(name: str):
    if name not in _IN_BACKEND:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(import_module(f"{__name__}.backend"), name)
