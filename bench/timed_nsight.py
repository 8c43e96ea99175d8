#!/usr/bin/env python3
"""A lab's own kernels at the timed size, where speed is scored, through the grader's
launch assembly: CUDA-event milliseconds, and with --ncu what Nsight Compute counts of
each kernel there, the ground truth that "why this speed" (measured by the CPU model at
a small profile case) must agree with:

    python3 bench/timed_nsight.py --labs spmv-jds spmv-csr [--ncu] [--repeat 6]

Per kernel: the median of --repeat event-timed launches after warm-ups, each after a
256 MB memset that flushes L2 (tune_references.Gpu.time_ms); with --ncu one launch each
under `ncu`, and its duration, the mean SM's active cycles against the busiest SM's (a
kernel waiting for one block: spmv-jds's textbook kernel, 2.86 on the H200), the global
load sectors and the DRAM bytes read.
The kernels: reference.cu, baseline.cu, slow/ and variants/ of each lab of one kernel.
Needs an NVIDIA GPU and PyCUDA; --ncu needs Nsight Compute and its counters (root)."""

from __future__ import annotations

import argparse
import csv
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402

from bench.tune_references import (  # noqa: E402
    Build,
    Gpu,
    Loaded,
    compile_one,
    detect_arch,
    scalar_arg,
)
from grader.judge.cases import draw, timing_inputs  # noqa: E402
from grader.judge.launch import make_launch  # noqa: E402
from grader.labs import all_labs  # noqa: E402
from grader.model.lab import Lab  # noqa: E402
from grader.model.launch import Buffer  # noqa: E402

SEED = 7  # the timing seed: the host-drawn inputs (a sparse matrix's structure) follow it
MARK = "KERNEL"  # a child's line naming the kernel whose launches follow
DURATION, MEAN, BUSIEST = "gpu__time_duration.sum", "sm__cycles_active.avg", "sm__cycles_active.max"
SECTORS, DRAM = "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum", "dram__bytes_read.sum"


def kernels(lab: Lab) -> list[Path]:
    home = lab.home
    found = [home / "reference.cu", home / "baseline.cu"]
    return found + sorted(home.glob("slow/*.cu")) + sorted(home.glob("variants/*.cu"))


def inputs(lab: Lab):
    """The timing case and every input: those the host draws (cases.timing_inputs), the
    rest drawn here as a grading's GPU draws them, afresh values of the same kind."""
    case, found = timing_inputs(lab, SEED)
    rng = np.random.default_rng(SEED)
    for array in lab.inputs:
        if array.name not in found:
            found[array.name] = draw(rng, array, case.sizes)
    return case, found


def child(labs: list[str], repeat: int) -> None:
    """Each kernel's event-timed median (Gpu.time_ms); with `repeat` 0, one launch a
    kernel and no time, for ncu to count."""
    gpu = Gpu()
    arch, out = detect_arch(), Path(tempfile.mkdtemp())
    for name in labs:
        lab = all_labs()[name]
        case, values = inputs(lab)
        for path in kernels(lab):
            label = f"{name}/{path.relative_to(lab.home)}"
            macros = lab.macro_values(case.sizes)
            build = compile_one(Build(name, label, str(path), {}, macros), arch, out)
            if build.error:
                print(f"{label}: {build.error}", flush=True)
                continue
            loaded = Loaded(gpu, build)
            launch, _ = make_launch(lab, case, values, loaded.interface)
            buffers = [a for a in launch.args if isinstance(a, Buffer)]
            held = [gpu.cuda.to_device(np.ascontiguousarray(a.data)) for a in buffers]
            device = iter(held)
            args = [next(device) if isinstance(a, Buffer) else scalar_arg(a) for a in launch.args]
            loaded.set_constants(launch.constants)
            print(f"{MARK} {label}", flush=True)

            def run(loaded=loaded, launch=launch, args=args) -> None:
                loaded.launch(launch.grid, launch.block, launch.shared_bytes, args)

            if repeat:
                print(f"  {label}: {gpu.time_ms(run, repeat):.4f} ms", flush=True)
            else:
                run()
                gpu.cuda.Context.synchronize()
            for buffer in held:
                buffer.free()


def under_ncu(labs: list[str]) -> None:
    """This script's child under ncu, one launch a kernel, and the counters' table."""
    if shutil.which("ncu") is None:
        print("ncu (Nsight Compute) is not on PATH")
        return
    names = "|".join(sorted({k.name for n in labs for k in all_labs()[n].kernels}))
    command = [
        "ncu", "--csv", "--page", "raw", "--kernel-name", f"regex:{names}",
        "--metrics", ",".join((DURATION, MEAN, BUSIEST, SECTORS, DRAM)),
        sys.executable, __file__, "--child", "--repeat", "0", "--labs", *labs,
    ]  # fmt: skip
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    found = counted(done.stdout.splitlines())
    if not found:
        print(f"ncu gave no counters (exit {done.returncode}):\n{done.stderr[-2000:]}")
    for line in table(found):
        print(line)


def counted(lines: list[str]) -> list[tuple[str, dict[str, float]]]:
    """Each kernel the child named (MARK), with the counters of its launch: ncu's CSV
    (--page raw: a header, a row of units, a row a launch) follows the child's output."""
    names = [line.split(" ", 1)[1] for line in lines if line.startswith(f"{MARK} ")]
    header = next((i for i, line in enumerate(lines) if line.startswith('"ID"')), None)
    if header is None:
        return []
    rows = list(csv.DictReader(lines[header:]))[1:]
    wanted = (DURATION, MEAN, BUSIEST, SECTORS, DRAM)
    values = [{m: float(row[m].replace(",", "")) for m in wanted} for row in rows]
    return list(zip(names, values, strict=False))


def table(found: list[tuple[str, dict[str, float]]]) -> list[str]:
    lines = [
        f"{'kernel':44s} {'us':>8s} {'SM active, mean / busiest':>26s} {'busiest/mean':>12s} "
        f"{'sectors M':>10s} {'DRAM MB':>8s}"
    ]
    for name, v in found:
        mean, busiest = v[MEAN], v[BUSIEST]
        lines.append(
            f"{name:44s} {v[DURATION] / 1e3:8.1f} {mean / 1e3:15.1f} / {busiest / 1e3:7.1f}k "
            f"{busiest / mean:12.2f} {v[SECTORS] / 1e6:10.2f} {v[DRAM] / 1e6:8.1f}"
        )
    return lines


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--labs", nargs="+", required=True, help="labs of one kernel")
    parser.add_argument("--repeat", type=int, default=6, help="timed launches a kernel")
    parser.add_argument("--ncu", action="store_true", help="count under Nsight Compute")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    several = [n for n in args.labs if len(all_labs()[n].kernels) > 1]
    if several:
        parser.error(f"{', '.join(several)} launch several kernels; this times labs of one")
    if args.ncu and not args.child:
        under_ncu(args.labs)
    else:
        child(args.labs, args.repeat)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
