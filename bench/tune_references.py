#!/usr/bin/env python3
"""Check and time the reference kernels, and a few variants of each, on a GPU.

    PYTHONPATH=. python3 bench/tune_references.py [--labs LAB ...] [--repeat 20]
                                                  [--no-all-cases] [--list]

For every lab it compiles `reference_kernels/LAB/reference.cu`, `baseline.cu`, every
file under `reference_kernels/LAB/variants/`, and the reference with some launch
macros overridden (the lab folder's tune.toml), exactly as the grader would: the grader's
launch footer appended (grader.model.source.with_footer), the lab's macros at the timing size,
no extern "C". Then, per variant:

  - correct: the grader's own comparison (float64 numpy reference, float32 error bound)
    on small odd sizes at the timing mask: a partial last tile on every axis;
  - ms: median of --repeat CUDA-event timings at the lab's timing size, each launch after
    a 256 MB memset that flushes L2, after warm-up launches;
  - the rate: TFLOP/s for compute-bound labs, compared with cuBLAS fp32 (CuPy, TF32 off)
    at n = 4096; GB/s (bytes as the lab counts them) for memory-bound labs, compared
    with a device-to-device copy of the same input size (read + write bytes);
  - agrees: the variant's output at the timing size against the reference's.

Finally (unless --no-all-cases) each reference runs every public and hidden case of its
lab (hidden sizes with a fixed secret), at every MASK_WIDTH those cases use.

Each lab runs in its own child process, so a kernel that crashes the CUDA context
costs only the rest of that lab's variants, which a fresh child then resumes. Output is
printed as it comes. Needs PyCUDA and CuPy; all labs take about two minutes on an H200.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import tomllib
import traceback
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402

from grader import defaults, machine  # noqa: E402
from grader.backends.cuda.probe import device_info  # noqa: E402
from grader.judge.cases import cases_for, expected_outputs, make_inputs  # noqa: E402
from grader.judge.compare import allowances, compare  # noqa: E402
from grader.judge.launch import grid_for, layout, make_launch  # noqa: E402
from grader.labs import all_labs  # noqa: E402
from grader.model.interface import LAUNCH_MACROS, Interface  # noqa: E402
from grader.model.lab import Case, Lab  # noqa: E402
from grader.model.launch import Buffer  # noqa: E402
from grader.model.source import (  # noqa: E402
    LAUNCH_SYMBOL,
    Submission,  # noqa: E402
    launch_values,
    with_footer,
)
from grader.toolchain import nvcc as gnvcc  # noqa: E402

BUDGET_S = 235.0  # the whole run, compiles included
FLUSH_BYTES = 256 << 20
CUBLAS_N = 4096
SECRET = "tune-references"  # hidden sizes are fixed; only their random values use this

TUNING = "tune.toml"  # in a lab's folder: what to check and try (see check_sizes, variants)
COPY_BYTES = 256 << 20  # the copy that gives the memory-bound labs' hardware figure


def tuning(lab: Lab) -> dict:
    """The lab folder's tune.toml: `target` (a fraction of the hardware figure the
    reference must reach), `checks` (small odd sizes) and `[[variants]]` (name, defines)."""
    path = lab.home / TUNING
    return tomllib.loads(path.read_text()) if path.is_file() else {}


def supported(lab: Lab) -> str | None:
    """Why this script cannot tune `lab`, or None: it launches one float32 kernel whose
    buffers do not depend on the launch; bench/gpu_labs.py times every lab."""
    arrays = (*lab.inputs, *lab.outputs, *lab.scratch)
    if len(lab.kernels) > 1 or any(a.dtype != "float32" for a in arrays):
        return "several kernels or other element types than float32"
    try:
        for array in arrays:
            array.shape(lab.full_sizes(lab.timing_sizes))
    except KeyError:
        return "buffers sized by the launch"
    return None


def say(*args) -> None:
    print(*args, flush=True)


def check_sizes(lab: Lab) -> list[dict[str, int]]:
    mask = {k: v for k, v in lab.timing_sizes.items() if k in lab.macros}
    return [{**sizes, **mask} for sizes in tuning(lab).get("checks", [])]


# -- building -----------------------------------------------------------------------------


@dataclass
class Build:
    lab: str
    name: str  # as printed
    path: str  # the .cu, relative to the repository
    defines: dict[str, int]
    macros: dict[str, int]  # the lab's, e.g. MASK_WIDTH
    cubin: str = ""
    symbol: str = ""
    registers: int | None = None
    spills: int | None = None
    error: str = ""

    def key(self) -> str:
        d = "_".join(f"{k}{v}" for k, v in sorted({**self.defines, **self.macros}.items()))
        stem = re.sub(r"[^A-Za-z0-9]+", "-", Path(self.path).stem)
        return f"{self.lab}.{stem}.{d or 'default'}"


def plan_builds(lab: Lab, all_cases: bool) -> list[Build]:
    timing_macros = lab.macro_values(lab.full_sizes(lab.timing_sizes))
    folder = lab.home.relative_to(ROOT) if lab.home.is_relative_to(ROOT) else lab.home
    builds = [Build(lab.name, "reference", str(folder / "reference.cu"), {}, timing_macros)]
    for variant in tuning(lab).get("variants", []):
        name, defines = variant["name"], variant["defines"]
        builds.append(Build(lab.name, name, str(folder / "reference.cu"), defines, timing_macros))
    for extra in sorted((ROOT / folder / "variants").glob("*.cu")):
        builds.append(
            Build(
                lab.name,
                f"variants/{extra.name}",
                str(folder / "variants" / extra.name),
                {},
                timing_macros,
            )
        )
    builds.append(Build(lab.name, "baseline", str(folder / "baseline.cu"), {}, timing_macros))
    if all_cases:  # the reference at every other mask its cases use
        masks = {tuple(sorted(lab.macro_values(c.sizes).items())) for c in cases_for(lab, SECRET)}
        for m in sorted(masks):
            if dict(m) != timing_macros:
                builds.append(
                    Build(lab.name, "reference", str(folder / "reference.cu"), {}, dict(m))
                )
    return builds


def compile_one(build: Build, arch: str, out: Path) -> Build:
    lab = all_labs()[build.lab]
    path = ROOT / build.path
    try:
        source = with_footer(Submission(path, path.read_text()), lab.launch_defaults)
    except OSError as err:
        build.error = str(err)
        return build
    work = Path(tempfile.mkdtemp(dir=out))
    (work / "kernel.cu").write_text(source)
    flags = [f"-D{k}={v}" for k, v in sorted({**build.macros, **build.defines}.items())]
    cmd = [
        gnvcc.find() or "nvcc",
        "-cubin",
        f"-arch={arch}",
        "-lineinfo",
        "-Xptxas",
        "-v",
        *flags,
        "kernel.cu",
        "-o",
        "kernel.cubin",
    ]
    (work / "flags").write_text(" ".join(cmd[1:]) + "\n")  # for --keep: how it was built
    proc = subprocess.run(cmd, cwd=work, capture_output=True, text=True, errors="replace")
    if proc.returncode != 0:
        build.error = (
            "compile failed: "
            + " | ".join(ln for ln in (proc.stdout + proc.stderr).splitlines() if "error" in ln)[
                :400
            ]
        )
        return build
    resources = gnvcc.parse_ptxas(proc.stdout + proc.stderr)
    names = gnvcc.demangle(list(resources))
    for symbol, (plain, _) in names.items():
        if plain == lab.kernel.name:
            build.symbol = symbol
            build.registers = resources[symbol].registers
            build.spills = resources[symbol].spill_stores
    if not build.symbol:
        build.error = f"no kernel named {lab.kernel.name} in the module"
    build.cubin = str(work / "kernel.cubin")
    return build


def detect_arch() -> str:
    """The GPU's architecture as the grader's probe sees it, or the grader's default."""
    info = device_info()
    return info["arch"] if info["ok"] else defaults.ARCH


# -- the GPU side (child processes) -----------------------------------------------------


class Gpu:
    def __init__(self):
        import pycuda.autoprimaryctx  # noqa: F401  (before CuPy: both use the primary context)
        import pycuda.driver as cuda

        self.cuda = cuda
        self.flush = cuda.mem_alloc(FLUSH_BYTES)
        self.start, self.stop = cuda.Event(), cuda.Event()

    def time_ms(self, run, repeat: int) -> float:
        """Median of `repeat` event-timed calls of run(), each after an L2 flush."""
        cuda = self.cuda
        t0 = time.perf_counter()
        run()
        cuda.Context.synchronize()
        first = time.perf_counter() - t0
        for _ in range(0 if first > 0.05 else 3):
            run()
        times = []
        for i in range(repeat):
            # the memset keeps the GPU busy while the host queues the events and launch
            cuda.memset_d32_async(self.flush, i, FLUSH_BYTES // 4)
            self.start.record()
            run()
            self.stop.record()
            self.stop.synchronize()
            times.append(self.stop.time_since(self.start))
        return statistics.median(times)


def hardware(repeat: int) -> dict:
    """cuBLAS fp32 at n = 4096, and device-to-device copy bandwidth of COPY_BYTES."""
    os.environ.setdefault("CUPY_TF32", "0")
    gpu = Gpu()
    import cupy

    cuda = gpu.cuda
    dev = cuda.Context.get_device()
    info = {
        "device": dev.name(),
        "driver": cuda.get_driver_version(),
        "sms": dev.get_attribute(cuda.device_attribute.MULTIPROCESSOR_COUNT),
        "clock_mhz": dev.get_attribute(cuda.device_attribute.CLOCK_RATE) // 1000,
    }
    try:
        rng = cupy.random.default_rng(1)
        a = rng.standard_normal((CUBLAS_N, CUBLAS_N), dtype=cupy.float32)
        b = rng.standard_normal((CUBLAS_N, CUBLAS_N), dtype=cupy.float32)
        c = cupy.empty_like(a)
        ms = gpu.time_ms(lambda: cupy.matmul(a, b, out=c), repeat)
        info["cublas_ms"] = ms
        info["cublas_tflops"] = 2.0 * CUBLAS_N**3 / ms / 1e9
    except Exception as err:  # noqa: BLE001 - report and go on
        info["cublas_error"] = str(err)
    try:
        nbytes = COPY_BYTES
        src, dst = cuda.mem_alloc(nbytes), cuda.mem_alloc(nbytes)
        cuda.memset_d32(src, 0x3F800000, nbytes // 4)
        ms = gpu.time_ms(lambda: cuda.memcpy_dtod_async(dst, src, nbytes), repeat)
        info["copy_bytes"] = nbytes
        info["copy_ms"] = ms
        info["copy_gbs"] = 2.0 * nbytes / ms / 1e6
        src.free()
        dst.free()
    except Exception as err:  # noqa: BLE001
        info["copy_error"] = str(err)
    return info


def scalar_arg(arg):
    return np.uint64(arg.value) if arg.ctype == "size_t" else np.int32(arg.value)


class Loaded:
    """A compiled variant on the device: its function and launch macros."""

    def __init__(self, gpu: Gpu, build: Build):
        cuda = gpu.cuda
        self.gpu, self.build = gpu, build
        self.module = cuda.module_from_file(build.cubin)
        self.function = self.module.get_function(build.symbol)
        ptr, size = self.module.get_global(LAUNCH_SYMBOL)
        raw = np.empty(size // 4, np.int32)
        cuda.memcpy_dtoh(raw, ptr)
        self.interface = Interface(launch=launch_values(list(raw[: len(LAUNCH_MACROS)])))

    def set_constants(self, constants: dict[str, np.ndarray]) -> None:
        for name, values in constants.items():
            ptr, size = self.module.get_global(name)
            data = np.ascontiguousarray(values, np.float32)
            if data.nbytes != size:
                raise ValueError(f"{name}: {size} bytes in the module, the lab fills {data.nbytes}")
            self.gpu.cuda.memcpy_htod(ptr, data)

    def launch(self, grid, block, shared: int, args: list) -> None:
        if shared > 48 * 1024:
            attribute = self.gpu.cuda.function_attribute.MAX_DYNAMIC_SHARED_SIZE_BYTES
            self.function.set_attribute(attribute, shared)
        self.function(
            *args,
            grid=tuple(int(g) for g in grid),
            block=tuple(int(b) for b in block),
            shared=int(shared),
        )


def run_case(loaded: Loaded, lab: Lab, case: Case) -> tuple[bool, str]:
    """One case through the grader's own launch assembly and comparison."""
    cuda = loaded.gpu.cuda
    inputs = make_inputs(lab, case)
    launch, layouts = make_launch(lab, case, inputs, loaded.interface)
    device, args = {}, []
    try:
        for arg in launch.args:
            if isinstance(arg, Buffer):
                device[arg.name] = cuda.to_device(np.ascontiguousarray(arg.data, np.float32))
                args.append(device[arg.name])
            else:
                args.append(scalar_arg(arg))
        loaded.set_constants(launch.constants)
        loaded.launch(launch.grid, launch.block, launch.shared_bytes, args)
        cuda.Context.synchronize()
        expected = expected_outputs(lab, case, inputs)
        allowed = allowances(lab, case, inputs)
        problems = []
        for param in lab.kernel.params:
            if not param.is_pointer or param.array_name not in expected:
                continue
            got = np.empty_like(next(a for a in launch.args if a.name == param.name).data)
            cuda.memcpy_dtoh(got, device[param.name])
            cmp = compare(
                param.array_name,
                expected[param.array_name],
                layouts[param.name].unpack(got),
                allowed[param.array_name].tolerance,
                allowed[param.array_name].magnitude,
            )
            first = cmp.first_mismatch()
            if first is not None:
                problems.append(
                    f"{case.name}: {cmp.mismatches} wrong, first {first.index} "
                    f"expected {first.expected:.4g} got {first.got}"
                )
            elif cmp.imprecise:
                problems.append(f"{case.name}: less precise than float32, R {cmp.precision:.3g}")
        return not problems, "; ".join(problems)
    finally:
        for buf in device.values():
            buf.free()


@dataclass
class TimingData:
    sizes: dict
    args: list = field(default_factory=list)
    out_layout: object = None
    out_ptr: object = None
    ref_copy: object = None
    constants: dict = field(default_factory=dict)
    allocations: list = field(default_factory=list)


def timing_data(gpu: Gpu, lab: Lab) -> TimingData:
    """Device buffers at the timing size, filled once and shared by all variants."""
    cuda = gpu.cuda
    sizes = lab.full_sizes(lab.timing_sizes)
    data = TimingData(sizes)
    rng = np.random.default_rng(7)
    host_inputs = {}
    for param in lab.kernel.params:
        if not param.is_pointer:
            data.args.append(scalar_arg_from(param, sizes))
            continue
        lay = layout(lab, param, sizes)
        if param.role.value == "output":
            ptr = cuda.mem_alloc(4 * lay.elements)
            data.out_layout, data.out_ptr = lay, ptr
        else:
            values = (rng.random(lay.elements, dtype=np.float32) * 0.5 + 0.5) * np.where(
                rng.random(lay.elements, dtype=np.float32) < 0.5, -1.0, 1.0
            ).astype(np.float32)
            ptr = cuda.to_device(values)
        data.allocations.append(ptr)
        data.args.append(ptr)
    for const in lab.constants:  # small inputs that are not kernel parameters: the masks
        shape = lab.array_shape(const.array, sizes)
        host_inputs[const.array] = (rng.random(shape, dtype=np.float32) - 0.5).astype(np.float32)
        values = np.full(const.elements(sizes), np.nan, np.float32)
        flat = host_inputs[const.array].reshape(-1)
        values[: flat.size] = flat
        data.constants[const.name] = values
    return data


def scalar_arg_from(param, sizes):
    value = int(sizes[param.value_name])
    return np.uint64(value) if param.ctype == "size_t" else np.int32(value)


def agreement(data: TimingData, first: bool) -> str:
    """Max |output - reference output| over max |reference output|, on the device."""
    import cupy

    lay = data.out_layout
    nbytes = 4 * lay.elements
    mem = cupy.cuda.UnownedMemory(int(data.out_ptr), nbytes, data)
    out = cupy.ndarray(lay.padded_shape, cupy.float32, cupy.cuda.MemoryPointer(mem, 0))
    view = out[..., : lay.shape[-1]]
    if first:
        data.ref_copy = view.copy()
        bad = int(cupy.count_nonzero(~cupy.isfinite(view)))
        return "ref" if bad == 0 else "NaN!"
    if data.ref_copy is None:
        return "-"
    if not bool(cupy.isfinite(view).all()):
        return "NaN!"
    scale = float(cupy.abs(data.ref_copy).max()) or 1.0
    diff = float(cupy.abs(view - data.ref_copy).max()) / scale
    return f"{diff:.0e}" if diff < 1e-4 else f"DIFF {diff:.1e}"


def child(args) -> int:
    """Check and time the builds of one lab, from index args.start."""
    lab = all_labs()[args.child]
    builds = [Build(**b) for b in json.loads(Path(args.builds).read_text())]
    hw = json.loads(Path(args.hw).read_text()) if args.hw and Path(args.hw).exists() else {}
    gpu = Gpu()
    os.environ.setdefault("CUPY_TF32", "0")
    timed = [b for b in builds if b.macros == builds[0].macros]  # those at the timing mask
    flops, moved = lab.work(lab.full_sizes(lab.timing_sizes))
    compute = lab.bound == "compute"
    if args.start == 0:
        sizes = ", ".join(f"{k}={v}" for k, v in lab.timing_sizes.items())
        if compute:
            ref_rate = hw.get("cublas_tflops")
            versus = f"cuBLAS fp32 {ref_rate:.1f} TFLOP/s" if ref_rate else "cuBLAS n/a"
        else:
            ref_rate = hw.get("copy_gbs")
            versus = f"device copy {ref_rate:.0f} GB/s" if ref_rate else "copy n/a"
        say(
            f"\n== {lab.name}  ({sizes}; {flops / 1e9:.1f} GFLOP, {moved / 1e6:.0f} MB; "
            f"vs {versus})"
        )
        unit = "TFLOP/s" if compute else "GB/s"
        base = "%cuBLAS" if compute else "%copy"
        say(
            f"{'variant':34s} {'block':>9s} {'tile':>10s} {'regs':>5s} {'ms':>8s} "
            f"{unit:>8s} {base:>7s} {'vs ref':>6s}  {'agrees':>8s}  correct"
        )
    data = None
    ref_ms = None
    ref_file = Path(args.builds).with_suffix(".refms")
    if ref_file.exists():
        ref_ms = float(ref_file.read_text())
    for index, build in enumerate(timed):
        if index < args.start:
            continue
        if build.error:
            say(f"{build.name:34s} {build.error}")
            continue
        try:
            loaded = Loaded(gpu, build)
            launch = loaded.interface.launch
            block = "x".join(str(launch[k]) for k in ("BLOCK_X", "BLOCK_Y", "BLOCK_Z"))
            tile = "x".join(str(launch[k]) for k in ("TILE_X", "TILE_Y", "TILE_Z"))
            regs = f"{build.registers}" + ("s" if build.spills else "")
            problems = []
            for sizes in check_sizes(lab):
                case = Case(
                    "check-" + "x".join(str(v) for v in sizes.values()),
                    lab.full_sizes(sizes),
                    "public",
                    1234,
                )
                ok, why = run_case(loaded, lab, case)
                if not ok:
                    problems.append(why)
            correct = "yes" if not problems else "NO: " + problems[0][:120]
            if data is None:
                data = timing_data(gpu, lab)
            loaded.set_constants(data.constants)
            grid = grid_for(lab, data.sizes, loaded.interface)
            shared = lab.dynamic_shared(data.sizes, launch) if lab.dynamic_shared else 0
            gpu.cuda.memset_d32(data.out_ptr, 0x7FC0FFEE, data.out_layout.elements)
            block_dim = loaded.interface.block()

            def run(loaded=loaded, grid=grid, block_dim=block_dim, shared=shared, data=data):
                loaded.launch(grid, block_dim, shared, data.args)

            ms = gpu.time_ms(run, args.repeat)
            agrees = agreement(data, first=(build.name == "reference"))
            if build.name == "reference":
                ref_ms = ms
                ref_file.write_text(str(ms))
            if compute:
                rate = flops / ms / 1e9
                frac = rate / hw["cublas_tflops"] if hw.get("cublas_tflops") else None
            else:
                rate = moved / ms / 1e6
                frac = rate / hw["copy_gbs"] if hw.get("copy_gbs") else None
            vs = f"{ref_ms / ms:5.2f}x" if ref_ms else "    -"
            pct = f"{100 * frac:6.1f}%" if frac is not None else "      -"
            say(
                f"{build.name:34s} {block:>9s} {tile:>10s} {regs:>5s} {ms:8.3f} "
                f"{rate:8.2f} {pct:>7s} {vs:>6s}  {agrees:>8s}  {correct}"
            )
            target = tuning(lab).get("target")
            if build.name == "reference" and target is not None and frac is not None:
                verdict = "meets" if frac >= target else "MISSES"
                say(f"{'':34s} reference {verdict} the target of {100 * target:.0f}%")
        except Exception as err:  # noqa: BLE001 - one variant never stops the others
            message = f"{type(err).__name__}: {err}".replace("\n", " ")[:300]
            say(f"{build.name:34s} ERROR {message}")
            if sticky(err):
                say(f"RESUME {index + 1}")
                return 3
    if args.all_cases:
        all_cases_check(gpu, lab, builds)
    return 0


def sticky(err: Exception) -> bool:
    """Errors after which the CUDA context is unusable."""
    text = str(err).lower()
    return any(
        word in text
        for word in (
            "illegal",
            "launch failed",
            "unspecified",
            "timeout",
            "misaligned",
            "exception",
            "context",
        )
    )


def all_cases_check(gpu: Gpu, lab: Lab, builds: list[Build]) -> None:
    """The reference on every public and hidden case of the lab."""
    refs = {tuple(sorted(b.macros.items())): b for b in builds if b.name == "reference"}
    loaded: dict[str, Loaded] = {}
    failed, total = [], 0
    for case in cases_for(lab, SECRET):
        build = refs.get(tuple(sorted(lab.macro_values(case.sizes).items())))
        total += 1
        if build is None or build.error:
            failed.append(f"{case.name}: not built ({build.error if build else 'no build'})")
            continue
        try:
            if build.cubin not in loaded:
                loaded[build.cubin] = Loaded(gpu, build)
            ok, why = run_case(loaded[build.cubin], lab, case)
            if not ok:
                failed.append(why)
        except Exception as err:  # noqa: BLE001
            failed.append(f"{case.name}: {type(err).__name__}: {err}"[:200])
            if sticky(err):
                break
    if failed:
        say(f"all cases: reference FAILS {len(failed)} of {total}:")
        for line in failed:
            say(f"    {line}")
    else:
        say(f"all cases: reference passes all {total} public and hidden cases")


# -- the parent -------------------------------------------------------------------------


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--labs", nargs="*", help="labs to run (default: all)")
    parser.add_argument("--repeat", type=int, default=20, help="timed runs per variant")
    parser.add_argument("--arch", default=None, help="e.g. sm_90 (default: from nvidia-smi)")
    parser.add_argument(
        "--no-all-cases",
        dest="all_cases",
        action="store_false",
        help="skip running each reference on all public and hidden cases",
    )
    parser.add_argument("--list", action="store_true", help="list the variants and exit")
    parser.add_argument("--keep", action="store_true", help="keep the build folder")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--builds", help=argparse.SUPPRESS)
    parser.add_argument("--hw", help=argparse.SUPPRESS)
    parser.add_argument("--start", type=int, default=0, help=argparse.SUPPRESS)
    parser.add_argument("--hardware", help=argparse.SUPPRESS)
    args = parser.parse_args()

    if args.hardware:
        Path(args.hardware).write_text(json.dumps(hardware(args.repeat)))
        return 0
    if args.child:
        return child(args)

    began = time.monotonic()
    labs = all_labs()
    names = args.labs or list(labs)
    unknown = [n for n in names if n not in labs]
    if unknown:
        say(f"unknown labs: {', '.join(unknown)}; labs: {', '.join(labs)}")
        return 2
    for name in [n for n in names if supported(labs[n])]:
        say(f"{name}: skipped, {supported(labs[name])} (bench/gpu_labs.py times it)")
    names = [n for n in names if not supported(labs[n])]
    plans = {name: plan_builds(labs[name], args.all_cases) for name in names}
    if args.list:
        for name, builds in plans.items():
            say(name)
            for b in builds:
                say(f"    {b.name:34s} {b.path} {b.defines or ''} {b.macros or ''}")
        return 0

    arch = args.arch or detect_arch()
    out = Path(tempfile.mkdtemp(prefix="tune-references-"))
    say(f"tune_references: {len(names)} labs, arch {arch}, build folder {out}")

    hw_file = out / "hardware.json"
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])]),
    }
    hw_proc = subprocess.Popen(
        [sys.executable, __file__, "--hardware", str(hw_file), "--repeat", str(args.repeat)],
        env=env,
    )

    everything = [b for builds in plans.values() for b in builds]
    workers = max(2, machine.cores())
    with concurrent.futures.ThreadPoolExecutor(workers) as pool:
        list(pool.map(lambda b: compile_one(b, arch, out), everything))
    failed = [b for b in everything if b.error]
    say(
        f"compiled {len(everything)} modules in {time.monotonic() - began:.0f} s"
        + (f"; {len(failed)} failed" if failed else "")
    )

    try:
        hw_proc.wait(timeout=max(10.0, BUDGET_S - (time.monotonic() - began)))
    except subprocess.TimeoutExpired:
        hw_proc.kill()
    hw = json.loads(hw_file.read_text()) if hw_file.exists() else {}
    if hw:
        say(
            f"device: {hw.get('device')} ({hw.get('sms')} SMs, {hw.get('clock_mhz')} MHz, "
            f"driver {hw.get('driver')})"
        )
        if "cublas_tflops" in hw:
            say(
                f"cuBLAS fp32 (CuPy, TF32 off) n={CUBLAS_N}: {hw['cublas_ms']:.3f} ms, "
                f"{hw['cublas_tflops']:.1f} TFLOP/s"
            )
        else:
            say(f"cuBLAS: {hw.get('cublas_error', 'not measured')}")
        if "copy_gbs" in hw:
            say(
                f"device-to-device copy of {hw['copy_bytes'] / 1e6:.0f} MB: {hw['copy_ms']:.3f} ms"
                f", {hw['copy_gbs']:.0f} GB/s (read + write)"
            )
        else:
            say(f"copy: {hw.get('copy_error', 'not measured')}")
    else:
        say("hardware figures: not measured (see above)")

    status = 0
    summary: list[str] = []
    for name in names:
        builds_file = out / f"{name}.json"
        builds_file.write_text(json.dumps([b.__dict__ for b in plans[name]]))
        start = 0
        while True:
            left = BUDGET_S - (time.monotonic() - began)
            if left < 5:
                say(f"\n== {name}: skipped, the time budget is spent")
                status = 1
                break
            cmd = [
                sys.executable,
                __file__,
                "--child",
                name,
                "--builds",
                str(builds_file),
                "--hw",
                str(hw_file),
                "--repeat",
                str(args.repeat),
                "--start",
                str(start),
            ]
            if not args.all_cases:
                cmd.append("--no-all-cases")
            proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, text=True)
            resume = None
            try:
                for line in proc.stdout:
                    if line.startswith("RESUME "):
                        resume = int(line.split()[1])
                        continue
                    print(line, end="", flush=True)
                    if "the target of" in line or line.startswith("all cases:"):
                        summary.append(f"{name:16s} {line.strip()}")
                proc.wait(timeout=max(1.0, BUDGET_S - (time.monotonic() - began)))
            except subprocess.TimeoutExpired:
                proc.kill()
                say(f"{name}: stopped, the time budget is spent")
                status = 1
            if resume is None:
                if proc.returncode not in (0, None):
                    say(f"{name}: the child process ended with code {proc.returncode}")
                    status = 1
                break
            start = resume
            say(f"({name}: the CUDA context broke; resuming in a fresh process)")

    if summary:
        say("\nsummary")
        for line in summary:
            say(f"  {line}")
    say(f"\ndone in {time.monotonic() - began:.0f} s")
    if args.keep:
        say(f"builds kept in {out}")
    else:
        shutil.rmtree(out, ignore_errors=True)
    return status


if __name__ == "__main__":
    try:
        sys.exit(main())
    except KeyboardInterrupt:
        sys.exit(130)
    except Exception:  # noqa: BLE001
        traceback.print_exc()
        sys.exit(1)
