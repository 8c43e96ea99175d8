"""Per-lab GPU figures: reference and baseline rates, what the hardware does for the same
work (cuBLAS fp32 through CuPy, device-to-device copy bandwidth) and the ceiling the
grader itself measured (fp32 peak or copy bandwidth, against which impossible times are
judged), the spread of the speedup over repeated gradings of one submission, a warm
`grader check` (the median of --checks of them, and the slowest), and what checking the
timed launches cost in those gradings, as a share of the warm check: the worker's
drawing, poisoning, reading back and measuring of the ceilings, and the grader's judging
after the timing (most of its recomputing of the samples happens while the GPU times,
in a thread, and costs no wall time); and the median of the rounds those gradings timed.
It first says which host ran it (bench/host.py): a warm check's figures follow its CPU.

    python3 bench/gpu_labs.py [--labs LAB ...] [--gradings 5] [--checks 3]

Needs an NVIDIA GPU, PyCUDA and CuPy. Ratios in one run are what to compare: the machine
is shared and noisy."""

from __future__ import annotations

import argparse
import math
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from bench import warm_ab  # noqa: E402
from bench.host import ROOT, compile_bytecode, describe, gpu_missing  # noqa: E402
from grader import defaults, labs  # noqa: E402
from grader.backends.cuda import CudaBackend  # noqa: E402
from grader.grading import timing  # noqa: E402
from grader.grading.pipeline import Options, check  # noqa: E402
from grader.grading.timing import performance_of  # noqa: E402
from grader.judge import cases  # noqa: E402
from grader.judge.launch import at_launch, timing_launches  # noqa: E402
from grader.labs import all_labs  # noqa: E402
from grader.model.source import read_submission  # noqa: E402

CHECK_SECONDS: list[float] = []  # spent checking timed launches, per grading


def _counted(function, gpu_side: bool):
    """`function`, adding the seconds it (or, for the GPU's side, its checks) took."""

    def wrapper(*args, **kwargs):
        started = time.perf_counter()
        out = function(*args, **kwargs)
        spent = out.check_seconds if gpu_side else time.perf_counter() - started
        if CHECK_SECONDS:
            CHECK_SECONDS[-1] += spent
        return out

    return wrapper


def events_ms(run, repeat: int = 20) -> float:
    """Median milliseconds of `run()` over `repeat` CUDA-event-timed calls, L2 flushed."""
    import cupy

    flush = cupy.empty(256 << 20, cupy.uint8)
    start, stop = cupy.cuda.Event(), cupy.cuda.Event()
    run()
    times = []
    for _ in range(repeat):
        flush.fill(0)
        start.record()
        run()
        stop.record()
        stop.synchronize()
        times.append(cupy.cuda.get_elapsed_time(start, stop))
    return statistics.median(times)


def cublas_tflops(n: int) -> float:
    import cupy

    a = cupy.random.standard_normal((n, n), cupy.float32)
    b = cupy.random.standard_normal((n, n), cupy.float32)
    return 2.0 * n**3 / events_ms(lambda: cupy.matmul(a, b)) / 1e9


def copy_gbps(nbytes: int) -> float:
    """Device-to-device copy, counting bytes read plus bytes written."""
    import cupy

    src = cupy.ones(nbytes // 4, cupy.float32)
    dst = cupy.empty_like(src)
    return 2.0 * nbytes / events_ms(lambda: dst.__setitem__(Ellipsis, src)) / 1e6


def rate(lab, sizes, ms: float) -> float:
    flops, moved = lab.work(sizes)
    return flops / ms / 1e9 if lab.bound == "compute" else moved / ms / 1e6


def baseline_vs_reference(backend: CudaBackend, lab) -> tuple[float, float, dict, dict]:
    """Milliseconds of the baseline and the reference, the grader's ceilings, and the
    timed sizes (those the lab's own draw defines included)."""
    case, constants = cases.timing_inputs(lab, seed=1)
    macros = lab.macro_values(case.sizes)
    folder = labs.get(lab.name).home
    built = [
        backend.build(read_submission(folder / name)[0], macros, lab.launch_defaults)
        for name in ("baseline.cu", "reference.cu")
    ]
    launches = timing_launches(lab, case, constants, built[0].interface, built[1].interface)
    timing_check = timing.plan(lab, at_launch(lab, case, built[0].interface), 1, constants)
    measured = backend.time(built[0], built[1], launches, budget=6.0, check=timing_check)
    perf = performance_of(lab, case, measured)
    return perf.student_ms, perf.reference_ms, measured.ceilings, case.sizes


def gradings(lab, count: int) -> tuple[list[float], list[float], list[int]]:
    """Speedups of the reference graded `count` times in this process, the seconds each
    grading spent checking its timed launches, and the rounds each timed."""
    path = labs.get(lab.name).home / "reference.cu"
    found, rounds = [], []
    CHECK_SECONDS.clear()
    for _ in range(count):
        CHECK_SECONDS.append(0.0)
        performance = check(lab.name, path, Options(backend="cuda")).performance
        found.append(performance.speedup if performance else float("nan"))
        rounds.append(performance.rounds if performance else 0)
    return found, list(CHECK_SECONDS), rounds


def warm_check_seconds(lab, count: int) -> list[float]:
    """Wall times of `count` `grader check` commands on the reference, its compiles cached
    (NaN for one that did not grade)."""
    compile_bytecode()
    return [warm_ab.check(ROOT, defaults.cache_dir(), lab.name, "cuda") for _ in range(count)]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--labs", nargs="*", default=list(all_labs()))
    parser.add_argument("--gradings", type=int, default=5)
    parser.add_argument("--checks", type=int, default=3, help="warm checks timed per lab")
    args = parser.parse_args(argv)
    if gpu_missing():
        return 2
    CudaBackend.time = _counted(CudaBackend.time, gpu_side=True)
    timing.judge = _counted(timing.judge, gpu_side=False)
    backend = CudaBackend()
    print(f"device: {backend.device()}", flush=True)
    print(describe(), flush=True)
    peak = cublas_tflops(4096)
    print(f"cuBLAS fp32 n=4096: {peak:.1f} TFLOP/s", flush=True)
    header = (
        f"{'lab':15} {'size':>16} {'unit':>7} {'reference':>9} {'baseline':>9} {'hardware':>9} "
        f"{'ceiling':>8} {'ref/hw':>7} {'speedups over gradings':>30} {'±%':>5} {'warm s':>6} "
        f"{'max s':>6} {'check s':>7} {'check%':>6} {'rounds':>6}"
    )
    print(header)
    print("-" * len(header), flush=True)
    for name in args.labs:
        try:
            print_lab(backend, all_labs()[name], peak, args.gradings, args.checks)
        except Exception as err:  # one lab's failure must not hide the others' figures
            print(f"{name:15} failed: {type(err).__name__}: {err}", flush=True)
    backend.close()
    return 0


def print_lab(backend: CudaBackend, lab, peak: float, count: int, checks: int) -> None:
    base_ms, ref_ms, ceilings, sizes = baseline_vs_reference(backend, lab)
    unit, hardware, ceiling = "TFLOP/s", peak, ceilings["flops"] / 1e12
    if lab.bound == "memory":  # against a copy of the lab's largest input
        nbytes = max(math.prod(a.shape(sizes)) * np.dtype(a.dtype).itemsize for a in lab.inputs)
        unit, hardware, ceiling = "GB/s", copy_gbps(nbytes), ceilings["bytes"] / 1e9
    found, checking, rounds = gradings(lab, count)
    warm_checks = warm_check_seconds(lab, checks)
    warm = statistics.median(warm_checks)
    middle = statistics.median(found)
    plus_minus = 100 * max(abs(s - middle) for s in found) / middle
    shown = ", ".join(f"{s:.3f}" for s in found)
    size = "x".join(str(v) for k, v in lab.timing_sizes.items() if k not in lab.macros)
    check_s = statistics.median(checking)
    print(
        f"{lab.name:15} {size:>16} {unit:>7} {rate(lab, sizes, ref_ms):9.1f} "
        f"{rate(lab, sizes, base_ms):9.1f} {hardware:9.1f} {ceiling:8.1f} "
        f"{100 * rate(lab, sizes, ref_ms) / hardware:6.0f}% {shown:>30} {plus_minus:5.1f} "
        f"{warm:6.2f} {max(warm_checks):6.2f} {check_s:7.3f} {100 * check_s / warm:5.1f}% "
        f"{statistics.median(rounds):6.0f}",
        flush=True,
    )


if __name__ == "__main__":
    raise SystemExit(main())
