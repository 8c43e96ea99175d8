"""gradebook.csv: one row per student, the same bytes for the same results.

Columns, in order:
  student, name, email    who (Gradescope's SID or email, a GitHub login, or the file or
                          folder name; name and email when the export had them)
  submission              the student's folder under students/ (shared by a group)
  score, max              points, as plain decimals
  cases                   all | public only: what the scores count (a batch run with
                          --public-only, without the secret, leaves the hidden cases' points
                          out of both)
  status                  passed | failed | compile_error (graded, 0 points: it did not
                          compile, or the lab cannot launch it) | not_graded (a person must
                          look: the reason says why); the summary counts the same
  speedup                 reference time / student time, on a GPU; empty elsewhere
  diagnostics             the kinds found, space separated (out_of_bounds timeout ...)
  reason                  why, for compile_error and not_graded
  public/<case> ...       points of each case, then `speed` when speed was graded

It is UTF-8 CSV with one header row (RFC 4180), which is what Canvas's and Gradescope's
grade imports read: both let the TA pick the column that identifies the student and the
column that holds the score. Text that a spreadsheet would run as a formula is quoted."""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass, field
from pathlib import Path

from grader.batch.state import Record
from grader.course import points
from grader.model.lab import Lab
from grader.model.result import Result, Status

FIXED = (
    "student",
    "name",
    "email",
    "submission",
    "score",
    "max",
    "cases",
    "status",
    "speedup",
    "diagnostics",
    "reason",
)
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")
ALL, PUBLIC_ONLY = "all", "public only"  # the cases column


@dataclass
class Row:
    student: str
    name: str
    email: str
    submission: str
    score: float
    max: float
    status: str
    speedup: float | None
    diagnostics: list[str]
    reason: str
    cases: str = ALL  # or PUBLIC_ONLY
    parts: dict[str, float] = field(default_factory=dict)


def reason_of(record: Record, result: Result) -> str:
    if record.reason:
        return record.reason
    if result.status != Status.ERROR:
        return ""
    first = result.all_diagnostics()
    if first:
        return first[0].message
    hints = [c.hint for c in result.cases if c.hint]
    return hints[0] if hints else ""


def rows_for(lab: Lab, record: Record, result: Result, hidden_run: bool) -> list[Row]:
    """One row for each student the submission belongs to (a group shares its result).
    `hidden_run`: the batch had the secret."""
    kinds = sorted({str(d.kind) for d in result.all_diagnostics()})
    perf = result.performance
    split = {p.name: p.points for p in points.parts(lab, result, hidden_run)}
    return [
        Row(
            student=person.id,
            name=person.name,
            email=person.email,
            submission=record.id,
            score=result.score,
            max=result.max_score,
            cases=PUBLIC_ONLY if points.hidden_left_out(lab, hidden_run) else ALL,
            status=str(points.standing(result)),
            speedup=perf.speedup if perf and perf.speedup else None,
            diagnostics=kinds,
            reason=reason_of(record, result),
            parts=split,
        )
        for person in record.people
    ]


def part_columns(rows: list[Row]) -> list[str]:
    """Every case column in the order the gradings list them, speed last."""
    seen: dict[str, None] = {}
    for row in rows:
        seen.update(dict.fromkeys(name for name in row.parts if name != points.SPEED))
    columns = list(seen)
    if any(points.SPEED in row.parts for row in rows):
        columns.append(points.SPEED)
    return columns


def number(value: float) -> str:
    return f"{round(value, 4):g}"


def cell(text: str) -> str:
    """A text cell a spreadsheet shows as text: student-chosen names can start with '='."""
    return f"'{text}" if text.startswith(_FORMULA_START) else text


def render(rows: list[Row]) -> str:
    rows = sorted(rows, key=lambda r: (r.student, r.submission))
    extra = part_columns(rows)
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\r\n")
    writer.writerow([*FIXED, *extra])
    for row in rows:
        writer.writerow(
            [
                cell(row.student),
                cell(row.name),
                cell(row.email),
                cell(row.submission),
                number(row.score),
                number(row.max),
                row.cases,
                row.status,
                f"{row.speedup:.3f}" if row.speedup is not None else "",
                " ".join(row.diagnostics),
                cell(" ".join(row.reason.split())),  # one line, for every importer
                *(number(row.parts.get(name, 0.0)) for name in extra),
            ]
        )
    return out.getvalue()


def write(path: Path, rows: list[Row]) -> None:
    Path(path).write_text(render(rows), encoding="utf-8", newline="")
