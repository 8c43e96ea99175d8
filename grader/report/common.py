"""Phrases every renderer shares, so a case reads the same in the terminal, HTML, Markdown
and JUnit. Each helper only restates what the Result holds; none adds information."""

from __future__ import annotations

import dataclasses
import math
import unicodedata
from pathlib import Path
from typing import TYPE_CHECKING, Any

import markupsafe

if TYPE_CHECKING:
    import jinja2

from grader.model.result import (
    CaseResult,
    Diagnostic,
    KernelResources,
    Kind,
    LaunchMacros,
    Mismatch,
    Result,
    Status,
    Visibility,
)

# Text from the submission (compiler output, #error text, printf output, file names) may
# hold terminal escapes, or bidi overrides and zero-width characters that make a line read
# other than it is. Shown as text, every character that is not printable, except newline,
# tab and spaces, is written as its escape (\x1b, \u202e).
_KEPT = frozenset("\n\t")

# Diagnostics about the build rather than a run: they fail the "compile" step.
BUILD_KINDS = frozenset({"compile_error", "interface", "requirement", "resources"})


def printable(text: str) -> str:
    """`text` safe for a terminal or a page: controls, format characters (bidi overrides,
    zero-width ones), line separators, surrogates and unassigned characters escaped."""
    text = text.replace("\r\n", "\n")
    if text.replace("\n", "").replace("\t", "").isprintable():  # the usual case, at C speed
        return text
    return "".join(_escape(c) if _hidden(c) else c for c in text)


def _hidden(char: str) -> bool:
    # isprintable() is False for every separator but the ASCII space; other spaces (the
    # ideographic space of a Chinese comment) are shown as they are
    return not (char.isprintable() or char in _KEPT or unicodedata.category(char) == "Zs")


def _escape(char: str) -> str:
    code = ord(char)
    if code < 0x100:
        return f"\\x{code:02x}"
    return f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


def printable_result(value: Any) -> Any:
    """A copy of `value` (a Result, or any part of one) with every text in it printable, for
    the renderers that show text as it is (the terminal)."""
    if type(value) is str:  # not a StrEnum: a status stays a status
        return printable(value)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        fields = dataclasses.fields(value)
        return dataclasses.replace(
            value, **{f.name: printable_result(getattr(value, f.name)) for f in fields if f.init}
        )
    if isinstance(value, list | tuple):
        return type(value)(printable_result(v) for v in value)
    if isinstance(value, dict):
        return {printable_result(k): printable_result(v) for k, v in value.items()}
    return value


def cut(line: str, width: int) -> str:
    """`line`, ending in "…" where it is longer than `width` characters, `width` in all."""
    return line if len(line) <= width else line[: width - 1] + "…"


def excerpt(text: str, max_lines: int, width: int = 200) -> tuple[list[str], int]:
    """The first `max_lines` lines of `text`, each cut to `width`, and how many lines were left
    out."""
    lines = printable(text).rstrip("\n").splitlines()
    return [cut(line, width) for line in lines[:max_lines]], max(0, len(lines) - max_lines)


def number(value: float | None, digits: int = 4) -> str:
    """A measured value, short, with NaN and infinity spelled out."""
    if value is None:
        return "-"
    if math.isnan(value):
        return "NaN"
    return f"{value:.{digits}g}"


def points(value: float) -> str:
    """Points as people write them: 7.5, 10, 2.33."""
    return f"{round(value, 2):g}"


def score(result: Result) -> str:
    return f"{points(result.score)}/{points(result.max_score)}"


def sizes(values: dict[str, int]) -> str:
    return " ".join(f"{name}={value}" for name, value in values.items())


def triple(values: tuple[int, ...] | None) -> str:
    return "(" + ",".join(str(v) for v in values) + ")" if values else ""


def index(values: tuple[int, ...]) -> str:
    return "[" + ", ".join(str(v) for v in values) + "]"


def mismatch_count(count: int) -> str:
    return f"{count} mismatch" if count == 1 else f"{count} mismatches"


def mismatch(first: Mismatch) -> str:
    # grading reports a NaN element (never written, or computed) as got None
    got = "NaN" if first.got is None else number(first.got, 7)
    return (
        f"first mismatch at {index(first.index)}: "
        # float32 has about 7 significant digits; fewer could print a mismatch as equal values
        f"expected {number(first.expected, 7)}, got {got}"
    )


def location(diag: Diagnostic) -> str:
    """Where a diagnostic happened: "kernel matmul, line 12, thread (3,0,0), block (32,0,0)"."""
    parts = []
    if diag.kernel:
        parts.append(f"kernel {diag.kernel}")
    if diag.line is not None:
        parts.append(f"line {diag.line}")
    if diag.thread:
        parts.append(f"thread {triple(diag.thread)}")
    if diag.block:
        parts.append(f"block {triple(diag.block)}")
    return ", ".join(parts)


def diagnostic(diag: Diagnostic) -> str:
    where = location(diag)
    return f"{diag.kind}: {diag.message}" + (f" ({where})" if where else "")


def byte_count(value: int) -> str:
    return f"{value} B" if value < 1024 else f"{value / 1024:.1f} KiB"


def resources(res: KernelResources) -> str:
    regs = "? registers" if res.registers is None else f"{res.registers} registers"
    text = f"{regs}, {byte_count(res.shared_bytes)} shared"
    if res.local_bytes:
        text += f", {byte_count(res.local_bytes)} local"
    spills = res.spill_stores + res.spill_loads
    if spills:
        text += f", {byte_count(spills)} spilled"
    return text


def launch(macros: LaunchMacros) -> str:
    """The launch in one line: the block and tile, and which macros were the defaults."""
    v = macros.values
    shape = (
        f"block {v['BLOCK_X']} x {v['BLOCK_Y']} x {v['BLOCK_Z']}, "
        f"tile {v['TILE_X']} x {v['TILE_Y']} x {v['TILE_Z']}"
    )
    unset = [name for name in v if name not in macros.defined]
    if not macros.defined:
        return f"{shape}: all the grader's defaults (your file defines none of {', '.join(v)})"
    if not unset:
        return f"{shape}: all from your file"
    return (
        f"{shape}: {', '.join(macros.defined)} from your file, "
        f"the grader's defaults for {', '.join(unset)}"
    )


def case_summary(case: CaseResult) -> str:
    """One sentence for why a case did not pass: its hint, else its first mismatch, else its
    first diagnostic, else its status."""
    if case.passed:
        return "passed"
    if case.hint:
        return case.hint
    if case.first_mismatch:
        return f"{mismatch_count(case.mismatches)}; {mismatch(case.first_mismatch)}"
    if case.diagnostics:
        return diagnostic(case.diagnostics[0])
    return str(case.status)


def case_details(case: CaseResult) -> list[str]:
    """Every line a failing case has to say, in the order a student should read them."""
    lines = []
    if case.first_mismatch:
        lines.append(f"{mismatch_count(case.mismatches)}; {mismatch(case.first_mismatch)}")
    if case.hint:
        lines.append(f"hint: {case.hint}")
    lines.extend(diagnostic(d) for d in case.diagnostics)
    return lines


def stopped(result: Result) -> list[Diagnostic]:
    """Where the grading has findings of its own, what stopped the first public case whose
    run stopped (a hang, a crash), restated with the case's name: the reports give it
    before those findings, some of which it leaves unjudged (the census case is the
    smallest public one). The other cases say theirs below. A hidden case is not named
    here."""
    if not result.diagnostics:
        return []
    for case in result.cases:
        ran = case.status in (Status.TIMEOUT, Status.ERROR) and case.diagnostics
        if ran and case.visibility == Visibility.PUBLIC:
            first = case.diagnostics[0]
            return [dataclasses.replace(first, message=f"In case {case.name}: {first.message}")]
    return []


def findings(result: Result) -> list[Diagnostic]:
    """The grading's findings in the order the reports list them: what stopped a case
    first (stopped), then its own, hangs and crashes before the rest."""
    first = sorted(result.diagnostics, key=lambda d: d.kind not in STOPPING)
    return [*stopped(result), *first]


# What stops a run: it comes before what it leaves unjudged.
STOPPING = frozenset({Kind.TIMEOUT, Kind.CRASH})


def build_diagnostics(result: Result) -> list[Diagnostic]:
    return [d for d in result.diagnostics if d.kind in BUILD_KINDS]


def other_diagnostics(result: Result) -> list[Diagnostic]:
    return [d for d in result.diagnostics if d.kind not in BUILD_KINDS]


def speedup(value: float) -> str:
    return f"{value:.2f}x"


def percent(value: float) -> str:
    return f"{value * 100:.1f}%"


def _finalize(value: Any) -> Any:
    # Markup is the template's own (a macro's, a filter's), made of text already finalized
    if isinstance(value, str) and not isinstance(value, markupsafe.Markup):
        return printable(value)
    return value


def environment(folder: Path, autoescape: bool = True) -> jinja2.Environment:
    """The jinja2 settings every report template shares: strict, tidy whitespace, every
    text printed made printable, and the formatting filters every format uses."""
    import jinja2  # here: the terminal report, every check's, needs none of it (0.03-0.12 s)

    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(folder),
        autoescape=autoescape,
        finalize=_finalize,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
        undefined=jinja2.StrictUndefined,
    )
    env.filters.update(
        number=number,
        points=points,
        sizes=sizes,
        resources=resources,
        speedup=speedup,
        percent=percent,
        case_summary=case_summary,
        launch=launch,
    )
    return env
