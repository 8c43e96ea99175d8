"""The worker pool on the CPU backend: a submission that outlives its deadline is killed
from outside and the next one is graded in a fresh worker; anything written into the
answer channel that is not the worker's answer makes the submission an error."""

from __future__ import annotations

import os
import tempfile
import threading
import time
from pathlib import Path

import pytest

from grader import labs
from grader.course.pool import Job, Outcome, Pool, WorkerSpec
from grader.model.result import Kind

LAB = "matmul-naive"
HANG = """\
__global__ void matmul(const float* M, const float* N, float* P, int Width) {
    volatile float* out = P;
    while (true)
        out[0] = out[0] + 1.0f;
}
"""


def spec(tmp_path: Path, submission_timeout: float) -> WorkerSpec:
    return WorkerSpec(LAB, "cpu", 1, 2.0, False, None, tmp_path / "gates", submission_timeout)


def jobs(tmp_path: Path, kernels: dict[str, str]) -> list[Job]:
    found = []
    for name, text in kernels.items():
        path = tmp_path / f"{name}.cu"
        path.write_text(text)
        found.append(Job(name, path))
    return found


def test_a_submission_past_its_deadline_is_killed_and_the_next_is_graded(tmp_path, monkeypatch):
    private_tmp = tmp_path / "tmp"
    private_tmp.mkdir()
    monkeypatch.setenv("TMPDIR", str(private_tmp))
    monkeypatch.setattr(tempfile, "tempdir", str(private_tmp))
    baseline = (labs.get(LAB).home / "baseline.cu").read_text()
    pool = Pool(spec(tmp_path, submission_timeout=3.0), 1, [])
    outcomes: list[Outcome] = []
    started = time.monotonic()
    try:
        pool.run(jobs(tmp_path, {"hang": HANG, "next": baseline}), outcomes.append)
    finally:
        pool.close()
    assert time.monotonic() - started < 60
    hang, following = outcomes
    assert hang.report is None and hang.kind == Kind.TIMEOUT
    assert "Grading took longer than 3 s" in hang.failure
    assert following.report is not None and following.report["status"] == "passed"
    assert pool.graded == 2
    assert list(private_tmp.iterdir()) == []  # the killed worker's scratch folder too


@pytest.mark.skipif(os.geteuid() != 0, reason="opening another process's pipe needs root")
def test_a_line_written_into_the_channel_from_outside_is_not_taken(tmp_path):
    pool = Pool(spec(tmp_path, submission_timeout=60.0), 1, [])
    outcomes: list[Outcome] = []

    def forge() -> None:
        """Write a perfect result into the worker's answer pipe, as an intruder would."""
        while not any(w.job for w in pool.workers.values()):
            time.sleep(0.05)
        worker = next(iter(pool.workers.values()))
        answers_fd = int(worker.process.args[-1])
        line = b'{"type": "result", "nonce": "guess", "result": {"score": 3}}\n'
        with open(f"/proc/{worker.process.pid}/fd/{answers_fd}", "wb") as pipe:
            pipe.write(line)

    intruder = threading.Thread(target=forge)
    intruder.start()
    try:
        pool.run(jobs(tmp_path, {"victim": HANG}), outcomes.append)
    finally:
        intruder.join(timeout=10)
        pool.close()
    (outcome,) = outcomes
    assert outcome.report is None
    assert "tried to forge its result" in outcome.failure


def test_a_submission_that_cannot_be_read_is_said_so_and_the_next_is_graded(tmp_path):
    """A file gone (or unreadable: a student's mode 000) between discovery and grading:
    its sentence, not 'The grader failed on this submission: grader.errors.UsageError'."""
    baseline = (labs.get(LAB).home / "baseline.cu").read_text()
    gone = Job("gone", tmp_path / "gone.cu")
    pool = Pool(spec(tmp_path, submission_timeout=30.0), 1, [])
    outcomes: list[Outcome] = []
    try:
        pool.run([gone, *jobs(tmp_path, {"next": baseline})], outcomes.append)
    finally:
        pool.close()
    unread, following = outcomes
    assert unread.report is None and unread.kind == Kind.COMPILE_ERROR
    assert unread.failure == f"{gone.path} cannot be read: No such file or directory."
    assert following.report is not None and following.report["status"] == "passed"
