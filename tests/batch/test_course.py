"""A whole course on the CPU backend: 60-odd matmul-naive submissions, correct, buggy and
adversarial, graded by one batch. Every submission gets its row and its verdict, no
adversarial one gets anything out or changes anything, the gradebook matches `grader
check` on each alone, a second run grades nothing, and three shards merge into the same
gradebook.

The batch runs in a subprocess started with a canary token and the secret in its
environment and the secret on its command line, so that what student code could read of
its ancestors is what a TA's shell would expose."""

from __future__ import annotations

import csv
import json
import os
import secrets
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import course_data
import pytest

from grader import defaults
from grader.batch import merge, parse_shard
from grader.batch.outputs import GRADEBOOK, SUMMARY
from grader.course import stages
from grader.grading.pipeline import Options, check
from grader.report import json as json_report

TIMEOUT = 2.0  # seconds per case: the infinite loop costs three of them
SUBMISSION_TIMEOUT = 120.0
SECRET = "course-secret-" + secrets.token_hex(8)
CANARY = "ta-token-" + secrets.token_hex(8)

BATCH = """
import json, sys
from pathlib import Path
from grader.batch import parse_shard, run_batch
lab, folder, out, shard, secret = sys.argv[1:6]
report = run_batch(lab, Path(folder), Path(out), secret=secret or None, jobs=2,
                   timeout=float(sys.argv[6]), submission_timeout=float(sys.argv[7]),
                   backend="cpu", shard=parse_shard(shard) if shard else None, timing=False,
                   public_only=not secret)
errors = report.counts.errors
print(json.dumps({"graded": report.graded, "reused": report.reused, "errors": errors,
                  "stages": report.stages, "seconds": report.seconds}))
"""


def run_batch(folder: Path, out: Path, *, shard: str = "", secret: str = "", lab=course_data.LAB):
    env = {**os.environ, "TA_API_TOKEN": CANARY}
    if secret:
        env["GRADER_SECRET"] = secret
    argv = [lab, str(folder), str(out), shard, secret, str(TIMEOUT), str(SUBMISSION_TIMEOUT)]
    done = subprocess.run(
        [sys.executable, "-c", BATCH, *argv], env=env, capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.splitlines()[-1])


class Run:
    def __init__(self, root: Path) -> None:
        self.root = root
        self.out = root / "out"
        self.listener = socket.socket()
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen(8)
        self.listener.setblocking(False)
        self.secret_file = root / "ta-secret.txt"
        self.secret_file.write_text(SECRET)
        port = self.listener.getsockname()[1]
        tag = secrets.token_hex(4)
        self.course = course_data.build(root / "submissions", self.out, port, tag, self.secret_file)
        self.counts = run_batch(self.course.folder, self.out)
        with open(self.out / GRADEBOOK, newline="", encoding="utf-8") as f:
            self.rows = {row["student"]: row for row in csv.DictReader(f)}

    def report(self, student: str) -> dict:
        return json.loads((self.out / "students" / student / "report.json").read_text())

    def output(self, student: str) -> str:
        return "".join(case["output"] for case in self.report(student)["cases"])


@pytest.fixture(scope="module")
def run(tmp_path_factory) -> Run:
    graded = Run(tmp_path_factory.mktemp("course"))
    yield graded
    graded.listener.close()


def test_the_course_is_big_enough_and_every_submission_has_its_row_and_reports(run):
    assert len(run.course.expected) >= 60
    assert run.counts["graded"] == len(run.course.expected)
    assert set(run.rows) == set(run.course.expected)
    for student in run.rows:
        folder = run.out / "students" / student
        for name in ("report.html", "report.json", "junit.xml"):
            assert (folder / name).is_file(), f"{student}/{name}"


def test_the_batch_says_where_its_time_went(run):
    """Each stage (grader.course.stages) timed, summed over the two workers; the CPU
    backend times nothing. A worker is in one stage at a time, but for its compiles,
    which run several at once (grader.ahead; as many as its cores allow) and add up."""
    spent = run.counts["stages"]
    assert list(spent) == list(stages.STAGES)
    assert spent[stages.TIMING] == 0
    for name in (stages.WORKER_START, stages.COMPILE, stages.CASES, stages.REPORTS):
        assert spent[name] > 0, name
    in_turn = sum(seconds for name, seconds in spent.items() if name != stages.COMPILE)
    assert in_turn < 2 * run.counts["seconds"]


# nvcc, which the CPU backend runs first as the judge of CUDA syntax, reads any file the
# grader can, and its error log quotes the file; the C++ compiler after it runs sandboxed.
COMPILE_TIME_READS = {"include_secret"}
ATTACKS = sorted(set(course_data.ADVERSARIAL_EXPECT) - COMPILE_TIME_READS)


@pytest.mark.parametrize("student", ATTACKS)
def test_each_adversarial_submission_gets_its_verdict(run, student):
    check_verdict(run, student)


def test_every_other_submission_gets_its_verdict(run):
    wrong = []
    for student in sorted(set(run.course.expected) - set(course_data.ADVERSARIAL_EXPECT)):
        try:
            check_verdict(run, student)
        except AssertionError as error:
            wrong.append(str(error))
    assert not wrong, "\n".join(wrong)


def check_verdict(run: Run, student: str) -> None:
    row, want = run.rows[student], run.course.expected[student]
    kinds = set(row["diagnostics"].split())
    got = f"{student}: {row['status']} {sorted(kinds)} {row['reason'][:200]}"
    assert row["status"] in want.statuses, got
    assert want.kinds <= kinds, got
    if want.allowed is not None:
        assert kinds <= want.kinds | want.allowed, got


def test_a_submission_cannot_include_the_secret_into_its_compile_log(run):
    assert SECRET not in (run.out / "students" / "include_secret" / "report.json").read_text()


def found(root: Path, prefix: str) -> list[str]:
    """Files under `root` named prefix*, ignoring folders that vanish while we look."""
    return [f for _, _, files in os.walk(root) for f in files if f.startswith(prefix)]


def test_no_sandbox_escape_left_a_trace(run):
    prefix = f"pwned-{run.course.tag}"
    assert not found(run.root, prefix) and not found(defaults.cache_dir(), prefix)
    assert not list(Path("/tmp").glob(f"{prefix}*")) and not list(Path.home().glob(f"{prefix}*"))
    assert "WROTE" not in run.output("write_outside")
    assert "refused" in run.output("write_outside")
    with pytest.raises(BlockingIOError):
        run.listener.accept()  # nobody connected
    assert "CONNECTED" not in run.output("network")
    assert "READ" not in run.output("read_other") and "READ" not in run.output("read_secret")
    forks = run.output("fork_bomb")
    assert "forked 0 of 16" in forks and "forked 1" not in forks


def test_neither_the_secret_nor_the_environment_reached_any_output(run):
    for path in run.out.rglob("*"):
        if path.is_file() and path.parent.name not in COMPILE_TIME_READS:
            text = path.read_text(errors="replace")
            assert CANARY not in text, path
            assert "TA_API_TOKEN" not in text, path


def test_a_forged_result_is_not_taken(run):
    row = run.rows["forge"]
    assert row["status"] == "failed" and float(row["score"]) == 0


def test_correct_copies_of_one_kernel_get_one_result(run):
    copies = [run.rows[f"copy-{i}"] for i in range(8)]
    assert {(r["score"], r["status"], r["diagnostics"]) for r in copies} == {("3", "passed", "")}


HANDFUL = ("reference", "no-bounds-check", "transposed", "compile-error", "infinite_loop",
           "half-written", "printf_flood")  # fmt: skip


@pytest.mark.parametrize("student", HANDFUL)
def test_the_gradebook_matches_grader_check_alone(run, student):
    alone = check(
        course_data.LAB,
        run.course.folder / f"{student}.cu",
        Options(backend="cpu", timeout=TIMEOUT, timing=False),
    )
    batch = json_report.result_from_json(run.report(student))
    assert (batch.score, batch.max_score, batch.status) == (
        alone.score,
        alone.max_score,
        alone.status,
    )
    assert [(c.name, c.status) for c in batch.cases] == [(c.name, c.status) for c in alone.cases]
    kinds = {str(d.kind) for d in alone.all_diagnostics()}
    assert {str(d.kind) for d in batch.all_diagnostics()} == kinds
    row = run.rows[student]
    assert float(row["score"]) == pytest.approx(alone.score)
    assert row["diagnostics"].split() == sorted(kinds)


def test_the_summary_shows_the_failures_and_the_diagnostics(run):
    page = (run.out / SUMMARY).read_text()
    assert "Submissions that could not be graded" in page
    for student, row in run.rows.items():
        if row["status"] == "not_graded":
            assert f"students/{student}/report.html" in page
    assert '<td class="kind">out_of_bounds</td>' in page


def test_a_second_run_grades_nothing_and_writes_the_same_gradebook(run):
    before = (run.out / GRADEBOOK).read_bytes()
    counts = run_batch(run.course.folder, run.out)
    assert counts["graded"] == 0
    assert counts["reused"] == len(run.rows)
    assert (run.out / GRADEBOOK).read_bytes() == before


def test_three_shards_merge_into_the_same_gradebook(run, tmp_path):
    shards = []
    for i in (1, 2, 3):
        out = tmp_path / f"shard-{i}"
        # seeded with the whole run's folders, so each shard resumes instead of regrading;
        # tests/test_staff.py grades shards from scratch
        shutil.copytree(run.out / "students", out / "students")
        counts = run_batch(run.course.folder, out, shard=f"{i}/3")
        assert counts["graded"] == 0
        mine = {s for s in run.rows if parse_shard(f"{i}/3").holds(s)}
        with open(out / GRADEBOOK, newline="") as f:
            assert {r["student"] for r in csv.DictReader(f)} == mine
        shards.append(out)
    merge(shards, tmp_path / "merged")
    merged = (tmp_path / "merged" / GRADEBOOK).read_bytes()
    assert merged == (run.out / GRADEBOOK).read_bytes()


def test_with_the_secret_hidden_cases_run_and_the_secret_stays_out(run, tmp_path):
    folder = tmp_path / "few"
    folder.mkdir()
    for student in ("reference", "read_secret"):
        shutil.copy(run.course.folder / f"{student}.cu", folder)
    out = tmp_path / "out"
    counts = run_batch(folder, out, secret=SECRET)
    assert (counts["graded"], counts["reused"], counts["errors"]) == (2, 0, 0)
    with open(out / GRADEBOOK, newline="") as f:
        rows = {r["student"]: r for r in csv.DictReader(f)}
    assert rows["reference"]["status"] == "passed" and rows["reference"]["max"] == "7"
    assert any(name.startswith("hidden/") for name in rows["reference"])
    assert rows["read_secret"]["status"] == "passed"
    for path in out.rglob("*"):
        if path.is_file():
            text = path.read_text(errors="replace")
            assert SECRET not in text and CANARY not in text, path
