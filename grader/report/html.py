"""The HTML report: one self-contained file (inline CSS and SVG, no scripts, no external
assets) that a student can open or a TA can attach. Compile logs and printf output are the
student's text, so the template autoescapes everything, and every text it prints is made
printable (common.environment)."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from pathlib import Path

import jinja2

from grader.model.result import Performance, Result
from grader.report import annotate, common, maps

JINJA = Path(__file__).parent / "jinja"

# The timing chart, in SVG user units: the plot area, and the room left for axis labels.
WIDTH, HEIGHT = 560, 200
LEFT, RIGHT, TOP, BOTTOM = 64, 16, 16, 32
BAR_HEIGHT, BAR_GAP, BAR_LABEL = 22, 10, 96


@dataclass(frozen=True)
class Series:
    """One polyline of the per-round chart, already in SVG coordinates."""

    label: str
    points: str


@dataclass(frozen=True)
class Bar:
    label: str
    y: float
    width: float
    ms: float


@dataclass(frozen=True)
class Tick:
    y: float
    ms: float


@dataclass(frozen=True)
class Chart:
    """Per-round times when the samples are known, else bars of the two medians (a report
    re-read from JSON has no samples). Everything is in SVG coordinates already, so the
    template only draws."""

    width: int
    height: int
    series: list[Series]
    ticks: list[Tick]
    bars: list[Bar]
    rounds: int
    left: int = LEFT
    right: int = WIDTH - RIGHT
    bottom: int = HEIGHT - BOTTOM
    bar_x: int = BAR_LABEL
    bar_height: int = BAR_HEIGHT


def _y(ms: float, top_ms: float) -> float:
    return TOP + (HEIGHT - TOP - BOTTOM) * (1 - ms / top_ms)


def _series(label: str, samples: list[float], top_ms: float) -> Series:
    step = (WIDTH - LEFT - RIGHT) / max(1, len(samples) - 1)
    points = " ".join(f"{LEFT + i * step:.1f},{_y(ms, top_ms):.1f}" for i, ms in enumerate(samples))
    return Series(label, points)


def _rounds_chart(perf: Performance) -> Chart:
    top_ms = max(*perf.student_samples, *perf.reference_samples) * 1.1 or 1.0
    series = [
        _series("student", perf.student_samples, top_ms),
        _series("reference", perf.reference_samples, top_ms),
    ]
    ticks = [Tick(_y(ms, top_ms), ms) for ms in (0.0, top_ms / 2, top_ms)]
    rounds = max(len(perf.student_samples), len(perf.reference_samples))
    return Chart(WIDTH, HEIGHT, series, ticks, [], rounds)


def _median_chart(perf: Performance) -> Chart:
    top_ms = max(perf.student_ms, perf.reference_ms) or 1.0
    usable = WIDTH - 2 * BAR_LABEL - RIGHT  # a name before each bar, its value after
    bars = [
        Bar(label, TOP + i * (BAR_HEIGHT + BAR_GAP), usable * ms / top_ms, ms)
        for i, (label, ms) in enumerate(
            (("student", perf.student_ms), ("reference", perf.reference_ms))
        )
    ]
    height = TOP + 2 * (BAR_HEIGHT + BAR_GAP)
    return Chart(WIDTH, height, [], [], bars, 0)


def chart(perf: Performance) -> Chart:
    # a line needs two rounds; with fewer, the medians say as much
    if len(perf.student_samples) > 1 and len(perf.reference_samples) > 1:
        return _rounds_chart(perf)
    return _median_chart(perf)


@cache  # batch grading renders hundreds of reports from the same compiled template
def _environment() -> jinja2.Environment:
    env = common.environment(JINJA)
    env.filters.update(
        location=common.location,
        mismatch=common.mismatch,
        mismatch_count=common.mismatch_count,
        printable=common.printable,
        byte_count=common.byte_count,
        svg_map=maps.svg_map,
    )
    return env


def render(result: Result) -> str:
    template = _environment().get_template("report.html.j2")
    return template.render(
        r=result,
        findings=common.findings(result),
        score=common.score(result),
        chart=chart(result.performance) if result.performance else None,
        build_diagnostics=common.build_diagnostics(result),
        other_diagnostics=common.other_diagnostics(result),
        passed=sum(c.passed for c in result.cases),
        source=annotate.annotate(result),
    )
