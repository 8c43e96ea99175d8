"""Kernels with the mistakes students make get the right verdict and diagnostic: the
kind, the thread, the block, the buffer by its parameter name, the element, the line."""

from __future__ import annotations

import resource
import time

import numpy as np
import pytest
from cpu_kit import inp, integer, kinds, only, out

from grader import defaults, labs
from grader.backends.cpu import diagnose, job
from grader.backends.cpu.contract import WALL_FACTOR
from grader.model.interface import check
from grader.model.launch import Launch
from grader.model.result import Kind, RaceScope
from grader.toolchain import nvcc

# The tiled matrix multiply every case below starts from; LINE marks are looked up.
TILED = r"""
#define TILE 16
__global__ void matmul(const float* M, const float* N, float* P, int Width) {
    __shared__ float Ms[TILE][TILE];
    __shared__ float Ns[TILE][TILE];
    int tx = threadIdx.x, ty = threadIdx.y;
    int row = blockIdx.y * TILE + ty, col = blockIdx.x * TILE + tx;
    /*EARLY*/
    float acc = 0.0f;
    for (int m = 0; m < (Width + TILE - 1) / TILE; ++m) {
        int mc = m * TILE + tx, mr = m * TILE + ty;
        Ms[ty][tx] = (row < Width && mc < Width) ? M[row * Width + mc] : 0.0f;
        Ns[ty][tx] = (col < Width && mr < Width) ? N[mr * Width + col] : 0.0f;
        __syncthreads(); /*FIRST*/
        for (int k = 0; k < TILE; ++k) acc += Ms[ty][k] * Ns[k][tx];
        __syncthreads(); /*SECOND*/
    }
    if (row < Width && col < Width) P[row * Width + col] = acc;
}
"""


def line_of(source: str, mark: str) -> int:
    return source[: source.index(mark)].count("\n") + 1


def matmul_args(rng, width: int):
    m = rng.uniform(-1, 1, (width, width)).astype(np.float32)
    n = rng.uniform(-1, 1, (width, width)).astype(np.float32)
    args = [inp("M", m), inp("N", n), out("P", width * width), integer("Width", width)]
    return args, m.astype(np.float64) @ n


def run_matmul(kit, source: str, rng, width: int = 37, **kw):
    build = kit.built(source, **kw)
    args, expected = matmul_args(rng, width)
    grid = (-(-width // 16), -(-width // 16))
    return kit.run(build, "matmul", grid, (16, 16), args), expected


def test_the_correct_tiled_kernel_has_no_diagnostics(kit, rng, no_nvcc):
    result, expected = run_matmul(kit, TILED, rng)
    assert result.diagnostics == []
    np.testing.assert_allclose(result.buffers["P"].data.reshape(37, 37), expected, atol=1e-4)


def test_matmul_517_with_barriers_is_right_and_clean(kit, rng, no_nvcc):
    # Its speed is bench/cpu_backend.py's to measure: a wall-clock bound here fails on a
    # loaded machine.
    result, expected = run_matmul(kit, TILED, rng, width=517)
    assert result.diagnostics == []
    np.testing.assert_allclose(result.buffers["P"].data.reshape(517, 517), expected, atol=1e-3)


# -- memory ----------------------------------------------------------------------------------

SHIFTED = r"""
__global__ void shift(const float* N, float* P, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        P[i] = N[i + 1];          /* reads one past the end */
}
__global__ void back(const float* N, float* P, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        P[i - 1] = N[i];          /* writes one before the start */
}
"""


def test_reading_past_the_end_names_parameter_element_thread_block_and_line(kit, no_nvcc):
    build = kit.built(SHIFTED)
    n = 1000  # the last thread in range, 999, is thread (103,0,0) of block (7,0,0)
    result = kit.run(build, "shift", 8, 128, [inp("N", np.ones(n)), out("P", n), integer("n", n)])
    assert result.crashed and not result.buffers
    diag = only(result, Kind.OUT_OF_BOUNDS)
    assert diag.thread == (103, 0, 0) and diag.block == (7, 0, 0)
    assert diag.line == line_of(SHIFTED, "reads one past")
    assert diag.message == (
        f"Thread (103,0,0) of block (7,0,0) read N[1000], 1 element past the end of N "
        f"(1000 elements), at line {diag.line}."
    )


def test_writing_before_the_start_is_found_by_the_second_pass(kit, no_nvcc):
    build = kit.built(SHIFTED)
    n = 300
    result = kit.run(build, "back", 3, 128, [inp("N", np.ones(n)), out("P", n), integer("n", n)])
    diag = only(result, Kind.OUT_OF_BOUNDS)
    assert "wrote P[-1], 1 element before the start of P (300 elements)" in diag.message
    assert diag.thread == (0, 0, 0) and diag.block == (0, 0, 0)
    assert diag.line == line_of(SHIFTED, "writes one before")


def test_dynamic_shared_memory_overrun(kit, no_nvcc):
    source = r"""
    __global__ void over(float* P) {
        extern __shared__ float s[];
        s[threadIdx.x] = 1.0f;              /* one more thread than the floats passed */
        __syncthreads();
        P[threadIdx.x] = s[threadIdx.x];
    }
    """
    build = kit.built(source)
    result = kit.run(build, "over", 1, 65, [out("P", 65)], shared=64 * 4)
    diag = only(result, Kind.OUT_OF_BOUNDS)
    assert "dynamic shared memory" in diag.message and "past the end" in diag.message
    assert diag.thread == (64, 0, 0)
    assert diag.line == line_of(source, "one more thread")


# -- barriers and races ------------------------------------------------------------------------


def test_missing_syncthreads_in_tiled_matmul_is_a_race(kit, rng, no_nvcc):
    racy = TILED.replace("__syncthreads(); /*FIRST*/", "/* no barrier */")
    result, _ = run_matmul(kit, racy, rng)
    diag = only(result, Kind.RACE)
    assert "differs between two runs" in diag.message and "__syncthreads()" in diag.message
    assert diag.message.startswith("P[")


def test_syncthreads_after_an_early_return_is_barrier_divergence(kit, rng, no_nvcc):
    early = TILED.replace("/*EARLY*/", "if (row >= Width || col >= Width) return;")
    result, _ = run_matmul(kit, early, rng)
    diag = only(result, Kind.BARRIER_DIVERGENCE)
    assert "had already returned" in diag.message
    assert diag.line == line_of(early, "/*FIRST*/")
    assert diag.block is not None and diag.thread is not None


def test_barriers_on_different_lines(kit, no_nvcc):
    source = r"""
    __global__ void split(float* P) {
        if (threadIdx.x < 16) {
            __syncthreads();               /* half the block */
        } else {
            __syncthreads();               /* the other half */
        }
        P[threadIdx.x] = 1.0f;
    }
    """
    build = kit.built(source)
    result = kit.run(build, "split", 1, 32, [out("P", 32)])
    diag = only(result, Kind.BARRIER_DIVERGENCE)
    assert "different barriers" in diag.message
    assert str(line_of(source, "half the block")) in diag.message
    assert str(line_of(source, "the other half")) in diag.message


def test_a_shuffle_waiting_for_a_lane_that_returned(kit, no_nvcc):
    source = r"""
    __global__ void lanes(float* P) {
        if (threadIdx.x >= 16) return;
        P[threadIdx.x] = __shfl_down_sync(0xffffffff, 1.0f, 1);   /* full mask */
    }
    """
    build = kit.built(source)
    result = kit.run(build, "lanes", 1, 32, [out("P", 32)])
    diag = only(result, Kind.BARRIER_DIVERGENCE)
    assert "__shfl_down_sync()" in diag.message and "had already returned" in diag.message
    assert diag.line == line_of(source, "full mask")


def test_a_warp_reduction_waiting_for_a_lane_that_returned_is_named(kit, no_nvcc):
    """The warp operations past __match_any_sync() (codes 9-14) are named too."""
    source = r"""
    __global__ void lanes(float* P) {
        if (threadIdx.x >= 16) return;
        P[threadIdx.x] = __reduce_add_sync(0xffffffff, threadIdx.x);
    }
    """
    build = kit.built(source)
    result = kit.run(build, "lanes", 1, 32, [out("P", 32)])
    diag = only(result, Kind.BARRIER_DIVERGENCE)
    assert "__reduce_add_sync()" in diag.message and "had already returned" in diag.message


def test_reading_shared_memory_nobody_wrote(kit, no_nvcc):
    source = r"""
    __global__ void halo(const float* N, float* P) {
        __shared__ float s[64];
        s[threadIdx.x] = N[threadIdx.x];
        __syncthreads();
        P[threadIdx.x] = s[threadIdx.x] + s[threadIdx.x + 1];   /* s[64] is never written */
    }
    """
    build = kit.built(source)
    result = kit.run(build, "halo", 1, 63, [inp("N", np.ones(64)), out("P", 63)])
    diag = only(result, Kind.NAN)
    assert "shared memory that no thread wrote" in diag.message
    assert diag.message.startswith("P[62]")


# -- hangs and crashes ----------------------------------------------------------------------


def test_an_infinite_loop_times_out_naming_the_running_thread(kit, no_nvcc):
    source = r"""
    __global__ void spin(float* P, int n) {
        float acc = 0.0f;
        for (int i = 0; i < n; i += 0)      /* never advances */
            acc += P[i];
        P[threadIdx.x] = acc;
    }
    """
    build = kit.built(source)
    result = kit.run(build, "spin", 2, 32, [out("P", 64, 0.0), integer("n", 4)], timeout=2)
    assert result.timed_out and not result.buffers
    diag = only(result, Kind.TIMEOUT)
    assert "did not finish within 2 s" in diag.message
    assert "was still running" in diag.message
    assert diag.thread is not None and diag.block is not None
    assert diag.line == line_of(source, "never advances") + 1 or diag.line == line_of(
        source, "never advances"
    )


def test_a_loop_of_barriers_that_never_ends_names_its_barriers_whoever_ran_last(kit, no_nvcc):
    source = r"""
    __global__ void spin(float* P, int n) {
        __shared__ float s[64];
        for (int i = 0; i < n; i += 0) {    /* never advances */
            s[threadIdx.x] = P[threadIdx.x];
            __syncthreads();                /* first */
            P[threadIdx.x] += s[63 - threadIdx.x];
            __syncthreads();                /* second */
        }
    }
    """
    build = kit.built(source)
    said = set()
    for jobs in (1, 2):  # which thread a probe finds changes, not the answer
        with kit.pool_threads(jobs):
            args = [out("P", 192, 1.0), integer("n", 4)]
            diag = only(kit.run(build, "spin", 3, 64, args, timeout=1), Kind.TIMEOUT)
        said.add((diag.message, diag.line, diag.block, diag.thread))
    ((message, line, block, thread),) = said
    first, second = line_of(source, "first"), line_of(source, "second")
    assert f"kept meeting at the __syncthreads() at lines {first} and {second}" in message
    assert (line, block, thread) == (first, (0, 0, 0), None)


def test_a_thread_that_spins_after_a_loop_of_barriers_is_named_not_the_barriers(kit, no_nvcc):
    """The barriers' loop ended; thread 0 then waits for a flag nobody sets. Its threads
    met each barrier more than once, but none while the probes ran: the loop is the
    spin's. This said "kept meeting at the __syncthreads() at line 5" before."""
    source = r"""
    __device__ volatile int never = 0;
    __global__ void spin(float* P, int n) {
        for (int i = 0; i < n; ++i) {
            __syncthreads();                /* met n times */
            P[threadIdx.x] += 1.0f;
        }
        __syncthreads();
        if (threadIdx.x == 0) while (never == 0) {}   /* spins */
        P[threadIdx.x] = 2.0f;
    }
    """
    build = kit.built(source)
    args = [out("P", 64, 0.0), integer("n", 8)]
    diag = only(kit.run(build, "spin", 2, 32, args, timeout=1), Kind.TIMEOUT)
    assert "kept meeting" not in diag.message
    assert (diag.line, diag.thread) == (line_of(source, "spins"), (0, 0, 0))


WAITS = r"""
extern "C" int usleep(unsigned int);
__global__ void k(float* P, int us) {
    if (threadIdx.x == 0) for (int left = us; left > 0; left -= 100000) usleep(100000);
    P[threadIdx.x] = 1.0f;
}
"""


def worker_run(kit, build, kernel: str, args: list, timeout: float):
    """The outcome of one run, with its wall seconds and the CPU seconds its worker used
    (the machine's other load does not add to those)."""
    before, start = resource.getrusage(resource.RUSAGE_CHILDREN), time.monotonic()
    result = kit.run(build, kernel, 2, 32, args, timeout=timeout)
    after, wall = resource.getrusage(resource.RUSAGE_CHILDREN), time.monotonic() - start
    cpu = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
    return result, wall, cpu


def test_a_kernel_is_timed_by_its_work_and_one_that_only_waits_by_the_wall_clock(kit, no_nvcc):
    """The timeout counts the CPU time a kernel worked, not the time a machine busy with
    other work gave it (runtime/signals.cpp): a kernel that waits 0.6 s a pass, working
    for none of it, passes a timeout of 0.3 s; one that waits forever is stopped at
    WALL_FACTOR times its timeout, with the sentence of any hang."""
    build = kit.built(WAITS)
    result, wall, _ = worker_run(kit, build, "k", [out("P", 64), integer("us", 600000)], 0.3)
    assert not result.timed_out and result.diagnostics == [] and wall > 1.2
    forever = [out("P", 64), integer("us", 1 << 30)]
    result, wall, cpu = worker_run(kit, build, "k", forever, 0.25)
    assert result.timed_out and cpu < 1.0
    assert 0.25 * WALL_FACTOR <= wall < 0.25 * WALL_FACTOR + 4
    assert "did not finish within 0.25 s" in only(result, Kind.TIMEOUT).message


def test_one_endless_block_is_stopped_by_its_own_cpu_time(kit, no_nvcc):
    """A block that never ends while the pool's other thread has run out of blocks: the
    block's own CPU time reaches the timeout first, as its wall time does on an idle
    machine, not the pool's CPU time shared over its two threads, which would take twice
    as long."""
    source = r"""
    __global__ void k(float* P) {
        volatile int forever = 1;
        if (blockIdx.x == 0) while (forever) {}       /* never ends */
        P[blockIdx.x * blockDim.x + threadIdx.x] = 1.0f;
    }
    """
    build = kit.built(source)
    with kit.pool_threads(2):
        result, _, cpu = worker_run(kit, build, "k", [out("P", 64)], 1.0)
    diag = only(result, Kind.TIMEOUT)
    assert result.timed_out and diag.block == (0, 0, 0)
    assert diag.line == line_of(source, "never ends") and 1.0 <= cpu < 1.6


def test_integer_division_by_zero(kit, no_nvcc):
    source = r"""
    __global__ void divide(float* P, int d) {
        int i = blockIdx.x * blockDim.x + threadIdx.x;
        P[i] = (float)(i / d);            /* d is 0 */
    }
    """
    build = kit.built(source)
    result = kit.run(build, "divide", 2, 16, [out("P", 32), integer("d", 0)])
    diag = only(result, Kind.CRASH)
    assert "divided an integer by zero" in diag.message
    assert diag.thread == (0, 0, 0) and diag.block in ((0, 0, 0), (1, 0, 0))
    assert diag.line == line_of(source, "d is 0")


def test_a_failed_assert_names_its_expression_and_line(kit, no_nvcc):
    source = r"""
    #include <assert.h>
    __global__ void checked(float* P, int n) {
        int i = blockIdx.x * blockDim.x + threadIdx.x;
        assert(i < n);
        P[i] = 1.0f;
    }
    """
    build = kit.built(source)
    result = kit.run(build, "checked", 1, 32, [out("P", 32), integer("n", 20)])
    diag = only(result, Kind.CRASH)
    assert "failed assert(i < n)" in diag.message
    assert diag.line == line_of(source, "assert(i < n)")
    assert diag.thread == (20, 0, 0)


def test_a_stack_overflow_is_reported_as_such(kit, no_nvcc):
    source = r"""
    __device__ float deep(int n, volatile float* pad) {
        volatile float local[512];
        local[0] = pad[0];
        return n == 0 ? local[0] : deep(n - 1, local) + 1.0f;
    }
    __global__ void recurse(float* P, int n) { P[threadIdx.x] = deep(n, P); }
    """
    build = kit.built(source)
    result = kit.run(build, "recurse", 1, 4, [out("P", 4, 0.0), integer("n", 1 << 20)])
    diag = only(result, Kind.CRASH)
    assert "overflowed its 64 KB stack" in diag.message


def test_a_local_array_larger_than_the_stack_is_an_overflow_not_a_stray_store(kit, no_nvcc):
    """Without nvcc, nothing refuses 160 KB of locals before the run; the frame touches
    each page as it grows (-fstack-clash-protection), so it meets the fiber's guard and
    the report says so, where it once reached past the guard and blamed a store past the
    end of another buffer."""
    source = r"""
    __global__ void big(const float* M, float* P, int n) {
        float scratch[40000];
        for (int k = 0; k < n; ++k) scratch[k * 97 % 40000] = M[k];
        float sum = 0.0f;
        for (int k = 0; k < n; ++k) sum += scratch[k * 97 % 40000];
        P[threadIdx.x] = sum;
    }
    """
    build = kit.built(source)
    args = [inp("M", np.ones(4096)), out("P", 32), integer("n", 4096)]
    diag = only(kit.run(build, "big", 1, 32, args), Kind.CRASH)
    assert "overflowed its 64 KB stack" in diag.message, diag.message


def test_a_stack_overflow_in_a_profiled_run_is_reported_as_such(kit, no_nvcc):
    """In the run the grader profiles, a hook on each load may be the frame that reaches
    the guard page, its prologue leaving the stack pointer there: the fault's report
    reads the stack above it, not the guard (there the worker once died of a second
    fault, and the student read of a global constructor)."""
    source = r"""
    __device__ float dot(const float* M, int k) {
        return M[k % 64] * 0.0f + dot(M, k + 1);
    }
    __global__ void matmul(const float* M, float* P) { P[threadIdx.x] = dot(M, 0); }
    """
    build = kit.built(source)
    launch = Launch("matmul", (1, 1, 1), (4, 1, 1), 0, [inp("M", np.ones(64)), out("P", 4)], {})
    outcome, _ = kit.backend.profile(build, launch, 10.0)
    diag = only(outcome, Kind.CRASH)
    assert "overflowed its 64 KB stack" in diag.message, diag.message
    assert diag.line == line_of(source, "return M[k % 64]")


def test_a_stack_overflow_past_a_barrier_is_caught_by_that_fibers_own_guard(kit, no_nvcc):
    """Every thread is a fiber on a stack of its own here, each below a guard page set
    when the stack is first used: the overflow of thread 37, some 86 KB of frames, stops
    at its own guard, not in the next stack down."""
    source = r"""
    __device__ float deep(int n, volatile float* pad) {
        volatile float local[512];
        local[0] = pad[0];
        return n == 0 ? local[0] : deep(n - 1, local) + 1.0f;
    }
    __global__ void recurse(float* P, int n) {
        __syncthreads();
        P[threadIdx.x] = threadIdx.x == 37 ? deep(n, P) : 1.0f;
    }
    """
    build = kit.built(source)
    result = kit.run(build, "recurse", 1, 64, [out("P", 64, 0.0), integer("n", 40)])
    diag = only(result, Kind.CRASH)
    assert "overflowed its 64 KB stack" in diag.message and diag.thread == (37, 0, 0)


def test_a_printf_flood_is_capped_and_says_how_much_was_dropped(kit, no_nvcc):
    source = r"""
    __global__ void chatty(float* P) {
        int i = blockIdx.x * blockDim.x + threadIdx.x;
        printf("thread %5d of the flood says hello to everyone listening\n", i);
        P[i] = i;
    }
    """
    build = kit.built(source)
    result = kit.run(build, "chatty", 64, 128, [out("P", 8192)])
    assert len(result.output.encode()) == defaults.OUTPUT_LIMIT
    diag = only(result, Kind.OUTPUT)
    total = 8192 * len("thread     0 of the flood says hello to everyone listening\n")
    assert f"printed {total:,} bytes" in diag.message
    assert f"{total - defaults.OUTPUT_LIMIT:,} were dropped" in diag.message
    assert result.completed and result.buffers["P"].data[8191] == 8191


# -- resources ------------------------------------------------------------------------------


TOO_MUCH_SHARED = r"""
__global__ void big(float* P) {
    __shared__ float tile[13000];     /* 52,000 bytes */
    tile[threadIdx.x] = 1.0f;
    __syncthreads();
    P[threadIdx.x] = tile[threadIdx.x];
}
"""


def test_too_much_static_shared_memory(kit, no_nvcc):
    build = kit.built(TOO_MUCH_SHARED)
    assert build.interface.kernels["big"].resources.shared_bytes == 52000
    result = kit.run(build, "big", 1, 32, [out("P", 32)])
    diag = only(result, Kind.RESOURCES)
    assert "52000 bytes of static shared memory" in diag.message and result.crashed


@pytest.mark.skipif(nvcc.find() is None, reason="nvcc is not installed")
def test_too_much_static_shared_memory_with_nvcc_is_ptxas_s_compile_error(kit):
    """Where nvcc is installed, ptxas refuses the module, as it does for a GPU."""
    build = kit.build(TOO_MUCH_SHARED)
    assert not build.ok
    [diag] = build.diagnostics
    assert diag.kind == Kind.COMPILE_ERROR and "refused it" in diag.message
    assert "uses too much shared data (52000 bytes, 49152 max)" in diag.message


def test_launch_limits(kit, no_nvcc):
    source = r"""
    __global__ void __launch_bounds__(2 * 64) bounded(float* P) { P[threadIdx.x] = 1.0f; }
    """
    build = kit.built(source)
    assert build.interface.kernels["bounded"].max_threads == 128
    too_many = kit.run(build, "bounded", 1, (32, 64), [out("P", 2048)])
    assert "2048 threads is more than a GPU allows" in only(too_many, Kind.RESOURCES).message
    bounds = kit.run(build, "bounded", 1, 256, [out("P", 256)])
    assert "__launch_bounds__(128)" in only(bounds, Kind.RESOURCES).message
    dynamic = kit.run(build, "bounded", 1, 64, [out("P", 64)], shared=300 * 1024)
    assert "dynamic shared memory" in only(dynamic, Kind.RESOURCES).message


def test_too_much_constant_memory(kit, no_nvcc):
    build = kit.built(
        "__constant__ float table[20000];\n"
        "__global__ void k(float* P) { P[threadIdx.x] = table[threadIdx.x]; }\n"
    )
    result = kit.run(build, "k", 1, 4, [out("P", 4)])
    assert "80000 bytes" in only(result, Kind.RESOURCES).message


# -- compiling -------------------------------------------------------------------------------

BROKEN = """__global__ void matmul(const float* M, const float* N, float* P, int Width) {
    int row = blockIdx.y * blockDim.y + threadIdx.y
    P[row] = M[row] + N[row];
}
"""


@pytest.mark.parametrize("with_nvcc", [False, True])
def test_a_compile_error_is_reported_on_the_students_line(kit, with_nvcc, monkeypatch):
    from grader.toolchain import nvcc

    if not with_nvcc:
        monkeypatch.setattr(nvcc, "find", lambda: None)
    elif not nvcc.find():
        pytest.skip("nvcc is not installed; the no-nvcc variant covers the CPU compiler")
    build = kit.build(BROKEN, name="student kernel.cu")
    assert not build.ok and not build.compile.ok
    lines = {d.line for d in build.diagnostics}
    assert lines & {2, 3}, build.diagnostics
    assert all(d.kind == Kind.COMPILE_ERROR for d in build.diagnostics)
    assert "student kernel.cu" in build.diagnostics[0].message


def test_a_wrong_signature_is_found_from_the_cpu_build_alone(kit, no_nvcc):
    source = """
    __global__ void matmul(float* M, const float* N, double* P, size_t Width) {
        int i = threadIdx.x;
        P[i] = M[i] * N[i] * Width;
    }
    """
    build = kit.built(source)
    sig = build.interface.kernels["matmul"]
    assert [p.ctype for p in sig.params] == ["float*", "const float*", "double*", "size_t"]
    lab = labs.get("matmul-naive")
    diags = check(lab, build.interface, {"Width": 64})
    assert kinds(diags) == [Kind.INTERFACE, Kind.INTERFACE]
    assert "Parameter 3 of matmul (P) is `double*`, a pointer to double" in diags[0].message
    assert "Parameter 4 of matmul (Width) is `size_t`, 8 bytes wide" in diags[1].message


def test_the_interface_from_the_cpu_build(kit, no_nvcc):
    source = """
    #define BLOCK_X 32
    #define BLOCK_Y 8
    #define TILE_X (BLOCK_X * 2)
    static __constant__ float Mc[MASK_WIDTH * MASK_WIDTH];
    __device__ int hits;
    extern "C" __global__ void conv2d(const float* __restrict__ N, float* P, int Width,
                                      int Height) {
        __shared__ float tile[BLOCK_Y][TILE_X + MASK_WIDTH - 1];
        tile[threadIdx.y][threadIdx.x] = N[0] + Mc[0];
        __syncthreads();
        P[0] = tile[0][0] + Width + Height + hits;
    }
    __global__ void pitched(const float* N, float* P, size_t pitch, unsigned count) {}
    """
    build = kit.built(source, macros={"MASK_WIDTH": 5})
    iface = build.interface
    assert iface.launch == {
        "BLOCK_X": 32, "BLOCK_Y": 8, "BLOCK_Z": 1, "TILE_X": 64, "TILE_Y": 8, "TILE_Z": 1,
    }  # fmt: skip
    conv = iface.kernels["conv2d"]
    assert [p.ctype for p in conv.params] == ["const float*", "float*", "int", "int"]
    assert conv.resources.shared_bytes == 4 * 8 * (64 + 4)
    assert [p.ctype for p in iface.kernels["pitched"].params] == [
        "const float*", "float*", "size_t", "unsigned",
    ]  # fmt: skip
    assert iface.constants["Mc"].size == 100 and iface.constants["Mc"].space == "const"
    assert iface.constants["hits"].space == "global"
    assert "grader_launch_config" not in iface.constants


def test_unsupported_cuda_is_named_in_a_sentence(kit, no_nvcc):
    source = """__global__ void k(float* P) {
    unsigned lane;
    asm("mov.u32 %0, %%laneid;" : "=r"(lane));
    P[lane] = 1.0f;
}
"""
    build = kit.build(source)
    assert not build.ok
    diag = build.diagnostics[0]
    assert diag.kind == Kind.COMPILE_ERROR and diag.line == 3
    assert "inline PTX assembly" in diag.message and "--backend cuda" in diag.message


def test_a_global_constructor_that_never_returns_times_out_while_loading(kit, no_nvcc):
    source = r"""
    static volatile int forever = 1;
    static int spin() {
        while (forever) {}               /* never returns */
        return 0;
    }
    static int started = spin();
    __global__ void k(float* P) { P[threadIdx.x] = started; }
    """
    build = kit.built(source)
    result = kit.run(build, "k", 1, 4, [out("P", 4)], timeout=1)
    diag = only(result, Kind.TIMEOUT)
    assert result.timed_out
    assert "Loading the module took longer than 1 s" in diag.message
    assert diag.line == line_of(source, "never returns")


def test_missing_second_syncthreads_is_a_race_too(kit, rng, no_nvcc):
    racy = TILED.replace("__syncthreads(); /*SECOND*/", "/* no barrier */")
    result, _ = run_matmul(kit, racy, rng)
    assert Kind.RACE in kinds(result)


def test_the_wrong_number_of_arguments(kit, no_nvcc):
    build = kit.built("__global__ void one(float* P) { P[threadIdx.x] = 1.0f; }")
    arity = kit.run(build, "one", 1, 4, [out("P", 4), integer("n", 4)])
    assert "one takes 1 parameter, but the grader passes 2." in only(arity, Kind.INTERFACE).message


def test_a_function_declared_but_never_defined_is_a_compile_error(kit, no_nvcc):
    source = """
    extern __device__ float never_defined(float x);
    __global__ void uses(float* P) { P[threadIdx.x] = never_defined(1.0f); }
    """
    build = kit.build(source)
    assert not build.ok
    diag = build.diagnostics[0]
    assert diag.kind == Kind.COMPILE_ERROR and diag.line == 2
    assert "never_defined(float) is declared and used, but never defined" in diag.message


# -- static shared arrays, blocks that overwrite each other, macros the grader sets ----------

HALO = r"""
#define T 8
__global__ void k(const float* N, float* P, int n, int extra) {
    __shared__ float tile[T][T + 2];
    int tx = threadIdx.x, ty = threadIdx.y;
    tile[ty][tx] = N[(blockIdx.x * T + ty) % n];
    __syncthreads();
    P[(blockIdx.x * T + ty) * T + tx] = tile[ty + extra][tx];
}
"""


@pytest.mark.parametrize("extra, side", [(1, "past the end"), (-1, "before the start")])
def test_an_index_past_a_static_shared_array_names_it(kit, no_nvcc, extra, side):
    build = kit.built(HALO)
    args = [inp("N", np.ones(64)), out("P", 4 * 64), integer("n", 64), integer("extra", extra)]
    result = kit.run(build, "k", 4, (8, 8), args)
    diag = only(result, Kind.OUT_OF_BOUNDS)
    assert side in diag.message and "__shared__ tile[8][10] (80 elements, declared at line 4)" in (
        diag.message
    )
    assert diag.line == line_of(HALO, "tile[ty + extra]") and result.crashed
    if extra == 1:
        assert "tile[8][0]" in diag.message or "tile[8][" in diag.message


def test_a_static_shared_array_used_in_bounds_is_fine(kit, no_nvcc):
    build = kit.built(HALO)
    args = [inp("N", np.arange(64)), out("P", 4 * 64), integer("n", 64), integer("extra", 0)]
    result = kit.run(build, "k", 4, (8, 8), args)
    assert result.diagnostics == [] and result.buffers["P"].data[9] == 1.0


OVERLAP = r"""
__global__ void k(float* P, int n) {
    int i = blockIdx.x * 16 + threadIdx.x - 2;     /* 20 threads, 16 outputs per block */
    if (i >= 0 && i < n) P[i] = threadIdx.x < 2 || threadIdx.x >= 18 ? 0.0f : 1.0f;
}
"""


def test_two_blocks_writing_one_element_are_named(kit, no_nvcc):
    build = kit.built(OVERLAP)
    result = kit.run(build, "k", 4, 20, [out("P", 64), integer("n", 64)])
    race = only(result, Kind.RACE)
    assert "Blocks (0,0,0) and (1,0,0) both wrote P[14]" in race.message
    assert "stored 1, then block (1,0,0) stored 0" in race.message
    assert "elements were written by more than one block" in race.message
    # no mask is filled: a halo is not this kernel's (conv2d's halo_threads_store.cu is)
    assert "halo" not in race.message and race.block == (1, 0, 0)


FOLDED = r"""
__global__ void k(float* P, int n, int m) {
    int i = threadIdx.x;
    if (i < n) P[i % m] = (float)i;                /* threads i and i + m collide where m < n */
}
"""


def test_two_threads_storing_one_element_are_a_race_of_each_case_they_collide_in(kit, no_nvcc):
    """The stores collide only where m < n: each such case's run names the two threads
    (RaceScope.STORES), the later ones too, whose race would otherwise be left unlocated
    and reach every case; a case where they do not collide has no race."""
    build = kit.built(FOLDED)
    line = line_of(FOLDED, "P[i % m]")
    for m in (4, 2):
        result = kit.run(build, "k", 1, 8, [out("P", 8), integer("n", 8), integer("m", m)])
        race = only(result, Kind.RACE)
        assert race.race_scope == RaceScope.STORES and race.line == line
        pair = f"Threads (0,0,0) and ({m},0,0) of block (0,0,0) both stored into P[0]"
        assert pair in race.message
    clean = kit.run(build, "k", 1, 8, [out("P", 8), integer("n", 8), integer("m", 8)])
    assert clean.diagnostics == []


LAUNDERED = r"""
__global__ void k(float* P) {
    int i = threadIdx.x;
    P[i] = 1.0f;
    float left = i ? P[i - 1] : 1.0f;            /* thread i - 1's store, or the NaN before it */
    P[i] = left == left ? 2.0f : 3.0f;
    if (i == 1) P[0] = 4.0f;                     /* a second thread's store into P[0] */
}
"""


def test_two_threads_storing_one_element_do_not_narrow_a_race_elsewhere(kit, no_nvcc):
    """The two thread orders leave P[0] different by its two stores, and P[1..7] by reads
    of what another thread stores: the store twice explains P[0] alone, so the race is the
    one of every case."""
    build = kit.built(LAUNDERED)
    result = kit.run(build, "k", 1, 8, [out("P", 8)])
    race = only(result, Kind.RACE)
    assert race.race_scope == RaceScope.EVERY_CASE
    assert "8 elements differ" in race.message and "depend on the order" in race.message


def test_a_race_inside_one_block_is_still_called_one(kit, rng, no_nvcc):
    result, _ = run_matmul(kit, TILED.replace("__syncthreads(); /*FIRST*/", ""), rng)
    race = only(result, Kind.RACE)
    assert "with no __syncthreads() between them" in race.message
    assert "both wrote" not in race.message


def test_a_barrier_inside_an_if_is_not_called_an_early_return(kit, rng, no_nvcc):
    source = (
        TILED.replace("    float acc = 0.0f;\n", "")
        .replace("/*EARLY*/", "float acc = 0.0f; if (row < Width) {")
        .replace(
            "    if (row < Width && col < Width) P", "    }\n    if (row < Width && col < Width) P"
        )
    )
    result, _ = run_matmul(kit, source, rng)
    diag = only(result, Kind.BARRIER_DIVERGENCE)
    assert f"inside the if at line {line_of(source, 'if (row < Width) {')}" in diag.message
    assert "already returned" not in diag.message


@pytest.mark.parametrize(
    "line, wanted, kind",
    [
        ("const int MASK_WIDTH = 3;", "declares MASK_WIDTH, which the grader sets", "compile"),
        # it compiles: the file against the lab, as a misnamed __constant__ (issue 20)
        ("#define MASK_WIDTH 3", "#defines MASK_WIDTH again", "interface"),
        ("enum { MASK_WIDTH = 3 };", "declares MASK_WIDTH, which the grader sets", "compile"),
    ],
)
def test_redefining_a_macro_the_grader_sets_says_so(kit, no_nvcc, line, wanted, kind):
    source = f"{line}\n__global__ void k(float* p) {{ p[0] = MASK_WIDTH; }}\n"
    build = kit.build(source, macros={"MASK_WIDTH": 5})
    of = Kind.INTERFACE if kind == "interface" else Kind.COMPILE_ERROR
    found = [d for d in build.diagnostics if d.kind == of]
    assert found and wanted in found[0].message and found[0].line == 1
    assert "#ifndef MASK_WIDTH" in found[0].message


def test_a_guarded_default_is_fine(kit, no_nvcc):
    source = "#ifndef MASK_WIDTH\n#define MASK_WIDTH 3\n#endif\n__global__ void k(float* p) {}\n"
    build = kit.build(source, macros={"MASK_WIDTH": 5})
    assert build.ok and build.diagnostics == []


# -- the seal on records that narrow a race ----------------------------------------------------

WAW = "hazard what=waw thread=1,0,0 other=0,0,0 block=0,0,0"
LOST = "lost index=0 element=0 first=0,0,0 second=1,0,0"


def _records(*lines: str, token: str = "t0k") -> job.Report:
    report = job.Report(0, token=token)
    job._read_records("\n".join(["load", *lines]).encode(), report)
    return report


@pytest.mark.parametrize(
    ("lines", "believed"),
    [
        ((WAW, "seal token=t0k count=1", "seal token=t0k count=1"), True),
        (("seal token=t0k count=0", LOST, "seal token=t0k count=1"), True),
        (("hazard what=raw", "seal token=t0k count=0"), True),  # adds a finding: no count
        ((WAW, WAW, "seal token=t0k count=1"), False),
        ((WAW, "seal token=t0k count=1", LOST), False),
        ((LOST, "seal token=t0k count=0", "seal token=t0k count=1"), False),
        ((WAW, "seal token=forged count=1"), False),
        ((WAW, "seal token=t0k count=1", "twice outside=0", "seal token=t0k count=2"), True),
        ((WAW, "twice outside=0", "seal token=t0k count=1"), False),
        ((WAW,), False),
    ],
    ids=[
        "runtimes",
        "per-pass",
        "raw",
        "one-more",
        "after-the-last",
        "a-seal-short",
        "forged-token",
        "twice",
        "a-twice-of-its-own",
        "no-seal",
    ],  # fmt: skip
)
def test_narrowing_records_are_believed_only_as_the_seals_count_them(lines, believed):
    assert diagnose.sealed(_records(*lines)) == believed


def test_a_run_without_a_token_believes_no_seal():
    assert not diagnose.sealed(_records(WAW, "seal token= count=1", token=""))
