"""compute-sanitizer's logs as the grader reads them (grader.backends.cuda.sanitizer),
without a GPU: memcheck, racecheck and synccheck findings, refusals, and the command line."""

from __future__ import annotations

from grader.backends.cuda import sanitizer
from grader.model.result import Kind

# Written in the format compute-sanitizer prints with --show-backtrace no (checked against
# 2025.3.1 on an H200): a headline after "========= ", details indented; older releases'
# "at 0xOFFSET in FILE:LINE:function" and locations wrapped onto their own line too.

MEMCHECK_LOG = """\
========= COMPUTE-SANITIZER
========= Invalid __global__ read of size 4 bytes
=========     at matmul(const float *, const float *, float *, int)+0x1f0 in /tmp/tmpab12/mine.cu:7
=========     by thread (5,15,0) in block (2,3,0)
=========     Address 0x7f0000004000 is out of bounds
=========     and is 1 bytes after the nearest allocation at 0x7f0000000000 of size 16,384 bytes
=========
========= Invalid __global__ read of size 4 bytes
=========     at matmul(const float *, const float *, float *, int)+0x1f0
=========        in mine.cu:7
=========     by thread (6,15,0) in block (2,3,0)
=========     Access to 0x7f0000004004 is out of bounds
=========     and is 5 bytes after the nearest allocation at 0x7f0000000000 of size 16,384 bytes
=========
========= Invalid __global__ write of size 4 bytes
=========     at 0x2a0 in /tmp/tmpab12/mine.cu:9:matmul(const float *, const float *, float *, int)
=========     by thread (0,0,0) in block (0,0,0)
=========     Address 0x7f0000207ff0 is out of bounds
=========     and is 16 bytes before the nearest allocation at 0x7f0000208000 of size 16,384 bytes
=========
========= Invalid __shared__ write of size 4 bytes
=========     at matmul(const float *, const float *, float *, int)+0x80 in mine.cu:4
=========     by thread (1,0,0) in block (0,0,0)
=========     Address 0x4400 is out of bounds
=========
========= Program hit CUDA_ERROR_LAUNCH_FAILED (error 719) due to "unspecified launch failure" on CUDA API call to cuCtxSynchronize.
=========
========= ERROR SUMMARY: 5 errors
"""  # noqa: E501

BUFFERS = [
    sanitizer.BufferRange("M", 0x7F0000100000, 16384),
    sanitizer.BufferRange("N", 0x7F0000000000, 16384),
    sanitizer.BufferRange("P", 0x7F0000208000, 16384),
]

CONTEXT = sanitizer.Context(kernel="matmul", submission="mine.cu", student_lines=20)


def _diagnostics(log: str, tool: str, buffers=()):
    found = sanitizer.parse(log, tool)
    for finding in found:
        finding.buffers = list(buffers)
    return sanitizer.diagnostics(found, CONTEXT)


def test_memcheck_findings_name_the_buffer_thread_block_and_line():
    found = sanitizer.parse(MEMCHECK_LOG, "memcheck")
    assert len(found) == 4
    first = found[0]
    assert (first.kind, first.space, first.size) == (Kind.OUT_OF_BOUNDS, "global", 4)
    assert (first.thread, first.block) == ((5, 15, 0), (2, 3, 0))
    assert first.location.kind == "read" and first.location.line == 7
    assert found[1].location.line == 7  # the location wrapped onto its own line
    assert found[1].address == 0x7F0000004004
    assert found[2].location.line == 9  # the older FILE:LINE:function form

    diags = _diagnostics(MEMCHECK_LOG, "memcheck", BUFFERS)
    assert [d.kind for d in diags] == [Kind.OUT_OF_BOUNDS] * 3
    read, write, shared = diags
    assert (read.line, read.thread, read.block) == (7, (5, 15, 0), (2, 3, 0))
    assert "read 4 bytes at N[4096], just past the end of N" in read.message
    assert "(N holds 4096 floats, N[0] to N[4095])" in read.message
    assert "line 7 of mine.cu" in read.message and "2 reads like it" in read.message
    assert "wrote 4 bytes at P[-4], before the start of P" in write.message
    assert write.line == 9
    assert "__shared__" in shared.message and shared.line == 4
    # the array is the one the line indexes; memcheck gives its address in the window
    assert "at __shared__ address 0x4400, outside the __shared__ memory" in shared.message
    assert (shared.thread, shared.block) == ((1, 0, 0), (0, 0, 0))


def test_an_address_far_from_every_buffer_is_said_so():
    log = MEMCHECK_LOG.replace("nearest allocation at 0x7f0000000000", "nearest allocation at 0x1")
    log = log.replace("0x7f0000004000", "0x100").replace("0x7f0000004004", "0x104")
    diags = _diagnostics(log, "memcheck", BUFFERS)
    assert "address 0x100, outside every buffer" in diags[0].message


def test_lines_of_the_grader_footer_are_not_reported_as_the_students():
    log = MEMCHECK_LOG.replace("mine.cu:7", "mine.cu:21")
    diags = _diagnostics(log, "memcheck", BUFFERS)
    assert diags[0].line is None and "your kernel" in diags[0].message


RACECHECK_LOG = """\
========= COMPUTE-SANITIZER
========= Error: Race reported between Write access at matmul(const float *, const float *, float *, int)+0x170 in mine.cu:11
=========     and Read access at matmul(const float *, const float *, float *, int)+0x2d0 in mine.cu:14 [1536 hazards]
=========
========= Error: Race reported between Write access at matmul(const float *, const float *, float *, int)+0x1b0 in mine.cu:12
=========     and Read access at matmul(const float *, const float *, float *, int)+0x2e0 in mine.cu:14 [1024 hazards]
=========     and Read access at matmul(const float *, const float *, float *, int)+0x2f0 in mine.cu:14 [512 hazards]
=========
========= Warning: Race reported between Read access at 0x2d0 in /tmp/x/mine.cu:14:matmul(const float *, const float *, float *, int)
=========     and Write access at 0x170 in /tmp/x/mine.cu:11:matmul(const float *, const float *, float *, int) [8 hazards]
=========
========= RACECHECK SUMMARY: 3 hazards displayed (2 errors, 1 warning)
"""  # noqa: E501


def test_racecheck_races_give_both_lines_and_the_hazard_count():
    diags = _diagnostics(RACECHECK_LOG, "racecheck")
    assert [d.kind for d in diags] == [Kind.RACE] * 3
    raw_m, raw_n, war = diags
    assert "a write at line 11 of mine.cu and a read at line 14 of mine.cu" in raw_m.message
    assert "(1536 hazards)" in raw_m.message and raw_m.line == 11
    assert "(1536 hazards)" in raw_n.message  # two read sites of one race add up
    assert raw_n.message.count("line 14") == 1
    assert "a read at line 14" in war.message and "a write at line 11" in war.message
    assert "before the next tile" in war.message
    assert "after the tile is written" in raw_m.message


SYNCCHECK_LOG = """\
========= COMPUTE-SANITIZER
========= Barrier error detected. Divergent thread(s) in warp.
=========     at matmul(const float *, const float *, float *, int)+0x90 in mine.cu:5
=========     by thread (32,0,0) in block (0,0,0)
=========
========= Barrier error detected. Divergent thread(s) in warp.
=========     at matmul(const float *, const float *, float *, int)+0x90 in mine.cu:5
=========     by thread (33,0,0) in block (0,0,0)
=========
========= ERROR SUMMARY: 2 errors
"""  # noqa: E501


def test_synccheck_divergence_is_one_diagnostic_with_a_count():
    [diag] = _diagnostics(SYNCCHECK_LOG, "synccheck")
    assert diag.kind == Kind.BARRIER_DIVERGENCE
    assert (diag.line, diag.thread, diag.block) == (5, (32, 0, 0), (0, 0, 0))
    assert "__syncthreads() at line 5 of mine.cu" in diag.message
    assert "Divergent thread(s) in warp" in diag.message and "2 errors" in diag.message


def test_clean_logs_and_application_output_give_nothing():
    clean = "========= COMPUTE-SANITIZER\nhello from block 0\n========= ERROR SUMMARY: 0 errors\n"
    for tool in sanitizer.TOOLS:
        assert sanitizer.parse(clean, tool) == []
    racecheck_clean = "========= RACECHECK SUMMARY: 0 hazards displayed (0 errors, 0 warnings)\n"
    assert sanitizer.parse(racecheck_clean, "racecheck") == []


def test_refusal_names_the_sanitizers_reason():
    log = "========= COMPUTE-SANITIZER\n========= Error: Device not supported\n"
    assert sanitizer.refusal(log, "") == "Error: Device not supported"
    assert sanitizer.refusal("", "") == "it printed nothing"


def test_command_runs_one_tool_into_a_log_file(tmp_path):
    cmd = sanitizer.command("/cuda/bin/compute-sanitizer", "racecheck", tmp_path / "r.log", ["x"])
    assert cmd[0] == "/cuda/bin/compute-sanitizer" and cmd[-1] == "x"
    assert cmd[cmd.index("--tool") + 1] == "racecheck"
    assert cmd[cmd.index("--log-file") + 1] == str(tmp_path / "r.log")
    assert "--print-limit" in cmd and "--racecheck-report" in cmd
