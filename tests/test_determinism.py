"""Every known-wrong kernel gets the same findings and hints on the CPU backend whatever
its worker count (issue 20): blocks that run at once on several pool threads must not
change what a grading says. Each kernel is graded with 1, 2 and 3 pool threads (the
backend's `jobs`) and everything the report says of it is compared.

Public cases only: they are the ones where a kernel's blocks are fewest (a few blocks on
two threads is where timing decided most often), and the hidden ones add only more of
the same at a cost. Builds come from the build cache the pipeline tests filled. A kernel
whose grading runs no case (it does not compile, or breaks the interface) is graded
once and skipped, with its name: nothing of it runs on the pool. One that hangs is stopped
after a second."""

from __future__ import annotations

import pytest

from grader import validate
from grader.backends import get_backend
from grader.grading.pipeline import Options, grade
from grader.labs import all_labs
from grader.model.result import Diagnostic, Result, Status

JOBS = (1, 2, 3)
TIMEOUT = 5.0  # as the pipeline tests
WRONG = [c for lab in all_labs().values() for c in validate.checks(lab) if c.role == "wrong"]


@pytest.fixture(scope="module")
def backends():
    opened = [get_backend("cpu", jobs=jobs) for jobs in JOBS]
    try:
        yield [b.__enter__() for b in opened]
    finally:
        for b in opened:
            b.__exit__(None, None, None)


def said(result: Result) -> dict:
    """Everything a grading says of a kernel, but how long it took."""
    return {
        "score": result.score,
        "status": result.status,
        "diagnostics": [_found(d) for d in result.diagnostics],
        "cases": [
            (c.name, c.status, c.mismatches, c.first_mismatch, c.hint_kind, c.hint)
            + tuple(_found(d) for d in c.diagnostics)
            for c in result.cases
        ],
        "notes": result.notes,
    }


def _found(d: Diagnostic) -> tuple:
    return (d.kind, d.message, d.line, d.thread, d.block)


def _ran(result: Result) -> bool:
    return any(c.status != Status.ERROR or c.diagnostics for c in result.cases)


@pytest.mark.parametrize("check", WRONG, ids=lambda c: c.label)
def test_findings_and_hints_are_the_same_whatever_the_worker_count(check, backends):
    lab = all_labs()[check.lab]
    hangs = "timeout" in check.expected.get("kinds", []) or "timeout" in check.expected
    options = Options(backend="cpu", timing=False, timeout=1.0 if hangs else TIMEOUT)
    first = grade(lab, check.path, backends[0], options)
    if not _ran(first):  # an error before its cases, as its EXPECTED.toml must say
        wanted = check.expected.get("cpu", check.expected)
        assert wanted.get("verdict") == "error", f"{check.label} ran no case"
        pytest.skip(f"{check.label} runs no case, so no worker count can change it")
    for backend in backends[1:]:
        again = said(grade(lab, check.path, backend, options))
        assert again == said(first), f"{backend.jobs} pool threads differ from 1"


LATER_BLOCK = """
    if (threadIdx.x == 0) sums[blockIdx.x] = total;
    if (blockIdx.x == 0 && threadIdx.x == 0 && gridDim.x > 1) {
        volatile float spin = 0.0f;  // long enough for block 1 to store, where it runs at once
        for (int i = 0; i < 2000000; ++i) spin = spin + 1.0f;
        float later = output[TILE_X];  // block 1's first output
        if (later != later) output[0] = later;  // still poisoned: block 1 has not run
    }
}
"""


def test_a_block_that_reads_a_later_blocks_store_fails_whatever_the_worker_count(
    backends, tmp_path
):
    """Block 0 of scan waits, then reads block 1's first output: on several pool threads
    block 1 has mostly stored it by then, in grid order never, and no watched run covers
    two blocks (scan's census case is one). The two runs of each case, blocks in different
    orders, leave output[0] NaN in one and not the other: a race on 1, 2 and 3 threads
    alike, so grid_order's reruns are not what holds it."""
    lab = all_labs()["scan"]
    text = (lab.home / "reference.cu").read_text()
    old = "    if (threadIdx.x == 0) sums[blockIdx.x] = total;\n}\n"
    assert text.count(old) == 1
    kernel = tmp_path / "kernel.cu"
    kernel.write_text(text.replace(old, LATER_BLOCK.lstrip("\n")))
    options = Options(backend="cpu", timing=False, timeout=TIMEOUT)
    first = grade(lab, kernel, backends[0], options)
    assert first.status == Status.FAILED, [(c.name, c.status) for c in first.cases]
    messages = [d.message for c in first.cases for d in c.diagnostics]
    assert any("differs between two runs" in m and "the blocks" in m for m in messages)
    for backend in backends[1:]:
        assert said(grade(lab, kernel, backend, options)) == said(first), backend.jobs
