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
