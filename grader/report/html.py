"""The HTML report: one self-contained file (inline CSS and SVG, no scripts, no external
assets) that a student can open or a TA can attach. Compile logs and printf output are the
student's text, so the template autoescapes everything, and every text it prints is made
printable (common.environment)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import jinja2

from grader.judge.why import figure
from grader.model.profile import Roofline, RooflinePoint
from grader.model.result import Performance, Result
from grader.report import annotate, common, maps, measures

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


@dataclass(frozen=True)
class Dot:
    """A kernel's point on the roofline, in SVG coordinates."""

    label: str  # "student" or "reference", its class
    x: float
    y: float
    text: str


@dataclass(frozen=True)
class Level:
    """A kernel's bandwidth as a bar against the GPU's, for a lab that counts no FLOPs."""

    label: str
    y: float
    width: float
    text: str


@dataclass(frozen=True)
class Mark:
    """An axis tick: where, and its label."""

    at: float
    text: str


@dataclass(frozen=True)
class RooflineChart:
    """The roofline, log-log: attainable GFLOP/s against FLOPs per byte, the roof of the
    GPU's bandwidth and FP32 ceilings and a dot for each kernel; for a lab without FLOPs,
    bars of the bandwidth each achieved against the GPU's. All in SVG coordinates."""

    width: int
    height: int
    roof: str
    dots: list[Dot]
    xticks: list[Mark]
    yticks: list[Mark]
    levels: list[Level]
    left: int = LEFT
    right: int = WIDTH - RIGHT
    top: int = TOP
    bottom: int = HEIGHT - BOTTOM
    bar_x: int = BAR_LABEL
    bar_height: int = BAR_HEIGHT


def _points(line: Roofline) -> list[tuple[str, RooflinePoint]]:
    return [("student", line.student), ("reference", line.reference)]


def _decades(values: list[float]) -> tuple[int, int]:
    """The powers of ten around `values`, at least one decade apart."""
    low = math.floor(math.log10(min(values)))
    return low, max(low + 1, math.ceil(math.log10(max(values))))


def _place(value: float, decades: tuple[int, int], start: float, end: float) -> float:
    low, high = decades
    return start + (end - start) * (math.log10(value) - low) / (high - low)


def _ticks(decades: tuple[int, int], start: float, end: float) -> list[Mark]:
    return [
        Mark(_place(10.0**p, decades, start, end), figure(10.0**p))
        for p in range(decades[0], decades[1] + 1)
    ]


def _log_chart(line: Roofline, points: list[tuple[str, RooflinePoint]]) -> RooflineChart:
    ridge = line.peak_gflops / line.peak_gbps
    xs = _decades([ridge, *(p.intensity for _, p in points)])
    ys = _decades([line.peak_gflops, *(p.gflops for _, p in points)])
    floor_x = max(10.0 ** xs[0], 10.0 ** ys[0] / line.peak_gbps)  # where the roof enters

    def at(x: float, y: float) -> tuple[float, float]:
        return _place(x, xs, LEFT, WIDTH - RIGHT), _place(y, ys, HEIGHT - BOTTOM, TOP)

    corners = [(floor_x, floor_x * line.peak_gbps), (ridge, line.peak_gflops)]
    corners.append((10.0 ** xs[1], line.peak_gflops))
    roof = " ".join("{:.1f},{:.1f}".format(*at(x, y)) for x, y in corners if x <= 10.0 ** xs[1])
    dots = [
        Dot(label, *at(p.intensity, p.gflops), f"{figure(p.gflops)} GFLOP/s") for label, p in points
    ]
    xticks = _ticks(xs, LEFT, WIDTH - RIGHT)
    return RooflineChart(WIDTH, HEIGHT, roof, dots, xticks, _ticks(ys, HEIGHT - BOTTOM, TOP), [])


def _bandwidth_chart(line: Roofline, points: list[tuple[str, RooflinePoint]]) -> RooflineChart:
    usable = WIDTH - 2 * BAR_LABEL - RIGHT
    levels = [
        Level(
            label,
            TOP + i * (BAR_HEIGHT + BAR_GAP),
            usable * min(1.0, p.gbps / line.peak_gbps),
            f"{figure(p.gbps)} of {figure(line.peak_gbps)} GB/s",
        )
        for i, (label, p) in enumerate(points)
    ]
    height = TOP + len(levels) * (BAR_HEIGHT + BAR_GAP)
    return RooflineChart(WIDTH, height, "", [], [], [], levels)


def roofline_chart(line: Roofline) -> RooflineChart:
    """The roofline with both points; bandwidth bars where a point has no FLOPs or bytes
    (a log axis has no place for 0)."""
    points = _points(line)
    if all(p.gflops > 0 and p.gbps > 0 for _, p in points):
        return _log_chart(line, points)
    return _bandwidth_chart(line, points)


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
    profile = result.profile
    return template.render(
        r=result,
        findings=common.findings(result),
        score=common.score(result),
        chart=chart(result.performance) if result.performance else None,
        build_diagnostics=common.build_diagnostics(result),
        other_diagnostics=common.other_diagnostics(result),
        passed=sum(c.passed for c in result.cases),
        source=annotate.annotate(result),
        why=measures.section(profile) if profile else None,
        why_title=measures.TITLE,
        roofline=roofline_chart(profile.roofline) if profile and profile.roofline else None,
    )
