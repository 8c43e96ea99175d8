"""The one result model of a grading. Every renderer (terminal, HTML, Markdown, JSON,
JUnit, Gradescope, gradebook) reads these dataclasses; none of them adds to it.

`Result.to_json()` is the JSON report contract of DESIGN.md, key for key."""

from __future__ import annotations

import re
from dataclasses import KW_ONLY, asdict, dataclass, field
from enum import StrEnum
from typing import Any

from grader import schema
from grader.errors import ExitCode
from grader.model.profile import Profile, Roofline


class Kind(StrEnum):
    """Diagnostic kinds: the design's eleven, OUTPUT for a flood of printf output, and
    TIMING for timed launches that cannot be trusted (a wrong output at the timed size,
    or a time no GPU can reach)."""

    COMPILE_ERROR = "compile_error"
    INTERFACE = "interface"
    REQUIREMENT = "requirement"
    OUT_OF_BOUNDS = "out_of_bounds"
    RACE = "race"
    BARRIER_DIVERGENCE = "barrier_divergence"
    TIMEOUT = "timeout"
    CRASH = "crash"
    UNWRITTEN_OUTPUT = "unwritten_output"
    NAN = "nan"
    RESOURCES = "resources"
    OUTPUT = "output"
    TIMING = "timing"


class Status(StrEnum):
    PASSED = "passed"
    FAILED = "failed"
    ERROR = "error"
    TIMEOUT = "timeout"


class Visibility(StrEnum):
    """Who sees a case's result: students, before the deadline (public), or only those
    shown hidden results (the course staff; on Gradescope, students after it)."""

    PUBLIC = "public"
    HIDDEN = "hidden"

    def may_name(self, other: Visibility) -> bool:
        """Whether a case of this visibility may tell of a case of `other`'s: a hidden
        case of any, a public one of public ones alone. A public case's report is shown
        before the deadline, and must say nothing of how the hidden cases went: that some
        hidden case (some size) failed or raced, which resubmitting would narrow down."""
        return other == Visibility.PUBLIC or self == Visibility.HIDDEN


class RaceScope(StrEnum):
    """What a race's finding covers, said where the race is found. Threads of a block that
    race leave the outcome to timing wherever the code runs: the finding covers every
    case. Two blocks storing into one element come from an index that goes wrong at some
    sizes only: it covers the case it shows in. Two threads of a block storing into one
    output element (STORES) cover the case they show in where every case's run looks for
    them, as the CPU backend's two thread orders do (they leave such an element different
    in each case where it happens); a GPU's lanes store in an order of its own, which may
    leave the right value at every size, so the CPU model's finding of them covers every
    case there (grader.judge.model_findings). Two runs of a case that gave different
    outputs (a GPU's) do not say which it is: they cover every case, unless the CPU
    model's run says it is blocks' (grader.judge.model_findings.placed)."""

    CASE = "case"
    EVERY_CASE = "every_case"
    STORES = "stores"
    RUNS = "runs"


Dim3 = tuple[int, int, int]


@dataclass
class Diagnostic:
    """One finding about the student's kernel, phrased as a sentence for the student."""

    kind: Kind
    message: str
    _: KW_ONLY  # the rest by name
    kernel: str | None = None
    thread: Dim3 | None = None
    block: Dim3 | None = None
    line: int | None = None
    race_scope: RaceScope | None = None  # a race's; the report leaves it out
    # a compile error for text that would hide the kernel's accesses from the checks, not
    # for a feature the backend lacks (Build.refused); the report leaves it out
    refused: bool = False

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": str(self.kind),
            "message": self.message,
            "kernel": self.kernel,
            "thread": list(self.thread) if self.thread else None,
            "block": list(self.block) if self.block else None,
            "line": self.line,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Diagnostic:
        return cls(
            kind=Kind(data["kind"]),
            message=data["message"],
            kernel=data.get("kernel"),
            thread=tuple(data["thread"]) if data.get("thread") else None,
            block=tuple(data["block"]) if data.get("block") else None,
            line=data.get("line"),
        )


@dataclass(kw_only=True)
class KernelResources:
    """What ptxas (or the CPU build) says one kernel uses."""

    registers: int | None = None
    shared_bytes: int = 0
    local_bytes: int = 0
    spill_stores: int = 0
    spill_loads: int = 0
    constant_bytes: int = 0


@dataclass(kw_only=True)
class CompileInfo:
    ok: bool
    log: str = ""
    kernels: dict[str, KernelResources] = field(default_factory=dict)
    arch: str | None = None

    def main_resources(self, kernel: str | None) -> KernelResources:
        if kernel and kernel in self.kernels:
            return self.kernels[kernel]
        return next(iter(self.kernels.values()), KernelResources())

    def to_json(self, kernel: str | None = None) -> dict[str, Any]:
        main = self.main_resources(kernel)
        return {
            "ok": self.ok,
            "log": self.log,
            "registers": main.registers,
            "shared_bytes": main.shared_bytes,
            "local_bytes": main.local_bytes,
            "spill_bytes": main.spill_stores + main.spill_loads,
            "arch": self.arch,
            "kernels": {name: asdict(res) for name, res in self.kernels.items()},
        }


@dataclass(kw_only=True)
class Mismatch:
    index: tuple[int, ...]
    expected: float
    got: float | None  # None when the element is NaN

    def to_json(self) -> dict[str, Any]:
        return {"index": list(self.index), "expected": self.expected, "got": self.got}


# -- error maps: where a case's output is wrong (built by grader.judge.errormap) -----------------

# One letter per cell class, from the least to the most severe: a cell that holds elements
# of several classes shows the most severe. "padding" is the row padding of a pitched
# output (or the tail of a wrapped 1D one), which the kernel must leave alone.
MAP_CLASSES = {
    "p": "padding",
    "r": "right",
    "w": "wrong",
    "n": "nan",
    "u": "unwritten",
    "x": "padding_written",
}
_RUN = re.compile(rf"(\d*)([{''.join(MAP_CLASSES)}])")


def encode_row(cells: str) -> str:
    """Run-length form of one row of cell letters: "rrrrww" -> "4r2w"."""
    runs = re.finditer(r"(.)\1*", cells)
    return "".join(f"{len(m[0]) if len(m[0]) > 1 else ''}{m[1]}" for m in runs)


def decode_row(text: str) -> str:
    if _RUN.sub("", text):
        raise ValueError(f"not an error-map row: {text[:40]!r}")
    return "".join(letter * int(count or 1) for count, letter in _RUN.findall(text))


@dataclass(kw_only=True)
class MapSlice:
    """One drawn plane of the output: all of a 2D output, or one z-slice of a 3D one."""

    rows: list[str]  # one letter (MAP_CLASSES) per cell, top row first
    z: int | None = None
    label: str = ""  # "first", "last", "worst inside" for the slices of a 3D output

    def to_json(self) -> dict[str, Any]:
        return {"z": self.z, "label": self.label, "rows": [encode_row(r) for r in self.rows]}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> MapSlice:
        return cls(rows=[decode_row(r) for r in data["rows"]], z=data["z"], label=data["label"])


@dataclass(kw_only=True)
class ErrorMap:
    """A failing case's output drawn as a grid of cells, each `cell` elements (y, x) of the
    buffer, classified once when the case was judged so that every renderer draws the
    same map. Rows are `columns` elements long: the output's width, then the row padding
    of a pitched buffer; a 1D output is wrapped into rows of `columns`."""

    output: str
    shape: tuple[int, ...]  # the output's logical shape, slowest axis first
    columns: int
    cell: tuple[int, int]
    tile: tuple[int, int]  # the kernel's TILE_Y, TILE_X, in elements
    counts: dict[str, int]  # elements of each class, by name
    slices: list[MapSlice]

    @property
    def width(self) -> int:
        """Elements of a drawn row that belong to the output; the rest is padding."""
        return self.shape[-1] if len(self.shape) > 1 else self.columns

    @property
    def height(self) -> int:
        """Rows of elements in a drawn plane."""
        return self.shape[-2] if len(self.shape) > 1 else -(-self.shape[0] // self.columns)

    def to_json(self) -> dict[str, Any]:
        return {
            "output": self.output,
            "shape": list(self.shape),
            "columns": self.columns,
            "cell": list(self.cell),
            "tile": list(self.tile),
            "counts": dict(self.counts),
            "slices": [s.to_json() for s in self.slices],
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> ErrorMap:
        return cls(
            output=data["output"],
            shape=tuple(data["shape"]),
            columns=data["columns"],
            cell=tuple(data["cell"]),
            tile=tuple(data["tile"]),
            counts=dict(data["counts"]),
            slices=[MapSlice.from_json(s) for s in data["slices"]],
        )


@dataclass(kw_only=True)
class CaseResult:
    name: str
    visibility: Visibility
    sizes: dict[str, int]
    status: Status
    max_abs_error: float | None = None
    mismatches: int = 0
    first_mismatch: Mismatch | None = None
    hint: str | None = None
    diagnostics: list[Diagnostic] = field(default_factory=list)
    output: str = ""  # the kernel's printf output, capped
    seconds: float = 0.0
    hint_kind: str | None = None  # the hint's family (grader.judge.hints.kind_of)
    error_map: ErrorMap | None = None

    @property
    def passed(self) -> bool:
        return self.status == Status.PASSED

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "visibility": self.visibility,
            "sizes": dict(self.sizes),
            "status": str(self.status),
            "max_abs_error": self.max_abs_error,
            "mismatches": self.mismatches,
            "first_mismatch": self.first_mismatch.to_json() if self.first_mismatch else None,
            "hint": self.hint,
            "diagnostics": [d.to_json() for d in self.diagnostics],
            "output": self.output,
            "seconds": round(self.seconds, 4),
            "hint_kind": self.hint_kind,
            "error_map": self.error_map.to_json() if self.error_map else None,
        }


@dataclass(kw_only=True)
class Performance:
    student_ms: float
    reference_ms: float
    speedup: float
    spread: float  # relative interquartile range of the per-round speedups
    score: float
    max_score: float
    sizes: dict[str, int] = field(default_factory=dict)
    rounds: int = 0
    student_samples: list[float] = field(default_factory=list)
    reference_samples: list[float] = field(default_factory=list)
    note: str = ""

    def to_json(self) -> dict[str, Any]:
        return {
            "student_ms": self.student_ms,
            "reference_ms": self.reference_ms,
            "speedup": self.speedup,
            "spread": self.spread,
            "score": self.score,
            "max_score": self.max_score,
            "sizes": dict(self.sizes),
            "rounds": self.rounds,
            "note": self.note,
        }


class Cause(StrEnum):
    """Why a kernel is slower than the reference, in the course's words: each is a gap
    on one measure of the two profiles (grader.judge.why)."""

    UNCOALESCED = "uncoalesced"  # global loads or stores
    GLOBAL_TRAFFIC = "global_traffic"  # more global bytes per output: no tiling, no reuse
    BANK_CONFLICTS = "bank_conflicts"  # shared loads or stores
    GLOBAL_ATOMICS = "global_atomics"  # where the reference privatises in shared memory
    DIVERGENCE = "divergence"  # idle lanes in the warps' requests
    OCCUPANCY = "occupancy"
    BUSIEST_THREAD = "busiest_thread"  # the work on too few threads
    BUSIEST_BLOCK = "busiest_block"  # one block's work far past the others'
    MASK_IN_GLOBAL = "mask_in_global"  # a mask read from global, not constant, memory


@dataclass(kw_only=True)
class Advice:
    """One sentence of "why this speed": a gap to the reference on one measure, with its
    numbers and the fix, and what it costs by grader.judge.speed_model."""

    cause: Cause
    message: str
    cost: float  # the time the gap costs, as a multiple of the reference's memory work

    def to_json(self) -> dict[str, Any]:
        return {"cause": str(self.cause), "message": self.message, "cost": self.cost}


@dataclass(kw_only=True)
class ProfileReport:
    """Why this speed: the student's and the reference's memory profiles on the lab's
    profile case, the advice drawn from them, and on a GPU the roofline."""

    student: Profile
    reference: Profile | None = None  # None where the reference could not be profiled
    advice: list[Advice] = field(default_factory=list)
    roofline: Roofline | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "student": self.student.to_json(),
            "reference": self.reference.to_json() if self.reference else None,
            "advice": [a.to_json() for a in self.advice],
            "roofline": self.roofline.to_json() if self.roofline else None,
        }


@dataclass(kw_only=True)
class LaunchMacros:
    """The launch the grader used: BLOCK_X .. TILE_Z, which of them the submission defines
    (the rest are the grader's defaults), and sizes in its code the launch does not match."""

    values: dict[str, int]
    defined: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {
            "values": dict(self.values),
            "defined": list(self.defined),
            "warnings": list(self.warnings),
        }


@dataclass(kw_only=True)
class Result:
    lab: str
    submission: str
    backend: str
    device: str
    status: Status
    score: float
    max_score: float
    compile: CompileInfo
    cases: list[CaseResult] = field(default_factory=list)
    performance: Performance | None = None
    diagnostics: list[Diagnostic] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    hidden_not_run: int = 0
    # points of the lab's total that only the course grades, by part ("hidden" where the
    # hidden cases did not run, "speed" where speed was not scored): the terminal's score
    # line says them, so that 3/3 on the public cases never reads as full marks
    elsewhere: dict[str, float] = field(default_factory=dict)
    # what -v shows of how the grading ran (the sandbox's layers), beside the notes
    details: list[str] = field(default_factory=list)
    kernel: str | None = None
    grader_version: str = ""
    seconds: float = 0.0
    source: str = ""  # the submission's text, for the annotated source of the HTML report
    launch: LaunchMacros | None = None
    profile: ProfileReport | None = None  # why this speed, where the kernel was profiled

    @property
    def graded(self) -> bool:
        """Whether this is a verdict on the kernel: any status but error, or an error a
        compiler found (it did not compile, or the lab cannot launch what it built), as
        `grader check` says with exit code 1. Not one where nothing was compiled: a file
        refused before that, or a grading stopped or lost."""
        return self.status != Status.ERROR or self.compile.arch is not None

    @property
    def exit_code(self) -> int:
        return ExitCode.OK if self.status == Status.PASSED else ExitCode.FAILED

    def all_diagnostics(self) -> list[Diagnostic]:
        """Top-level diagnostics, then each case's, without repeats."""
        seen: set[tuple] = set()
        out: list[Diagnostic] = []
        for diag in [*self.diagnostics, *(d for c in self.cases for d in c.diagnostics)]:
            key = (diag.kind, diag.message)
            if key not in seen:
                seen.add(key)
                out.append(diag)
        return out

    def to_json(self) -> dict[str, Any]:
        launch = {"launch": self.launch.to_json()} if self.launch else {}
        return {
            "schema_version": schema.version(schema.REPORT),
            "lab": self.lab,
            "submission": self.submission,
            "backend": self.backend,
            "device": self.device,
            "status": str(self.status),
            "score": round(self.score, 3),
            "max_score": round(self.max_score, 3),
            "compile": self.compile.to_json(self.kernel),
            "cases": [c.to_json() for c in self.cases],
            "performance": self.performance.to_json() if self.performance else None,
            "profile": self.profile.to_json() if self.profile else None,
            "diagnostics": [d.to_json() for d in self.diagnostics],
            "notes": list(self.notes),
            "hidden_cases_not_run": self.hidden_not_run,
            "points_elsewhere": dict(self.elsewhere),
            "grader_version": self.grader_version,
            "source": self.source,
            **launch,
        }
