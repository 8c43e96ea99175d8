"""The terminal summary: what a student reads after `grader check`, in one screen.

Colour is a presentation choice made by the caller (`use_color`); the text is the same
either way, so tests and pipes see exactly what a tty sees, minus the escapes."""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TextIO

from grader.model.result import CaseResult, Diagnostic, Kind, Performance, Result, Status
from grader.report import common, maps, measures
from grader.report.wrap import wrap

OUTPUT_LINES = 8  # printf lines shown per case; the file reports keep the rest
LOG_LINES = 12  # compiler log lines shown when the build failed: its first errors
DETAILED_CASES = 5  # failing cases explained in full; the table lists them all

_CODES = {"bold": "1", "dim": "2", "red": "31", "green": "32", "yellow": "33", "magenta": "35"}
_STATUS_STYLE = {
    Status.PASSED: "green",
    Status.FAILED: "red",
    Status.ERROR: "magenta",
    Status.TIMEOUT: "yellow",
}


def use_color(stream: TextIO, mode: str = "auto") -> bool:
    """Whether to colour `stream`: "always", "never", or "auto" (a tty, unless NO_COLOR is
    set or the terminal is dumb, as no-color.org asks; any stream when FORCE_COLOR is set,
    as force-color.org asks, NO_COLOR winning over it)."""
    if mode != "auto":
        return mode == "always"
    if os.environ.get("NO_COLOR"):
        return False
    if os.environ.get("FORCE_COLOR"):
        return True
    return os.environ.get("TERM") != "dumb" and hasattr(stream, "isatty") and stream.isatty()


def painter(enabled: bool) -> Callable[..., str]:
    """`paint(text, *styles)` for other commands' output: the text in bold, red, green,
    yellow, magenta or dim where `enabled`, else as it is."""
    return _Paint(enabled)


@dataclass(frozen=True)
class _Paint:
    enabled: bool
    unicode: bool = True  # block characters in the error map, else ASCII

    def __call__(self, text: str, *styles: str) -> str:
        if not self.enabled or not styles:
            return text
        codes = ";".join(_CODES[s] for s in styles)
        return f"\x1b[{codes}m{text}\x1b[0m"

    def status(self, status: Status, text: str | None = None) -> str:
        return self(text or str(status), _STATUS_STYLE[status], "bold")


def _table(rows: list[list[str]], paint_cells: Iterable[list[str]]) -> list[str]:
    """Rows padded to column widths measured on the plain text, then the painted cells
    substituted, so escapes never skew the alignment."""
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    lines = []
    for row, painted in zip(rows, paint_cells, strict=True):
        cells = [p + " " * (w - len(c)) for c, p, w in zip(row, painted, widths, strict=True)]
        lines.append("  " + "  ".join(cells).rstrip())
    return lines


def _header(result: Result, paint: _Paint) -> list[str]:
    return [
        f"{paint(result.lab, 'bold')}  {result.submission}",
        paint(f"backend {result.backend}, device {result.device}", "dim"),
    ]


def _compile(result: Result, paint: _Paint, verbose: bool = False) -> list[str]:
    info = result.compile
    arch = f" ({info.arch})" if info.arch else ""
    state = paint("ok", "green", "bold") if info.ok else paint("FAILED", "red", "bold")
    lines = ["", f"{paint('Compile', 'bold')}  {state}{arch}"]
    lines += [f"  {name}: {common.resources(res)}" for name, res in info.kernels.items()]
    if result.launch:
        lines.append(f"  launch: {common.launch(result.launch)}")
        lines += [f"  {paint('warning', 'yellow', 'bold')}: {w}" for w in result.launch.warnings]
    if (verbose or not info.ok) and _compiler_said(result):
        # the compiler's first errors as it wrote them, each with its line and a caret
        shown, left = common.excerpt(info.log, 10**6 if verbose else LOG_LINES)
        lines += [f"  | {line}" for line in shown]
        if left:
            lines.append(paint(f"  ... {left} more lines in the compile log (-v shows it)", "dim"))
    return lines


def _compiler_said(result: Result) -> bool:
    """Whether the compile log holds a compiler's words, not only the sentences of the
    compile_error findings listed under Diagnostics (a build refused before compiling)."""
    log = result.compile.log.strip()
    own = "\n".join(d.message for d in result.diagnostics if d.kind == Kind.COMPILE_ERROR)
    return bool(log) and log != own.strip() and not log.startswith("not compiled:")


def _diagnostics(result: Result, paint: _Paint) -> list[str]:
    """The findings in the reports' order (common.findings), less the compile errors that
    the log under Compile shows as the compiler wrote them."""
    log = result.compile.log if not result.compile.ok and _compiler_said(result) else ""
    shown = [d for d in common.findings(result) if not _in_log(d, log)]
    if not shown:
        return []
    return ["", paint("Diagnostics", "bold")] + [f"  - {common.diagnostic(d)}" for d in shown]


def _in_log(finding: Diagnostic, log: str) -> bool:
    """Whether `finding` is a compile error the log says in the compiler's words, on the
    first LOG_LINES lines that the terminal shows."""
    if finding.kind != Kind.COMPILE_ERROR or finding.line is None or not log:
        return False
    said = finding.message.split(": ", 1)[-1]
    return said in "\n".join(log.splitlines()[:LOG_LINES])


def _cases(result: Result, paint: _Paint) -> list[str]:
    if not result.cases:
        return []
    passed = sum(c.passed for c in result.cases)
    title = f"{paint('Cases', 'bold')}  {passed} of {len(result.cases)} passed"
    header = ["case", "visibility", "sizes", "status", "max error", "mismatches"]
    rows, painted = [header], [[paint(h, "dim") for h in header]]
    for case in result.cases:
        row = [
            case.name,
            case.visibility,
            common.sizes(case.sizes),
            str(case.status),
            common.number(case.max_abs_error),
            str(case.mismatches),
        ]
        rows.append(row)
        painted.append([*row[:3], paint.status(case.status), *row[4:]])
    return ["", title, *_table(rows, painted)]


def _case_details(case: CaseResult, paint: _Paint, names: list[str], said: set[str]) -> list[str]:
    """`case`'s details, under the names of every case that had the same to say; a reason
    already listed under Diagnostics (a case that could not run) is not said again."""
    shown = ", ".join(paint(name, "bold") for name in names)
    lines = [f"  {shown} ({case.visibility}): {paint.status(case.status)}"]
    details = common.case_details(case)
    if details == [f"hint: {case.hint}"] and case.hint in said:
        details = ["not run, for the finding under Diagnostics above"]
    lines += [f"    {line}" for line in details]
    if case.output:
        shown, left = common.excerpt(case.output, OUTPUT_LINES)
        lines.append("    printf output:")
        lines += [f"    | {line}" for line in shown]
        if left:
            lines.append(paint(f"    ... {left} more lines", "dim"))
    return lines


def _error_map(case: CaseResult, paint: _Paint) -> list[str]:
    drawn = maps.text_map(case.error_map, paint.unicode, paint if paint.enabled else None)
    return [f"    {line}" for line in drawn]


def _details(result: Result, paint: _Paint) -> list[str]:
    failing = [c for c in result.cases if not c.passed]
    shown = failing[:DETAILED_CASES]
    mapped = next((c for c in failing if c.error_map), None)  # the first map only
    # printf output of every passing case would bury the failures; one excerpt shows the
    # student their output works, the file reports hold the rest
    if not any(c.output for c in shown):
        shown += [c for c in result.cases if c.passed and c.output][:1]
    if not shown:
        return []
    lines = ["", paint("Details", "bold")]
    said = {d.message for d in result.diagnostics}
    for case, names in _alike(shown):
        lines += _case_details(case, paint, names, said)
        if case is mapped:
            lines += _error_map(case, paint)
    rest = [c.name for c in failing[DETAILED_CASES:]]
    if rest:
        lines.append(f"  ... and {len(rest)} more failing: {', '.join(rest)}")
    return lines


def _alike(cases: list[CaseResult]) -> list[tuple[CaseResult, list[str]]]:
    """Consecutive cases with the same visibility, status and details as one, with the
    names of all of them: a kernel that could not run says so once, not once per case."""
    groups: list[tuple[CaseResult, list[str]]] = []
    for case in cases:
        if groups and _same_details(groups[-1][0], case):
            groups[-1][1].append(case.name)
        else:
            groups.append((case, [case.name]))
    return groups


def _same_details(a: CaseResult, b: CaseResult) -> bool:
    """Whether `b` says what `a` says; a case with an error map stands alone."""
    if a.error_map is not None or b.error_map is not None:
        return False
    same = (a.visibility, a.status, a.output) == (b.visibility, b.status, b.output)
    return same and common.case_details(a) == common.case_details(b)


def _performance_line(perf: Performance) -> str:
    return (
        f"student {common.number(perf.student_ms)} ms, "
        f"reference {common.number(perf.reference_ms)} ms, "
        f"speedup {common.speedup(perf.speedup)}, spread {common.percent(perf.spread)}, "
        f"{common.points(perf.score)}/{common.points(perf.max_score)} points"
    )


def _performance(result: Result, paint: _Paint) -> list[str]:
    perf = result.performance
    if perf is None:
        why = " (see the notes)" if result.notes else ""
        return ["", f"{paint('Performance', 'bold')}  not timed{why}", *_why(result, paint)]
    lines = ["", paint("Performance", "bold"), f"  {_performance_line(perf)}"]
    if perf.sizes or perf.rounds:
        lines.append(paint(f"  at {common.sizes(perf.sizes)}, {perf.rounds} rounds", "dim"))
    if perf.note:
        lines.append(f"  {perf.note}")
    return lines + _why(result, paint)


TABLE_COLUMNS = 80  # the why table only where it fits the narrowest common terminal


def _why(result: Result, paint: _Paint) -> list[str]:
    """Why this speed, under Performance: the measures side by side, then the advice."""
    if result.profile is None:
        return []
    why = measures.section(result.profile)
    lines = [f"  {paint(measures.TITLE, 'bold')}: {why.profiled}"]
    header = ["measure", "yours", "reference"]
    rows = [header] + [[r.label, r.student, r.reference] for r in why.rows]
    table = _table(rows, [[paint(h, "dim") for h in header]] + rows[1:]) if why.rows else []
    if max((len(line) for line in _table(rows, rows)), default=0) + 2 <= TABLE_COLUMNS:
        lines += [f"  {line}" for line in table]
    else:  # too wide for a terminal's columns: a measure to a line, which wraps cleanly
        lines += [f"    {r.label}: {r.student} (reference: {r.reference})" for r in why.rows]
    lines += [f"  {paint(note, 'dim')}" for note in why.notes]
    lines += [f"  - {advice}" for advice in why.advice]
    return lines + ([f"  {why.roofline}"] if why.roofline else [])


def _notes(result: Result, paint: _Paint, verbose: bool = False) -> list[str]:
    notes = [*result.notes, *(result.details if verbose else [])]
    if not notes:
        return []
    return ["", paint("Notes", "bold")] + [f"  - {note}" for note in notes]


def score_line(result: Result, color: bool = False) -> str:
    """The score, and what of the lab's total it leaves to the course: "Score 3/3 on the
    public cases; 7 more points are graded by the course (4 hidden, 3 speed)"."""
    result = common.printable_result(result)
    paint = _Paint(color)
    line = f"{paint('Score', 'bold')} {paint.status(result.status, common.score(result))}"
    if not result.elsewhere:
        return line
    where = " on the public cases" if "hidden" in result.elsewhere else ""
    more = common.points(sum(result.elsewhere.values()))
    parts = ", ".join(f"{common.points(p)} {part}" for part, p in result.elsewhere.items())
    return f"{line}{where}; {more} more points are graded by the course ({parts})"


def width(stream: TextIO) -> int | None:
    """The columns to wrap `stream`'s text to: a terminal's width; else None, no wrapping,
    so that a CI log or a file keeps each finding on one line for grep and for the
    viewer, which wraps to its own width. (COLUMNS alone is no terminal: pytest-xdist's
    workers, for one, have it set to 80.)"""
    if hasattr(stream, "isatty") and stream.isatty():
        return shutil.get_terminal_size().columns
    return None


def stage_times(steps: list[tuple[str, float]], total: float) -> str:
    """-v's line of the seconds each step of a check took."""
    told = ", ".join(f"{name} {seconds:.1f} s" for name, seconds in steps)
    return f"Steps: {told}; the grading {total:.1f} s\n"


def use_unicode(stream: TextIO) -> bool:
    """Whether `stream` can take the error map's block characters."""
    try:
        text = "".join([*maps.GLYPHS[True].values(), *maps.TICKS[True]])
        text.encode(getattr(stream, "encoding", None) or "ascii")
    except (LookupError, UnicodeEncodeError):
        return False
    return True


def render(
    result: Result,
    color: bool = False,
    unicode: bool = True,
    columns: int | None = None,
    verbose: bool = False,
) -> str:
    """The whole summary, ending with the score line and a newline, each line wrapped to
    `columns` (None: not wrapped). The submission's text (its name, compiler messages,
    printf output) is made printable first: only the summary's own colours reach the
    terminal as escapes. `verbose` adds the whole compile log and the run's details."""
    result = common.printable_result(result)
    paint = _Paint(color, unicode)
    lines = [
        *_header(result, paint),
        *_compile(result, paint, verbose),
        *(
            line
            for part in (_diagnostics, _cases, _details, _performance)
            for line in part(result, paint)
        ),
        *_notes(result, paint, verbose),
    ]
    return wrap("\n".join([*lines, "", score_line(result, color)]), columns) + "\n"
