"""Every scanner of the submission's text, and of what compilers say about it, takes time
linear in its size on the inputs that once made it quadratic (a correct kernel after an
`#if 0` block of 23k `__global__` words took 387 s to scan): 16 times the text may take at
most LIMIT times as long. Each scanner is timed in CPU seconds of this process, the median
of several runs, each on a text of its own (the scanners keep per-text indexes), so that a
loaded machine does not make a linear scanner look quadratic."""

from __future__ import annotations

import gc
import statistics
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from grader import labs
from grader.backends.cpu import build, scan, shim
from grader.course import similarity
from grader.judge import launch_macros
from grader.model import lexer, source
from grader.model.result import CompileInfo, Diagnostic, Kind, Result, Status
from grader.report import annotate, common, markdown
from grader.toolchain import nvcc

SMALL, LARGE = 16 * 1024, 256 * 1024  # 256 KiB: the largest submission read
LIMIT = 40  # linear is 16; quadratic would be 256
RUNS = 3
MIN_SECONDS = 0.02  # each run repeats a scanner at least this long

KERNEL = """
#define TILE 16
__global__ void matmul(const float* M, const float* N, float* P, int Width)
{
    __shared__ float tile[TILE][TILE];
    int row = blockIdx.y * TILE + threadIdx.y;
    int col = blockIdx.x * TILE + threadIdx.x;
    if (row < Width) {
        __syncthreads();
    }
    P[row * Width + col] = 0.0f;
}
"""
BARRIER = "__syncthreads();\n    }"
MACROS = {"MASK_WIDTH": 5}
LAUNCH = {"BLOCK_X": 16, "BLOCK_Y": 16, "BLOCK_Z": 1, "TILE_X": 16, "TILE_Y": 16, "TILE_Z": 1}
COMPILE_ERROR = [Diagnostic(Kind.COMPILE_ERROR, "k.cu:1: error", line=1)]


def barrier_context(text: str) -> scan.BarrierContext:
    return scan.barrier_context(text, text.count("\n", 0, text.rindex(BARRIER)) + 1)


def annotated(text: str) -> object:
    marks = [Diagnostic(Kind.RACE, "a race", line=n) for n in range(1, 4000, 9)]
    info = CompileInfo(ok=True)
    return annotate.annotate(
        Result(
            lab="lab",
            submission="k.cu",
            backend="cpu",
            device="cpu",
            status=Status.FAILED,
            score=0,
            max_score=1,
            compile=info,
            source=text,
            diagnostics=marks,
        )
    )


# scanner -> the inputs that were its worst: a unit repeated inside `#if 0` before KERNEL
SCANNERS: dict[str, tuple[Callable[[str], object], tuple[str, ...]]] = {
    "uncommented": (lexer.uncommented, ("/* ", 'R"(', '"\\', "'\\", "a\\\n", "%:<:")),
    "directives": (lexer.directives, ("\\\n", "#ifdef X\n", "/*\n*/ #")),
    "static_checks": (lambda t: source.static_checks(t, ()), ("/* ", "#\n")),
    "code": (lexer.code, ("/* ", '"\\', "#\\\n")),
    "kernels": (
        scan.kernels,
        ("__global__ ", "__global__ __launch_bounds__(", "__global__ void k"),
    ),
    "variables": (scan.variables, ("{", "namespace a {", "__device__ x = ( ;", "__device__ }")),
    "unsupported": (scan.unsupported, ("tex1D<", "/* ", 'asm("/**/");', 'asm("" "')),
    "rewrite_dynamic_shared": (
        scan.rewrite_dynamic_shared,
        ("extern ", "extern __shared__ a ", "namespace a {"),
    ),
    "rewrite_static_shared": (scan.rewrite_static_shared, ("__shared__ ", "{", "__shared__ {")),
    "barrier_context": (barrier_context, ("{", "namespace a {", "return ")),
    "launch_macros": (
        lambda t: launch_macros.describe(t, LAUNCH, MACROS, labs.get("matmul-naive")),
        ("__shared__ ", "__shared__ float t[", "blockIdx.x * A1 + "),
    ),
    "fixed_macros": (
        lambda t: launch_macros.describe(t, LAUNCH, MACROS, labs.get("conv2d")),
        ("#define MASK_R 2\n", "#define A (A + A)\n", "#define BLOCK_X 20\n"),
    ),
    "grader_macros": (
        lambda t: nvcc.grader_macros(COMPILE_ERROR, t, MACROS, "k.cu"),
        ("int ", "enum ", "enum {", "#ifdef MASK_WIDTH\n#define MASK_WIDTH 3\n"),
    ),
    "may_read_files": (nvcc.may_read_files, ("\\\n", "__has_include ")),
    "compile_diagnostics": (
        lambda t: nvcc.compile_diagnostics(t, "k.cu"),
        ("k.cu:1: error ", "k.cu(1): error x"),
    ),
    "cpu_compile_errors": (lambda t: build._errors(t, "k.cu"), ("k.cu:1: error ",)),
    "unhooked_calls": (
        shim.unhooked_calls,
        ("  [k.cu:1:2] _1 = ", "[k.cu:", "\n ", "__builtin_mem"),
    ),
    "clean_log": (lambda t: nvcc.clean_log(t, Path("/tmp/x"), "a.cu", "k.cu"), ("a.cu:1: ",)),
    "parse_ptxas": (nvcc.parse_ptxas, ("Used 1 registers ",)),
    "printable": (common.printable, ("\x1b[2J\u202e",)),
    "markdown": (markdown.md, ("*_`[",)),
    "annotate": (annotated, ("\n",)),
    "similarity": (
        lambda t: similarity.fingerprints(t, frozenset(), frozenset()),
        ("a ", "#define A A A\nA ", "#define A\nA\n", "#\n", '"\\', "/* "),
    ),
}
CASES = [(name, unit) for name, (_, units) in SCANNERS.items() for unit in units]


def text_of(unit: str, size: int) -> str:
    head, tail = "#if 0\n", "\n#endif\n" + KERNEL
    return head + unit * ((size - len(head) - len(tail)) // len(unit)) + tail


def seconds(scan_text: Callable[[str], object], text: str) -> float:
    """CPU seconds of one call, the median of RUNS runs, each on texts never seen before."""
    runs, repeat = [], 1
    gc.collect()
    gc.disable()
    try:
        while len(runs) < RUNS:
            texts = [text + " " * (len(runs) * 1000 + i) for i in range(repeat)]
            start = time.process_time()
            for one in texts:
                scan_text(one)
            spent = time.process_time() - start
            if spent < MIN_SECONDS and not runs:
                repeat *= 2
                continue
            runs.append(spent / repeat)
    finally:
        gc.enable()
    return statistics.median(runs)


@pytest.mark.parametrize(("name", "unit"), CASES, ids=[f"{n}-{u!r}" for n, u in CASES])
def test_the_scanner_is_linear_on_its_worst_input(name, unit):
    scan_text = SCANNERS[name][0]
    small = seconds(scan_text, text_of(unit, SMALL))
    large = seconds(scan_text, text_of(unit, LARGE))
    ratio = large / small
    times = f"{small * 1e3:.2f} ms at 16 KiB, {large * 1e3:.1f} ms at 256 KiB"
    print(f"{name} {unit!r}: {times}, {ratio:.1f}x")
    assert ratio < LIMIT, f"{name} on {unit!r}: {ratio:.0f}x the time for 16x the text"
