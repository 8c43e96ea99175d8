"""Points per case and the gradebook: the parts add up to the score, the CSV is what
importers read, student-chosen text cannot run as a spreadsheet formula, and the status
column tells a kernel that did not compile from one nobody could grade."""

from __future__ import annotations

import csv
import io
from collections import Counter
from pathlib import Path

import pytest
from batch_data import make_result

from grader import labs
from grader.batch import gradebook, summary
from grader.batch.state import Record
from grader.course import points
from grader.course.discover import Person
from grader.judge import cases as casegen
from grader.judge.grading import not_graded
from grader.model.result import CompileInfo, Diagnostic, Kind, Result, Status

SECRET = "course-secret"


@pytest.mark.parametrize(
    ("lab", "failing", "secret", "speedup", "rule_broken"),
    [
        ("matmul-naive", (), None, None, False),
        ("matmul-naive", ("width-100",), None, None, False),
        ("matmul-tiled", ("width-517", "random-1"), SECRET, None, False),
        ("matmul-tiled", (), SECRET, 0.8, False),
        ("matmul-tiled", (), SECRET, 1.4, True),
        ("conv2d", ("64x64-mask5", "1x1-mask5"), SECRET, 0.5, False),
    ],
)
def test_parts_add_up_to_the_score(lab, failing, secret, speedup, rule_broken):
    spec = labs.get(lab)
    result = make_result(lab, failing, secret, speedup, rule_broken)
    found = points.parts(spec, result, hidden_run=bool(secret))
    assert sum(p.points for p in found) == pytest.approx(result.score)
    assert sum(p.max_points for p in found) == pytest.approx(result.max_score)
    assert (found[-1].name == points.SPEED) == (speedup is not None)
    for part in found:
        if part.case is not None and not part.case.passed:
            assert part.points == 0


def record(student: str, people: list[Person] | None = None, reason: str = "") -> Record:
    source = f"{student}.cu"
    return Record(student, people or [Person(student)], source, source, "k", reason)


def table(rows: list[gradebook.Row]) -> list[dict[str, str]]:
    return list(csv.DictReader(io.StringIO(gradebook.render(rows))))


def test_a_row_per_student_with_every_column():
    lab = labs.get("matmul-naive")
    failing = make_result("matmul-naive", ("width-100",))
    rows = gradebook.rows_for(lab, record("bob"), failing, False)
    rows += gradebook.rows_for(lab, record("alice"), make_result("matmul-naive"), False)
    parsed = table(rows)
    assert [r["student"] for r in parsed] == ["alice", "bob"]
    header = list(parsed[0])
    assert header[: len(gradebook.FIXED)] == list(gradebook.FIXED)
    cases = [f"public/{c.name}" for c in lab.public_cases]
    assert header[len(gradebook.FIXED) :] == cases
    assert parsed[0]["score"] == "3" and parsed[0]["max"] == "3"
    assert parsed[0]["cases"] == "public only"  # graded without the secret: 3 of the lab's 7
    assert parsed[0]["status"] == "passed" and parsed[1]["status"] == "failed"
    assert parsed[1]["diagnostics"] == "out_of_bounds"
    assert parsed[1]["public/width-100"] == "0"
    assert parsed[0]["speedup"] == ""


def test_a_group_submission_gives_each_member_a_row():
    lab = labs.get("matmul-tiled")
    group = record("sub_7", [Person("1815", "Ada", "ada@x.edu"), Person("1912", "Alan")])
    result = make_result("matmul-tiled", (), SECRET, 1.2)
    parsed = table(gradebook.rows_for(lab, group, result, True))
    assert [(r["student"], r["name"], r["submission"]) for r in parsed] == [
        ("1815", "Ada", "sub_7"),
        ("1912", "Alan", "sub_7"),
    ]
    assert parsed[0]["speedup"] == "1.200"
    assert "speed" in parsed[0] and parsed[0]["speed"] == parsed[1]["speed"]
    assert parsed[0]["cases"] == "all"


def test_formulas_are_defused_and_reasons_fit_one_line():
    lab = labs.get("matmul-naive")
    rows = gradebook.rows_for(
        lab,
        record('=HYPERLINK("http://x")', reason="It hung.\nThen it was stopped."),
        make_result("matmul-naive"),
        False,
    )
    parsed = table(rows)
    assert parsed[0]["student"].startswith("'=")
    assert parsed[0]["reason"] == "It hung. Then it was stopped."


def test_the_same_rows_give_the_same_bytes(tmp_path: Path):
    lab = labs.get("conv2d")
    rows = [
        row
        for name in ("c", "a", "b")
        for row in gradebook.rows_for(lab, record(name), make_result("conv2d"), False)
    ]
    gradebook.write(tmp_path / "one.csv", rows)
    gradebook.write(tmp_path / "two.csv", list(reversed(rows)))
    assert (tmp_path / "one.csv").read_bytes() == (tmp_path / "two.csv").read_bytes()
    assert (tmp_path / "one.csv").read_bytes().count(b"\r\n") == 4


def _did_not_compile() -> Result:
    result = make_result("matmul-naive", ("width-100",))
    result.status, result.score = Status.ERROR, 0.0
    result.compile = CompileInfo(ok=False, log="k.cu(3): error: expected a ';'", arch="sm_90")
    result.diagnostics = [Diagnostic(Kind.COMPILE_ERROR, "k.cu:3: expected a ';'")]
    return result


def _not_graded() -> Result:
    lab = labs.get("matmul-naive")
    cases = casegen.cases_for(lab, None)
    reason = "Grading took longer than 60 s and was stopped."
    return not_graded(lab, "k.cu", reason, Kind.TIMEOUT, ("cpu", "CPU"), cases, False, False)


def test_a_kernel_that_did_not_compile_and_one_nobody_graded_are_told_apart():
    """A TA filtering on not_graded finds exactly the submissions that need a person, and
    the summary counts what the status column says."""
    lab = labs.get("matmul-naive")
    results = {
        "ann": make_result("matmul-naive"),
        "bob": make_result("matmul-naive", ("width-100",)),
        "cy": _did_not_compile(),
        "dee": _not_graded(),
    }
    rows = [
        r
        for name, res in results.items()
        for r in gradebook.rows_for(lab, record(name), res, False)
    ]
    statuses = {r["student"]: r["status"] for r in table(rows)}
    assert statuses == {
        "ann": "passed", "bob": "failed", "cy": "compile_error", "dee": "not_graded"
    }  # fmt: skip
    assert [str(points.standing(r)) for r in results.values()] == list(statuses.values())
    counts = summary.counts(rows)
    found = Counter(statuses.values())
    assert (counts.passed, counts.failed, counts.compile_errors, counts.errors) == (
        found["passed"], found["failed"], found["compile_error"], found["not_graded"]
    )  # fmt: skip
    assert table(rows)[3]["reason"] == "Grading took longer than 60 s and was stopped."
