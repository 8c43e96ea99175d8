"""A student's clone that carries its own `grader/`, `numpy/` and `pycuda/` packages, each
of which notes in a marker file that it was imported, by which command and with which
secret; the grader started from inside it as its console script is; and a kernel whose
global constructor prints the environment it runs with."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

PLANTED = ("grader/__init__.py", "numpy/__init__.py", "pycuda/__init__.py")
_HOSTILE = """import os, sys
with open({marker!r}, "a", encoding="utf-8") as f:
    f.write(repr((__name__, sys.argv, os.environ.get("GRADER_SECRET"))) + "\\n")
"""
# What the `grader` console script runs: its own folder, not the working one, is on the path.
_ENTRY = "import sys\nfrom grader.cli import main\nsys.exit(main())\n"

# A correct matmul whose global constructor keeps its environment and whose first thread
# prints it. Only the CPU backend runs a .cu file's host code; nvcc never sees the print.
SPY = r"""
#include <cstdio>
#include <cstring>
extern char** environ;
static char seen[8192];
static int look() {
    for (char** e = environ; *e; ++e) {
        if (strlen(seen) + strlen(*e) + 2 >= sizeof seen) break;
        strcat(seen, *e);
        strcat(seen, ";");
    }
    return 0;
}
static int looked = look();

__global__ void matmul(const float* M, const float* N, float* P, int Width) {
    int row = blockIdx.y * blockDim.y + threadIdx.y;
    int col = blockIdx.x * blockDim.x + threadIdx.x;
#ifndef __NVCC__  // nvcc defines it; the CPU backend does not
    if (row == 0 && col == 0) printf("environment: %s\n", seen);
#endif
    if (row < Width && col < Width) {
        float sum = 0.0f;
        for (int k = 0; k < Width; ++k) sum += M[row * Width + k] * N[k * Width + col];
        P[row * Width + col] = sum;
    }
}
"""
SPY_LAB = "matmul-naive"


def plant(folder: Path, marker: Path) -> Path:
    """Put the hostile packages into `folder`; returns it."""
    for name in PLANTED:
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(_HOSTILE.format(marker=str(marker)))
    return folder


def imported(marker: Path) -> str:
    """What the hostile packages noted: empty when none was ever imported."""
    return marker.read_text() if marker.exists() else ""


def run_grader(
    *args: str, cwd: Path, env: dict[str, str], prefix: tuple[str, ...] = (), timeout: float = 600
) -> subprocess.CompletedProcess:
    """`grader ARGS` in `cwd`, started as the console script starts it, from a script in a
    folder of its own, with this environment and `env`, under `prefix` (another user)."""
    script = cwd.parent / "bin" / "grader"
    script.parent.mkdir(exist_ok=True)
    script.write_text(_ENTRY)
    script.parent.chmod(0o755)
    script.chmod(0o644)
    return subprocess.run(
        [*prefix, sys.executable, str(script), *args],
        cwd=cwd,
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        timeout=timeout,
    )
