"""Threads and blocks that wait for one another (runtime/scheduler.cpp): a kernel that a
GPU runs to its end, with a block's threads and a small grid's blocks all at once, ends
on the CPU backend too, on one pool thread or several, profiled or not; one that waits
for what no thread ever does still hangs, named at its thread and line."""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
import pytest
from cpu_kit import integer, kinds, only, out, size_t
from test_diagnose import line_of

from grader.backends.cpu import backend, diagnose, runner, scan
from grader.backends.cpu.protocol import Error
from grader.model.launch import Buffer
from grader.model.result import Kind
from grader.model.source import Submission


def ints(name: str, size: int) -> Buffer:
    return Buffer(name, np.zeros(size, np.int32), True)


@pytest.fixture(params=[1, 2], ids=["one pool thread", "two"])
def jobs(kit, request):
    with kit.pool_threads(request.param) as count:
        yield count


@pytest.fixture
def ucontext_runner(monkeypatch):
    """The runner built with the ucontext switch, as on a machine without an assembly one."""
    monkeypatch.setattr(runner, "fiber_source", lambda: None)
    monkeypatch.setattr(runner, "FLAGS", (*runner.FLAGS, "-DGRADER_FIBER_UCONTEXT"))
    runner.executable.cache_clear()
    yield
    runner.executable.cache_clear()


def ran_to_its_end(result) -> dict[str, np.ndarray]:
    assert result.completed and not result.timed_out, result.diagnostics
    assert Kind.TIMEOUT not in kinds(result)
    return {name: state.data for name, state in result.buffers.items()}


BLOCK_WAITS = r"""
__device__ volatile int flag = 0;
__global__ void k(float* P) {
    if (blockIdx.x == 0 && threadIdx.x == 0) {
        while (flag == 0) {}                       /* block 1 sets it */
        P[0] = 2.0f;
    }
    if (blockIdx.x == 1 && threadIdx.x == 0) flag = 1;
    if (blockIdx.x != 0 || threadIdx.x != 0) P[blockIdx.x * blockDim.x + threadIdx.x] = 1.0f;
}
"""


def test_a_block_that_waits_for_a_later_block_ends(kit, no_nvcc, jobs):
    build = kit.built(BLOCK_WAITS)
    found = ran_to_its_end(kit.run(build, "k", 2, 64, [out("P", 128)], timeout=3))
    assert found["P"][0] == 2.0 and (found["P"][1:] == 1.0).all()


def test_a_block_that_waits_for_a_later_block_ends_profiled(kit, no_nvcc):
    outcome, profile = kit.profile(kit.built(BLOCK_WAITS), "k", 2, 64, [out("P", 128)])
    assert outcome.buffers["P"].data[0] == 2.0 and profile.blocks == 2


PARKED_SHARED = r"""
__device__ volatile int flag = 0;
__global__ void k(float* P) {
    __shared__ float mine[64];
    mine[threadIdx.x] = blockIdx.x * 100.0f + threadIdx.x;
    __syncthreads();
    if (blockIdx.x == 0 && threadIdx.x == 0) while (flag == 0) {}  /* block 1 sets it */
    if (blockIdx.x == 1 && threadIdx.x == 0) flag = 1;
    __syncthreads();
    P[blockIdx.x * blockDim.x + threadIdx.x] = mine[63 - threadIdx.x];
}
"""


def test_a_parked_block_finds_its_shared_memory_as_it_left_it(kit, no_nvcc, jobs):
    build = kit.built(PARKED_SHARED)
    found = ran_to_its_end(kit.run(build, "k", 2, 64, [out("P", 128)], timeout=3))
    expected = [b * 100.0 + 63 - t for b in range(2) for t in range(64)]
    assert (found["P"] == expected).all()


PARKED_LOCALS = r"""
__device__ volatile int flag = 0;
__global__ void k(float* P) {
    float mine[16];  /* on the thread's stack: read back at indices the compiler cannot know */
    for (int i = 0; i < 16; ++i) mine[i] = blockIdx.x * 1000.0f + threadIdx.x * 16 + i;
    __syncthreads();  /* every block runs as fibers, each thread's locals on its stack */
    if (blockIdx.x == 0) while (flag == 0) {}  /* every thread: the block parks */
    if (blockIdx.x == gridDim.x - 1 && threadIdx.x == 0) flag = 1;
    float sum = 0.0f;
    for (int i = 0; i < 16; ++i) sum += mine[(i * 5 + threadIdx.x) % 16] * (i + 1);
    P[blockIdx.x * blockDim.x + threadIdx.x] = sum;
}
"""


def parked_locals_sums() -> np.ndarray:
    """What PARKED_LOCALS stores, on 4 blocks of 64 threads."""
    b, t = np.divmod(np.arange(256), 64)
    i = np.arange(16)[:, None]
    return ((b * 1000.0 + t * 16 + (i * 5 + t) % 16) * (i + 1)).sum(axis=0)


def test_a_parked_block_finds_its_threads_locals_as_it_left_them(kit, no_nvcc, jobs):
    """Block 0 parks and blocks 1 to 3 run on the same stacks: the parked block's copy of
    what its threads' stacks used is put back before it runs again."""
    build = kit.built(PARKED_LOCALS)
    found = ran_to_its_end(kit.run(build, "k", 4, 64, [out("P", 256)], timeout=3))
    assert (found["P"] == parked_locals_sums()).all()


def test_a_parked_block_finds_its_threads_locals_under_the_ucontext_switch(
    kit, no_nvcc, ucontext_runner
):
    """A ucontext switch keeps a bound below its frame, and a parked block copies its
    stacks from there (runtime/fiber.cpp): with the bound 128 bytes above the switch's
    local instead, the copy lost the switch's own frames and the resumed thread crashed."""
    with kit.pool_threads(1):
        found = ran_to_its_end(
            kit.run(kit.built(PARKED_LOCALS), "k", 4, 64, [out("P", 256)], timeout=3)
        )
    assert (found["P"] == parked_locals_sums()).all()


THREAD_WAITS = r"""
__device__ volatile int flag = 0;
__global__ void k(float* P) {
    float seen = 0.0f;
    if (threadIdx.x == 0) {
        while (flag == 0) {}                       /* thread 5 sets it, no barrier between */
        seen = 2.0f;
    }
    if (threadIdx.x == 5) flag = 1;
    P[threadIdx.x] = seen;
}
"""


def test_a_thread_that_waits_for_a_later_thread_of_its_block_ends(kit, no_nvcc, jobs):
    found = ran_to_its_end(kit.run(kit.built(THREAD_WAITS), "k", 1, 32, [out("P", 32)], timeout=3))
    assert found["P"][0] == 2.0 and (found["P"][1:] == 0.0).all()


# Block i waits for block i - 1 to publish its running total, and publishes its own: a
# chained scan. The tile is the block's own (blockIdx), or the next one that an atomicAdd
# hands out (dynamic block ids, StreamScan), which orders the tiles as the blocks start.
CHAINED = r"""
__device__ unsigned int tiles = 0;
__global__ void scan(const float* in, float* sums, volatile int* ready, float* out, int n,
                     int dynamic) {
    __shared__ unsigned int tile;
    if (threadIdx.x == 0) tile = dynamic ? atomicAdd(&tiles, 1u) : blockIdx.x;
    __syncthreads();
    int i = tile * blockDim.x + threadIdx.x;
    if (threadIdx.x == 0) {
        float before = 0.0f;
        if (tile > 0) {
            while (ready[tile - 1] == 0) {}        /* the tile before it */
            before = sums[tile - 1];
        }
        float total = before;
        for (int j = 0; j < (int)blockDim.x && tile * blockDim.x + j < n; ++j)
            total += in[tile * blockDim.x + j];
        sums[tile] = total;
        __threadfence();
        ready[tile] = 1;
    }
    if (i < n) out[i] = 1.0f;
}
"""


def chained_args(values: np.ndarray, blocks: int, dynamic: int) -> list:
    """CHAINED's arguments: `values` scanned by `blocks` blocks."""
    return [
        Buffer("in", values, False),
        out("sums", blocks, 0.0),
        ints("ready", blocks),
        out("out", values.size, 0.0),
        integer("n", values.size),
        integer("dynamic", dynamic),
    ]


@pytest.mark.parametrize("dynamic", [0, 1], ids=["blockIdx", "atomicAdd"])
@pytest.mark.parametrize(
    "n, block",
    # 64 blocks of 1024 threads: more than a pool thread parks (blocks_parked), which the
    # reversed pass, a window of blocks at a time in grid order, never asks of it
    [(1000, 32), (64 * 1024, 1024)],
    ids=["32 blocks of 32", "64 blocks of 1024"],
)
def test_a_chained_scan_whose_blocks_wait_for_the_one_before(kit, no_nvcc, jobs, dynamic, n, block):
    blocks = -(-n // block)
    values = np.arange(n, dtype=np.float32) % 7
    args = chained_args(values, blocks, dynamic)
    found = ran_to_its_end(kit.run(kit.built(CHAINED), "scan", blocks, block, args, timeout=5))
    ends = np.cumsum(values, dtype=np.float64)[np.minimum(np.arange(1, blocks + 1) * block, n) - 1]
    assert np.allclose(found["sums"], ends) and (found["ready"] == 1).all()


def test_a_chained_scan_on_sixteen_pool_threads_parks_what_its_stacks_use(kit, no_nvcc):
    """391 blocks of 512 threads on 16 pool threads, each parking a reversed window of 8
    blocks: whole stacks (35 MB a block) would pass the memory allowance, and a pool
    thread left with the higher blocks of a window would wait for a lower one it could
    not start (it hung at the timeout on a 16-core machine). A parked block keeps only
    the used part of its stacks, so the blocks run on all 16 at once."""
    n, block = 200003, 512
    blocks = -(-n // block)
    args = chained_args(np.ones(n, np.float32), blocks, 0)
    with kit.pool_threads(16):
        result = kit.run(kit.built(CHAINED), "scan", blocks, block, args, timeout=5)
    found = ran_to_its_end(result)
    assert found["sums"][-1] == n and result.blocks_at_once


HEAVY_CHAIN = r"""
__global__ void scan(float* sums, volatile int* ready, float* P) {
    float mine[8192];  /* 32 KiB of each thread's stack, which it holds while it waits */
    unsigned b = blockIdx.x, t = threadIdx.x;
    for (int j = 0; j < 8192; j += 256) mine[(j + t * 7) % 8192] = b * 1000.0f + j + t;
    if (b > 0) while (ready[b - 1] == 0) {}  /* every thread waits for the block before */
    P[b * blockDim.x + t] = mine[(t * 7) % 8192];
    if (t == 0) {
        sums[b] = (b > 0 ? sums[b - 1] : 0.0f) + 1.0f;
        __threadfence();
        ready[b] = 1;
    }
}
"""


def test_parked_stacks_past_a_pool_threads_share_run_again_on_one(kit, no_nvcc, monkeypatch):
    """64 blocks of 256 threads, each thread holding 32 KiB of locals while it waits, on
    16 pool threads: a parked block keeps 8 MiB of stack copies, and a pool thread's
    share (PARKED_STACKS / 16, 16 MiB) is spent by its second. The runner says so, and
    the launch runs again on one pool thread, which keeps every block's locals. Before,
    the copies took memory until an allocation failed (16 pool threads each parking a
    window of 16 such blocks keep 2 GiB, past the run's memory allowance), and the
    runner aborted."""
    reports, run = [], backend.execute

    def execute(*args):
        reports.append(run(*args))
        return reports[-1]

    monkeypatch.setattr(backend, "execute", execute)
    blocks, block = 64, 256
    args = [out("sums", blocks, 0.0), ints("ready", blocks), out("P", blocks * block)]
    with kit.pool_threads(16):
        result = kit.run(kit.built(HEAVY_CHAIN), "scan", blocks, block, args, timeout=10)
    found = ran_to_its_end(result)
    assert [getattr(r.first(Error), "what", None) for r in reports] == ["parking", None]
    b, t = np.divmod(np.arange(blocks * block), block)
    assert (found["P"] == b * 1000.0 + t).all()
    assert (found["sums"] == np.arange(1, blocks + 1)).all() and not result.blocks_at_once


SLOW_CHAIN = r"""
__device__ volatile int done[8];
__global__ void k(float* P, size_t steps) {
    if (threadIdx.x != 0) return;
    if (blockIdx.x > 0) while (done[blockIdx.x - 1] == 0) {}   /* the block before it */
    float x = 0.0f;
    for (size_t i = 0; i < steps; ++i) x = x * 0.5f + (float)(i & 3);
    P[blockIdx.x] = x;
    __threadfence();
    done[blockIdx.x] = 1;
}
"""


def test_a_block_that_waits_for_a_long_chain_spends_no_cpu_time_waiting(kit, no_nvcc):
    """Four blocks, each a third of the timeout's work, the next waiting for it, on two
    pool threads: the waiting one sleeps while the other works, so the chain ends. Spun,
    the two threads' CPU time, shared over them, passed the timeout."""
    build = kit.built(SLOW_CHAIN)
    steps, seconds = 1 << 20, 0.0
    while seconds < 0.2:
        steps *= 2
        single = kit.run(build, "k", 1, 32, [out("P", 1), size_t("steps", steps)])
        ran_to_its_end(single)
        seconds = single.seconds
    with kit.pool_threads(2):
        args = [out("P", 4), size_t("steps", steps)]
        result = kit.run(build, "k", 4, 32, args, timeout=3 * seconds)
    assert np.isfinite(ran_to_its_end(result)["P"]).all() and result.blocks_at_once


LOCKED = r"""
__global__ void k(int* lock, float* total, const float* in) {
    if (threadIdx.x == 0) {
        while (atomicCAS(lock, 0, 1) != 0) {}      /* a spin lock across blocks */
        *total += in[blockIdx.x];
        __threadfence();
        atomicExch(lock, 0);
    }
}
"""


def test_a_spin_lock_across_blocks(kit, no_nvcc, jobs):
    blocks = 16
    args = [ints("lock", 1), out("total", 1, 0.0), Buffer("in", np.ones(blocks, np.float32), False)]
    found = ran_to_its_end(kit.run(kit.built(LOCKED), "k", blocks, 32, args, timeout=5))
    assert found["total"][0] == blocks and found["lock"][0] == 0


DEADLOCK = r"""
__device__ volatile int flag = 0;
__global__ void k(float* P) {
    if (blockIdx.x == 1 && threadIdx.x == 3)
        while (flag == 0) {}                       /* no thread sets it */
    P[blockIdx.x * blockDim.x + threadIdx.x] = 1.0f;
}
"""


def test_waiting_for_a_flag_no_thread_sets_still_hangs_at_its_thread_and_line(kit, no_nvcc, jobs):
    """About as soon as before: the other blocks end, and the waiting one's own CPU time
    then reaches the timeout (1.19-1.22 s here, before and after), well before the wall
    clock's 8 s would (WALL_FACTOR); the bound leaves room for a loaded machine (4.5 s
    on the GPU machine's CPU suite, root and user t at once)."""
    build = kit.built(DEADLOCK)
    start = time.monotonic()
    result = kit.run(build, "k", 4, 32, [out("P", 128)], timeout=1)
    assert result.timed_out and time.monotonic() - start < 6.0
    diag = only(result, Kind.TIMEOUT)
    assert "was still running" in diag.message
    assert (diag.thread, diag.block) == ((3, 0, 0), (1, 0, 0))
    assert diag.line == line_of(DEADLOCK, "no thread sets it")


EVERY_BLOCK_WAITS = r"""
__device__ volatile int flag = 0;
__global__ void k(float* P) {
    if (threadIdx.x == 0)
        while (flag == 0) {}                       /* no thread sets it */
    __syncthreads();
    P[blockIdx.x * blockDim.x + threadIdx.x] = 1.0f;
}
"""


def test_blocks_that_all_wait_past_what_a_pool_thread_parks_hang_at_their_thread_and_line(
    kit, no_nvcc, jobs
):
    """16 blocks of 1024 threads, more than the 4 a pool thread keeps (blocks_parked):
    the block it runs last is not parked and resumed over and over, none of its threads
    running, where the probes would find no thread at a line."""
    result = kit.run(kit.built(EVERY_BLOCK_WAITS), "k", 16, 1024, [out("P", 16 * 1024)], timeout=1)
    assert result.timed_out
    diag = only(result, Kind.TIMEOUT)
    assert diag.thread == (0, 0, 0)
    assert diag.line == line_of(EVERY_BLOCK_WAITS, "no thread sets it")


def test_a_hang_under_the_ucontext_switch_is_found_at_its_line_by_nearly_every_probe(
    kit, no_nvcc, ucontext_runner, monkeypatch
):
    """Under ucontext each switch is a system call, and 4 to 14 of a hang's 16 probes
    found the scheduler running between the waiting thread's turns, with no return
    address into the module on its stack; where all 16 did, the hang had no line (2 runs
    in 9 on a loaded machine). Such a probe now names where that thread waits."""
    records = []
    keep = diagnose._timeout
    monkeypatch.setattr(diagnose, "_timeout", lambda r, *a: records.append(r) or keep(r, *a))
    with kit.pool_threads(2):
        result = kit.run(
            kit.built(EVERY_BLOCK_WAITS), "k", 16, 1024, [out("P", 16 * 1024)], timeout=1
        )
    assert only(result, Kind.TIMEOUT).line == line_of(EVERY_BLOCK_WAITS, "no thread sets it")
    assert list(records[0].pcs).count(0) <= 2, records[0].pcs


EVERY_THREAD_WAITS = r"""
__device__ volatile int flag = 0;
__global__ void k(float* P) {
    while (flag == 0) {}                           /* no thread sets it */
    P[blockIdx.x * blockDim.x + threadIdx.x] = 1.0f;
}
"""


def test_threads_that_all_wait_for_a_flag_no_one_sets_hang_at_their_line(kit, no_nvcc, jobs):
    """Every thread of every block spins on the flag: after the first of a block waits,
    the others wait after a few loads (SPIN_FOLLOW), and the hang still names the line."""
    result = kit.run(kit.built(EVERY_THREAD_WAITS), "k", 8, 256, [out("P", 8 * 256)], timeout=1)
    assert result.timed_out
    assert only(result, Kind.TIMEOUT).line == line_of(EVERY_THREAD_WAITS, "no thread sets it")


STALE_WAIT = r"""
__device__ volatile int flag = 0;
__global__ void k(volatile int* marks, int* seen) {
    if (blockIdx.x == 0) {
        if (threadIdx.x == 0) while (flag == 0) {}    /* waits for thread 1 */
        if (threadIdx.x == 1) flag = 1;
        __syncthreads();
        if (threadIdx.x == 0) flag = 0;                /* as it was, for block 1 */
        return;
    }
    if (threadIdx.x == 1) {                            /* not the thread that waited */
        int zeros = 0;
        for (int i = 0; i < 1000; ++i) zeros += flag == 0;  /* far fewer than SPIN_LOADS */
        seen[0] = marks[2] + zeros;
    }
    if (threadIdx.x == 2) marks[2] = 1;
}
"""


def test_a_block_does_not_follow_a_wait_of_the_block_before_on_its_pool_thread(kit, no_nvcc):
    """Block 1's thread 1 reads the word and value block 0's thread 0 waited on, on the
    same pool thread, 1000 times: no thread of its own block waits, so it does not wait
    (SPIN_FOLLOW), and it reads thread 2's mark before thread 2 runs. Following block 0's
    wait, it waited after 64 loads and found the mark set (1001, before 36a0e5f)."""
    args = [ints("marks", 3), ints("seen", 1)]
    with kit.pool_threads(1):
        found = ran_to_its_end(kit.run(kit.built(STALE_WAIT), "k", 2, 3, args, timeout=5))
    assert found["seen"][0] == 1000


WAITS_BESIDE = r"""
__device__ volatile int flag = 0;
__global__ void k(volatile int* marks, volatile int* word, int* seen) {
    if (threadIdx.x == 0) while (flag == 0) {}         /* waits for thread 2 */
    if (threadIdx.x == 1) {
        int zeros = 0;
        for (int i = 0; i < 1000; ++i) zeros += word[0] == 0;  /* a word of its own */
        seen[0] = marks[2] + zeros;
    }
    if (threadIdx.x == 2) { marks[2] = 1; flag = 1; }
}
"""


def test_a_thread_that_spins_while_another_of_its_block_waits_waits_after_a_few_loads(kit, no_nvcc):
    """Thread 0 waits for a flag; thread 1 then reads a word of its own 1000 times, far
    fewer than SPIN_LOADS, and waits after SPIN_FOLLOW: thread 2 runs and sets its mark
    before thread 1 reads it (1001). Each of 512 threads spinning on a word of its own
    took 4096 loads before (lanes in bench/cpu_backend.py: 5 s, now 0.2 s). In
    STALE_WAIT's block 1, where no thread waits, the same loop does not wait (1000)."""
    args = [ints("marks", 3), ints("word", 1), ints("seen", 1)]
    with kit.pool_threads(1):
        found = ran_to_its_end(kit.run(kit.built(WAITS_BESIDE), "k", 1, 3, args, timeout=5))
    assert found["seen"][0] == 1001


@pytest.mark.parametrize(
    "text, hooked",
    [
        ("__device__ volatile int flag;", True),
        ("#define FLAG volatile int\n", True),
        ('asm volatile("") ; volatile int* p;', True),
        ('asm volatile("membar.gl;");', False),
        ('__asm__ __volatile__("");', False),
        ("/* volatile */ int x; // volatile", False),
        ('printf("volatile");', False),
        ("while (flags[b - 1] == 0) { __threadfence(); }", True),
        ("__threadfence_block ();", True),
        ("int __threadfences = 0;", False),
    ],
)
def test_a_file_that_says_volatile_or_fences_gets_load_hooks_but_not_for_asm_volatile(text, hooked):
    """Only a load hook sees a thread spin on a flag (scan.needs_load_hooks)."""
    assert scan.needs_load_hooks(text) == hooked


# -- blocks that read what other blocks stored ---------------------------------------------

READS_PREVIOUS_BLOCK = r"""
__global__ void k(float* P) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    P[i] = 1.0f;
    __syncthreads();
    if (threadIdx.x == 0 && blockIdx.x > 0) P[i] += P[i - 1];  /* block b - 1's element */
}
"""
READS_OWN_BLOCK = READS_PREVIOUS_BLOCK.replace("blockIdx.x > 0", "blockDim.x > 1").replace(
    "P[i - 1]", "P[i + 1]"
)


def test_a_census_run_sees_a_block_read_what_another_stored(kit, no_nvcc):
    """A census build's loads are hooked, and its one pool thread keeps each output
    element's last storer: a load of another block's element says that the outputs may
    depend on the blocks' order (the grading then runs every case in grid order)."""
    census = kit.backend.build(
        Submission(Path("k.cu"), READS_PREVIOUS_BLOCK), {}, (32, 1, 1), census=True
    )
    assert kit.run(census, "k", 4, 32, [out("P", 128)]).blocks_read_each_other
    own = kit.backend.build(Submission(Path("k.cu"), READS_OWN_BLOCK), {}, (32, 1, 1), census=True)
    assert not kit.run(own, "k", 4, 32, [out("P", 128)]).blocks_read_each_other
    # a plain build hooks no load, but its two passes differ, and the run that locates
    # the race (in the census build) sees the read; on one pool thread, because on more
    # the blocks' order in either pass is the threads' timing, and both passes may agree
    # (once in a run of the suite on 8 cores)
    with kit.pool_threads(1):
        plain = kit.run(kit.built(READS_PREVIOUS_BLOCK), "k", 4, 32, [out("P", 128)])
    assert Kind.RACE in kinds(plain) and plain.blocks_read_each_other
