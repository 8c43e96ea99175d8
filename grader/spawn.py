"""Starting the grader's own Python helpers (the CUDA probe, the GPU worker, the batch
worker, the wheel build) so that nothing but the grader decides what they import, and
nothing of the TA's environment reaches them.

`python -m` puts the current folder first on the import path, so a `grader/` folder in a
student's repository would be imported instead of the grader by a helper started from
inside a clone. Helpers therefore run isolated (`python -I`: no current folder, no
PYTHONPATH, no user site) and are handed the import path explicitly: the folder this very
`grader` package was imported from, then the starting process's own path, without the
working folder. So a grader run from a checkout through PYTHONPATH starts helpers that find
the same grader and dependencies. Their environment is built from a short list, never
copied, and never holds the secret: a batch worker gets it over a pipe."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import grader
from grader.defaults import SECRET_ENV

# What compilers, CUDA and Python need, and nothing personal (tokens, credentials).
KEPT = ("PATH", "HOME", "LANG", "TMPDIR", "CC", "CXX", "LD_LIBRARY_PATH", "VIRTUAL_ENV",
        "XDG_CACHE_HOME")  # fmt: skip
KEPT_PREFIXES = ("LC_", "CUDA_", "NVIDIA_", "GRADER_")  # GRADER_*: the grader's own settings


def helper_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    """A helper's whole environment: the kept variables of this one, never the secret,
    and `extra`."""
    env = {
        name: value
        for name, value in os.environ.items()
        if (name in KEPT or name.startswith(KEPT_PREFIXES)) and name != SECRET_ENV
    }
    env.update(extra or {})
    return env


def import_path() -> list[str]:
    """Where a helper imports from: the folder holding this `grader` package, then this
    process's own path without the working folder or any relative entry."""
    root = str(Path(grader.__file__).resolve().parents[1])
    here = _working_folder()
    kept = [p for p in sys.path if os.path.isabs(p) and os.path.realpath(p) != here]
    return list(dict.fromkeys([root, *kept]))


def python_code(code: str, *args: str) -> list[str]:
    """The argv that runs Python `code` with `args` isolated, on import_path()."""
    boot = f"import sys; sys.path[:] = {import_path()!r}\n{code}"
    return [sys.executable, "-I", "-u", "-c", boot, *args]


def python_module(module: str, *args: str) -> list[str]:
    """The argv of `python -m MODULE ARGS`, isolated as python_code is."""
    run = f"import runpy; runpy.run_module({module!r}, run_name='__main__', alter_sys=True)"
    return python_code(run, *args)


def _working_folder() -> str | None:
    try:
        return os.path.realpath(os.getcwd())
    except OSError:  # it was removed under us: nothing can be imported from it either
        return None
