"""Nsight Compute without a GPU (grader.backends.cuda.nsight): its raw CSV, as recorded
logs built from the documentation's format, turned into KernelProfiles; its errors as
sentences; and whether it may run, asked of a stand-in ncu on PATH that counts how often
it is run."""

from __future__ import annotations

import os
import stat
import sys

import pytest

from grader.backends.cuda import nsight

MATMUL = "_Z6matmulPKfS0_Pfi"
COLUMNS = [
    "ID", "Process ID", "Process Name", "Host Name", "Kernel Name", "Context", "Stream",
    "Block Size", "Grid Size", "Device", "CC",
]  # fmt: skip

# The naive matmul at Width 256 with 16x16 blocks, as the issue quotes Nsight Compute on
# an H200: a warp is two rows of 16 threads, so each load of M touches the two rows' one
# word each (2 sectors) and each load of N 16 consecutive floats of one row (2 sectors).
NAIVE_256 = {
    "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum": 1_048_576,  # 2048 warps x 256 k x 2
    "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum": 2_097_152,
    "sm__sass_data_bytes_mem_global_op_ld.sum": 134_217_728,
    "smsp__sass_thread_inst_executed_op_global_ld.sum": 33_554_432,
    "l1tex__t_requests_pipe_lsu_mem_global_op_st.sum": 2_048,
    "l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum": 8_192,
    "sm__sass_data_bytes_mem_global_op_st.sum": 262_144,
    "smsp__sass_thread_inst_executed_op_global_st.sum": 65_536,
    "dram__bytes_read.sum": 524_288,
    "dram__bytes_write.sum": 262_144,
    "launch__thread_count": 65_536,
    "launch__occupancy_limit_registers": 8,
    "launch__occupancy_limit_shared_mem": 32,
    "launch__occupancy_limit_warps": 8,
    "launch__occupancy_limit_blocks": 32,
    "launch__block_size": 256,
    "device__attribute_max_warps_per_multiprocessor": 64,
}


def log(launches: list[tuple[str, dict]], before: str = "") -> str:
    """A raw-page CSV log as `ncu --csv --page raw --print-units base --log-file` writes it:
    tool lines, the header, the units, then a row per launch, numbers grouped by commas."""
    metrics = sorted({name for _, values in launches for name in values})
    lines = [before] if before else []
    lines.append(",".join(f'"{c}"' for c in COLUMNS + metrics))
    lines.append(",".join('""' for _ in COLUMNS) + "," + ",".join('"n"' for _ in metrics))
    for number, (kernel, values) in enumerate(launches):
        head = [str(number), "4242", "python3", "127.0.0.1", kernel, "1", "7", "(16, 16, 1)",
                "(16, 16, 1)", "0", "9.0"]  # fmt: skip
        cells = [_grouped(values[m]) if m in values else "n/a" for m in metrics]
        lines.append(",".join(f'"{c}"' for c in head + cells))
    return "\n".join(lines) + "\n"


def _grouped(value) -> str:
    return f"{value:,}" if isinstance(value, int) else str(value)


def test_the_naive_matmul_has_two_sectors_per_load_request():
    text = log([(MATMUL, NAIVE_256)], before=f'==PROF== Profiling "{MATMUL}" - 0: 9 passes')
    [row] = nsight.rows(text)
    assert (row.launch, row.kernel, row.arch) == (0, MATMUL, "sm_90")
    profile = nsight.kernel_profile("matmul", nsight.summed([row]), row.arch)
    assert profile.global_loads.per_request == 2.0
    assert profile.global_loads.bytes == 4 * 2 * 256**3
    assert profile.global_loads.lanes == 32 * profile.global_loads.requests
    assert profile.global_stores.per_request == 4.0
    assert profile.threads == 256 * 256
    assert nsight.dram_bytes(nsight.summed([row])) == 786_432
    occupancy = profile.occupancy
    assert (occupancy.blocks_per_sm, occupancy.warps_per_sm, occupancy.limiter) == (
        8,
        64,
        "registers",
    )
    assert occupancy.fraction == 1.0 and occupancy.gpu.startswith("sm_90")


def test_a_32_way_conflict_is_31_conflicts_per_request():
    counters = {
        "smsp__sass_inst_executed_op_shared_ld.sum": 1_000,
        "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum": 32_000,
        "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum": 31_000,
    }
    [row] = nsight.rows(log([("_Z8conflictPf", counters)]))
    profile = nsight.kernel_profile("conflict", nsight.summed([row]), row.arch)
    assert profile.shared_loads.conflicts_per_request == 31.0
    assert profile.shared_stores.requests == 0  # n/a counts nothing
    assert profile.occupancy is None  # the limits were not read


def test_a_kernel_launched_twice_adds_its_counts_and_keeps_its_first_occupancy():
    first = {**NAIVE_256, "launch__occupancy_limit_registers": 4}
    text = log([(MATMUL, first), ("_Z4scanPfS_S_i", {"launch__thread_count": 7}),
                (MATMUL, NAIVE_256)])  # fmt: skip
    rows = nsight.rows(text)
    mine = [row for row in rows if row.kernel == MATMUL]
    counters = nsight.summed(mine)
    assert counters["l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum"] == 2 * 1_048_576
    assert counters["launch__thread_count"] == 2 * 65_536
    assert counters["launch__occupancy_limit_registers"] == 4


def test_lines_that_are_not_the_csv_and_values_that_are_not_numbers_are_skipped():
    text = log([(MATMUL, {"dram__bytes_read.sum": "n/a", "launch__thread_count": 5})])
    text = "==WARNING== something\nnot csv at all\n" + text + '"broken\n'
    [row] = nsight.rows(text)
    assert row.values == {"launch__thread_count": 5.0}
    assert nsight.rows("") == [] and nsight.rows('"1","2"\n') == []


def test_a_refusal_is_a_sentence_that_says_what_to_do():
    text = (
        "==PROF== Connected to process 17\n"
        "==ERROR== ERR_NVGPUCTRPERM - The user does not have permission to access NVIDIA "
        "GPU Performance Counters on the target device 0.\n"
    )
    why = nsight.error(text)
    assert "may not read the GPU's performance counters" in why and "root" in why
    assert nsight.error("==ERROR== Failed to profile kernel.\n") == "Failed to profile kernel"
    assert nsight.error("==PROF== fine\n") == ""


# What --query-metrics lists on the stand-in's GPU: every counter of the table but one.
OFFERED = frozenset(
    nsight.base(m) for m in nsight.METRICS if not m.startswith(("launch__", "device__"))
) - {"dram__bytes_write"}


def test_the_command_counts_only_the_labs_kernels_into_its_own_log(tmp_path):
    tool = nsight.Tool("/opt/ncu", "2025.3.1.0", offered=OFFERED)
    argv = nsight.command(tool, [MATMUL, "_Z4scanPfS_S_i", MATMUL], 3, tmp_path / "log")
    assert argv[1:3] == ["LC_ALL=C", "/opt/ncu"]
    assert argv[argv.index("--kernel-name") + 1] == f"regex:^(_Z4scanPfS_S_i|{MATMUL})$"
    assert argv[argv.index("--log-file") + 1] == str(tmp_path / "log")
    assert argv[argv.index("--launch-count") + 1] == "3"
    asked = argv[argv.index("--metrics") + 1].split(",")
    assert "dram__bytes_read.sum" in asked and "launch__block_size" in asked
    assert "dram__bytes_write.sum" not in asked  # this GPU does not offer it
    assert tool.missing() == ("dram__bytes_write.sum",)
    unread = nsight.Tool("/opt/ncu", "1", offered=frozenset({"dram__bytes_read", "x__y"}))
    assert unread.metrics() == nsight.METRICS  # a list in a form not read as expected


# -- may it run: a stand-in ncu -------------------------------------------------------------

STAND_IN = """\
#!{python}
import pathlib, sys
calls = pathlib.Path({calls!r})
calls.write_text(calls.read_text() + " ".join(sys.argv[1:3]) + "\\n")
if sys.argv[1:] == ["--version"]:
    print("NVIDIA (R) Nsight Compute Command Line Profiler")
    print("Version 2025.3.1.0 (build 36398880) (public-release)")
elif sys.argv[1:] == ["--query-metrics"]:
    print("Device NVIDIA H200 (GH100)")
    for name in {offered!r}:
        print(f"{{name:<60}} # of something")
else:
    log = pathlib.Path(sys.argv[sys.argv.index("--log-file") + 1])
    if "dram__bytes_read.sum" in sys.argv[sys.argv.index("--metrics") + 1].split(","):
        log.write_text("==ERROR== Failed to find metric dram__bytes_read.sum\\n")
    else:
        log.write_text("==ERROR== ERR_NVGPUCTRPERM - The user does not have permission to "
                       "access NVIDIA GPU Performance Counters on the target device 0.\\n")
    sys.exit(1)
"""


@pytest.fixture
def stand_in(tmp_path, monkeypatch):
    """A stand-in ncu first on PATH, whose runs `calls` counts, for a user who is not root
    and has no capabilities, on a machine whose driver lets every user profile."""
    folder = tmp_path / "bin"
    folder.mkdir()
    calls = tmp_path / "calls"
    calls.write_text("")
    ncu = folder / "ncu"
    ncu.write_text(
        STAND_IN.format(python=sys.executable, calls=str(calls), offered=sorted(OFFERED))
    )
    ncu.chmod(ncu.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("PATH", f"{folder}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("GRADER_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(nsight.os, "geteuid", lambda: 1000)
    params, status = tmp_path / "params", tmp_path / "status"
    params.write_text("ResmanDebugLevel: 4294967295\nRmProfilingAdminOnly: 0\n")
    status.write_text("Name:\tpython\nCapEff:\t0000000000000000\n")
    monkeypatch.setattr(nsight, "PARAMS", params)
    monkeypatch.setattr(nsight, "STATUS", status)
    nsight.tool.cache_clear()
    yield ncu, calls, params, status
    nsight.tool.cache_clear()


def test_ncu_is_found_on_path_and_asked_once_per_machine(stand_in):
    ncu, calls, _, _ = stand_in
    assert nsight.find() == str(ncu)
    found = nsight.tool()
    assert found.ok and found.version == "2025.3.1.0"
    assert found.offered == OFFERED
    assert calls.read_text().split() == ["--version", "--query-metrics"]
    nsight.tool.cache_clear()  # another grading on this machine: remembered, not asked
    assert nsight.tool() == found and len(calls.read_text().split()) == 2


def test_where_only_administrators_may_profile_ncu_is_not_run(stand_in):
    _, calls, params, status = stand_in
    params.write_text("RmProfilingAdminOnly: 1\n")
    found = nsight.tool()
    assert not found.ok and found.why_not == nsight.ADMINS_ONLY
    assert calls.read_text() == ""
    status.write_text(f"CapEff:\t{1 << nsight.CAP_SYS_ADMIN:016x}\n")  # CAP_SYS_ADMIN
    nsight.tool.cache_clear()
    assert nsight.tool().ok


def test_a_run_refused_for_permission_is_a_note_and_is_remembered(stand_in):
    from grader.backends.cuda import profiler

    _, calls, params, _ = stand_in
    job = profiler.Job(_Spec(), _launch(), (MATMUL,))
    [measured] = profiler.measure([job], "NVIDIA H200", timeout=30)
    assert not measured.ok
    assert measured.note.startswith("Nsight Compute could not profile this kernel: this user")
    runs = len(calls.read_text().splitlines())
    nsight.tool.cache_clear()  # the next grading: refused without starting ncu
    assert "may not read" in nsight.tool().why_not
    [again] = profiler.measure([job], "NVIDIA H200", timeout=30)
    assert again.note == measured.note and len(calls.read_text().splitlines()) == runs
    params.write_text(params.read_text() + "RmGpuComputeExecTimeout: 0\n")  # other settings
    nsight.tool.cache_clear()
    assert nsight.tool().ok  # asked again


def test_a_run_refused_for_a_metric_is_made_again_without_it(stand_in):
    from grader.backends.cuda import profiler

    _, calls, _, _ = stand_in
    job = profiler.Job(_Spec(), _launch(), (MATMUL,))
    [measured] = profiler.measure([job], "NVIDIA H200", timeout=30)
    runs = [line.split()[1] for line in calls.read_text().splitlines() if "--metrics" in line]
    assert len(runs) == 2
    assert "dram__bytes_read.sum" in runs[0].split(",") and "dram__bytes_read.sum" not in runs[1]
    assert nsight.tool().missing() == ("dram__bytes_read.sum", "dram__bytes_write.sum")
    assert "may not read" in measured.note  # what the second run met
    assert nsight.unknown("==ERROR== Failed to profile kernel\n", nsight.METRICS) == []


def test_a_metric_refused_where_the_cache_cannot_keep_it_is_a_note(stand_in, monkeypatch):
    from grader.backends.cuda import profiler

    monkeypatch.setattr(nsight, "_remember", lambda path, record: None)  # read-only cache
    job = profiler.Job(_Spec(), _launch(), (MATMUL,))
    [measured] = profiler.measure([job], "NVIDIA H200", timeout=30)
    assert measured.note == (
        "Nsight Compute could not profile this kernel: ncu does not know dram__bytes_read.sum."
    )


class _Spec:
    key = "module"

    def load_request(self) -> tuple[dict, list]:
        return {"op": "load", "key": self.key}, []


def _launch():
    import numpy as np

    from grader.model.launch import Buffer, Launch, Scalar

    data = np.arange(4, dtype=np.float32)
    args = [Buffer("M", data, False), Buffer("P", np.zeros(4, np.float32), True),
            Scalar("Width", "int", 2)]  # fmt: skip
    return Launch("matmul", (1, 1, 1), (2, 2, 1), 0, args, {})
