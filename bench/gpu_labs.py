"""Per-lab GPU figures: reference and baseline rates, what the hardware does for the same
work (cuBLAS fp32 through CuPy, device-to-device copy bandwidth), the spread of the
speedup over repeated gradings of one submission, and a warm `grader check`.

    python3 bench/gpu_labs.py [--labs matmul-tiled conv2d ...] [--gradings 5]

Needs an NVIDIA GPU, PyCUDA and CuPy. Ratios in one run are what to compare: the machine
is shared and noisy."""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path

from grader import cases, paths
from grader.backends.cuda import CudaBackend
from grader.grading import Options, check, performance_of
from grader.labs import all_labs
from grader.launch import timing_launch
from grader.source import read_submission


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


def baseline_vs_reference(backend: CudaBackend, lab) -> tuple[float, float]:
    case = cases.timing_case(lab)
    macros = lab.macro_values(case.sizes)
    folder = paths.reference_dir(lab.name)
    built = [
        backend.build(read_submission(folder / name)[0], macros, lab.default_block)
        for name in ("baseline.cu", "reference.cu")
    ]
    patterns = cases.timing_patterns(lab, case)
    launches = tuple(timing_launch(lab, case, patterns, b.interface) for b in built)
    timing = backend.time(built[0], built[1], launches, budget=6.0)
    perf = performance_of(lab, case.sizes, timing)
    return perf.student_ms, perf.reference_ms


def gradings(lab, count: int) -> list[float]:
    """Speedups of the reference graded `count` times in this process."""
    path = paths.reference_dir(lab.name) / "reference.cu"
    found = []
    for _ in range(count):
        result = check(lab.name, path, Options(backend="cuda"))
        found.append(result.performance.speedup if result.performance else float("nan"))
    return found


def warm_check_seconds(lab) -> float:
    """Wall time of the `grader check` command on the reference, its compiles cached."""
    path = paths.reference_dir(lab.name) / "reference.cu"
    command = [sys.executable, "-m", "grader", "check", lab.name, str(path), "--quiet"]
    start = time.monotonic()
    subprocess.run(command, capture_output=True, check=False)
    return time.monotonic() - start


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--labs", nargs="*", default=list(all_labs()))
    parser.add_argument("--gradings", type=int, default=5)
    args = parser.parse_args(argv)
    backend = CudaBackend()
    print(f"device: {backend.device()}", flush=True)
    peak = cublas_tflops(4096)
    print(f"cuBLAS fp32 n=4096: {peak:.1f} TFLOP/s", flush=True)
    header = (
        f"{'lab':15} {'size':>16} {'unit':>7} {'reference':>9} {'baseline':>9} {'hardware':>9} "
        f"{'ref/hw':>7} {'speedups over gradings':>30} {'±%':>5} {'warm s':>6}"
    )
    print(header)
    print("-" * len(header), flush=True)
    for name in args.labs:
        try:
            print_lab(backend, all_labs()[name], peak, args.gradings)
        except Exception as err:  # one lab's failure must not hide the others' figures
            print(f"{name:15} failed: {type(err).__name__}: {err}", flush=True)
    backend.close()
    return 0


def print_lab(backend: CudaBackend, lab, peak: float, count: int) -> None:
    sizes = cases.timing_case(lab).sizes
    base_ms, ref_ms = baseline_vs_reference(backend, lab)
    unit, hardware = "TFLOP/s", peak
    if lab.bound == "memory":
        rows, cols = lab.array_shape(lab.inputs[0].name, sizes)
        unit, hardware = "GB/s", copy_gbps(4 * rows * cols)
    found = gradings(lab, count)
    warm = warm_check_seconds(lab)
    middle = statistics.median(found)
    plus_minus = 100 * max(abs(s - middle) for s in found) / middle
    shown = ", ".join(f"{s:.3f}" for s in found)
    size = "x".join(str(v) for k, v in sizes.items() if k != "MASK_WIDTH")
    print(
        f"{lab.name:15} {size:>16} {unit:>7} {rate(lab, sizes, ref_ms):9.1f} "
        f"{rate(lab, sizes, base_ms):9.1f} {hardware:9.1f} "
        f"{100 * rate(lab, sizes, ref_ms) / hardware:6.0f}% {shown:>30} {plus_minus:5.1f} "
        f"{warm:6.2f}",
        flush=True,
    )


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    raise SystemExit(main())
