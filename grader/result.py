"""The one result model of a grading. Every renderer (terminal, HTML, Markdown, JSON,
JUnit, Gradescope, gradebook) reads these dataclasses; none of them adds to it.

`Result.to_json()` is the JSON report contract of DESIGN.md, key for key."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from enum import StrEnum
from typing import Any

from grader.errors import ExitCode


class Kind(StrEnum):
    """Diagnostic kinds: the design's eleven, and OUTPUT for a flood of printf output."""

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


class Status(StrEnum):
    PASSED = "passed"
    FAILED = "failed"
    ERROR = "error"
    TIMEOUT = "timeout"


Dim3 = tuple[int, int, int]


@dataclass
class Diagnostic:
    """One finding about the student's kernel, phrased as a sentence for the student."""

    kind: Kind
    message: str
    kernel: str | None = None
    thread: Dim3 | None = None
    block: Dim3 | None = None
    line: int | None = None

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


@dataclass
class KernelResources:
    """What ptxas (or the CPU build) says one kernel uses."""

    registers: int | None = None
    shared_bytes: int = 0
    local_bytes: int = 0
    spill_stores: int = 0
    spill_loads: int = 0
    constant_bytes: int = 0


@dataclass
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


@dataclass
class Mismatch:
    index: tuple[int, ...]
    expected: float
    got: float | None  # None when the element is NaN

    def to_json(self) -> dict[str, Any]:
        return {"index": list(self.index), "expected": self.expected, "got": self.got}


@dataclass
class CaseResult:
    name: str
    visibility: str  # "public" | "hidden"
    sizes: dict[str, int]
    status: Status
    max_abs_error: float | None = None
    mismatches: int = 0
    first_mismatch: Mismatch | None = None
    hint: str | None = None
    diagnostics: list[Diagnostic] = field(default_factory=list)
    output: str = ""  # the kernel's printf output, capped
    seconds: float = 0.0

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
        }


@dataclass
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


@dataclass
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
    kernel: str | None = None
    grader_version: str = ""
    seconds: float = 0.0

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
        return {
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
            "diagnostics": [d.to_json() for d in self.diagnostics],
            "notes": list(self.notes),
            "hidden_cases_not_run": self.hidden_not_run,
            "grader_version": self.grader_version,
        }
