"""The GPU's profiler without a GPU (grader.backends.cuda.profiler): what decides a cached
count, a cached count costing no ncu run, the rows of a session's log told apart by job,
and a profile built from what ncu counted."""

from __future__ import annotations

import numpy as np

from grader.backends.cuda import nsight, profiler
from grader.model.launch import Buffer, Launch, Scalar
from grader.model.profile import Profile, Source

MATMUL = "_Z6matmulPKfS0_Pfi"
SCAN = ("_Z4scanPKfPfS1_i", "_Z9scan_sumsPfi", "_Z8add_sumsPfPKfi")
TOOL = nsight.Tool("/opt/ncu", "2025.3.1.0")


class Spec:
    def __init__(self, key: str = "module") -> None:
        self.key = key

    def load_request(self) -> tuple[dict, list]:
        return {"op": "load", "key": self.key}, []


def matmul(width: int = 2, first: float = 0.0) -> Launch:
    data = np.arange(width * width, dtype=np.float32) + first
    args = [Buffer("M", data, False), Buffer("P", np.zeros_like(data), True),
            Scalar("Width", "int", width)]  # fmt: skip
    return Launch("matmul", (1, 1, 1), (width, width, 1), 0, args, {})


def scan() -> Launch:
    data = Buffer("input", np.ones(8, np.float32), False)
    steps = [
        Launch(kernel, (1, 1, 1), (8, 1, 1), 0, [data, Scalar("n", "int", 8)], {})
        for kernel in ("scan", "scan_sums", "add_sums")
    ]
    first, *then = steps
    first.then = then
    return first


def test_the_cache_key_is_decided_by_module_launch_inputs_device_and_ncu():
    job = profiler.Job(Spec(), matmul(), (MATMUL,))
    key = profiler.key(job, "NVIDIA H200", TOOL)
    assert key == profiler.key(profiler.Job(Spec(), matmul(), (MATMUL,)), "NVIDIA H200", TOOL)
    others = [
        profiler.key(profiler.Job(Spec("other"), matmul(), (MATMUL,)), "NVIDIA H200", TOOL),
        profiler.key(profiler.Job(Spec(), matmul(4), (MATMUL,)), "NVIDIA H200", TOOL),
        profiler.key(profiler.Job(Spec(), matmul(first=1.0), (MATMUL,)), "NVIDIA H200", TOOL),
        profiler.key(job, "NVIDIA H100", TOOL),
        profiler.key(job, "NVIDIA H200", nsight.Tool("/opt/ncu", "2025.4.0.0")),
    ]
    assert key not in others and len(set(others)) == len(others)


def test_a_count_made_before_costs_no_ncu_run(tmp_path, monkeypatch):
    monkeypatch.setenv("GRADER_CACHE", str(tmp_path))
    monkeypatch.setattr(nsight, "tool", lambda: TOOL)
    sessions = []
    monkeypatch.setattr(profiler, "_session", lambda *a: sessions.append(a) or [])
    job = profiler.Job(Spec(), matmul(), (MATMUL,))
    counted = profiler.Measured({"matmul": {"launch__thread_count": 4.0}}, "sm_90")
    profiler._store(profiler.key(job, "NVIDIA H200", TOOL), counted)
    prepared = []
    [measured] = profiler.measure([job], "NVIDIA H200", timeout=10, prepare=prepared.append)
    assert measured.cached and measured.counters == counted.counters and measured.arch == "sm_90"
    assert sessions == [] and prepared == []  # nothing compiled for it either


def test_a_count_that_cannot_be_made_says_why_for_every_launch(monkeypatch):
    absent = nsight.Tool(None, why_not="Nsight Compute (ncu) is not installed")
    monkeypatch.setattr(nsight, "tool", lambda: absent)
    jobs = [profiler.Job(Spec(), matmul(), (MATMUL,))] * 2
    notes = [m.note for m in profiler.measure(jobs, "NVIDIA H200", timeout=10)]
    why = "Nsight Compute could not profile this kernel: Nsight Compute (ncu) is not installed."
    assert notes == [why, why]


def row(launch: int, kernel: str, **values: float) -> nsight.Row:
    return nsight.Row(launch, kernel, "sm_90", values)


def test_a_sessions_rows_are_its_jobs_launches_in_order():
    jobs = [profiler.Job(Spec(), matmul(), (MATMUL,)), profiler.Job(Spec("s"), scan(), SCAN)]
    rows = [row(0, MATMUL, launch__thread_count=4)] + [
        row(i + 1, symbol, launch__thread_count=8) for i, symbol in enumerate(SCAN)
    ]
    first, second = profiler.attributed(jobs, rows, "")
    assert first.counters == {"matmul": {"launch__thread_count": 4.0}}
    assert list(second.counters) == ["scan", "scan_sums", "add_sums"]
    assert first.ok and second.ok


def test_a_job_whose_launches_have_no_rows_and_the_jobs_after_it_say_so():
    jobs = [profiler.Job(Spec(), matmul(), (MATMUL,)), profiler.Job(Spec("s"), scan(), SCAN),
            profiler.Job(Spec(), matmul(), (MATMUL,))]  # fmt: skip
    rows = [row(0, MATMUL), row(1, SCAN[0]), row(2, MATMUL)]  # scan's last two were lost
    found = profiler.attributed(jobs, rows, "Failed to profile kernel")
    assert found[0].ok
    assert [m.note for m in found[1:]] == [
        "Nsight Compute could not profile this kernel: Failed to profile kernel."
    ] * 2


def test_what_ncu_counted_says_what_a_profile_from_it_cannot(monkeypatch):
    offered = frozenset(nsight.base(m) for m in nsight.METRICS) - {"dram__bytes_write"}
    monkeypatch.setattr(nsight, "tool", lambda: nsight.Tool("/opt/ncu", "1", offered=offered))
    counters = {
        "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum": 10.0,
        "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum": 20.0,
        "dram__bytes_read.sum": 100.0,
    }
    measured = profiler.Measured({"matmul": counters, "other": {}}, "sm_90")
    assert measured.kernels()[0].global_loads.per_request == 2.0
    assert measured.dram_bytes() == 100.0
    assert "busiest thread" in measured.remarks()
    assert measured.remarks().endswith("not asked for dram__bytes_write.sum.")
    assert profiler.Measured(note="why").remarks() == "why"
    assert profiler.Measured({"matmul": {}}).dram_bytes() is None


def test_where_ncu_offers_no_lane_counts_no_idle_lanes_are_claimed(monkeypatch):
    # Hopper's ncu 2025.3 offers no smsp__sass_thread_inst_executed_op_global_ld
    lanes = {nsight.base(names[3]) for names in nsight.TRAFFIC.values()}
    offered = frozenset(nsight.base(m) for m in nsight.METRICS) - lanes
    monkeypatch.setattr(nsight, "tool", lambda: nsight.Tool("/opt/ncu", "1", offered=offered))
    counters = {
        "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum": 10.0,
        "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum": 20.0,
    }
    measured = profiler.Measured({"matmul": counters}, "sm_90")
    profile = Profile(Source.NSIGHT_COMPUTE, "256", {}, 100, 0.0, measured.kernels())
    assert profile.idle_lane_share is None and profile.busiest_thread_share is None
    assert "idle lanes are the CPU model's to say" in measured.remarks()
    assert "not asked for" not in measured.remarks()


def test_rows_named_demangled_are_told_apart_by_the_labs_kernel_names():
    jobs = [profiler.Job(Spec("s"), scan(), SCAN)]
    names = ["scan(const float *, float *, float *, int)", "void scan_sums(float *, int)",
             "add_sums(float *, const float *, int)"]  # fmt: skip
    [found] = profiler.attributed(jobs, [row(i, name) for i, name in enumerate(names)], "")
    assert found.ok and list(found.counters) == ["scan", "scan_sums", "add_sums"]
    wrong = [row(0, "scan_sums(float *, int)"), row(1, SCAN[1]), row(2, SCAN[2])]
    assert not profiler.attributed(jobs, wrong, "")[0].ok
