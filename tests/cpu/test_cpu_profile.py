"""The CPU model of a kernel's memory profile (runtime/profile.cpp, read by
grader.backends.cpu.profile): tiny kernels whose requests, sectors, bank conflicts, lanes
and busiest thread are worked out by hand, the naive matmul against Nsight Compute's
figures the issue quotes, and the record as the grader believes it."""

from __future__ import annotations

import math

import numpy as np
import pytest
from census_kit import NAIVE, TILED
from cpu_kit import inp, integer, out

from grader import labs
from grader.backends.cpu import job, protocol
from grader.backends.cpu import profile as profiling
from grader.judge import cases as casegen
from grader.judge.launch import make_launch
from grader.judge.profiling import case_profile
from grader.model.launch import Buffer
from grader.model.profile import KernelProfile, Profile, Source, Traffic
from grader.model.source import Submission

ELEMENTS = """\
__global__ void copy(const float* a, float* b, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) b[i] = a[i];
}
__global__ void strided(const float* a, float* b, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) b[i] = a[(i * 32) % n];
}
__global__ void even_lanes(const float* a, float* b, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n && threadIdx.x % 2 == 0) b[i] = a[i];
}
__global__ void first_block_rows(const float* a, float* b, int n) {
    // block b sums (4 - b) * 8 elements a thread: the first block has the longest rows
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    float sum = 0.0f;
    for (int j = 0; j < (4 - (int)blockIdx.x) * 8; ++j) sum += a[(i + j * blockDim.x) % n];
    if (i < n) b[i] = sum;
}
__global__ void one_thread(const float* a, float* b, int n) {
    if (blockIdx.x == 0 && threadIdx.x == 0) {
        float sum = 0.0f;
        for (int j = 0; j < n; ++j) sum += a[j];
        b[0] = sum;
    }
}
"""


def _elements(kit, kernel: str, n: int = 1024, block: int = 256) -> KernelProfile:
    build = kit.built(ELEMENTS)
    args = [inp("a", np.ones(n)), out("b", n), integer("n", n)]
    return kit.profile(build, kernel, -(-n // block), block, args)[1]


def test_a_coalesced_float_load_is_four_sectors_a_request(kit):
    found = _elements(kit, "copy")
    assert found.global_loads == Traffic(requests=32, sectors=128, bytes=4096, lanes=1024)
    assert found.global_stores == Traffic(requests=32, sectors=128, bytes=4096, lanes=1024)
    assert (found.threads, found.busiest_thread_loads) == (1024, 1)
    assert found.busiest_block_loads == 256  # each of the 4 blocks loads 256


def test_the_busiest_block_is_the_one_with_the_most_loads_of_its_threads(kit):
    """32, 24, 16 and 8 loads a thread in blocks 0 to 3: the first block makes 0.4 of
    them, as a JDS kernel's block of the longest rows does."""
    found = _elements(kit, "first_block_rows")
    assert found.global_loads.lanes == 256 * (32 + 24 + 16 + 8)
    assert (found.busiest_block_loads, found.blocks) == (256 * 32, 4)
    assert found.busiest_thread_loads == 32


def test_a_load_with_a_stride_of_32_floats_is_32_sectors_a_request(kit):
    found = _elements(kit, "strided")
    assert found.global_loads.per_request == 32.0
    assert found.global_stores.per_request == 4.0


def test_lanes_that_skip_a_load_are_idle_in_its_request(kit):
    found = _elements(kit, "even_lanes")
    assert found.global_loads == Traffic(requests=32, sectors=128, bytes=2048, lanes=512)


def test_sectors_count_from_a_buffers_start_as_cudamalloc_aligns_it(kit):
    # 1001 floats: the checked pass ends the buffer at its guard page, so its host start
    # is 4004 bytes before a page boundary, not on a 32-byte one; the GPU's is on 256.
    found = _elements(kit, "copy", n=1001)
    full, rest = divmod(1001, 32)
    sectors = full * 4 + math.ceil(rest * 4 / 32)
    assert found.global_loads.sectors == found.global_stores.sectors == sectors


HALO = """\
__global__ void halo(const float* a, float* b) {
    __shared__ float s[48];
    for (int step = 0; step < 4; ++step) {
        for (int i = threadIdx.x; i < 48; i += 32) s[i] = a[step * 48 + i + 1];
        __syncthreads();
        b[step * 32 + threadIdx.x] = s[threadIdx.x] + s[threadIdx.x + 16];
        __syncthreads();
    }
}
"""


def test_a_loop_whose_trips_differ_by_lane_pairs_its_trips_between_the_same_barriers(kit):
    """A tile of 48 loaded by 32 lanes, four times, one float past a sector's start:
    lanes 0-15 take two trips, the others one. Each stretch has a request of 32 lanes (5
    sectors) and one of 16 (3 sectors), as on a GPU; counting trips from the block's start
    paired lane 0's second trip with lane 16's second stretch, requests across tiles."""
    args = [inp("a", np.ones(4 * 48 + 1)), out("b", 4 * 32)]
    _, found = kit.profile(kit.built(HALO), "halo", 1, 32, args)
    assert found.global_loads == Traffic(requests=8, sectors=32, bytes=4 * 48 * 4, lanes=4 * 48)


HALVES = """\
__global__ void halves(const float* a, float* b) {
    int lane = threadIdx.x % 32;
    float v = 0.0f;
    for (int trip = 0; trip < 2; ++trip) {
        if ((lane < 16) == (trip == 0)) v += a[threadIdx.x];
        v += __shfl_xor_sync(0xffffffff, v, 1);
    }
    b[threadIdx.x] = v;
}
"""


def test_a_warp_waiting_at_a_shuffle_keeps_its_requests_open_while_the_next_warp_runs(kit):
    """Lanes 0-15 load at the first trip and lanes 16-31 at the second, each lane's first
    time at that load: one request of 32 lanes a warp. The second warp runs between the
    trips (lane 31 goes on past the first shuffle, and waits at the second), so a warp's
    accesses become requests early only once its every thread has finished or waits at a
    barrier; on the second warp's start they made requests of 17 lanes and 15."""
    args = [inp("a", np.ones(64)), out("b", 64)]
    _, found = kit.profile(kit.built(HALVES), "halves", 1, 64, args)
    assert found.global_loads == Traffic(requests=2, sectors=8, bytes=256, lanes=64)


REREADS = """\
__global__ void rereads(const float* a, float* b, int n) {
    float sum = 0.0f;
    for (int j = 0; j < n; ++j) sum += a[j];
    b[threadIdx.x] = sum;
}
"""


def test_a_full_log_splits_a_warps_requests_where_it_did_before_repeats_were_left_out(kit):
    """32 lanes read the same 40000 floats: a lane's read repeats the previous lane's and
    is not logged, but the log still counts as full where it held 2^20 accesses, during
    lane 26's run, and the requests made then are made again after it (80000, not 40000),
    so that no profile changed when repeats were left out (runtime/profile.cpp)."""
    n = 40_000
    args = [inp("a", np.ones(n)), out("b", 32), integer("n", n)]
    _, found = kit.profile(kit.built(REREADS), "rereads", 1, 32, args)
    assert found.global_loads == Traffic(
        requests=2 * n, sectors=2 * n, bytes=32 * n * 4, lanes=32 * n
    )
    assert found.busiest_thread_loads == n


def test_one_thread_that_makes_every_load_is_the_busiest_with_all_of_them(kit):
    found = _elements(kit, "one_thread", n=256, block=32)
    assert found.global_loads == Traffic(requests=256, sectors=256, bytes=1024, lanes=256)
    assert found.busiest_thread_loads == found.busiest_block_loads == 256


# Rows from threadIdx.x: the 16 lanes of a half warp read 16 rows of M, and store into 16
# rows of P.
ROWS_FROM_X = """\
__global__ void matmul(const float* M, const float* N, float* P, int Width) {
    int row = blockIdx.x * blockDim.x + threadIdx.x;
    int col = blockIdx.y * blockDim.y + threadIdx.y;
    if (row < Width && col < Width) {
        float sum = 0.0f;
        for (int k = 0; k < Width; ++k) sum += M[row * Width + k] * N[k * Width + col];
        P[row * Width + col] = sum;
    }
}
"""


def _matmul(kit, source: str, width: int = 64) -> KernelProfile:
    build = kit.built(source)
    rng = np.random.default_rng(0)
    m, n = (rng.random((width, width), np.float32) for _ in range(2))
    args = [inp("M", m), inp("N", n), out("P", width * width), integer("Width", width)]
    outcome, found = kit.profile(build, "matmul", (width // 16, width // 16), (16, 16), args)
    np.testing.assert_allclose(outcome.buffers["P"].data.reshape(width, width), m @ n, 1e-4)
    return found


def test_the_naive_matmul_loads_two_sectors_a_request_as_nsight_compute_counts(kit):
    """A warp is two rows of 16 threads: M's two rows give one element each, and N's 16
    consecutive floats of a row are two sectors. Nsight Compute: 2.0 at 256 x 256."""
    found = _matmul(kit, NAIVE)
    warps, loads = 64 * 64 // 32, 2 * 64
    assert found.global_loads.requests == warps * loads
    assert found.global_loads.per_request == 2.0
    assert found.global_stores.per_request == 4.0  # two rows of 64 bytes
    assert found.global_loads.bytes == 64 * 64 * loads * 4
    assert found.busiest_thread_loads == loads


def test_the_naive_matmul_with_rows_from_threadidx_x_loads_8_5_sectors_a_request(kit):
    """M's 16 rows are 16 sectors, N's two neighbouring columns one: (16 + 1) / 2, as
    Nsight Compute counts at 256 x 256; its stores go to 16 rows."""
    found = _matmul(kit, ROWS_FROM_X)
    assert found.global_loads.per_request == 8.5
    assert found.global_stores.per_request == 16.0


BANKS = """\
__global__ void banks(float* out, int mode) {
    __shared__ float s[32 * 32];
    __shared__ float padded[32][33];
    int t = threadIdx.x;
    for (int j = 0; j < 32; ++j) {
        s[j * 32 + t] = t;
        padded[j][t] = t;
    }
    __syncthreads();
    float x;
    if (mode == 0) x = s[t * 32];        // down a column: every lane in bank 0
    else if (mode == 1) x = s[5];        // one word for every lane
    else x = padded[t][3];               // down a column of a padded tile
    out[blockIdx.x * 32 + t] = x;
}
"""


@pytest.mark.parametrize(
    ("mode", "wavefronts"), [(0, 32), (1, 1), (2, 1)], ids=["32-way", "broadcast", "padded"]
)
def test_shared_bank_conflicts_are_the_distinct_words_of_the_busiest_bank_less_one(
    kit, mode, wavefronts
):
    build = kit.built(BANKS)
    _, found = kit.profile(build, "banks", 2, 32, [out("out", 64), integer("mode", mode)])
    assert found.shared_loads == Traffic(requests=2, sectors=2 * wavefronts, bytes=256, lanes=64)
    assert found.shared_loads.conflicts_per_request == wavefronts - 1
    # each row of either tile is 32 consecutive words: no conflict
    assert found.shared_stores == Traffic(requests=128, sectors=128, bytes=128 * 128, lanes=4096)


CSR = """\
__global__ void rows(const int* row_ptr, const float* values, float* y, int rows) {
    int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r < rows) {
        float sum = 0.0f;
        for (int j = row_ptr[r]; j < row_ptr[r + 1]; ++j) sum += values[j];
        y[r] = sum;
    }
}
"""


def test_a_loop_whose_trip_counts_differ_by_lane_forms_a_request_per_trip(kit):
    """Row r has r % 4 + 1 entries: the first trip has 32 lanes, the second 24, the third
    16, the fourth 8; besides them, the two loads of row_ptr."""
    lengths = np.arange(32) % 4 + 1
    row_ptr = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int32)
    args = [
        Buffer("row_ptr", row_ptr, False),
        inp("values", np.ones(int(lengths.sum()))),
        out("y", 32),
        integer("rows", 32),
    ]
    _, found = kit.profile(kit.built(CSR), "rows", 1, 32, args)
    assert (found.global_loads.requests, found.global_loads.lanes) == (2 + 4, 2 * 32 + 80)
    assert found.busiest_thread_loads == 2 + 4


def test_a_tiled_matmul_reads_a_sixteenth_of_the_naive_ones_bytes_without_conflicts(kit):
    """Each thread loads two elements a tile, four tiles in all, in rows of 16 consecutive
    floats (two rows a warp: four sectors); its shared loads are a broadcast word or 16
    consecutive ones, in distinct banks."""
    tiled, naive = _matmul(kit, TILED), _matmul(kit, NAIVE)
    assert tiled.global_loads.per_request == 4.0
    assert tiled.global_loads.bytes * 16 == naive.global_loads.bytes
    assert tiled.shared_loads.requests == 64 * 64 // 32 * 4 * 2 * 16
    assert tiled.shared_loads.conflicts_per_request == 0
    assert tiled.busiest_thread_loads == 8


WIDE = """\
__global__ void wide(const float4* a, float4* b, float* out) {
    __shared__ float4 s[64];
    __shared__ float2 h[64];
    int t = threadIdx.x;
    float4 v = a[t];
    s[t] = v;
    h[t] = make_float2(v.x, v.y);
    __syncthreads();
    float4 w = s[(t * 2) % 64];   // a quarter warp's 8 lanes span 256 bytes
    float2 g = h[t];
    b[t] = w;
    out[t] = g.x + g.y;
}
"""


def test_float4_and_float2_accesses_are_one_request_served_in_quarter_and_half_warps(kit):
    """A float4 load is one request of 16 sectors, as a GPU's 128-bit load; shared memory
    serves 128 bytes a wavefront, so 8- and 16-byte accesses in consecutive lanes have no
    conflict, and a quarter warp of float4 two apart needs two wavefronts: 4 in all for
    the 4 it needs at least, 4 conflicts."""
    args = [inp("a", np.ones(128)), out("b", 128), out("out", 32)]
    _, found = kit.profile(kit.built(WIDE), "wide", 1, 32, args)
    assert found.global_loads == Traffic(1, 16, 512, 32)
    assert found.global_stores == Traffic(2, 16 + 4, 512 + 128, 64)
    assert found.shared_stores == Traffic(2, 2, 512 + 256, 64)
    assert found.shared_loads == Traffic(2, 5 + 1, 512 + 256, 64)


SPACES = """\
__constant__ float c[32];
__device__ float table[256];
__global__ void spaces(const float* a, float* b, int mode) {
    int t = threadIdx.x;
    float local[8];
    for (int j = 0; j < 8; ++j) local[j] = a[t] * j;
    float x = local[(t + mode) % 8];          // the thread's own stack: not counted
    if (mode == 0) x += c[blockIdx.x];        // one constant word for every lane
    else if (mode == 1) x += c[t];            // a word for each lane
    else x += table[t];                       // a __device__ array is global memory
    b[t] = x;
}
"""


@pytest.mark.parametrize(
    ("mode", "constant", "global_loads"),
    [
        (0, Traffic(1, 1, 128, 32), Traffic(1, 4, 128, 32)),
        (1, Traffic(1, 32, 128, 32), Traffic(1, 4, 128, 32)),
        (2, Traffic(), Traffic(2, 8, 256, 64)),
    ],
    ids=["uniform-constant", "divergent-constant", "device-variable"],
)
def test_constant_and_device_variables_count_and_a_threads_stack_does_not(
    kit, mode, constant, global_loads
):
    build = kit.built(SPACES)
    _, found = kit.profile(
        build, "spaces", 1, 32, [inp("a", np.ones(32)), out("b", 32), integer("mode", mode)]
    )
    assert found.constant_loads == constant
    assert found.global_loads == global_loads
    assert found.global_stores == Traffic(1, 4, 128, 32)


ATOMICS = """\
__global__ void atomics(const unsigned* in, unsigned* bins, float* total, int mode) {
    __shared__ unsigned local[8];
    int t = threadIdx.x, i = blockIdx.x * blockDim.x + t;
    if (mode == 0) atomicAdd(&bins[in[i] % 8], 1u);
    if (mode == 1) atomicMin(&bins[0], in[i]);
    if (mode == 2) atomicAdd(total, 1.0f);
    if (mode == 3) {
        if (t < 8) local[t] = 0;
        __syncthreads();
        atomicAdd(&local[in[i] % 8], 1u);
        __syncthreads();
        if (t < 8) atomicAdd(&bins[t], local[t]);
    }
}
"""


@pytest.mark.parametrize(
    ("mode", "global_atomics", "shared_atomics"),
    [(0, 4, 0), (1, 4, 0), (2, 4, 0), (3, 2, 4)],
    ids=["add", "min", "float-add", "shared"],
)
def test_an_atomic_is_a_request_of_its_space_and_its_own_store_no_store(
    kit, mode, global_atomics, shared_atomics
):
    """Four warps, each reading `in` once; the atomic's read of its target is no load."""
    args = [
        Buffer("in", np.arange(128, dtype=np.uint32), False),
        Buffer("bins", np.zeros(8, np.uint32), True, accumulates=True),
        out("total", 1, 0.0),
        integer("mode", mode),
    ]
    _, found = kit.profile(kit.built(ATOMICS), "atomics", 2, 64, args)
    assert (found.global_atomics, found.shared_atomics) == (global_atomics, shared_atomics)
    assert found.global_loads == (Traffic(4, 16, 512, 128) if mode != 2 else Traffic())
    assert found.global_stores == Traffic()


# -- both halves of a read-modify-write --------------------------------------------------

RMW = """\
__global__ void bins_plus_plus(const unsigned char* in, unsigned* bins, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) bins[in[i]]++;
}
__global__ void adds_into(const float* a, float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] += a[i];
}
__global__ void halves(const float* in, float* out) {
    __shared__ float sdata[256];
    int t = threadIdx.x;
    sdata[t] = in[blockIdx.x * 256 + t];
    for (int s = blockDim.x / 2; s > 0; s >>= 1) {
        __syncthreads();
        if (t < s) sdata[t] += sdata[t + s];
    }
    if (t == 0) out[blockIdx.x] = sdata[0];
}
__global__ void apart(float* y, unsigned* z) {
    int i = threadIdx.x;
    float v = y[i];
    __syncthreads();                          /* a call between the load and the store */
    y[i] = v + 1.0f;
    z[i] = ((unsigned char*)z)[4 * i] + 1u;   /* a store wider than the load before it */
}
"""


def test_the_store_of_bins_v_plus_plus_is_a_request_of_its_own(kit):
    """Eight warps, each lane's byte naming the bin 8 * lane: each warp loads and stores
    32 bins a sector apart. The census module's hooks once checked the address once for
    the load and the store, and the store was not seen."""
    data = (8 * np.arange(256) % 256).astype(np.uint8)
    args = [Buffer("in", data, False), Buffer("bins", np.zeros(256, np.uint32), True),
            integer("n", 256)]  # fmt: skip
    outcome, found = kit.profile(kit.built(RMW), "bins_plus_plus", 1, 256, args)
    assert found.global_stores == Traffic(requests=8, sectors=8 * 32, bytes=1024, lanes=256)
    assert found.global_loads == Traffic(16, 8 * 1 + 8 * 32, 256 + 1024, 512)
    assert outcome.buffers["bins"].data[::8].tolist() == [8] * 32


def test_the_store_of_y_i_plus_equals_is_a_request_of_its_own(kit):
    args = [inp("a", np.ones(1024)), out("y", 1024, 1.0), integer("n", 1024)]
    _, found = kit.profile(kit.built(RMW), "adds_into", 4, 256, args)
    assert found.global_stores == Traffic(32, 128, 4096, 1024)
    assert found.global_loads == Traffic(64, 256, 8192, 2048)


def test_each_step_of_a_tree_sum_in_shared_memory_stores_its_sums(kit):
    """sdata[t] += sdata[t + s], s from 128 down to 1 over a block of 256: the first store
    is 8 requests, then 4, 2, and a warp's at each of the 6 steps from s = 32, no two
    lanes in a bank; the loads are two a step and the block's sum."""
    args = [inp("in", np.ones(512)), out("out", 2)]
    outcome, found = kit.profile(kit.built(RMW), "halves", 2, 256, args)
    lanes = 256 + 255
    assert found.shared_stores == Traffic(2 * 20, 2 * 20, 2 * 4 * lanes, 2 * lanes)
    assert found.shared_loads == Traffic(2 * 25, 2 * 25, 2 * 4 * (2 * 255 + 1), 2 * 511)
    assert outcome.buffers["out"].data.tolist() == [256.0, 256.0]


def test_a_load_and_a_store_hooked_apart_are_each_logged_once(kit):
    """Where a call comes between the load and the store of one place, or the store is
    wider, each had a hook before; each is one access still."""
    args = [out("y", 32, 1.0), Buffer("z", np.zeros(32, np.uint32), True)]
    outcome, found = kit.profile(kit.built(RMW), "apart", 1, 32, args)
    assert found.global_loads == Traffic(2, 4 + 4, 128 + 32, 64)
    assert found.global_stores == Traffic(2, 8, 256, 64)
    assert outcome.buffers["z"].data.tolist() == [1] * 32


def _lab_kernel(kit, lab: str, file: str, kernel: str, grid: int, block: int, args: list):
    """The profile of `kernel` of `file` in `lab`'s folder, launched as given."""
    path = labs.get(lab).home / file
    return kit.profile(kit.built(path.read_text()), kernel, grid, block, args)[1]


def test_the_reduction_baselines_interleaved_sums_conflict_as_nsight_compute_counts(kit):
    """partial[2t] += partial[2t + stride] where t % stride == 0, a block of 256: at the
    strides 1 to 16 every warp's lanes store two words a bank (40 requests of 2
    wavefronts), at 32 and over one lane a warp (8, 4, 2 and 1 requests), after the 16
    of the tile's load: 40 conflicts in 71 requests, the 0.56 ncu counts on the H200."""
    args = [inp("input", np.ones(512)), out("output", 1), integer("n", 512)]
    found = _lab_kernel(kit, "reduction", "baseline.cu", "reduction", 1, 256, args)
    assert found.shared_stores == Traffic(71, 71 + 40, 4 * 1023, 1023)
    assert found.shared_stores.conflicts_per_request == pytest.approx(0.56, abs=0.005)


def test_histogram_without_atomics_stores_each_bin_it_adds_to(kit):
    """no_atomics.cu's bins[input[i]]++: as many store requests as load requests of the
    bins, each over the sectors its lanes' bins lie in."""
    data = (np.arange(1024) * 37 % 256).astype(np.uint8)
    args = [Buffer("input", data, False), Buffer("bins", np.zeros(256, np.uint32), True),
            integer("n", 1024)]  # fmt: skip
    found = _lab_kernel(kit, "histogram", "wrong/no_atomics.cu", "histogram", 4, 256, args)
    sectors = sum(len({int(b) // 8 for b in data[w : w + 32]}) for w in range(0, 1024, 32))
    assert found.global_stores == Traffic(32, sectors, 4096, 1024)
    assert found.global_loads.requests == 32 + 32


def test_one_thread_scanning_the_sums_in_place_stores_each_one(kit):
    """serial_thread.cu's scan_sums: sums[j] = running after reading sums[j], one lane."""
    args = [out("sums", 10, 1.0), integer("m", 10)]
    found = _lab_kernel(kit, "scan", "wrong/serial_thread.cu", "scan_sums", 1, 512, args)
    assert found.global_stores == Traffic(10, 10, 40, 10)
    assert found.global_loads == Traffic(10, 10, 40, 10)


@pytest.mark.parametrize("kernel", ["scan", "scan_sums"])
def test_a_brent_kung_scan_in_shared_memory_conflicts_as_nsight_compute_counts(kit, kernel):
    """device_totals.cu's Brent-Kung tree over 1024 floats, 512 threads: XY[i] +=
    XY[i - stride] at i = (t + 1) * 2 * stride - 1 puts a warp's lanes 2 * stride words
    apart, so min(32, 2 * stride) of them share a bank: the up-sweep's 36 requests take
    191 wavefronts, the down-sweep's 35 take 185, after the tile's load of 32 requests:
    305 conflicts in 103 requests, the 2.96 ncu counts on the H200."""
    args = (
        [inp("input", np.ones(1024)), out("output", 1024), out("sums", 1), integer("n", 1024)]
        if kernel == "scan"
        else [out("sums", 1), integer("m", 1)]
    )
    found = _lab_kernel(kit, "scan", "variants/device_totals.cu", kernel, 1, 512, args)
    lanes = 1024 + 1023 + 1013
    assert found.shared_stores == Traffic(103, 408, 4 * lanes, lanes)
    assert found.shared_stores.conflicts_per_request == pytest.approx(2.96, abs=0.005)


RAW_ATOMICS = """\
__global__ void reads(unsigned* in, unsigned* out, int n) {
    unsigned sum = 0;
    for (int j = 0; j < n; ++j) sum += __atomic_fetch_or(&in[j], 0u, __ATOMIC_SEQ_CST);
    out[threadIdx.x] = sum;
}
"""


def test_a_gnu_atomic_builtin_that_reads_its_target_is_an_atomic_not_a_store(kit, no_nvcc):
    """Without nvcc, which compiles none in a kernel, a thread may read through GNU's
    builtins: each is an atomic of the profile, counted as the thread's read, not a store
    that would hide it from the busiest-thread and traffic rules."""
    args = [Buffer("in", np.arange(64, dtype=np.uint32), True), out("out", 32),
            integer("n", 64)]  # fmt: skip
    outcome, found = kit.profile(kit.built(RAW_ATOMICS), "reads", 1, 32, args)
    assert (found.global_atomics, found.busiest_thread_loads) == (64, 64)
    assert found.global_stores == Traffic(1, 4, 128, 32)
    assert outcome.buffers["out"].data.view(np.uint32).tolist() == [64 * 63 // 2] * 32


FORGED = """\
__global__ void copy(const float* a, float* b, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    __grader_rt_atomic(&a[i]);   /* the shim's hook, called to pass a load off as an atomic */
    b[i] = a[i];
}
"""


def test_calling_the_atomic_hook_before_a_load_hides_no_load(kit, no_nvcc):
    """Only without nvcc: nvcc knows no __grader_rt_atomic."""
    args = [inp("a", np.ones(64)), out("b", 64), integer("n", 64)]
    _, found = kit.profile(kit.built(FORGED), "copy", 2, 32, args)
    assert found.global_loads == Traffic(2, 8, 256, 64)


COPIES = """\
__global__ void into_local(const float* in, float* out) {
    int t = threadIdx.x;
    float buf[16];
    memcpy(buf, in + t * 16, 16 * sizeof(float));
    float sum = 0.0f;
    for (int j = 0; j < 16; ++j) sum += buf[j];
    out[t] = sum;
}
__global__ void word(const float* in, float* out) {
    int t = threadIdx.x;
    float v;
    COPY(&v, &in[t], sizeof(float));
    out[t] = v;
}
"""
# every lane's k-th byte of its own 64 bytes: 32 lanes 64 bytes apart, 32 sectors
BYTES_OF_16_FLOATS = Traffic(requests=64, sectors=64 * 32, bytes=64 * 32, lanes=64 * 32)


def test_a_memcpy_from_global_memory_is_a_load_of_each_byte_as_a_gpus_device_memcpy(kit):
    """nvcc's device memcpy (void* pointers, alignment unknown) is 64 ld.global.u8 for 64
    bytes: each lane's k-th byte is the warp's k-th request, and the thread makes a load
    of each, which the busiest-thread and traffic rules count."""
    build = kit.built(COPIES.replace("COPY", "memcpy"))
    args = [inp("in", np.arange(512)), out("out", 32)]
    outcome, found = kit.profile(build, "into_local", 1, 32, args)
    assert found.global_loads == BYTES_OF_16_FLOATS
    assert found.global_stores == Traffic(1, 4, 128, 32)  # the local buffer is no global
    assert found.busiest_thread_loads == 64
    sums = np.arange(512, dtype=np.float32).reshape(32, 16).sum(axis=1)
    assert outcome.buffers["out"].data.tolist() == sums.tolist()


@pytest.mark.parametrize(
    ("copy", "loads"),
    [("memcpy", Traffic(4, 16, 128, 128)), ("__builtin_memcpy", Traffic(1, 4, 128, 32))],
)
def test_a_small_copy_is_bytes_and_a_builtin_one_g_plus_plus_folds_is_one_wide_load(
    kit, copy, loads
):
    """A 4-byte memcpy is 4 byte loads, as on a GPU; __builtin_memcpy of a constant 4
    bytes is folded into one 4-byte load before the thread sanitizer's pass, which hooks
    it: counted too, as one access of its width."""
    build = kit.built(COPIES.replace("COPY", copy))
    _, found = kit.profile(build, "word", 1, 32, [inp("in", np.ones(32)), out("out", 32)])
    assert found.global_loads == loads


GLOBAL_COPIES = """\
#include <string.h>
__global__ void copy(const float* in, float* out) {
    int t = threadIdx.x;
    COPY(out + t * 16, in + t * 16, 16 * sizeof(float));
}
__global__ void clear(float* out) {
    memset(out + threadIdx.x * 16, 0, 16 * sizeof(float));
}
"""


@pytest.mark.parametrize("copy", ["memcpy", "memmove"])
def test_a_copy_between_global_buffers_loads_and_stores_each_byte(kit, no_nvcc, copy):
    """Only without nvcc for memmove, which nvcc does not compile in a kernel."""
    build = kit.built(GLOBAL_COPIES.replace("COPY", copy))
    args = [inp("in", np.arange(512)), out("out", 512)]
    outcome, found = kit.profile(build, "copy", 1, 32, args)
    assert found.global_loads == found.global_stores == BYTES_OF_16_FLOATS
    assert outcome.buffers["out"].data.tolist() == list(range(512))


def test_a_memset_stores_each_byte(kit):
    _, found = kit.profile(kit.built(GLOBAL_COPIES.replace("COPY", "memcpy")), "clear", 1, 32,
                           [out("out", 512)])  # fmt: skip
    assert found.global_stores == BYTES_OF_16_FLOATS
    assert found.global_loads == Traffic()


# -- the record, as the grader believes it ----------------------------------------------

RECORD = (
    "profile token={token} global_loads=2,8,256,64 global_stores=0,0,0,0 "
    "shared_loads=1,32,128,32 shared_stores=0,0,0,0 constant_loads=0,0,0,0 "
    "global_atomics=0 shared_atomics=3 busiest=2 busiest_block=60 blocks=1"
)


def _report(*lines: str) -> job.Report:
    report = job.Report(0, token="abc")
    report.records = [protocol.parse(line)[0] for line in lines]
    return report


def test_the_record_reads_as_the_kernels_profile():
    found = profiling.read(_report(RECORD.format(token="abc")), "k", threads=64)
    assert found == KernelProfile(
        "k",
        global_loads=Traffic(2, 8, 256, 64),
        shared_loads=Traffic(1, 32, 128, 32),
        shared_atomics=3,
        threads=64,
        busiest_thread_loads=2,
        busiest_block_loads=60,
        blocks=1,
    )


@pytest.mark.parametrize(
    "lines",
    [
        (),
        (RECORD.format(token="forged"),),
        (RECORD.format(token="abc"), RECORD.format(token="abc")),
        (RECORD.format(token="abc").replace("global_loads=2,8,256,64", "global_loads=2,8,256"),),
        (RECORD.format(token="abc").replace("2,8,256,64", "2,8,256,65"),),
    ],
    ids=["none", "without-the-token", "twice", "three-numbers", "more-lanes-than-a-warp-has"],
)
def test_no_profile_is_believed_but_the_one_record_with_the_token(lines):
    assert profiling.read(_report(*lines), "k", threads=64) is None


def test_a_kernel_launched_twice_adds_its_launches_up():
    first = KernelProfile(
        "k",
        global_loads=Traffic(1, 4, 128, 32),
        threads=32,
        busiest_thread_loads=1,
        busiest_block_loads=32,
    )
    second = KernelProfile(
        "k",
        global_loads=Traffic(2, 8, 256, 64),
        threads=64,
        busiest_thread_loads=4,
        busiest_block_loads=20,
    )
    other = KernelProfile("j", threads=1)
    merged = profiling.merged([first, other, second])
    assert [p.kernel for p in merged] == ["k", "j"]
    assert merged[0].global_loads == Traffic(3, 12, 384, 96)
    assert (merged[0].threads, merged[0].busiest_thread_loads) == (96, 4)
    assert merged[0].busiest_block_loads == 32  # the busiest block of any launch


# -- every lab's own kernels ------------------------------------------------------------


def lab_profile(backend, lab, kernel: str) -> Profile:
    """The profile of the lab's `kernel` (reference or baseline) at its smallest public
    case, the census case's rule, as a grading would make it."""
    cases = casegen.public_cases(lab)
    case = min(cases, key=lambda c: math.prod(lab.extent(lab.full_sizes(c.sizes))))
    path = lab.home / f"{kernel}.cu"
    submission = Submission(path, path.read_text())
    build = backend.build(submission, lab.macro_values(case.sizes), lab.launch_defaults, True)
    assert build.ok, build.diagnostics
    inputs = casegen.make_inputs(lab, case)
    launch, _ = make_launch(lab, case, inputs, build.interface)
    outcome, kernels = backend.profile(build, launch, 30.0)
    assert outcome.completed and not outcome.diagnostics, outcome.diagnostics
    return case_profile(lab, case, build.interface, kernels, Source.CPU_MODEL)


@pytest.mark.parametrize("kernel", ["reference", "baseline"])
@pytest.mark.parametrize("name", sorted(labs.all_labs()))
def test_every_labs_reference_and_baseline_are_profiled(kit, name, kernel):
    lab = labs.get(name)
    found = lab_profile(kit.backend, lab, kernel)
    assert [k.kernel for k in found.kernels] == [k.name for k in lab.kernels]
    loads = found.total("global_loads")
    assert loads.requests and found.global_bytes_per_output and found.busiest_thread_share
    assert 0 <= found.idle_lane_share < 1
