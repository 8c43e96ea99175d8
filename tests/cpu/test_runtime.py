"""The CPU backend's runtime, through kernels: fibers, barriers, warp operations, atomics
across parallel blocks, dynamic shared memory, printf, and constants set by name."""

from __future__ import annotations

import subprocess
import textwrap
from pathlib import Path

import numpy as np
import pytest
from cpu_kit import Kit, inp, integer, kinds, only, out

from grader.backends.cpu import diagnose, job, protocol, runner
from grader.backends.cpu import shim as cpu_shim
from grader.backends.cpu.shelf import Shelf
from grader.model.launch import POISON_BITS, Launch
from grader.model.result import Kind
from grader.model.source import Submission
from grader.toolchain import cxx, nvcc

# -- the fiber switch itself -------------------------------------------------------------

FIBER_TEST = r"""
#include "fiber.h"
#include <stdio.h>
#include <stdlib.h>
static rt::Context main_ctx, a_ctx, b_ctx;
static char a_stack[65536], b_stack[65536];
static char trace[64];
static int n = 0;
static volatile char* a_used;  /* a local of a's, in use while a is switched out */
static void a_main(void*) {
    for (int i = 0; i < 3; ++i) { trace[n++] = 'a'; rt::context_switch(&a_ctx, &b_ctx); }
    volatile char used = 1;
    a_used = &used;
    rt::context_switch(&a_ctx, &b_ctx);  /* lets b finish; b returns to main */
}
static void b_main(void* arg) {
    double kept = *static_cast<double*>(arg);  /* a callee-saved value across switches */
    for (int i = 0; i < 3; ++i) { trace[n++] = 'b'; rt::context_switch(&b_ctx, &a_ctx); }
    trace[n++] = kept == 2.5 ? 'B' : 'x';
    rt::context_switch(&b_ctx, &main_ctx);
}
int main() {
    double arg = 2.5;
    rt::context_init(&a_ctx, a_stack, sizeof a_stack, a_main, nullptr);
    rt::context_init(&b_ctx, b_stack, sizeof b_stack, b_main, &arg);
    rt::context_switch(&main_ctx, &a_ctx);
    trace[n] = 0;
    /* where a switched-out fiber stopped: within its stack, below what it still uses */
    char* sp = static_cast<char*>(rt::context_sp(&a_ctx));
    bool within = sp > a_stack && sp <= (const char*)a_used;
    printf("%s %s%s\n", rt::context_kind(), trace, within ? "" : "?");
    return 0;
}
"""


@pytest.mark.parametrize("variant", ["assembly", "ucontext"])
def test_fiber_switch_alternates_and_keeps_registers(tmp_path, variant):
    (tmp_path / "main.cpp").write_text(FIBER_TEST)
    sources = [str(runner.RUNTIME / "fiber.cpp"), str(tmp_path / "main.cpp")]
    flags = ["-O2", "-I", str(runner.RUNTIME)]
    if variant == "ucontext":
        flags.append("-DGRADER_FIBER_UCONTEXT")
    elif runner.fiber_source():
        sources.append(str(runner.RUNTIME / runner.fiber_source()))
    else:
        pytest.skip("no assembly context switch for this machine; the ucontext one runs")
    exe = tmp_path / "fibers"
    subprocess.run([cxx.compiler().path, *flags, *sources, "-o", str(exe)], check=True)
    shown = subprocess.run([str(exe)], capture_output=True, text=True, check=True).stdout
    kind, trace = shown.rsplit(" ", 1)
    assert trace.strip() == "abababB"
    assert (kind == "ucontext") == (variant == "ucontext")


# -- barriers ----------------------------------------------------------------------------

BARRIERS = r"""
__global__ void reduce(const float* in, float* out, int n) {
    __shared__ float part[256];
    unsigned t = threadIdx.x;
    unsigned i = blockIdx.x * blockDim.x + t;
    part[t] = i < n ? in[i] : 0.0f;
    __syncthreads();
    for (unsigned stride = blockDim.x / 2; stride > 0; stride /= 2) {
        if (t < stride) part[t] += part[t + stride];
        __syncthreads();
    }
    int count = __syncthreads_count(i < n && in[i] > 0.0f);
    int all = __syncthreads_and(i < n);
    int any = __syncthreads_or(i < n && in[i] > 0.9f);
    if (t == 0) {
        out[4 * blockIdx.x + 0] = part[0];
        out[4 * blockIdx.x + 1] = count;
        out[4 * blockIdx.x + 2] = all;
        out[4 * blockIdx.x + 3] = any;
    }
}
"""


def test_barriers_reduce_and_count(kit, rng, no_nvcc):
    build = kit.built(BARRIERS)
    n, block = 1000, 256
    blocks = -(-n // block)
    data = rng.uniform(-1, 1, n).astype(np.float32)
    result = kit.run(
        build, "reduce", blocks, block, [inp("in", data), out("out", 4 * blocks), integer("n", n)]
    )
    assert result.diagnostics == []
    got = result.buffers["out"].data.reshape(blocks, 4)
    padded = np.concatenate([data, np.zeros(blocks * block - n, np.float32)]).reshape(blocks, block)
    np.testing.assert_allclose(got[:, 0], padded.sum(axis=1), rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(got[:, 1], (padded > 0).sum(axis=1))
    np.testing.assert_array_equal(got[:, 2], [1, 1, 1, 0])
    np.testing.assert_array_equal(got[:, 3], (padded > 0.9).any(axis=1).astype(np.float32))


# -- warp operations -----------------------------------------------------------------------

WARPS = r"""
__global__ void warps(const float* in, float* out) {
    int t = threadIdx.x, lane = t % 32;
    float v = in[t];
    float sum = v;
    for (int d = 16; d > 0; d /= 2) sum += __shfl_down_sync(0xffffffff, sum, d);
    float first = __shfl_sync(0xffffffff, v, 3);
    float up = __shfl_up_sync(0xffffffff, v, 1);
    float mirror = __shfl_xor_sync(0xffffffff, v, 31);
    unsigned ballot = __ballot_sync(0xffffffff, v > 0.0f);
    int any = __any_sync(0xffffffff, v > 0.95f);
    int all = __all_sync(0xffffffff, v > -2.0f);
    unsigned same = __match_any_sync(0xffffffff, (int)(v > 0.0f));
    unsigned total = __reduce_add_sync(0xffffffff, (unsigned)lane);
    __syncwarp();
    float* o = out + 9 * t;
    o[0] = __shfl_sync(0xffffffff, sum, 0);
    o[1] = first; o[2] = up; o[3] = mirror; o[4] = (float)__popc(ballot);
    o[5] = any; o[6] = all; o[7] = (float)__popc(same); o[8] = (float)total;
}
"""


def test_warp_shuffles_votes_and_reductions(kit, rng, no_nvcc):
    build = kit.built(WARPS)
    n = 64
    data = rng.uniform(-1, 1, n).astype(np.float32)
    result = kit.run(build, "warps", 1, n, [inp("in", data), out("out", 9 * n)])
    assert result.diagnostics == []
    got = result.buffers["out"].data.reshape(n, 9)
    warps = data.reshape(2, 32)
    lane = np.arange(n) % 32
    w = np.arange(n) // 32
    np.testing.assert_allclose(got[:, 0], warps.sum(axis=1)[w], rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(got[:, 1], warps[w, 3])
    np.testing.assert_array_equal(got[:, 2], np.where(lane == 0, data, np.roll(data, 1)))
    np.testing.assert_array_equal(got[:, 3], warps[w, 31 - lane])
    np.testing.assert_array_equal(got[:, 4], (warps > 0).sum(axis=1)[w])
    np.testing.assert_array_equal(got[:, 5], (warps > 0.95).any(axis=1)[w])
    np.testing.assert_array_equal(got[:, 6], 1)
    positive = (warps > 0).sum(axis=1)[w]
    np.testing.assert_array_equal(got[:, 7], np.where(data > 0, positive, 32 - positive))
    np.testing.assert_array_equal(got[:, 8], sum(range(32)))


def test_two_half_warps_shuffle_within_their_own_masks(kit, no_nvcc):
    build = kit.built(
        r"""
        __global__ void halves(float* out) {
            unsigned t = threadIdx.x;
            float v = t < 16 ? __shfl_sync(0x0000ffffu, (float)t, 0)
                             : __shfl_sync(0xffff0000u, (float)t, 16);
            out[t] = v;
        }
        """
    )
    result = kit.run(build, "halves", 1, 32, [out("out", 32)])
    assert result.diagnostics == []
    np.testing.assert_array_equal(result.buffers["out"].data, np.repeat([0.0, 16.0], 16))


def test_fmaf_is_fused_and_a_product_and_sum_stays_unfused(kit, no_nvcc):
    """(1 + 2^-12)^2 - 1 is 2^-11 + 2^-24 with one rounding, 2^-11 with two: fmaf's
    instruction (shim.py: -mfma on x86-64) must not fuse what the kernel wrote unfused."""
    build = kit.built(
        r"""
        __global__ void fused(const float* v, float* out) {
            out[0] = fmaf(v[0], v[1], v[2]);
            out[1] = v[0] * v[1] + v[2];
        }
        """
    )
    a = np.float32(1 + 2.0**-12)
    result = kit.run(build, "fused", 1, 1, [inp("v", [a, a, -1.0]), out("out", 2)])
    assert result.diagnostics == []
    np.testing.assert_array_equal(result.buffers["out"].data, [2.0**-11 + 2.0**-24, 2.0**-11])


def test_warp_operations_in_a_partial_warp(kit, no_nvcc):
    build = kit.built(
        r"""
        __global__ void partial(float* out) {
            unsigned mask = __activemask();
            float s = __shfl_down_sync(mask, (float)threadIdx.x, 1);
            out[threadIdx.x] = s + 1000.0f * __popc(__ballot_sync(mask, 1));
        }
        """
    )
    result = kit.run(build, "partial", 1, 40, [out("out", 40)])
    assert result.diagnostics == []
    got = result.buffers["out"].data
    lanes = np.arange(40)
    own_or_next = np.where((lanes % 32 == 31) | (lanes == 39), lanes, lanes + 1)
    np.testing.assert_array_equal(got, own_or_next + 1000.0 * np.where(lanes < 32, 32, 8))


# -- atomics across blocks running in parallel ---------------------------------------------

ATOMICS = r"""
__device__ unsigned long long ull_total = 0;
__device__ double double_total = 0.0;
__device__ unsigned int finished = 0;

__global__ void atomics(float* out, int per_thread) {
    int* ints = (int*)out;
    unsigned* uints = (unsigned*)out;
    for (int i = 0; i < per_thread; ++i) {
        atomicAdd(&ints[0], 1);
        atomicSub(&ints[1], 2);
        atomicAdd(&uints[2], 3u);
        atomicAdd(&out[3], 0.5f);
        atomicMax(&ints[4], (int)(blockIdx.x * blockDim.x + threadIdx.x));
        atomicMin(&ints[5], -(int)(blockIdx.x * blockDim.x + threadIdx.x));
        atomicAdd(&ull_total, 5ull);
        atomicAdd(&double_total, 0.25);
        atomicOr(&uints[6], 1u << (threadIdx.x % 32));
        /* float updates that mostly leave the value as it was (no store then) */
        atomicMax(&out[10], (float)(blockIdx.x * blockDim.x + threadIdx.x));
        atomicMin(&out[11], -(float)(blockIdx.x * blockDim.x + threadIdx.x));
        float held = atomicAdd(&out[14], 0.0f);
        if (blockIdx.x == 0 && threadIdx.x < 2) out[12 + threadIdx.x] = held + 1.0f;
    }
    int old = atomicCAS(&ints[7], 0, (int)blockIdx.x + 1);
    (void)old;
    __threadfence();
    __syncthreads();
    /* The last block to finish publishes the __device__ totals. */
    if (threadIdx.x == 0) {
        unsigned ticket = atomicInc(&finished, gridDim.x - 1);
        if (ticket == gridDim.x - 1) {
            uints[8] = (unsigned)ull_total;
            out[9] = (float)double_total;
        }
    }
}
"""


def test_atomics_are_atomic_across_parallel_blocks(kit, no_nvcc):
    _atomics_add_up(kit, kit.built(ATOMICS))


def test_a_census_modules_atomic_builtins_are_the_runners_operations(kit, no_nvcc):
    """g++'s census build makes each atomic builtin a call of the runner's (atomics.cpp):
    every atomic function of the shim gives what it gives in a plain build."""
    build = kit.backend.build(Submission(Path("k.cu"), ATOMICS), {}, (16, 16, 1), census=True)
    assert build.ok, build.diagnostics
    _atomics_add_up(kit, build)


def _atomics_add_up(kit, build) -> None:
    blocks, threads, per = 64, 128, 8
    result = kit.run(
        build, "atomics", blocks, threads, [out("out", 15, fill=0.0), integer("per_thread", per)]
    )
    assert result.diagnostics == []
    data = result.buffers["out"].data
    as_int, as_uint = data.view(np.int32), data.view(np.uint32)
    n = blocks * threads * per
    assert as_int[0] == n
    assert as_int[1] == -2 * n
    assert as_uint[2] == 3 * n
    assert data[3] == pytest.approx(0.5 * n)
    assert as_int[4] == blocks * threads - 1
    assert as_int[5] == -(blocks * threads - 1)
    assert as_uint[6] == 0xFFFFFFFF
    assert 1 <= as_int[7] <= blocks
    assert as_uint[8] == 5 * n
    assert data[9] == pytest.approx(0.25 * n)
    assert data[10] == blocks * threads - 1 and data[11] == -(blocks * threads - 1)
    assert list(data[12:]) == [1.0, 1.0, 0.0]  # atomicAdd(p, 0) returns what p holds


# -- dynamic shared memory -----------------------------------------------------------------


def test_dynamic_shared_memory_in_a_function_and_at_file_scope(kit, rng, no_nvcc):
    build = kit.built(
        r"""
        extern __shared__ float whole_file[];
        __global__ void reverse(const float* in, float* out) {
            extern __shared__ __align__(16) float tile[];
            int t = threadIdx.x, base = blockIdx.x * blockDim.x;
            tile[t] = in[base + t];
            __syncthreads();
            out[base + t] = tile[blockDim.x - 1 - t] + (whole_file == tile ? 0.0f : 1000.0f);
        }
        """
    )
    data = rng.standard_normal(512).astype(np.float32)
    result = kit.run(build, "reverse", 4, 128, [inp("in", data), out("out", 512)], shared=128 * 4)
    assert result.diagnostics == []
    np.testing.assert_array_equal(
        result.buffers["out"].data, data.reshape(4, 128)[:, ::-1].reshape(-1)
    )


# -- printf ----------------------------------------------------------------------------------


def test_printf_is_captured(kit, no_nvcc):
    build = kit.built(
        r"""
        #include <cstdio>
        __global__ void hello(float* out, int n) {
            if (threadIdx.x == 0 && blockIdx.x == 1)
                printf("block %d says %.2f\n", blockIdx.x, 1.5f);
            std::printf("%s", "");
            out[blockIdx.x * blockDim.x + threadIdx.x] = n;
        }
        """
    )
    result = kit.run(build, "hello", 2, 4, [out("out", 8), integer("n", 7)])
    assert result.output == "block 1 says 1.50\n"
    assert result.diagnostics == []


# -- constants and device variables, by name ------------------------------------------------

CONSTANTS = r"""
#define MASK 9
static __constant__ float Mc[MASK];
namespace course { __constant__ float scale[2] = {10.0f, 20.0f}; }
__device__ float offset = 0.5f;
__device__ int launches = 0;

__global__ void apply(float* out) {
    int i = threadIdx.x;
    out[i] = Mc[i % MASK] * course::scale[0] + course::scale[1] + offset;
    if (i == 0) out[MASK + 1] = (float)atomicAdd(&launches, 1);
}
"""


def test_constants_are_set_by_name_static_ones_too(kit, no_nvcc):
    build = kit.built(CONSTANTS)
    constants = build.interface.constants
    assert constants["Mc"].size == 36 and constants["Mc"].space == "const"
    assert constants["scale"].space == "const"
    assert constants["offset"].space == "global"
    mask = np.arange(9, dtype=np.float32)
    result = kit.run(build, "apply", 1, 9, [out("out", 11)], constants={"Mc": mask})
    assert result.diagnostics == []
    got = result.buffers["out"].data
    np.testing.assert_array_equal(got[:9], mask * 10 + 20 + 0.5)
    # __device__ variables start from their initial values in every pass: the second
    # pass, in reverse order, sees launches == 0 again, so no race is reported.
    assert got[10] == 0


def test_a_kernel_without_barriers_runs_as_a_loop_and_one_with_them_as_fibers(kit, no_nvcc):
    build = kit.built(
        r"""
        __global__ void plain(float* p) { p[threadIdx.x] = threadIdx.x; }
        __global__ void synced(float* p) { p[threadIdx.x] = threadIdx.x; __syncthreads(); }
        """
    )
    settings = job.Settings(jobs=2, require_isolation=True)
    for kernel, fibers in (("plain", 0), ("synced", 1)):
        launch = Launch(kernel, (3, 1, 1), (64, 1, 1), 0, [out("p", 64)], {})
        with Shelf() as shelf:
            report = job.execute(build.artifact, launch, 10, settings, shelf)
        passes = report.all(protocol.Pass)
        assert [p.fibers for p in passes] == [fibers, fibers]


# -- the race watch of a census run (hazards.cpp) -------------------------------------------

VECTOR_STORES = r"""
__global__ void add_one(float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (4 * i + 3 < n) reinterpret_cast<float4*>(y)[i] = make_float4(1.0f, 2.0f, 3.0f, 4.0f);
    __syncthreads();
    if (4 * i + 3 < n) y[4 * i + 1] += 1.0f;
}
__global__ void adds_unset(float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] += 1.0f;
}
"""


def test_a_vector_store_sets_every_element_it_covers_for_the_read_before_set_watch(kit, no_nvcc):
    """A float4 store sets four output elements: reading the second of them is no read
    before a set (the watch once took the store for its first element alone, and failed
    the exploit kit's replay of matmul-tiled, which copies what the reference's float4
    stores set)."""
    build = kit.backend.build(Submission(Path("k.cu"), VECTOR_STORES), {}, (16, 1, 1), census=True)
    assert build.ok, build.diagnostics
    poison = np.full(64, POISON_BITS, np.uint32).view(np.float32)  # the grader's own fill
    stored = kit.run(build, "add_one", 1, 16, [out("y", 64, poison), integer("n", 64)])
    assert stored.diagnostics == []
    np.testing.assert_array_equal(stored.buffers["y"].data.reshape(-1, 4)[:, 1], 3.0)
    unset = kit.run(build, "adds_unset", 4, 16, [out("y", 64, poison), integer("n", 64)])
    assert kinds(unset) == [Kind.UNWRITTEN_OUTPUT]
    assert (
        "read y[0] at line 10 before any thread had stored into it" in unset.diagnostics[0].message
    )


# Two threads of a 3 x 2 x 2 block, (1,0,1) and (1,1,1), store p[0]; the others their own.
TWO_OF_A_3D_BLOCK = r"""
__global__ void pair(float* p) {
    unsigned t = threadIdx.x + 3 * (threadIdx.y + 2 * threadIdx.z);
    p[t == 7 || t == 10 ? 0 : 1 + t] = t;
}
"""


def test_the_hooks_name_each_thread_of_a_block_run_as_a_loop(kit, no_nvcc):
    """A block without barriers runs as a loop that notes threadIdx alone, no linear index
    (rt::running_linear): the hooks name each thread from it along every axis. (Were its
    stores not volatile, g++ would sink threadIdx.x's out of the seal test's loop below.)"""
    build = kit.backend.build(
        Submission(Path("k.cu"), TWO_OF_A_3D_BLOCK), {}, (3, 2, 2), census=True
    )
    assert build.ok, build.diagnostics
    launch = Launch("pair", (1, 1, 1), (3, 2, 2), 0, [out("p", 13)], {})
    settings = job.Settings(jobs=1, require_isolation=True, hazards=True)
    with Shelf() as shelf:
        report = job.execute(build.artifact, launch, 10, settings, shelf)
    (hazard,) = report.all(protocol.Hazard)
    assert (hazard.what, hazard.thread, hazard.other) == ("waw", (1, 1, 1), (1, 0, 1))


# -- the seal on records that narrow a race (output.cpp) -------------------------------------

# Threads 2b and 2b+1 of a block store one element (a waw), and blocks b and b+1 both
# store element b+1 (an overlap in the writers' pass).
STORED_TWICE = r"""
__global__ void both(float* p) { p[blockIdx.x + threadIdx.x / 2] = threadIdx.x + 10 * blockIdx.x; }
"""


def test_the_runner_seals_each_pass_with_the_token_and_its_narrowing_records(kit, no_nvcc):
    build = kit.backend.build(Submission(Path("k.cu"), STORED_TWICE), {}, (4, 1, 1), census=True)
    assert build.ok, build.diagnostics
    launch = Launch("both", (2, 1, 1), (4, 1, 1), 0, [out("p", 3)], {})
    settings = job.Settings(jobs=1, require_isolation=True, hazards=True)
    with Shelf() as shelf:
        report = job.execute(build.artifact, launch, 10, settings, shelf)
    seals = report.all(protocol.Seal)
    assert [s.token for s in seals] == [report.token] * 4 and len(report.token) == 32
    # the waw of pass 0, the writers' overlap, then the "twice" record after them
    assert [s.count for s in seals] == [1, 1, 2, 3]
    # p[0..2] differ between the thread orders, and the waw saw each stored twice
    assert [t.outside for t in report.all(protocol.Twice)] == [0]
    assert diagnose.sealed(report)


def test_the_runner_exports_the_runtime_symbols_alone(kit, no_nvcc):
    """The runner exports its symbols to the module it loads (-rdynamic): the names a
    module may use (build.RUNTIME_SYMBOLS), and none of the runtime's own functions and
    tables (-fvisibility=hidden), such as the seal's, which would let a kernel count its
    own forged records or note every element stored twice, or stores_arm and g_hazards."""
    listed = subprocess.run(
        ["nm", "-DC", "--defined-only", str(runner.executable())], capture_output=True, text=True
    )
    assert listed.returncode == 0, listed.stderr
    exported = {line.split(" ", 2)[2] for line in listed.stdout.splitlines()}
    from grader.backends.cpu.build import RUNTIME_SYMBOLS

    assert not RUNTIME_SYMBOLS - exported, sorted(RUNTIME_SYMBOLS - exported)
    assert not [name for name in exported if name.startswith("rt::")]


# -- two blocks' stores into one element, on several pool threads (stores.cpp) -----------

# Each block stores a run of n elements from b * step: step n leaves no element to two
# blocks, step n - 1 gives the last of each run to the next block too. `scattered` stores
# elements t * gridDim.x + b and (t + blockDim.x) * gridDim.x + b, runs of one, 2048 of
# them a block, more than a pool thread keeps runs for (RUNS_LEAST): a block's last
# stores go to the owner table. The last block stores element `target` too, which block
# 0 stored first (a run, in the pass that runs threads in order) or block 62 stored last
# (in the table). `atomic_too` has block 1 add into an element block 0 stored plainly.
TWO_BLOCKS = r"""
__global__ void runs(float* p, int n, int step) {
    p[blockIdx.x * step + threadIdx.x] = blockIdx.x;
}
__global__ void scattered(float* p, int n, int target) {
    p[threadIdx.x * gridDim.x + blockIdx.x] = blockIdx.x;
    p[(threadIdx.x + blockDim.x) * gridDim.x + blockIdx.x] = blockIdx.x;
    if (blockIdx.x == gridDim.x - 1 && threadIdx.x == blockDim.x - 1) p[target] = 1;
}
__global__ void atomic_too(float* p, int n) {
    if (blockIdx.x == 0) p[threadIdx.x] = 1;
    if (blockIdx.x == 1 && threadIdx.x == 0) atomicAdd(&p[5], 1.0f);
}
"""


def _conflicts(build, kernel, grid, block, args) -> list[int]:
    launch = Launch(kernel, (grid, 1, 1), (block, 1, 1), 0, args, {})
    with Shelf() as shelf:
        report = job.execute(
            build.artifact, launch, 30, job.Settings(jobs=2, require_isolation=False), shelf
        )
    return [p.conflicts for p in report.all(protocol.Pass) if p.n < job.PASSES]


@pytest.mark.parametrize(
    ("kernel", "step", "conflict"),
    [
        ("runs", 64, False),
        ("runs", 63, True),
        ("scattered", 0, True),
        ("scattered", 2047 * 64 + 62, True),
        ("atomic_too", 0, True),
    ],
)
def test_two_blocks_storing_one_element_are_found_on_several_pool_threads(
    no_nvcc, kernel, step, conflict
):
    """A plain store of one element into a kernel's one output takes the short way on
    several pool threads, as a run of elements its block stored (a barrier-free kernel's
    every store), or an entry in the owner table past the runs a pool thread keeps; an
    atomic's own store takes the table. Whichever way each store went, two blocks that
    stored one element are a conflict in each checked pass, and blocks whose runs only
    touch are none."""
    from grader.backends.cpu import CpuBackend

    kit = Kit(CpuBackend(jobs=2))
    build = kit.built(TWO_BLOCKS)
    grid, block = {"runs": (64, 64), "scattered": (64, 1024), "atomic_too": (2, 64)}[kernel]
    size = grid * block * (2 if kernel == "scattered" else 1)
    args = [out("p", size, 0.0), integer("n", size)]
    if kernel != "atomic_too":
        args.append(integer("step" if kernel == "runs" else "target", step))
    found = _conflicts(build, kernel, grid, block, args)
    assert len(found) == job.PASSES
    assert all(c > 0 for c in found) if conflict else not any(found), found


APART = r"""
__global__ void own(float* p, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) p[i] = blockIdx.x;
}
__global__ void one_row(float* p, int n) { p[threadIdx.x] = blockIdx.x; }
"""


@pytest.mark.skipif(nvcc.find() is None, reason="nvcc is not installed")
def test_blocks_nvcc_shows_to_store_apart_note_no_owner_and_others_still_do():
    """A kernel whose PTX stores only at its thread's element (toolchain.thread_stores)
    runs its stores on several pool threads without a hook, to the same result; one whose
    blocks share elements is still found out."""
    from grader.backends.cpu import CpuBackend

    kit = Kit(CpuBackend(jobs=2))
    build = kit.built(APART)
    assert build.artifact.stores_by_thread == {"own": {0: 4}}
    args = [out("p", 64 * 64, 0.0), integer("n", 64 * 64)]
    assert job.blocks_apart(build.artifact, Launch("own", (64, 1, 1), (64, 1, 1), 0, args, {}))
    assert _conflicts(build, "own", 64, 64, args) == [0] * job.PASSES
    result = kit.run(build, "own", 64, 64, args)
    np.testing.assert_array_equal(result.buffers["p"].data, np.repeat(np.arange(64.0), 64))
    assert all(c > 0 for c in _conflicts(build, "one_row", 64, 64, args))


# -- maths -----------------------------------------------------------------------------------


def test_cuda_maths_and_intrinsics(kit, no_nvcc):
    build = kit.built(
        textwrap.dedent(
            r"""
            #include <math_constants.h>
            __global__ void maths(const float* x, float* y) {
                float v = x[threadIdx.x];
                float* o = y + 12 * threadIdx.x;
                o[0] = rsqrtf(v);
                o[1] = __expf(v);
                o[2] = fmaf(v, 2.0f, 1.0f);
                o[3] = max(v, 3);           /* mixed float and int */
                o[4] = min(2u, 7);          /* mixed unsigned and int */
                o[5] = (float)__popc(0xF0F0u);
                o[6] = (float)__clz(1);
                o[7] = __int_as_float(__float_as_int(v));
                o[8] = __saturatef(v - 1.0f);
                o[9] = __ldg(&x[0]);
                o[10] = sinpif(0.5f) + CUDART_PI_F * 0.0f;
                o[11] = __fdividef(v, 4.0f) + __brev(1u) / 4294967296.0f;
            }
            """
        )
    )
    x = np.array([0.25, 1.0, 1.5, 4.0], np.float32)
    result = kit.run(build, "maths", 1, 4, [inp("x", x), out("y", 48)])
    assert result.diagnostics == []
    y = result.buffers["y"].data.reshape(4, 12)
    np.testing.assert_allclose(y[:, 0], 1 / np.sqrt(x), rtol=1e-6)
    np.testing.assert_allclose(y[:, 1], np.exp(x), rtol=1e-6)
    np.testing.assert_allclose(y[:, 2], 2 * x + 1)
    np.testing.assert_array_equal(y[:, 3], np.maximum(x, 3))
    np.testing.assert_array_equal(y[:, 4], 2)
    np.testing.assert_array_equal(y[:, 5], 8)
    np.testing.assert_array_equal(y[:, 6], 31)
    np.testing.assert_array_equal(y[:, 7], x)
    np.testing.assert_array_equal(y[:, 8], np.clip(x - 1, 0, 1))
    np.testing.assert_array_equal(y[:, 9], x[0])
    np.testing.assert_allclose(y[:, 10], 1.0)
    np.testing.assert_allclose(y[:, 11], x / 4 + 0.5)


def test_kinds_helper_sees_nothing_for_a_clean_run(kit, no_nvcc):
    build = kit.built("__global__ void k(float* p) { p[threadIdx.x] = 1.0f; }")
    assert kinds(kit.run(build, "k", 1, 8, [out("p", 8)])) == []


REDUCE = r"""
__device__ float warp_sum(float v) {
    for (int d = warpSize / 2; d > 0; d /= 2) v += __shfl_xor_sync(0xffffffff, v, d);
    return v;
}
__device__ void block_sync_twice() { __syncthreads(); __syncthreads(); }
__global__ void reduce(const float* in, float* out, int rounds) {
    __shared__ float partial[32];
    int t = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
    int n = blockDim.x * blockDim.y * blockDim.z;
    float total = 0.0f;
    for (int r = 0; r < rounds + (int)blockIdx.x; ++r) {   /* uniform within a block */
        float v = warp_sum(in[blockIdx.x * n + t] * (r + 1));
        if (t % 32 == 0) partial[t / 32] = v;
        block_sync_twice();
        if (t < 32) {
            float w = t < (n + 31) / 32 ? partial[t] : 0.0f;
            w = warp_sum(w);
            if (t == 0) total += w;
        }
        __syncthreads();
    }
    if (t == 0) out[blockIdx.x] = total;
}
"""


def test_warp_and_block_reductions_in_large_3d_blocks(kit, rng, no_nvcc):
    build = kit.built(REDUCE)
    blocks, shape, rounds = 6, (16, 8, 8), 2
    n = 16 * 8 * 8
    data = rng.uniform(-1, 1, blocks * n).astype(np.float32)
    result = kit.run(
        build, "reduce", blocks, shape, [inp("in", data), out("out", blocks), integer("r", rounds)]
    )
    assert result.diagnostics == []
    sums = data.reshape(blocks, n).astype(np.float64).sum(axis=1)
    want = [sums[b] * sum(range(1, rounds + b + 1)) for b in range(blocks)]
    np.testing.assert_allclose(result.buffers["out"].data, want, rtol=1e-4, atol=1e-4)


# -- the stores' inline check ------------------------------------------------------------------

SHADOW_CLEARED = """\
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
__global__ void k(float* P, int n) {
    if (blockIdx.x == 0 && threadIdx.x == 0) {  /* the shadow of P, made writable and cleared */
        uintptr_t first = ((uintptr_t)P >> 3) + 0x7fff8000, page = first & ~(uintptr_t)4095;
        mprotect((void*)page, first - page + n / 8 + 4096, PROT_READ | PROT_WRITE);
        memset((void*)first, 0, n / 2);
    }
    P[threadIdx.x] = blockIdx.x;  /* every block stores the same elements */
}
"""


@pytest.mark.skipif(
    not cpu_shim.inline_checks(), reason="this machine's modules call a hook before every store"
)
@pytest.mark.parametrize("jobs", [1, 2])
def test_a_kernel_that_clears_its_outputs_shadow_to_store_unseen_crashes(no_nvcc, jobs):
    """An output's stores call the runner because the shadow byte of each of its
    granules says so (runtime/stores.cpp); a kernel that zeroes those bytes, so that two
    blocks' stores into one element go unseen, fails with a sentence that says what it
    did, rather than passing as one block's stores. One pool thread sets no shadow in the
    two checked passes, its blocks running in grid order; their outputs differ (the last
    block differs), and the pass that learns which blocks stored what does set it."""
    from grader.backends.cpu import CpuBackend

    kit = Kit(CpuBackend(jobs=jobs))
    build = kit.built(SHADOW_CLEARED)
    result = kit.run(build, "k", 4, 16, [out("P", 16), integer("n", 16)])
    crash = only(result, Kind.CRASH)
    assert "the kernel changed the shadow of an output" in crash.message
