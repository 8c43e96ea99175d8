"""summary.html: the whole batch on one self-contained page (inline CSS and SVG, no
scripts): a histogram of scores, the distribution of speedups, the most common causes
(hint families) with links to the submissions that have them, the most common
diagnostics, the submissions that could not be graded, the most similar pairs of
submissions (grader.batch.similar), and a row per submission linking its report. Charts
are laid out here in SVG coordinates; the template only draws."""

from __future__ import annotations

import bisect
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import jinja2

from grader.batch.gradebook import Row
from grader.batch.similar import SimilarReport
from grader.model.result import Result
from grader.report.common import environment

JINJA = Path(__file__).parent / "jinja"
WIDTH, HEIGHT = 640, 200
LEFT, RIGHT, TOP, BOTTOM = 40, 8, 16, 40
SCORE_BINS = 10  # by tenths of the maximum
SPEEDUP_EDGES = (0.25, 0.5, 0.75, 1.0, 1.25, 1.5, 2.0)


@dataclass(frozen=True)
class Bar:
    label: str
    count: int
    x: float
    y: float
    width: float
    height: float


@dataclass(frozen=True)
class Chart:
    bars: list[Bar]
    top: int  # the largest count, the y axis's end
    width: int = WIDTH
    height: int = HEIGHT
    left: int = LEFT
    baseline: int = HEIGHT - BOTTOM
    top_y: int = TOP


def chart(labels: list[str], counts: list[int]) -> Chart:
    top = max(counts, default=0) or 1
    slot = (WIDTH - LEFT - RIGHT) / max(1, len(counts))
    plot = HEIGHT - TOP - BOTTOM
    bars = [
        Bar(label, n, LEFT + i * slot + 2, TOP + plot * (1 - n / top), slot - 4, plot * n / top)
        for i, (label, n) in enumerate(zip(labels, counts, strict=True))
    ]
    return Chart(bars, top)


def score_chart(rows: list[Row]) -> Chart:
    counts = [0] * SCORE_BINS
    for row in rows:
        share = row.score / row.max if row.max else 0.0
        counts[min(SCORE_BINS - 1, int(share * SCORE_BINS))] += 1
    step = 100 // SCORE_BINS
    labels = [f"{i * step}-{(i + 1) * step}%" for i in range(SCORE_BINS)]
    return chart(labels, counts)


def speedup_chart(speedups: list[float]) -> Chart:
    counts = [0] * (len(SPEEDUP_EDGES) + 1)
    for value in speedups:
        counts[bisect.bisect_right(SPEEDUP_EDGES, value)] += 1
    labels = [f"<{SPEEDUP_EDGES[0]:g}x"]
    labels += [f"{a:g}-{b:g}x" for a, b in zip(SPEEDUP_EDGES, SPEEDUP_EDGES[1:], strict=False)]
    labels.append(f"≥{SPEEDUP_EDGES[-1]:g}x")
    return chart(labels, counts)


def _groups(rows: list[Row]) -> dict[str, list[Row]]:
    """Each submission's rows (a group's members share one result), in order of
    submission, then student."""
    members: dict[str, list[Row]] = {}
    for row in sorted(rows, key=lambda r: (r.submission, r.student)):
        members.setdefault(row.submission, []).append(row)
    return members


def by_submission(rows: list[Row]) -> list[Row]:
    """One row per submission: its first student's."""
    return [group[0] for group in _groups(rows).values()]


@dataclass(frozen=True)
class Counts:
    """How a batch went, counted once for every place that says it: by submission (a
    group's members share one), so passed + failed + errors == submissions."""

    submissions: int
    students: int
    passed: int
    failed: int  # graded with failures, a kernel that did not compile among them
    errors: int  # could not be graded (Result.graded)


def ungraded(row: Row) -> bool:
    """A submission that could not be graded; one that did not compile was graded."""
    return row.status == "error" and not row.graded


def counts(rows: list[Row]) -> Counts:
    statuses = Counter("ungraded" if ungraded(r) else r.status for r in by_submission(rows))
    return Counts(
        submissions=sum(statuses.values()),
        students=len({r.student for r in rows}),
        passed=statuses["passed"],
        failed=statuses["failed"] + statuses["error"],
        errors=statuses["ungraded"],
    )


def common_diagnostics(rows: list[Row]) -> list[tuple[str, int]]:
    counts = Counter(kind for row in rows for kind in row.diagnostics)
    return sorted(counts.items(), key=lambda item: (-item[1], item[0]))


# -- the class view: causes across submissions -------------------------------------------


# What a TA reads for each hint family; a family missing here reads as its identifier.
CAUSE_TITLES = {
    "last_partial_tile": "only the last partial tile wrong",
    "partial_tile_fault": "out of bounds in the last partial tile",
    "ghost_border": "ghost cells wrong (a border as wide as the mask radius)",
    "truncated_sum": "tile loop stops before the last partial tile",
    "transposed": "output transposed",
    "swapped": "operands exchanged",
    "mask_rearranged": "mask flipped or its axes exchanged",
    "shifted": "output shifted (halo offset)",
    "pitch_ignored": "row pitch ignored",
    "nothing_written": "nothing written",
    "partly_unwritten": "part of the output never written",
    "square_only": "two sizes exchanged (right only when they are equal)",
    "cubic_only": "sizes in the wrong order (right only for cubes)",
    "macro_only": "right only for some values of a macro the grader sets",
    "sanitizer_found": "right by luck (the sanitizer saw undefined behaviour)",
}


@dataclass(frozen=True)
class Cause:
    """A hint family (grader.judge.hints.kind_of) and the submissions whose cases got one."""

    kind: str
    example: str  # one of its hints, as a student read it
    submissions: list[str]

    @property
    def title(self) -> str:
        return CAUSE_TITLES.get(self.kind, self.kind.replace("_", " "))


def families(result: Result) -> list[str]:
    """The hint families of a submission's cases, in case order, each once."""
    return list(dict.fromkeys(c.hint_kind for c in result.cases if c.hint_kind))


def causes(results: Mapping[str, Result]) -> list[Cause]:
    """Every hint family in the class, the most common first, counted by submission."""
    found: dict[str, dict[str, str]] = {}
    for submission, result in sorted(results.items()):
        for case in result.cases:
            if case.hint_kind and case.hint:
                found.setdefault(case.hint_kind, {}).setdefault(submission, case.hint)
    ranked = sorted(found.items(), key=lambda item: (-len(item[1]), item[0]))
    return [Cause(kind, next(iter(by.values())), list(by)) for kind, by in ranked]


@dataclass(frozen=True)
class Submission:
    """One row of the submissions table: the first student's gradebook row stands for
    the group."""

    row: Row
    students: list[Row]
    families: list[str]
    failing: int
    cases: int


def submissions(rows: list[Row], results: Mapping[str, Result]) -> list[Submission]:
    found = []
    for submission, group in _groups(rows).items():
        result = results.get(submission)
        cases = result.cases if result else []
        found.append(
            Submission(
                group[0],
                group,
                families(result) if result else [],
                sum(not c.passed for c in cases),
                len(cases),
            )
        )
    return found


@cache
def _environment() -> jinja2.Environment:
    return environment(JINJA)


def render(
    lab: str,
    rows: list[Row],
    backend: str,
    shards: list[str],
    results: Mapping[str, Result] | None = None,
    similar: SimilarReport | None = None,
) -> str:
    """The page for `rows` (all students), `results` (each submission's Result, by
    submission id) and the most `similar` pairs; links point into students/ and similar/
    beside it."""
    results = results or {}
    graded = by_submission(rows)
    speedups = [r.speedup for r in graded if r.speedup is not None]
    return (
        _environment()
        .get_template("summary.html.j2")
        .render(
            lab=lab,
            backend=backend,
            shards=shards,
            counts=counts(rows),
            scores=score_chart(graded),
            speedups=speedup_chart(speedups) if speedups else None,
            speedup_count=len(speedups),
            diagnostics=common_diagnostics(graded),
            errors=[r for r in graded if ungraded(r)],
            causes=causes(results),
            table=submissions(rows, results),
            similar=similar,
        )
    )


def write(
    path: Path,
    lab: str,
    rows: list[Row],
    backend: str,
    shards: list[str],
    results: Mapping[str, Result] | None = None,
    similar: SimilarReport | None = None,
) -> None:
    page = render(lab, rows, backend, shards, results, similar)
    Path(path).write_text(page, encoding="utf-8")
