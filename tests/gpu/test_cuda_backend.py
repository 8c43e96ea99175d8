"""The cuda backend on a real GPU: hand-built launches, numpy expectations."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import census_kit
import gpu_kernels as k  # tests/gpu is on sys.path (pytest's rootdir-less import)
import numpy as np
import pytest
import state_kit

from grader.backends import gate, window
from grader.backends.base import BackendUnavailable
from grader.backends.cuda import sanitizer_available, vmm
from grader.backends.timing import summarise
from grader.course.gpus import Gate
from grader.model.launch import Buffer, Launch, Repeated, Scalar
from grader.model.result import Kind

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent


def build(backend, text, macros=None, block=(16, 16, 1)):
    built = backend.build(k.submission(text), macros or {}, block)
    assert built.ok, built.compile.log
    return built


def assert_product(outcome, launch):
    assert outcome.completed, [d.message for d in outcome.diagnostics]
    got = outcome.buffers["P"].data.astype(np.float64)
    np.testing.assert_allclose(got, k.expected_product(launch), rtol=1e-4, atol=1e-4)


def test_device_names_the_gpu(backend):
    text = backend.device()
    assert "sm_" in text and "CUDA" in text, text


@pytest.mark.parametrize("width", [64, 517])
@pytest.mark.parametrize("source", [k.NAIVE, k.TILED], ids=["naive", "tiled"])
def test_correct_matmul_passes_and_leaves_canaries(backend, source, width):
    launch = k.matmul_launch(width)
    outcome = backend.run(build(backend, source), launch, timeout=10)
    assert_product(outcome, launch)
    for state in outcome.buffers.values():
        assert (state.written_before, state.written_after) == (0, 0)
    assert outcome.diagnostics == []


def test_repeated_buffers_are_filled_on_the_device(backend):
    """What timing sends: patterns the device repeats, here of a length that does not
    divide the buffer, inside canaries that must stay whole."""
    launch = k.matmul_launch(517)
    patterns = [b.data[:1000] for b in launch.buffers()[:2]]
    for i, pattern in enumerate(patterns):
        launch.args[i] = Buffer(launch.args[i].name, Repeated(pattern, 517 * 517), False)
    outcome = backend.run(build(backend, k.TILED), launch, timeout=10)
    whole = k.matmul_launch(517, tuple(np.resize(p, 517 * 517) for p in patterns))
    assert_product(outcome, whole)
    assert all((s.written_before, s.written_after) == (0, 0) for s in outcome.buffers.values())


def test_missing_boundary_check_writes_past_p_into_the_canaries(backend):
    launch = k.matmul_launch(517)
    outcome = backend.run(build(backend, k.NO_BOUNDARY_CHECK), launch, timeout=10)
    assert outcome.completed, [d.message for d in outcome.diagnostics]
    state = outcome.buffers["P"]
    assert state.written_after > 0
    assert state.first_after == 0  # row 517, column 0: the element right after P
    assert state.written_before == 0


def test_a_mapping_kept_from_an_earlier_case_still_guards_and_holds_nothing_of_it(monkeypatch):
    """A worker told to keep freed mappings (vmm.POOL) gives them to the next buffer of
    their size: after a correct product at width 517, the same width's write past P is
    still caught, at the element right after it, and the canaries before each buffer
    are whole."""
    from grader.backends.cuda import CudaBackend

    monkeypatch.setenv(vmm.POOL, "512")  # the worker started below inherits it
    launch = k.matmul_launch(517)
    with CudaBackend() as cuda:
        assert_product(cuda.run(build(cuda, k.TILED), launch, timeout=10), launch)
        outcome = cuda.run(build(cuda, k.NO_BOUNDARY_CHECK), launch, timeout=10)
    assert outcome.completed, [d.message for d in outcome.diagnostics]
    assert outcome.buffers["P"].written_after > 0 and outcome.buffers["P"].first_after == 0
    assert all(state.written_before == 0 for state in outcome.buffers.values())


def test_infinite_loop_times_out_and_the_next_run_works(backend):
    started = time.monotonic()
    outcome = backend.run(build(backend, k.INFINITE_LOOP), k.matmul_launch(64), timeout=3)
    assert outcome.timed_out and not outcome.crashed
    assert time.monotonic() - started < 20
    [diag] = outcome.diagnostics
    assert diag.kind == Kind.TIMEOUT and "did not finish within 3 s" in diag.message
    launch = k.matmul_launch(64)
    assert_product(backend.run(build(backend, k.NAIVE), launch, timeout=10), launch)


def test_illegal_address_crashes_and_the_next_run_works(backend):
    """An address far from every buffer: where compute-sanitizer is installed the grader
    runs the case under memcheck at once, which names the address, the thread and the
    line (issue 20); without it, the crash says to run with --sanitize."""
    outcome = backend.run(build(backend, k.ILLEGAL_ADDRESS), k.matmul_launch(64), timeout=10)
    assert outcome.crashed and outcome.buffers == {}
    [diag] = outcome.diagnostics
    if sanitizer_available():
        assert diag.kind == Kind.OUT_OF_BOUNDS, diag.message
        assert "outside every buffer the grader passed" in diag.message
        assert diag.line == k.line_of(k.ILLEGAL_ADDRESS, "wild") and diag.thread is not None
    else:
        assert diag.kind == Kind.CRASH
        assert "illegal memory access" in diag.message and "--sanitize" in diag.message
    launch = k.matmul_launch(100)
    assert_product(backend.run(build(backend, k.NAIVE), launch, timeout=10), launch)


def test_a_fault_in_shared_memory_is_named_by_memcheck_at_once(backend):
    """A read far past a static __shared__ array stops the kernel with no buffer to blame:
    the grader runs it under memcheck once, which names __shared__ memory, the thread and
    the line (issue 20 item 6)."""
    if not sanitizer_available():
        pytest.skip("compute-sanitizer is not installed")
    outcome = backend.run(build(backend, k.SHARED_FAR_READ), k.matmul_launch(64), timeout=10)
    assert outcome.crashed, [d.message for d in outcome.diagnostics]
    [diag] = [d for d in outcome.diagnostics if d.kind == Kind.OUT_OF_BOUNDS]
    assert "outside the __shared__ memory of its block" in diag.message
    assert diag.line == k.line_of(k.SHARED_FAR_READ, "far-read") and diag.thread is not None


def test_block_too_large_is_a_resources_error_and_the_worker_survives(backend):
    built = build(backend, k.NAIVE)
    launch = k.matmul_launch(64, block=64)  # 4096 threads per block
    outcome = backend.run(built, launch, timeout=10)
    assert outcome.crashed
    [diag] = outcome.diagnostics
    assert diag.kind == Kind.RESOURCES, diag.message
    worker = backend._worker
    launch = k.matmul_launch(64)
    assert_product(backend.run(built, launch, timeout=10), launch)
    assert backend._worker is worker  # a refused launch does not cost the worker


def test_wrong_signature_still_builds(backend):
    built = build(backend, k.WRONG_SIGNATURE)
    assert len(built.interface.kernels["matmul"].params) == 3


def test_a_module_over_the_cap_is_a_compile_error_as_on_the_cpu(backend):
    built = backend.build(
        k.submission("__device__ char big[20 << 20] = {1};\n" + k.NAIVE), {}, (16, 16, 1)
    )
    assert not built.ok and built.artifact is None  # PyCUDA never compiles it
    [error] = built.diagnostics
    assert error.kind == Kind.COMPILE_ERROR and error.message.startswith(
        "The compiled kernel is more than the 16 MiB a submission's module may be: big "
        "alone is 20 MiB."
    )


def test_static_constant_mask_is_set_by_name(backend):
    width, height, mask_width = 37, 23, 5
    built = build(backend, k.STATIC_CONSTANT_MASK, {"MASK_WIDTH": mask_width})
    assert built.interface.constants["Mc"].size == 4 * mask_width**2
    rng = np.random.default_rng(1)
    image = rng.uniform(-1, 1, width * height).astype(np.float32)
    mask = rng.uniform(-1, 1, mask_width**2).astype(np.float32)
    launch = Launch(
        "conv2d",
        (3, 2, 1),
        (16, 16, 1),
        0,
        [
            Buffer("N", image, False),
            Buffer("P", k.poisoned(width * height), True),
            Scalar("Width", "int", width),
            Scalar("Height", "int", height),
        ],
        {"Mc": mask},
    )
    outcome = backend.run(built, launch, timeout=10)
    assert outcome.completed, [d.message for d in outcome.diagnostics]
    r = mask_width // 2
    padded = np.pad(image.reshape(height, width).astype(np.float64), r)
    weights = mask.reshape(mask_width, mask_width).astype(np.float64)
    expected = np.zeros((height, width))
    for i in range(mask_width):
        for j in range(mask_width):
            expected += weights[i, j] * padded[i : i + height, j : j + width]
    got = outcome.buffers["P"].data.reshape(height, width)
    np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-5)


def test_a_kernel_reads_what_the_kernel_before_it_stored(backend):
    built = build(backend, state_kit.SOURCE, block=(1, 1, 1))
    assert {"handed", "calls"} <= set(built.interface.device_variables())
    outcome = backend.run(built, state_kit.launch("store", "fetch"), timeout=10)
    assert outcome.completed and outcome.diagnostics == [], outcome.diagnostics
    np.testing.assert_array_equal(outcome.buffers["out"].data, state_kit.HANDED)


@pytest.mark.parametrize("space", sorted(state_kit.SOURCES))
def test_every_run_counts_from_the_initialiser_as_on_the_cpu(backend, space):
    """Both runs of a case (`again`) and a later case start from the load-time count,
    as every launch does on the CPU (tests/cpu/test_device_variables.py)."""
    built = build(backend, state_kit.SOURCES[space], block=(1, 1, 1))
    for _ in range(2):
        outcome = backend.run(built, state_kit.launch("count", "count", "count"), timeout=10)
        assert outcome.completed and outcome.diagnostics == [], outcome.diagnostics
        np.testing.assert_array_equal(outcome.buffers["out"].data, state_kit.COUNTED)
        np.testing.assert_array_equal(outcome.again["out"], state_kit.COUNTED)


def test_printf_is_captured(backend):
    outcome = backend.run(build(backend, k.PRINTF), k.matmul_launch(32), timeout=10)
    assert outcome.completed
    for block in ("(0,0)", "(1,0)", "(0,1)", "(1,1)"):
        assert f"hello from block {block}" in outcome.output
    assert not any(d.kind == Kind.OUTPUT for d in outcome.diagnostics)


def test_printf_flood_is_capped_with_a_diagnostic(backend):
    launch = k.matmul_launch(64)
    launch.grid, launch.block = (40, 1, 1), (256, 1, 1)
    outcome = backend.run(build(backend, k.PRINTF_FLOOD), launch, timeout=10)
    assert outcome.completed
    assert 0 < len(outcome.output.encode()) <= 16 * 1024
    assert [d.kind for d in outcome.diagnostics] == [Kind.OUTPUT]


def test_time_against_itself_gives_speedup_one(backend):
    built = build(backend, k.TILED)
    inputs = k.matrices(1024)
    pair = (k.matmul_launch(1024, inputs), k.matmul_launch(1024, inputs))
    started = time.monotonic()
    timing = backend.time(built, built, pair, budget=8.0)
    assert time.monotonic() - started < 8.0 + 5.0
    assert len(timing.student_ms) >= 5, timing.note
    summary = summarise(timing.student_ms, timing.reference_ms)
    print(f"self speedup {summary.speedup:.4f}, spread {summary.spread:.4f}: {timing.note}")
    assert 0.98 <= summary.speedup <= 1.02, timing.note
    assert "persisting L2 lines reset before every launch" in timing.note


@contextlib.contextmanager
def gate_held_elsewhere(folder, seconds: float):
    """A batch's GPU gate in `folder`, held by another thread for `seconds` from entry."""
    held, release = threading.Event(), threading.Event()

    def elsewhere() -> None:
        with Gate(folder, "gpu-0").alone():
            held.set()
            release.wait(timeout=10)

    other = threading.Thread(target=elsewhere)
    other.start()
    held.wait()
    threading.Timer(seconds, release.set).start()
    try:
        yield
    finally:
        other.join()


def test_a_timing_holds_a_batchs_gate_for_its_runs_alone_and_says_where_its_window_went(
    tmp_path,
):
    """The worker takes the batch's gate itself for the timed runs (grader.backends.window):
    it places the buffers while another process holds the gate, waits, and the phases
    inside the window add up to no more than it held. Its second timing reuses the
    worker's flush and hold (timing.Rig) and still finds the kernel as fast as itself."""
    from grader.backends.cuda import CudaBackend

    with CudaBackend() as cuda:
        built = build(cuda, k.TILED)
        inputs = k.matrices(1024)
        pair = (k.matmul_launch(1024, inputs), k.matmul_launch(1024, inputs))
        assert cuda.time(built, built, pair, budget=8.0).student_ms  # the rig is made
        cuda.launch_gate = gate.paths(tmp_path, "gpu-0")
        with gate_held_elsewhere(tmp_path, 0.5):
            timing = cuda.time(built, built, pair, budget=8.0)
    spent = timing.window
    print(f"window: {', '.join(f'{name} {1000 * s:.1f} ms' for name, s in spent.items())}")
    assert spent[window.GATE] >= 0.3 and spent[window.PLACE] > 0 and spent[window.FREE] > 0
    assert spent[window.WAITS] > 0 and window.other(spent) >= 0
    assert sum(spent[name] for name in window.INSIDE) <= spent[window.HELD]
    summary = summarise(timing.student_ms, timing.reference_ms)
    assert 0.98 <= summary.speedup <= 1.02, timing.note


def test_a_wait_at_a_batchs_gate_is_not_the_runs_time(tmp_path):
    """Another process holds the gate longer than this case's whole deadline (its kernel
    hung until its own deadline): the worker says when it took the gate, and only from
    there does the case's deadline count, so the case is not called hung. Its two runs
    say where their windows went: the wait, then phases within what they held."""
    from grader.backends.cuda import CudaBackend

    with CudaBackend() as cuda:
        built = build(cuda, k.TILED)
        launch = k.matmul_launch(64)
        assert_product(cuda.run(built, launch, timeout=10), launch)  # loaded, warm
        cuda.launch_gate = gate.paths(tmp_path, "gpu-0")
        with gate_held_elsewhere(tmp_path, 2.0):
            started = time.monotonic()
            outcome = cuda.run(built, launch, timeout=1.0)
            waited = time.monotonic() - started
    assert waited >= 1.5 and not outcome.timed_out, outcome.diagnostics
    assert_product(outcome, launch)
    spent = outcome.window
    print(f"window: {', '.join(f'{name} {1000 * s:.1f} ms' for name, s in spent.items())}")
    assert spent[window.CASE_GATE] >= 1.5 and spent[window.CASE_KERNELS] > 0
    assert spent[window.CASE_PLACE] > 0 and spent[window.CASE_READ] > 0
    inside = sum(spent[name] for name in window.CASE_INSIDE)
    assert 0 < inside <= spent[window.CASE_HELD] < 1.0


def test_a_cases_kernel_reads_the_fill_while_another_worker_runs_tiled_cases(tmp_path, gpu_alone):
    """Another GPU worker's cases, whose tiled kernels write shared memory, hold the
    batch's gate alone for all of their GPU work, as this one's do
    (grader.backends.gate): nothing of theirs runs between this case's fill and its
    kernel, which adds a shared array no thread wrote, so every product is the fill's NaN."""
    from grader.backends.cuda import CudaBackend

    paths = gate.paths(tmp_path, "gpu-0")
    stop, beside = threading.Event(), []

    def other_worker() -> None:
        with CudaBackend() as other:
            tiled, launch = build(other, k.TILED), k.matmul_launch(2048)
            other.launch_gate = paths
            while not stop.is_set():
                beside.append(other.run(tiled, launch, timeout=10).completed)

    thread = threading.Thread(target=other_worker)
    thread.start()
    try:
        with CudaBackend() as cuda:
            unwritten, launch = build(cuda, k.UNWRITTEN_SHARED), k.matmul_launch(256)
            cuda.launch_gate = paths
            while len(beside) < 2:
                time.sleep(0.05)
            outcomes = [cuda.run(unwritten, launch, timeout=10) for _ in range(30)]
    finally:
        stop.set()
        thread.join(timeout=60)
    assert len(beside) >= 5 and all(beside)
    for outcome in outcomes:
        assert outcome.completed, [d.message for d in outcome.diagnostics]
        assert np.isnan(outcome.buffers["P"].data).all()


def test_time_keeps_to_the_budget_for_a_very_slow_student(backend, gpu_alone):
    """Alone on the GPU: a kernel shared with other tests' runs for longer than its budget."""
    slow, fast = build(backend, k.SLOW), build(backend, k.NAIVE)
    inputs = k.matrices(256)
    pair = (k.matmul_launch(256, inputs), k.matmul_launch(256, inputs))
    for built, launch in ((slow, pair[0]), (fast, pair[1])):  # compile outside the budget
        assert backend.run(built, launch, timeout=10).completed
    started = time.monotonic()
    timing = backend.time(slow, fast, pair, budget=1.5)
    elapsed = time.monotonic() - started
    print(f"slow student: {len(timing.student_ms)} rounds in {elapsed:.2f} s: {timing.note}")
    assert elapsed < 1.5 + 1.5
    assert timing.student_ms and summarise(timing.student_ms, timing.reference_ms).speedup < 0.1


def test_time_of_a_crashing_kernel_returns_an_empty_timing(backend):
    bad, good = build(backend, k.ILLEGAL_ADDRESS), build(backend, k.NAIVE)
    inputs = k.matrices(128)
    pair = (k.matmul_launch(128, inputs), k.matmul_launch(128, inputs))
    timing = backend.time(bad, good, pair, budget=3.0)
    assert timing.student_ms == [] and "illegal memory access" in timing.note


def test_a_timing_whose_launch_is_refused_leaves_the_worker_sound(backend):
    """The refused launch comes after the hold kernel was queued: the timing must not
    free the hold's flag while it may still run, or the context faults at the next run."""
    built = build(backend, k.NAIVE)
    inputs = k.matrices(64)
    refused = k.matmul_launch(64, inputs, block=64)  # 4096 threads per block
    timing = backend.time(built, built, (refused, k.matmul_launch(64, inputs)), budget=1.0)
    assert timing.student_ms == []
    worker = backend._worker
    launch = k.matmul_launch(64)
    for _ in range(3):
        assert_product(backend.run(built, launch, timeout=10), launch)
    assert backend._worker is worker


@pytest.mark.parametrize("busy", [False, True], ids=["idle", "in-a-hung-kernel"])
def test_worker_does_not_outlive_a_killed_grader(busy):
    script = textwrap.dedent(
        f"""
        import sys, time
        sys.path[:0] = [{str(ROOT)!r}, {str(HERE.parent)!r}, {str(HERE)!r}]
        from grader.backends.cuda import CudaBackend
        import gpu_kernels as k
        backend = CudaBackend()
        built = backend.build(k.submission(k.NAIVE), {{}}, (16, 16, 1))
        hung = backend.build(k.submission(k.INFINITE_LOOP), {{}}, (16, 16, 1))
        assert backend.run(built, k.matmul_launch(32), 10).completed
        print(backend._worker.process.pid, flush=True)
        if {busy}:
            backend.run(hung, k.matmul_launch(32), 600)
        time.sleep(600)
        """
    )
    grader = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    worker_pid = int(grader.stdout.readline())
    time.sleep(2.0)  # let the hung kernel start
    os.kill(grader.pid, signal.SIGKILL)
    grader.wait()
    for _ in range(100):
        if not _alive(worker_pid):
            break
        time.sleep(0.1)
    assert not _alive(worker_pid)


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().split(")")[-1].split()[0] != "Z"
    except FileNotFoundError:
        return False


# -- compute-sanitizer ----------------------------------------------------------------------


def sanitize(backend, text, launches, timeout=30):
    if not sanitizer_available():
        pytest.skip("compute-sanitizer is not installed")
    built = build(backend, text)
    started = time.monotonic()
    try:
        found = backend.sanitize(built, launches, timeout)
    except BackendUnavailable as err:
        pytest.skip(str(err))
    print(f"sanitize took {time.monotonic() - started:.1f} s")
    assert len(found) == len(launches)
    return [d for per_launch in found for d in per_launch]


def test_sanitize_finds_an_out_of_bounds_read(backend):
    found = sanitize(backend, k.OUT_OF_BOUNDS_READ, [k.matmul_launch(64)])
    line = k.line_of(k.OUT_OF_BOUNDS_READ, "oob-read")
    print("\n".join(d.message for d in found))
    reads = [d for d in found if d.kind == Kind.OUT_OF_BOUNDS]
    assert reads, found
    for diag in reads:
        assert diag.line == line and diag.thread is not None and diag.block is not None
        assert "read" in diag.message and "kernel_under_test.cu" in diag.message
    assert any("past the end of N" in d.message for d in reads)


def test_sanitize_finds_the_race_of_a_missing_syncthreads(backend):
    found = sanitize(backend, k.MISSING_SYNC, [k.matmul_launch(64)])
    print("\n".join(d.message for d in found))
    races = [d for d in found if d.kind == Kind.RACE]
    assert races, found
    loads = {k.line_of(k.MISSING_SYNC, "load-m"), k.line_of(k.MISSING_SYNC, "load-n")}
    use = k.line_of(k.MISSING_SYNC, "use")
    assert any(
        f"line {use} " in d.message and any(f"line {n} " in d.message for n in loads) for d in races
    )
    assert not any(d.kind == Kind.OUT_OF_BOUNDS for d in found)


def test_sanitize_finds_nothing_in_a_correct_tiled_kernel(backend):
    assert sanitize(backend, k.TILED, [k.matmul_launch(100)]) == []


def test_sanitize_finds_a_write_past_the_end_of_p(backend):
    found = sanitize(backend, k.UNGUARDED_WRITE, [k.matmul_launch(100)])
    print("\n".join(d.message for d in found))
    writes = [d for d in found if d.kind == Kind.OUT_OF_BOUNDS]
    assert writes, found
    assert all(d.line == k.line_of(k.UNGUARDED_WRITE, "oob-write") for d in writes)
    assert any(
        "wrote 4 bytes at P[" in d.message and "past the end of P" in d.message for d in writes
    )


def test_sanitize_findings_belong_to_the_launch_that_made_them(backend):
    """Width 64 is a multiple of the block: only the launch at 100 writes past P."""
    if not sanitizer_available():
        pytest.skip("compute-sanitizer is not installed")
    built = build(backend, k.UNGUARDED_WRITE)
    at_64, at_100 = backend.sanitize(built, [k.matmul_launch(64), k.matmul_launch(100)], 30)
    assert at_64 == []
    assert at_100 and all(d.kind == Kind.OUT_OF_BOUNDS for d in at_100)


def test_sanitize_finds_a_divergent_barrier(backend):
    launch = k.matmul_launch(64)
    launch.grid, launch.block = (1, 1, 1), (64, 1, 1)
    found = sanitize(backend, k.DIVERGENT_BARRIER, [launch])
    print("\n".join(d.message for d in found))
    barriers = [d for d in found if d.kind == Kind.BARRIER_DIVERGENCE]
    assert barriers, found
    lines = {k.line_of(k.DIVERGENT_BARRIER, m) for m in ("divergent-even", "divergent-odd")}
    assert barriers[0].line in lines and barriers[0].thread is not None


def test_the_census_counts_the_shared_loads_and_atomics_that_ran(backend):
    """As the CPU backend counts them (tests/cpu/test_rules.py): a load in a branch never
    taken counts nothing; every atomic that ran counts."""
    launch = k.matmul_launch(64)
    tiled = backend.build(k.submission(census_kit.TILED), {}, (16, 16, 1), census=True)
    outcome = backend.run(tiled, launch, timeout=10)
    assert_product(outcome, launch)
    assert outcome.executed["matmul"].shared_loads > 0
    assert outcome.executed["matmul"].atomics == 0
    dead = backend.build(k.submission(census_kit.DEAD_SHARED_READ), {}, (16, 16, 1), census=True)
    assert dead.interface.kernels["matmul"].reads_shared  # the module holds the load
    outcome = backend.run(dead, launch, timeout=10)
    assert_product(outcome, launch)
    assert outcome.executed["matmul"].shared_loads == 0
    assert outcome.executed["matmul"].atomics == 64 * 64
    plain = backend.run(build(backend, k.TILED), launch, timeout=10)
    assert plain.executed == {}  # counted only in a census build


def test_the_backend_takes_the_worker_started_early_and_runs_on_it():
    """`grader check` starts the GPU worker before its own imports (client.start_early):
    the backend made later runs on that very process."""
    from grader.backends.cuda import CudaBackend, client

    client.start_early()
    early = client._early[0].process.pid
    with CudaBackend() as cuda:
        assert cuda._worker.process.pid == early and not client._early
        built = build(cuda, k.TILED)
        launch = k.matmul_launch(64)
        assert_product(cuda.run(built, launch, timeout=10), launch)
