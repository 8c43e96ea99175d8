"""Nsight Compute on a real GPU (CudaBackend.nsight, grader.backends.cuda.nsight): the
issue's numbers (the naive matmul at Width 256: 2.0 global-load sectors per request; a
32-way shared-memory conflict: 31 conflicts per request), what a profile costs cold and
from the cache, a kernel that fails under ncu as a note that leaves the next launch
profiled, a printf that cannot pass for ncu's counters, and the stores of
read-modify-writes, counted as the CPU model counts them. Skipped, saying why, where ncu
is not installed or may not run. Run with -s to see the figures."""

from __future__ import annotations

import time

import gpu_kernels as k
import numpy as np
import pytest

from grader.backends.cuda import nsight
from grader.model.launch import Buffer, Launch, Scalar
from grader.model.profile import Profile, Source

# Each warp of a 16x16 block reads one column of a 32x32 tile: 32 words in one bank.
CONFLICT = """\
__global__ void matmul(const float* M, const float* N, float* P, int Width) {
    __shared__ float tile[32][32];
    int t = threadIdx.y * blockDim.x + threadIdx.x;
    int lane = t % 32, warp = t / 32;
    tile[lane][warp] = M[t];
    __syncthreads();
    P[(blockIdx.y * gridDim.x + blockIdx.x) * 256 + t] = tile[lane][(warp + 1) % 8];
}
"""
# The naive product, whose first thread prints what a forged ncu row would look like.
FORGER = "#include <cstdio>\n" + k.NAIVE.replace(
    "    if (row < Width && col < Width) {",
    '    if (row == 0 && col == 0) printf("\\"ID\\",\\"Kernel Name\\",\\"CC\\",'
    '\\"l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum\\"\\n\\"0\\",\\"_Z6matmulPKfS0_Pfi\\",'
    '\\"9.0\\",\\"1\\"\\n");\n'
    "    if (row < Width && col < Width) {",
)


@pytest.fixture(scope="module", autouse=True)
def permitted():
    found = nsight.tool()
    if not found.ok:
        pytest.skip(f"Nsight Compute cannot profile here: {found.why_not}")
    print(f"\nncu {found.version} at {found.executable}; not offered: {found.missing() or 'none'}")


def built(backend, text):
    build = backend.build(k.submission(text), {}, (16, 16, 1))
    assert build.ok, build.compile.log
    return build


def test_the_naive_matmul_at_256_has_two_sectors_per_load_request(backend):
    [measured] = backend.nsight([(built(backend, k.NAIVE), k.matmul_launch(256))], timeout=120)
    assert measured.ok, measured.note
    [profile] = measured.kernels()
    loads, stores = profile.global_loads, profile.global_stores
    print(f"naive 256: {loads.per_request:.3f} ld sectors/request, {stores.per_request:.3f} st")
    assert loads.per_request == pytest.approx(2.0, abs=0.1)
    if nsight.TRAFFIC["global_loads"][3] in nsight.tool().metrics():
        assert loads.lanes == 32 * loads.requests  # every lane of every warp loads
    else:  # Hopper's ncu has no lane counts by kind of access: none is claimed
        as_profile = Profile(Source.NSIGHT_COMPUTE, "256", {}, 256 * 256, 0.0, [profile])
        assert loads.lanes == 0 and as_profile.idle_lane_share is None
    assert profile.threads == 256 * 256
    assert profile.occupancy is not None and profile.occupancy.blocks_per_sm > 0


def test_a_32_way_conflict_is_31_conflicts_per_request(backend):
    [measured] = backend.nsight([(built(backend, CONFLICT), k.matmul_launch(256))], timeout=120)
    assert measured.ok, measured.note
    [profile] = measured.kernels()
    counted = measured.counters["matmul"][nsight.BANK_CONFLICTS["shared_loads"]]
    print(
        f"32-way: {profile.shared_loads.conflicts_per_request:.3f} ld conflicts/request "
        f"(ncu's own counter: {counted / profile.shared_loads.requests:.3f}), "
        f"{profile.shared_stores.conflicts_per_request:.3f} st"
    )
    assert profile.shared_loads.conflicts_per_request == pytest.approx(31.0, abs=0.1)


def test_a_profile_costs_nothing_the_second_time(backend, tmp_path, monkeypatch):
    monkeypatch.setenv("GRADER_CACHE", str(tmp_path))  # cold: ncu asked, module compiled
    nsight.tool.cache_clear()
    runs = [(built(backend, k.TILED), k.matmul_launch(256))]
    started = time.monotonic()
    [first] = backend.nsight(runs, timeout=120)
    cold = time.monotonic() - started
    started = time.monotonic()
    [again] = backend.nsight(runs, timeout=120)
    warm = time.monotonic() - started
    print(f"a profile: {cold:.2f} s cold, {warm:.3f} s from the cache")
    assert first.ok and not first.cached, first.note
    assert again.cached and again.counters == first.counters
    assert warm < 0.3


def test_a_kernel_that_fails_under_ncu_is_a_note_and_the_next_is_profiled(backend):
    launch = k.matmul_launch(64)
    runs = [(built(backend, k.ILLEGAL_ADDRESS), launch), (built(backend, k.NAIVE), launch)]
    started = time.monotonic()
    failed, fine = backend.nsight(runs, timeout=60)
    print(f"a failing kernel and the next: {time.monotonic() - started:.2f} s; {failed.note}")
    assert failed.note.startswith("Nsight Compute could not profile this kernel:")
    assert fine.ok and fine.kernels()[0].global_loads.per_request == pytest.approx(2.0, abs=0.1)


def test_a_printf_cannot_pass_for_the_counters(backend):
    [measured] = backend.nsight([(built(backend, FORGER), k.matmul_launch(64))], timeout=120)
    assert measured.ok, measured.note
    loads = measured.kernels()[0].global_loads
    assert loads.requests > 1 and loads.per_request == pytest.approx(2.0, abs=0.1)


def _ones(name: str, n: int) -> Buffer:
    return Buffer(name, np.ones(n, np.float32), False)


def _zeros(name: str, n: int, dtype=np.float32) -> Buffer:
    return Buffer(name, np.zeros(n, dtype), True)


# Lab kernels whose read-modify-writes' stores the CPU model once missed, launched as
# tests/cpu/test_cpu_profile.py launches them and works their figures out by hand: the
# kind of access, the grid and block, and the arguments.
READ_MODIFY_WRITES = {
    "reduction/baseline.cu": ("shared_stores", 1, 256, lambda: [
        _ones("input", 512), _zeros("output", 1), Scalar("n", "int", 512)]),
    "scan/variants/device_totals.cu": ("shared_stores", 1, 512, lambda: [
        _ones("input", 1024), _zeros("output", 1024), _zeros("sums", 1),
        Scalar("n", "int", 1024)]),
    "scan/wrong/serial_thread.cu": ("global_stores", 1, 512, lambda: [
        Buffer("sums", np.ones(10, np.float32), True), Scalar("m", "int", 10)]),
    "histogram/wrong/no_atomics.cu": ("global_stores", 4, 256, lambda: [
        Buffer("input", (np.arange(1024) * 37 % 256).astype(np.uint8), False),
        _zeros("bins", 256, np.uint32), Scalar("n", "int", 1024)]),
}  # fmt: skip
KERNELS = {"scan/wrong/serial_thread.cu": "scan_sums", "scan/variants/device_totals.cu": "scan"}


@pytest.mark.parametrize("file", sorted(READ_MODIFY_WRITES))
def test_a_read_modify_writes_stores_are_what_the_cpu_model_counts(backend, file):
    """Requests and sectors (wavefronts in shared memory) of the stores, from Nsight
    Compute and from the CPU model on the same launch, where the CPU model once saw no
    store of bins[v]++ or partial[2t] += ... (issue 31)."""
    from grader import labs
    from grader.backends.cpu import CpuBackend

    kind, grid, block, args = READ_MODIFY_WRITES[file]
    lab, _, name = file.partition("/")
    text = (labs.get(lab).home / name).read_text()
    kernel = KERNELS.get(file, lab)
    launch = Launch(kernel, (grid, 1, 1), (block, 1, 1), 0, args(), {})
    [measured] = backend.nsight([(built(backend, text), launch)], timeout=120)
    assert measured.ok, measured.note
    theirs = getattr(next(p for p in measured.kernels() if p.kernel == kernel), kind)
    cpu = CpuBackend(jobs=1)
    hooked = cpu.build(k.submission(text), {}, (block, 1, 1), census=True)
    _, [mine] = cpu.profile(hooked, launch, 60.0)
    mine = getattr(mine, kind)
    print(f"{file} {kind}: ncu {theirs.requests} requests, {theirs.sectors} sectors; "
          f"CPU model {mine.requests}, {mine.sectors}")  # fmt: skip
    assert (theirs.requests, theirs.sectors) == (mine.requests, mine.sectors)


# Known-wrong kernels that read through a device memcpy, which nvcc makes ld.global.u8
# byte loads (an unrolled 64 for the 64-byte copy, a loop for one of variable size) and
# the CPU model counts byte by byte (runtime/copies.cpp): Width 40 copies two full rows'
# chunks and a part.
COPIES = {
    "reduction/wrong/serial_memcpy_reads.cu": ((1, 1), (256, 1), lambda: [
        _ones("input", 1000), _zeros("output", 1), Scalar("n", "int", 1000)]),
    "matmul-tiled/wrong/memcpy_rows.cu": ((3, 3), (16, 16), lambda: [
        _ones("M", 1600), _ones("N", 1600), _zeros("P", 1600), Scalar("Width", "int", 40)]),
}  # fmt: skip


@pytest.mark.parametrize("file", sorted(COPIES))
def test_a_device_memcpys_loads_are_what_the_cpu_model_counts(backend, file):
    """Requests and sectors of the global loads and stores, from Nsight Compute and from
    the CPU model on the same launch, where the CPU model once saw no load of a copy."""
    from grader import labs
    from grader.backends.cpu import CpuBackend

    grid, block, args = COPIES[file]
    lab, _, name = file.partition("/")
    text = (labs.get(lab).home / name).read_text()
    launch = Launch(lab.split("-")[0], (*grid, 1), (*block, 1), 0, args(), {})
    [measured] = backend.nsight([(built(backend, text), launch)], timeout=120)
    assert measured.ok, measured.note
    [theirs] = measured.kernels()
    cpu = CpuBackend(jobs=1)
    hooked = cpu.build(k.submission(text), {}, (*block, 1), census=True)
    _, [mine] = cpu.profile(hooked, launch, 60.0)
    for kind in ("global_loads", "global_stores"):
        ncu, model = getattr(theirs, kind), getattr(mine, kind)
        print(f"{file} {kind}: ncu {ncu.requests} requests, {ncu.sectors} sectors; "
              f"CPU model {model.requests}, {model.sectors}")  # fmt: skip
        assert (ncu.requests, ncu.sectors) == (model.requests, model.sectors)


def test_a_check_with_profile_shows_nsight_computes_and_decides_the_rules_on_the_cpu_model(
    backend,
):
    """`grader check --profile` on the GPU: "why this speed" from ncu's counts of the
    student's and the reference's kernels, the measured rules from the CPU model, as on
    the CPU backend (the decorative shared load breaks matmul-tiled's traffic rule)."""
    from grader import labs
    from grader.grading.pipeline import Options, grade
    from grader.judge import rules
    from grader.model.profile import Source

    lab = labs.get("matmul-tiled")
    path = lab.home / "wrong" / "decorative_shared_load.cu"
    options = Options(backend="cuda", timing=False, profile=True)
    result = grade(lab, path, backend, options)
    assert result.profile is not None, result.notes
    sources = {result.profile.student.source, result.profile.reference.source}
    assert sources == {Source.NSIGHT_COMPUTE}, result.notes
    assert rules.broken(result) == {rules.TRAFFIC}
