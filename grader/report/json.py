"""The JSON report: `Result.to_json()` as a file, and `result_from_json`, its exact inverse,
for batch grading that re-reads report.json files.

Strict JSON has no NaN or infinity, yet a never-written output poisoned with NaN makes
`got` NaN. Such values are written as the strings "NaN", "Infinity" and "-Infinity" (the
schema allows them where a measured value may be one) and read back as floats."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from grader import schema
from grader.errors import GraderError
from grader.model.profile import (
    Counted,
    Profile,
    Roofline,
    RooflinePoint,
)
from grader.model.result import (
    Advice,
    CaseResult,
    Cause,
    CompileInfo,
    Diagnostic,
    ErrorMap,
    KernelResources,
    LaunchMacros,
    Mismatch,
    Performance,
    ProfileReport,
    Result,
    Status,
    Visibility,
)

# The compile keys that restate one kernel's resources at the top of the section.
_FLAT_KEYS = ("registers", "shared_bytes", "local_bytes", "spill_bytes")
_NON_FINITE = {"NaN": math.nan, "Infinity": math.inf, "-Infinity": -math.inf}


class ReportFormatError(GraderError):
    """A file that should be a grader JSON report is not one."""


def _strict(value: Any) -> Any:
    """`value` with every non-finite float replaced by its string spelling."""
    if isinstance(value, float) and not math.isfinite(value):
        return "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")
    if isinstance(value, dict):
        return {key: _strict(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_strict(item) for item in value]
    return value


def to_dict(result: Result) -> dict[str, Any]:
    """The report object exactly as written: the contract, in strict JSON values."""
    return _strict(result.to_json())


def render(result: Result) -> str:
    return json.dumps(to_dict(result), indent=2, allow_nan=False) + "\n"


def _measure(value: float | str | None) -> float | None:
    if value is None:
        return None
    return _NON_FINITE[value] if isinstance(value, str) else float(value)


def _flat(info: CompileInfo, kernel: str) -> dict[str, Any]:
    report = info.to_json(kernel)
    return {key: report[key] for key in _FLAT_KEYS}


def _compile(data: dict[str, Any]) -> tuple[CompileInfo, str | None]:
    """The compile section, and which kernel its top-level resources describe: the report
    flattens that kernel's resources, so the first kernel whose own entry matches them is
    the one that re-creates the same report."""
    kernels = {name: KernelResources(**res) for name, res in data["kernels"].items()}
    info = CompileInfo(ok=data["ok"], log=data["log"], kernels=kernels, arch=data.get("arch"))
    flat = {key: data[key] for key in _FLAT_KEYS}
    main = next((name for name in kernels if _flat(info, name) == flat), None)
    if main is None and kernels:
        raise ValueError(f"compile resources {flat} match none of the kernels")
    return info, main


def _mismatch(data: dict[str, Any] | None) -> Mismatch | None:
    if data is None:
        return None
    return Mismatch(
        index=tuple(data["index"]), expected=_measure(data["expected"]), got=_measure(data["got"])
    )


def _case(data: dict[str, Any]) -> CaseResult:
    return CaseResult(
        name=data["name"],
        visibility=Visibility(data["visibility"]),
        sizes=dict(data["sizes"]),
        status=Status(data["status"]),
        max_abs_error=_measure(data["max_abs_error"]),
        mismatches=data["mismatches"],
        first_mismatch=_mismatch(data.get("first_mismatch")),
        hint=data.get("hint"),
        diagnostics=[Diagnostic.from_json(d) for d in data["diagnostics"]],
        output=data.get("output", ""),
        seconds=data.get("seconds", 0.0),
        hint_kind=data.get("hint_kind"),
        error_map=ErrorMap.from_json(data["error_map"]) if data.get("error_map") else None,
    )


def _performance(data: dict[str, Any] | None) -> Performance | None:
    if data is None:
        return None
    return Performance(
        student_ms=data["student_ms"],
        reference_ms=data["reference_ms"],
        speedup=data["speedup"],
        spread=data["spread"],
        score=data["score"],
        max_score=data["max_score"],
        sizes=dict(data.get("sizes", {})),
        rounds=data.get("rounds", 0),
        note=data.get("note", ""),
    )


def _profile(data: dict[str, Any] | None) -> Profile | None:
    return Profile.from_json(data) if data is not None else None


def _point(data: dict[str, Any]) -> RooflinePoint:
    return RooflinePoint(data["ms"], data["flops"], data["bytes"], Counted(data["counted"]))


def _roofline(data: dict[str, Any] | None) -> Roofline | None:
    if data is None:
        return None
    return Roofline(
        peak_flops=data["peak_flops"],
        peak_bytes=data["peak_bytes"],
        student=_point(data["student"]),
        reference=_point(data["reference"]),
    )


def _profile_report(data: dict[str, Any] | None) -> ProfileReport | None:
    if data is None:
        return None
    return ProfileReport(
        student=_profile(data["student"]),
        reference=_profile(data["reference"]),
        advice=[
            Advice(cause=Cause(a["cause"]), message=a["message"], cost=a["cost"])
            for a in data["advice"]
        ],
        roofline=_roofline(data["roofline"]),
    )


def _launch(data: dict[str, Any] | None) -> LaunchMacros | None:
    if data is None:
        return None
    return LaunchMacros(
        values=dict(data["values"]), defined=list(data["defined"]), warnings=list(data["warnings"])
    )


def result_from_json(data: dict[str, Any]) -> Result:
    """The Result a report object describes: `result_from_json(d).to_json()` equals `d`
    (non-finite values in either spelling). What the report leaves out (per-round timing
    samples, total seconds) stays at its default. Raises ReportFormatError."""
    if isinstance(data, dict) and data.get("schema_version") != schema.version(schema.REPORT):
        raise ReportFormatError(
            f"This is not a grader report of schema version {schema.version(schema.REPORT)} "
            f"(its schema_version is {data.get('schema_version', 'missing')}); grade the "
            "submission again to update it."
        )
    try:
        compile_info, kernel = _compile(data["compile"])
        return Result(
            lab=data["lab"],
            submission=data["submission"],
            backend=data["backend"],
            device=data["device"],
            status=Status(data["status"]),
            score=data["score"],
            max_score=data["max_score"],
            compile=compile_info,
            cases=[_case(c) for c in data["cases"]],
            performance=_performance(data["performance"]),
            diagnostics=[Diagnostic.from_json(d) for d in data["diagnostics"]],
            notes=list(data.get("notes", [])),
            hidden_not_run=data.get("hidden_cases_not_run", 0),
            elsewhere={str(k): float(v) for k, v in data.get("points_elsewhere", {}).items()},
            kernel=kernel,
            grader_version=data.get("grader_version", ""),
            source=data.get("source", ""),
            launch=_launch(data.get("launch")),
            profile=_profile_report(data["profile"]),
        )
    except (KeyError, TypeError, ValueError, AttributeError) as error:
        raise ReportFormatError(f"This is not a grader report: {error}.") from error


def read(path: Path) -> Result:
    """The Result of a report.json file. Raises ReportFormatError with the file named."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
        raise ReportFormatError(f"Could not read the report {path}: {error}.") from error
    try:
        return result_from_json(data)
    except ReportFormatError as error:
        raise ReportFormatError(f"{path}: {error}") from error
