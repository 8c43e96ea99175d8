"""The "why this speed" section as every renderer draws it: who profiled which case, the
measures of the student's and the reference's profiles side by side, and the roofline's
numbers. Each helper restates what Result.profile holds; the sentences are the advice's
own (grader.judge.why)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from grader.judge import speed_model
from grader.judge.rules import case_phrase
from grader.judge.why import figure, share
from grader.model.profile import Counted, Profile, Roofline, RooflinePoint, Source
from grader.model.result import ProfileReport
from grader.report import common

WHO = {Source.CPU_MODEL: "the CPU model", Source.NSIGHT_COMPUTE: "Nsight Compute"}
TITLE = "Why this speed"


@dataclass(frozen=True)
class Row:
    """One measure: its name, the student's value and the reference's, as text."""

    label: str
    student: str
    reference: str


Measure = Callable[[Profile], str | None]


def _traffic(kind: str, conflicts: bool = False) -> Measure:
    def measure(profile: Profile) -> str | None:
        traffic = profile.total(kind)
        value = traffic.conflicts_per_request if conflicts else traffic.per_request
        return None if value is None else figure(value)

    return measure


def _number(read: Callable[[Profile], float | None], shown: Callable[[float], str]) -> Measure:
    def measure(profile: Profile) -> str | None:
        value = read(profile)
        return None if value is None else shown(value)

    return measure


def _count(field: str) -> Measure:
    def measure(profile: Profile) -> str | None:
        total = sum(getattr(k, field) for k in profile.kernels)
        return str(total) if total else None

    return measure


def _constant(profile: Profile) -> str | None:
    requests = profile.total("constant_loads").requests
    return str(requests) if requests else None


def _flops(profile: Profile) -> str | None:
    ratio = profile.flops_per_byte
    return figure(ratio) if ratio and profile.useful_flops else None


def _imbalance(profile: Profile) -> float | None:
    """The busiest block's loads against its share on the model's GPU (speed_model.SMS)."""
    return profile.block_imbalance(speed_model.SMS)


MEASURES: tuple[tuple[str, Measure], ...] = (
    ("global loads: sectors per request", _traffic("global_loads")),
    ("global stores: sectors per request", _traffic("global_stores")),
    ("shared loads: bank conflicts per request", _traffic("shared_loads", conflicts=True)),
    ("shared stores: bank conflicts per request", _traffic("shared_stores", conflicts=True)),
    ("global bytes per output element", _number(lambda p: p.global_bytes_per_output, figure)),
    ("FLOPs per global byte", _flops),
    ("atomics on global memory", _count("global_atomics")),
    ("atomics on shared memory", _count("shared_atomics")),
    ("constant-memory requests", _constant),
    ("busiest thread's share of global loads", _number(lambda p: p.busiest_thread_share, share)),
    ("busiest block's global loads, times an even share", _number(_imbalance, figure)),
    ("idle lanes in memory requests", _number(lambda p: p.idle_lane_share, share)),
)


def _occupancy(profile: Profile | None, kernel: str) -> str:
    kernels = profile.kernels if profile else []
    found = next((k.occupancy for k in kernels if k.kernel == kernel), None)
    if found is None:
        return "-"
    held = f"{found.warps_per_sm}/{found.max_warps_per_sm} warps per SM ({found.limiter})"
    return held if found.registers_counted else f"at most {held}, registers not counted"


def rows(report: ProfileReport) -> list[Row]:
    """Each measure either profile has, student and reference; "-" where one lacks it."""
    student, reference = report.student, report.reference
    found = []
    for label, measure in MEASURES:
        mine = measure(student)
        theirs = measure(reference) if reference else None
        if mine is not None or theirs is not None:
            found.append(Row(label, mine or "-", theirs or "-"))
    kernels = [k.kernel for k in student.kernels]
    for name in kernels:
        mine, theirs = _occupancy(student, name), _occupancy(reference, name)
        if (mine, theirs) != ("-", "-"):
            label = "occupancy" if len(kernels) == 1 else f"occupancy of {name}"
            found.append(Row(label, mine, theirs))
    return found


def profiled(report: ProfileReport) -> str:
    """Which case was profiled and who measured: "case width-64 (Width=64), measured by
    the CPU model"."""
    student, reference = report.student, report.reference
    who = WHO[student.source]
    if reference and reference.source != student.source:
        who += f" (the reference's by {WHO[reference.source]})"
    sizes = f" ({common.sizes(student.sizes)})" if student.sizes else ""
    case = case_phrase(student.case) + sizes
    return f"{case}, measured by {who}"


def notes(report: ProfileReport) -> list[str]:
    """What could not be measured, and why: each profile's note, and a missing reference."""
    found = [f"Your kernel: {report.student.note}"] if report.student.note else []
    if report.reference is None:
        found.append("The reference could not be profiled, so nothing is compared.")
    elif report.reference.note:
        found.append(f"The reference: {report.reference.note}")
    return found


# Whose bytes a roofline point counts, in a report's words.
COUNTED = {
    Counted.DRAM: "bytes at DRAM, counted by Nsight Compute",
    Counted.REQUESTED: "global bytes requested, an upper estimate",
    Counted.LEAST: "the least global bytes, each input read and each output written once",
}


def _point(name: str, point: RooflinePoint) -> str:
    intensity = point.intensity
    at = f" at {figure(intensity)} FLOP/byte" if intensity and point.flops else ""
    return f"{name} {figure(point.gflops)} GFLOP/s{at}, {figure(point.gbps)} GB/s"


def roofline(line: Roofline) -> str:
    """The roofline in one sentence: both points and the GPU's two ceilings."""
    points = [_point("yours", line.student), _point("the reference's", line.reference)]
    counted = dict.fromkeys(COUNTED[p.counted] for p in (line.student, line.reference))
    return (
        f"Roofline: {'; '.join(points)}; this GPU's ceilings {figure(line.peak_gbps)} GB/s "
        f"and {figure(line.peak_gflops)} GFLOP/s ({'; '.join(counted)})."
    )


@dataclass(frozen=True)
class Section:
    """The section's parts, in the order every format shows them."""

    profiled: str
    rows: list[Row]
    notes: list[str]
    advice: list[str]
    roofline: str | None

    def lines(self) -> list[str]:
        """The whole section as plain lines, for the formats without tables (JUnit,
        Gradescope)."""
        table = [f"{r.label}: yours {r.student}, the reference's {r.reference}" for r in self.rows]
        line = [self.roofline] if self.roofline else []
        return [f"{TITLE}: {self.profiled}", *table, *self.notes, *self.advice, *line]


def section(report: ProfileReport) -> Section:
    return Section(
        profiled=profiled(report),
        rows=rows(report),
        notes=notes(report),
        advice=[a.message for a in report.advice],
        roofline=roofline(report.roofline) if report.roofline else None,
    )
