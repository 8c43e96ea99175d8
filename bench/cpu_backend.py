"""How fast the CPU backend is, on this machine.

    python3 bench/cpu_backend.py [--labs LAB ...] [--public]
        [--skip-labs | --stages | --references | --compilers | --timeline]

Prints one table:
  - the fiber switch: two fibers switching back and forth (assembly and ucontext), and
    the cost per thread of one __syncthreads() round in a block of 256 threads;
  - barrier-free kernels against the same loop written in plain C++ (one core each, and
    the backend on every core), and the naive matmul reading its operands by float
    atomicAdd(p, 0), whose targets every pool thread shares;
  - a chained scan whose blocks each wait for the one before, so that they park, on one
    pool thread, on every core and on 16;
  - every lab's reference kernel graded on all public and hidden cases
    (grader.grading.pipeline.check, secret fixed, nvcc first where it is installed), with a cold
    build cache and a warm one, then "edited": each module and nvcc inspection forgotten,
    as an edit of the file makes them, with the reference's sums and profiles kept (a
    student's check after each edit); what is built once per machine (the runner, the
    shim's precompiled header) is built first, and timed apart. With --public, the
    public cases alone, as a student's `grader check` grades them (no secret, so no
    hidden case nor the builds at its macros): not the measure the targets below name.
With --stages, the labs alone, each grading's seconds by stage (STAGES) under its total:
the stages overlap (builds ahead, two cases at once), so they add up to more than it; and
its CPU seconds, of its own process (every thread) and of the compilers and workers.
With --references, the reference's sums of each lab's cases alone, computed and kept in
the cache (grader.grading.reference_cache): without the secret, what a warm check
computes on either backend.
With --compilers, the labs alone, each compiler run (nvcc, ptxas, g++: which file, which
build) with its CPU seconds, which other load on the machine inflates far less than it
does a wall-clock second, and when it ran (seconds into its grading); the totals by
tool. With --timeline, as --compilers with each worker's run too, every process in the
order it started: where a core idled (a cold check's serial tails, issue 36). Every
table ends with each phase's CPU seconds, the grader's own and its children's: on 2
cores, a phase takes at least half.
Targets: switch <= 30 ns; barrier-free <= 3x plain C++; all labs <= 15 s cold and
<= 6 s warm on 2 cores (`taskset -c 0,1`, issue 36)."""

from __future__ import annotations

import argparse
import collections
import functools
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
PHASES = ("cold", "warm", "edited")  # the build cache empty, full, and after an edit
sys.path.insert(0, str(ROOT))


PING_PONG = r"""
#include "fiber.h"
#include <chrono>
#include <cstdio>
static rt::Context main_ctx, a_ctx, b_ctx;
static char a_stack[1 << 16], b_stack[1 << 16];
static const long N = 2000000;
static void a_main(void*) { for (;;) rt::context_switch(&a_ctx, &b_ctx); }
static void b_main(void*) {
    for (long i = 0; i < N; ++i) rt::context_switch(&b_ctx, &a_ctx);
    rt::context_switch(&b_ctx, &main_ctx);
}
int main() {
    rt::context_init(&a_ctx, a_stack, sizeof a_stack, a_main, nullptr);
    rt::context_init(&b_ctx, b_stack, sizeof b_stack, b_main, nullptr);
    auto t0 = std::chrono::steady_clock::now();
    rt::context_switch(&main_ctx, &b_ctx);
    double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    printf("%.2f\n", s * 1e9 / (2.0 * N));
}
"""

PLAIN = r"""
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>
__attribute__((noinline)) void saxpy(const float* x, float* y, float a, int n) {
    for (int i = 0; i < n; ++i) y[i] = a * x[i] + y[i];
}
__attribute__((noinline)) void matmul(const float* M, const float* N, float* P, int W) {
    for (int r = 0; r < W; ++r)
        for (int c = 0; c < W; ++c) {
            float acc = 0.0f;
            for (int k = 0; k < W; ++k) acc += M[r * W + k] * N[k * W + c];
            P[r * W + c] = acc;
        }
}
static double seconds_since(std::chrono::steady_clock::time_point t0) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}
int main(int argc, char** argv) {  // each loop's best of 5: the memory bus is shared
    int n = atoi(argv[1]), w = atoi(argv[2]);
    std::vector<float> x(n, 1.0f), y(n, 2.0f), m(w * w, 0.5f), p(w * w);
    double s = 1e9, mm = 1e9;
    for (int r = 0; r < 5; ++r) {
        auto t0 = std::chrono::steady_clock::now();
        saxpy(x.data(), y.data(), 3.0f, n);
        s = std::min(s, seconds_since(t0));
        t0 = std::chrono::steady_clock::now();
        matmul(m.data(), m.data(), p.data(), w);
        mm = std::min(mm, seconds_since(t0));
    }
    printf("%.6f %.6f %f\n", s, mm, y[n - 1] + p[0]);
}
"""

KERNELS = r"""
__global__ void saxpy(const float* x, float* y, float a, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
}
__global__ void matmul(const float* M, const float* N, float* P, int Width) {
    int r = blockIdx.y * blockDim.y + threadIdx.y, c = blockIdx.x * blockDim.x + threadIdx.x;
    if (r < Width && c < Width) {
        float acc = 0.0f;
        for (int k = 0; k < Width; ++k) acc += M[r * Width + k] * N[k * Width + c];
        P[r * Width + c] = acc;
    }
}
__global__ void atomic_matmul(const float* M, const float* N, float* P, int Width) {
    int r = blockIdx.y * blockDim.y + threadIdx.y, c = blockIdx.x * blockDim.x + threadIdx.x;
    if (r < Width && c < Width) {
        float acc = 0.0f;
        for (int k = 0; k < Width; ++k)
            acc += atomicAdd((float*)&M[r * Width + k], 0.0f) *
                   atomicAdd((float*)&N[k * Width + c], 0.0f);
        P[r * Width + c] = acc;
    }
}
__global__ void rounds(float* P, int n) {
    float acc = 0.0f;
    for (int i = 0; i < n; ++i) { acc += i; __syncthreads(); }
    P[blockIdx.x * blockDim.x + threadIdx.x] = acc;
}
"""

# Apart from KERNELS: a file that says volatile has every load hooked (precision.md).
CHAINED = r"""
__global__ void chained(const float* in, float* sums, volatile int* ready, int n) {
    unsigned b = blockIdx.x;
    if (threadIdx.x == 0) {
        float total = 0.0f;
        if (b > 0) {
            while (ready[b - 1] == 0) {}  /* the block before it: this block parks */
            total = sums[b - 1];
        }
        for (unsigned j = b * blockDim.x; j < (b + 1) * blockDim.x && j < n; ++j) total += in[j];
        sums[b] = total;
        __threadfence();
        ready[b] = 1;
    }
}
__global__ void crowded(const float* in, float* sums, volatile int* ready, int n) {
    unsigned b = blockIdx.x;
    if (b > 0) while (ready[b - 1] == 0) {}  /* every thread waits for the block before */
    if (threadIdx.x == 0) {
        float total = b > 0 ? sums[b - 1] : 0.0f;
        for (unsigned j = b * blockDim.x; j < (b + 1) * blockDim.x && j < n; ++j) total += in[j];
        sums[b] = total;
        __threadfence();
        ready[b] = 1;
    }
}
__global__ void lanes(const float* in, float* sums, volatile int* ready, int n) {
    unsigned b = blockIdx.x, i = b * blockDim.x + threadIdx.x;
    float carry = 0.0f;
    if (b > 0) {
        while (ready[i - blockDim.x] == 0) {}  /* its own word: its lane of the block before */
        carry = sums[i - blockDim.x];
    }
    sums[i] = carry + (i < n ? in[i] : 0.0f);
    __threadfence();
    ready[i] = 1;
}
"""


def compile_cpp(text: str, tmp: Path, name: str, extra: list[str]) -> Path:
    from grader.backends.cpu import runner
    from grader.toolchain import cxx

    (tmp / f"{name}.cpp").write_text(text)
    exe = tmp / name
    cmd = [cxx.compiler().path, "-O2", "-I", str(runner.RUNTIME), *extra]
    subprocess.run([*cmd, str(tmp / f"{name}.cpp"), "-o", str(exe)], check=True)
    return exe


def switch_costs(tmp: Path) -> list[tuple[str, str, str]]:
    from grader.backends.cpu import runner

    rows = []
    fiber = [str(runner.RUNTIME / "fiber.cpp")]
    if runner.fiber_source():
        asm = fiber + [str(runner.RUNTIME / runner.fiber_source())]
        exe = compile_cpp(PING_PONG, tmp, "pingpong", asm)
        ns = min(float(subprocess.check_output([str(exe)])) for _ in range(3))
        rows.append(("fiber switch, assembly (2 fibers)", f"{ns:.1f} ns", "<= 30 ns"))
    exe = compile_cpp(PING_PONG, tmp, "pingpong_uc", [*fiber, "-DGRADER_FIBER_UCONTEXT"])
    ns = min(float(subprocess.check_output([str(exe)])) for _ in range(3))
    rows.append(("fiber switch, ucontext fallback (2 fibers)", f"{ns:.1f} ns", ""))
    return rows


def kernel_seconds(backend, build, kernel, grid, block, args) -> float:
    """Seconds of the first pass's launch alone, as the worker measured it."""
    from grader.backends.cpu import job
    from grader.backends.cpu.protocol import Pass
    from grader.backends.cpu.shelf import Shelf
    from grader.model.launch import Launch

    launch = Launch(kernel, grid, block, 0, args, {})
    settings = job.Settings(backend.jobs, require_isolation=False)
    best = float("inf")
    for _ in range(3):
        with Shelf() as shelf:
            report = job.execute(build.artifact, launch, 60, settings, shelf)
        passes = report.all(Pass)
        if not passes:
            raise RuntimeError(f"{kernel} did not run: {report.records} {report.stderr}")
        best = min(best, passes[0].us / 1e6)
    return best


def kernel_costs(tmp: Path) -> list[tuple[str, str, str]]:
    """Where nvcc is, its PTX shows that saxpy's blocks store apart (job.blocks_apart), so
    that its stores on several pool threads call no hook; a student's machine without
    nvcc pays them."""
    from grader import machine
    from grader.backends.cpu import CpuBackend
    from grader.model.launch import Buffer, Scalar
    from grader.model.source import Submission

    rows: list[tuple[str, str, str]] = []

    n, width = 1 << 24, 384
    plain = compile_cpp(PLAIN, tmp, "plain", [])
    times = [subprocess.check_output([str(plain), str(n), str(width)]).split() for _ in range(3)]
    plain_saxpy = min(float(t[0]) for t in times)
    plain_matmul = min(float(t[1]) for t in times)
    x = np.ones(n, np.float32)
    m = np.full(width * width, 0.5, np.float32)
    saxpy_shape = ((n // 256, 1, 1), (256, 1, 1))
    for jobs in (1, machine.cores()):
        backend = CpuBackend(jobs=jobs)
        build = backend.build(Submission(Path("bench.cu"), KERNELS), {}, (16, 16, 1))
        saxpy_args = [
            Buffer("x", x, False),
            Buffer("y", x * 2, True),
            Scalar("a", "float", 3),
            Scalar("n", "int", n),
        ]
        saxpy = kernel_seconds(backend, build, "saxpy", *saxpy_shape, saxpy_args)
        g = -(-width // 16)
        operands = [
            Buffer("M", m, False),
            Buffer("N", m, False),
            Buffer("P", np.zeros_like(m), True),
            Scalar("Width", "int", width),
        ]
        matmul = kernel_seconds(backend, build, "matmul", (g, g, 1), (16, 16, 1), operands)
        atomic = kernel_seconds(backend, build, "atomic_matmul", (g, g, 1), (16, 16, 1), operands)
        cores = f"{jobs} core{'s' if jobs > 1 else ''}"
        rows.append(
            (
                f"saxpy, 16M elements, {cores} (plain C++ 1 core: {plain_saxpy * 1e3:.1f} ms)",
                f"{saxpy * 1e3:.1f} ms = {saxpy / plain_saxpy:.2f}x",
                "<= 3x" if jobs == 1 else "",
            )
        )
        if jobs > 1:
            unproven = replace(build, artifact=replace(build.artifact, stores_by_thread={}))
            hooked = kernel_seconds(backend, unproven, "saxpy", *saxpy_shape, saxpy_args)
            rows.append(
                (
                    f"saxpy as without nvcc, every store noted by its block, {cores}",
                    f"{hooked * 1e3:.1f} ms = {hooked / plain_saxpy:.2f}x",
                    "",
                )
            )
        rows.append(
            (
                f"naive matmul {width}, {cores} (plain C++ 1 core: {plain_matmul * 1e3:.0f} ms)",
                f"{matmul * 1e3:.0f} ms = {matmul / plain_matmul:.2f}x",
                "<= 3x" if jobs == 1 else "",
            )
        )
        rows.append(  # float atomics on targets every pool thread shares
            (
                f"naive matmul {width} reading by atomicAdd(p, 0), {cores}",
                f"{atomic * 1e3:.0f} ms = {atomic / plain_matmul:.2f}x",
                "",
            )
        )
        if jobs > 1:
            blocks, threads, rounds = 1000, 256, 64
            seconds = kernel_seconds(
                backend,
                build,
                "rounds",
                (blocks, 1, 1),
                (threads, 1, 1),
                [
                    Buffer("P", np.zeros(blocks * threads, np.float32), True),
                    Scalar("n", "int", rounds),
                ],
            )
            per = seconds * jobs / (blocks * threads * rounds) * 1e9
            rows.insert(
                0,
                (
                    "__syncthreads() per thread, 256-thread blocks (one core's time)",
                    f"{per:.1f} ns",
                    "<= 30 ns",
                ),
            )
    return rows


def chain_costs() -> list[tuple[str, str, str]]:
    """A chained scan whose every block waits for the one before, where one thread of a
    block waits (chained), where all do on one word (crowded) and each on its own (lanes,
    a lane's sum over the blocks): its blocks park, on one pool thread, on every core,
    and on 16 (a 16-core machine's pool). The whole run, both passes and any rerun on one
    pool thread, best of three."""
    from grader import machine
    from grader.backends.cpu import CpuBackend
    from grader.model.launch import Buffer, Launch, Scalar
    from grader.model.source import Submission

    rows: list[tuple[str, str, str]] = []
    n, threads = 200003, 512
    blocks = -(-n // threads)
    args = [
        Buffer("in", np.ones(n, np.float32), False),
        Buffer("sums", np.zeros(blocks * threads, np.float32), True),
        Buffer("ready", np.zeros(blocks * threads, np.int32), True),
        Scalar("n", "int", n),
    ]
    waiting = {  # who waits, and the element of sums that ends right with its value
        "chained": ("one thread of each block", blocks - 1, n),
        "crowded": ("every thread", blocks - 1, n),
        "lanes": ("every thread, each on its own word", n - 1, blocks),
    }
    for jobs in sorted({1, machine.cores(), 16}):
        backend = CpuBackend(jobs=jobs)
        build = backend.build(Submission(Path("chained.cu"), CHAINED), {}, (16, 16, 1))
        for kernel, (who, last, total) in waiting.items():
            launch = Launch(kernel, (blocks, 1, 1), (threads, 1, 1), 0, args, {})
            best, outcome = float("inf"), None
            for _ in range(3):
                began = time.perf_counter()
                outcome = backend.run(build, launch, 60)
                best = min(best, time.perf_counter() - began)
            if not outcome.completed or outcome.buffers["sums"].data[last] != total:
                raise RuntimeError(f"the {kernel} scan did not end right: {outcome.diagnostics}")
            how = "blocks at once" if outcome.blocks_at_once else "in grid order"
            if jobs > 1 and not outcome.blocks_at_once:
                how = "ran again on one pool thread"
            rows.append(
                (
                    f"chained scan, {blocks} blocks of {threads} threads waiting in turn "
                    f"({who}), {jobs} pool thread{'s' if jobs > 1 else ''}",
                    f"{best * 1e3:.0f} ms, {how}",
                    "",
                )
            )
    return rows


# What a grading spends its seconds on: (module, function, stage). Where a module took a
# function by name, it is timed there.
STAGES = (
    ("grader.toolchain.nvcc", "_compile", "nvcc (not cached)"),
    ("grader.backends.cpu.build", "_compile_in", "g++ (not cached)"),
    ("grader.backends.cpu.backend", "execute", "workers (each kernel's run)"),
    ("grader.grading.pipeline", "reference_sums", "the reference's sums (numpy, or the cache)"),
    ("grader.grading.pipeline", "judge", "judging the outputs"),
    ("grader.grading.profiles", "lab_kernel", "reference's and baseline's profiles"),
)


def timed_stages() -> dict[str, list[float]]:
    """Each stage's calls and seconds from now on, in every thread: [calls, seconds]."""
    import importlib

    spent: dict[str, list[float]] = collections.defaultdict(lambda: [0, 0.0])

    def timer(function, stage):
        @functools.wraps(function)
        def timed(*args, **kwargs):
            start = time.monotonic()
            try:
                return function(*args, **kwargs)
            finally:
                spent[stage][0] += 1
                spent[stage][1] += time.monotonic() - start

        return timed

    for module, name, stage in STAGES:
        found = importlib.import_module(module)
        setattr(found, name, timer(getattr(found, name), stage))
    return spent


# A process a grading waited for: tool, file, build kind, CPU seconds, and when it started
# and ended (time.monotonic)
Ran = collections.namedtuple("Ran", "tool file kind cpu start end")
# The compilers a grading runs besides the C++ compiler, by program, as --compilers names them
COMPILERS = {"nvcc": "nvcc", "ptxas": "ptxas", "c++filt": "c++filt", "cu++filt": "c++filt"}


def counted_compilers() -> list[Ran]:
    """Each process the gradings wait for from now on (grader.waiting.wait: compilers
    and workers), as a Ran: its CPU seconds user and system and its own children's
    included (os.wait4), its start from subprocess.Popen."""
    import select

    from grader import waiting

    ran: list[Ran] = []
    started: dict[int, float] = {}
    popen = subprocess.Popen.__init__

    def start(self, *args, **kwargs):
        popen(self, *args, **kwargs)
        started[self.pid] = time.monotonic()

    def wait(proc, timeout):
        if proc.returncode is None:
            fd = os.pidfd_open(proc.pid)
            try:
                if not select.select([fd], [], [], max(0, timeout))[0]:
                    raise subprocess.TimeoutExpired(proc.args, timeout)
            finally:
                os.close(fd)
            _, status, used = os.wait4(proc.pid, 0)
            proc.returncode = os.waitstatus_to_exitcode(status)
            cpu, end = used.ru_utime + used.ru_stime, time.monotonic()
            named = _invocation(list(map(str, proc.args)))
            ran.append(Ran(*named, cpu, started.pop(proc.pid, end), end))
        return proc.returncode

    subprocess.Popen.__init__ = start
    waiting.wait = wait
    return ran


def _invocation(argv: list[str]) -> tuple[str, str, str]:
    """(tool, file, build kind) of a process the grading ran: a compiler inside `sandbox
    exec ... --`, or a worker. A ptxas run is named with the macros of the nvcc run whose
    folder it compiles in."""
    cmd = argv[argv.index("--") + 1 :] if "--" in argv else argv
    tool = Path(cmd[0]).name
    if tool not in COMPILERS and not tool.endswith(("g++", "c++", "clang++")):
        return "workers", "", ""
    tool = COMPILERS.get(tool, tool)
    source = Path(cmd[-1]).name if tool != "c++filt" else ""
    macros = " ".join(a[2:] for a in cmd if re.match(r"-D[A-Z][A-Z_]*=\d+$", a))
    folder = str(Path(cmd[-1]).parent)
    if tool == "ptxas":
        kind, macros = "resources", _nvcc_macros.get(folder, "")
    elif tool == "nvcc":
        kind = "PTX, with -MD" if "-MD" in cmd else "PTX"
        _nvcc_macros[folder] = macros
    else:
        kind = "census" if "-fsanitize=thread" in cmd else "plain"
    return tool, source, f"{kind} {macros}".strip()


_nvcc_macros: dict[str, str] = {}  # an nvcc run's folder -> its macros, for its ptxas


def public_macros(lab: str) -> set[str]:
    """The macro values of the lab's public cases, as _invocation writes them."""
    from grader.judge.cases import public_cases
    from grader.labs import get

    found = get(lab)
    return {
        " ".join(f"{k}={v}" for k, v in sorted(found.macro_values(c.sizes).items()))
        for c in public_cases(found)
    }


def hidden_only(lab: str, ran: list[Ran]) -> tuple[int, float]:
    """The nvcc and ptxas runs of a lab's grading (and their CPU seconds) at macro values
    no public case has: those only the hidden cases need (conv labs' MASK_WIDTH 3 and 7)."""
    public = public_macros(lab)
    runs = [
        r.cpu
        for r in ran
        if r.tool in ("nvcc", "ptxas")
        and " ".join(w for w in r.kind.split() if "=" in w) not in public
    ]
    return len(runs), sum(runs)


def compiler_rows(grading: str, ran: list[Ran], began: float, timeline: bool) -> list[tuple]:
    """A row for each compiler a grading that began at `began` ran, with its CPU seconds
    and when it ran, and one for all its workers; with `timeline`, one for each worker
    too, every row in the order they started."""
    rows = [
        (
            f"  {grading}: {r.tool} {r.file} ({r.kind})".replace(" ()", ""),
            f"{r.cpu:.2f} CPU-s at {r.start - began:.2f}-{r.end - began:.2f} s",
            "",
        )
        for r in sorted(ran, key=lambda r: r.start)
        if timeline or r.tool != "workers"
    ]
    workers = [r.cpu for r in ran if r.tool == "workers"]
    if workers:
        rows.append((f"  {grading}: {len(workers)} workers", f"{sum(workers):.2f} CPU-s", ""))
    return rows


def tool_totals(phase: str, ran: list[Ran]) -> list[tuple[str, str, str]]:
    """Each tool's calls and CPU seconds over a phase's gradings."""
    totals: dict[str, list[float]] = collections.defaultdict(lambda: [0, 0.0])
    for r in ran:
        totals[r.tool][0] += 1
        totals[r.tool][1] += r.cpu
    return [
        (f"  {phase}, every lab: {tool}", f"{n} runs, {cpu:.1f} CPU-s", "")
        for tool, (n, cpu) in sorted(totals.items())
    ]


def children_cpu() -> float:
    """CPU seconds, user and system, of every child process ended so far."""
    import resource

    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    return used.ru_utime + used.ru_stime


def own_cpu() -> float:
    """CPU seconds, user and system, of this process (every thread) so far."""
    import resource

    used = resource.getrusage(resource.RUSAGE_SELF)
    return used.ru_utime + used.ru_stime


def lab_costs(
    labs: list[str],
    stages: bool = False,
    compilers: bool = False,
    timeline: bool = False,
    secret: str | None = "bench-secret",
) -> tuple[list[tuple[str, str, str]], float, float]:
    from grader.backends.cpu import runner, shim
    from grader.grading import pipeline
    from grader.toolchain import sandbox

    spent = timed_stages() if stages else {}
    compilers = compilers or timeline
    ran = counted_compilers() if compilers else []

    start = time.monotonic()
    sandbox.executable()  # built once per machine, outside the labs' timings
    runner.executable()
    shim.precompiled_shim()
    shim.precompiled_shim(census=True)
    once = time.monotonic() - start
    rows, totals, stage_rows, cpu_rows = [], {}, [], []
    hidden = collections.defaultdict(lambda: (0, 0.0))  # phase -> hidden_only's sums
    for phase in PHASES:
        if phase == "edited":
            forget_builds()
        totals[phase] = 0.0
        began = len(ran)
        cpu_at = own_cpu(), children_cpu()
        for lab in labs:
            path = ROOT / "reference_kernels" / lab / "reference.cu"
            options = pipeline.Options(backend="cpu", secret=secret, timing=False)
            spent.clear()
            first = len(ran)
            used, own = children_cpu(), own_cpu()
            start = time.monotonic()
            result = pipeline.check(lab, path, options)
            seconds = time.monotonic() - start
            totals[phase] += seconds
            if stages or compilers:
                cpu = children_cpu() - used + own_cpu() - own
                stage_rows.append((f"  {phase} {lab}: all CPU", f"{cpu:.2f} CPU-s", ""))
            if stages:
                cpu = f"{children_cpu() - used:.2f} s"
                stage_rows.append((f"  {phase} {lab}: CPU of compilers and workers", cpu, ""))
                cpu = f"{own_cpu() - own:.2f} s"
                stage_rows.append((f"  {phase} {lab}: CPU of the grading's own process", cpu, ""))
            for stage, (calls, took) in spent.items():
                stage_rows.append((f"  {phase} {lab}: {stage}", f"{took:.2f} s, {calls} calls", ""))
            stage_rows += compiler_rows(f"{phase} {lab}", ran[first:], start, timeline)
            runs, cpu = hidden_only(lab, ran[first:])
            hidden[phase] = (hidden[phase][0] + runs, hidden[phase][1] + cpu)
            if phase == "cold":
                passed = sum(c.passed for c in result.cases)
                rows.append([lab, f"{passed}/{len(result.cases)} cases", [seconds]])
            else:
                next(r for r in rows if r[0] == lab)[2].append(seconds)
        stage_rows += tool_totals(phase, ran[began:])
        if compilers:
            runs, cpu = hidden[phase]
            what = f"  {phase}, every lab: nvcc and ptxas at macros of hidden cases alone"
            stage_rows.append((what, f"{runs} runs, {cpu:.1f} CPU-s", ""))
        own, children = own_cpu() - cpu_at[0], children_cpu() - cpu_at[1]
        cpu_rows.append(
            (
                f"all labs {phase}: CPU-s, the grader's own + its children's",
                f"{own + children:.1f} = {own:.1f} + {children:.1f} CPU-s",
                "",
            )
        )
    table = [("built once per machine: sandbox, runner, shims", f"{once:.1f} s", "")]
    table += [(f"lab {lab}: {cases}", phase_seconds(seconds), "") for lab, cases, seconds in rows]
    return table + stage_rows + cpu_rows, [totals[phase] for phase in PHASES]


def phase_seconds(seconds: list[float]) -> str:
    return ", ".join(f"{s:.1f} s {phase}" for s, phase in zip(seconds, PHASES, strict=True))


def forget_builds() -> None:
    """What an edit of the graded file makes stale: its compiled modules and nvcc's
    inspections of it (the headers nvcc was seen to read stay, as they do on a student's
    machine, and so do the reference's sums and profiles)."""
    from grader import defaults

    cache = defaults.cache_dir()
    for module in cache.glob("cpu/mod-*"):
        shutil.rmtree(module)
    for inspection in cache.glob("nvcc/*.json"):
        if not inspection.name.startswith("includes-"):
            inspection.unlink()


def reference_costs(labs: list[str]) -> list[tuple[str, str, str]]:
    """Each lab's seconds of the reference's sums of its cases (compare.sums), the median
    of 3: computed, and through grader.grading.reference_cache once it has kept them.
    Without the secret, the public cases: what a warm `grader check` computes, on a GPU
    too; with it, every case (the warm gradings above)."""
    import statistics

    from grader.grading import reference_cache
    from grader.judge import cases, compare
    from grader.judge.launch import at_launch
    from grader.labs import get
    from grader.model.interface import LAUNCH_MACROS, Interface

    # the reference kernels' launch where it decides the sums (reduction's TILE_X)
    interface = Interface(launch=dict(zip(LAUNCH_MACROS, (256, 1, 1, 512, 1, 1), strict=True)))

    def seconds(work) -> float:
        took = []
        for _ in range(3):
            start = time.perf_counter()
            work()
            took.append(time.perf_counter() - start)
        return statistics.median(took)

    rows, totals = [], collections.Counter()
    for name in labs:
        lab = get(name)
        for secret, which in ((None, "public cases"), ("bench-secret", "every case, secret")):
            made = [(c, at_launch(lab, c, interface)) for c in cases.cases_for(lab, secret)]
            made = [(case, sized, cases.make_inputs(lab, case)) for case, sized in made]
            computed = seconds(lambda: [compare.sums(lab, s, i) for _, s, i in made])  # noqa: B023
            for m in made:  # kept where it pays, before the timed reads
                reference_cache.reference_sums(lab, *m)
            cached = seconds(lambda: [reference_cache.reference_sums(lab, *m) for m in made])  # noqa: B023
            totals[which, "computed"] += computed
            totals[which, "cached"] += cached
            result = f"{computed * 1e3:.0f} ms computed, {cached * 1e3:.0f} ms kept"
            rows.append((f"lab {name}: the reference's sums, {which}", result, ""))
    for which in ("public cases", "every case, secret"):
        result = f"{totals[which, 'computed']:.2f} s computed, {totals[which, 'cached']:.2f} s kept"
        rows.append((f"all labs: the reference's sums, {which}", result, ""))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--labs", nargs="*", help="these labs only (default: every lab)")
    parser.add_argument("--skip-labs", action="store_true")
    parser.add_argument(
        "--public",
        action="store_true",
        help="the labs on their public cases alone, as a student's check without the secret",
    )
    parser.add_argument(
        "--stages", action="store_true", help="the labs alone, with each stage's seconds"
    )
    parser.add_argument(
        "--references",
        action="store_true",
        help="the reference's sums of every lab's cases alone, computed and kept",
    )
    parser.add_argument(
        "--compilers",
        action="store_true",
        help="the labs alone, with each compiler's run and its CPU seconds",
    )
    parser.add_argument(
        "--timeline",
        action="store_true",
        help="as --compilers, with each worker's run too, in the order they started",
    )
    args = parser.parse_args()
    rows: list[tuple[str, str, str]] = []
    if args.references:
        with tempfile.TemporaryDirectory(prefix="grader-bench-cache-") as cache:
            os.environ["GRADER_CACHE"] = cache
            from grader.labs import all_labs

            rows += reference_costs(args.labs or list(all_labs()))
        args.skip_labs, args.stages = True, True
    if not (args.stages or args.compilers or args.timeline):
        with tempfile.TemporaryDirectory(prefix="grader-bench-") as tmp:
            rows += switch_costs(Path(tmp))
            rows += kernel_costs(Path(tmp))
        rows += chain_costs()
    if not args.skip_labs:
        with tempfile.TemporaryDirectory(prefix="grader-bench-cache-") as cache:
            os.environ["GRADER_CACHE"] = cache  # cold: nothing compiled yet but the runner
            from grader.backends.cpu import runner, shim
            from grader.toolchain import sandbox

            sandbox.executable.cache_clear()
            runner.executable.cache_clear()
            shim.precompiled_shim.cache_clear()
            from grader.labs import all_labs

            chosen = args.labs or list(all_labs())
            secret = None if args.public else "bench-secret"
            table, totals = lab_costs(chosen, args.stages, args.compilers, args.timeline, secret)
            rows += table
            total = phase_seconds(totals)
            if args.public:  # not the measure: no target
                rows.append(("all labs, public cases alone", total, ""))
            else:
                rows.append(("all labs, public and hidden cases", total, "<= 15 s, <= 6 s"))
    width = max(len(r[0]) for r in rows)
    print(f"{'measure':<{width}}  {'result':<34}  target")
    for what, result, target in rows:
        print(f"{what:<{width}}  {result:<34}  {target}")
    from bench.host import describe  # the grader imported after GRADER_CACHE is set

    print(describe())


if __name__ == "__main__":
    main()
