"""The terminal summary: what a student reads after `grader check`, in one screen.

Colour is a presentation choice made by the caller (`use_color`); the text is the same
either way, so tests and pipes see exactly what a tty sees, minus the escapes."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TextIO

from grader.model.result import CaseResult, Kind, Performance, Result, Status
from grader.report import common, maps

OUTPUT_LINES = 8  # printf lines shown per case; the file reports keep the rest
LOG_LINES = 20  # compiler log lines shown when the build failed
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


def _compile(result: Result, paint: _Paint) -> list[str]:
    info = result.compile
    arch = f" ({info.arch})" if info.arch else ""
    state = paint("ok", "green", "bold") if info.ok else paint("FAILED", "red", "bold")
    lines = ["", f"{paint('Compile', 'bold')}  {state}{arch}"]
    lines += [f"  {name}: {common.resources(res)}" for name, res in info.kernels.items()]
    if result.launch:
        lines.append(f"  launch: {common.launch(result.launch)}")
        lines += [f"  {paint('warning', 'yellow', 'bold')}: {w}" for w in result.launch.warnings]
    # compile_error diagnostics already say the log's errors on the student's own lines
    explained = any(d.kind == Kind.COMPILE_ERROR for d in result.diagnostics)
    if not info.ok and info.log.strip() and not explained:
        shown, left = common.excerpt(info.log, LOG_LINES)
        lines += [f"  | {line}" for line in shown]
        if left:
            lines.append(paint(f"  ... {left} more lines in the compile log", "dim"))
    return lines


def _diagnostics(result: Result, paint: _Paint) -> list[str]:
    if not result.diagnostics:
        return []
    return ["", paint("Diagnostics", "bold")] + [
        f"  - {common.diagnostic(d)}" for d in common.findings(result)
    ]


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
        return ["", f"{paint('Performance', 'bold')}  not timed{why}"]
    lines = ["", paint("Performance", "bold"), f"  {_performance_line(perf)}"]
    if perf.sizes or perf.rounds:
        lines.append(paint(f"  at {common.sizes(perf.sizes)}, {perf.rounds} rounds", "dim"))
    if perf.note:
        lines.append(f"  {perf.note}")
    return lines


def _notes(result: Result, paint: _Paint) -> list[str]:
    if not result.notes:
        return []
    return ["", paint("Notes", "bold")] + [f"  - {note}" for note in result.notes]


def score_line(result: Result, color: bool = False) -> str:
    result = common.printable_result(result)
    paint = _Paint(color)
    return f"{paint('Score', 'bold')} {paint.status(result.status, common.score(result))}"


def use_unicode(stream: TextIO) -> bool:
    """Whether `stream` can take the error map's block characters."""
    try:
        text = "".join([*maps.GLYPHS[True].values(), *maps.TICKS[True]])
        text.encode(getattr(stream, "encoding", None) or "ascii")
    except (LookupError, UnicodeEncodeError):
        return False
    return True


def render(result: Result, color: bool = False, unicode: bool = True) -> str:
    """The whole summary, ending with the score line and a newline. The submission's text
    (its name, compiler messages, printf output) is made printable first: only the
    summary's own colours reach the terminal as escapes."""
    result = common.printable_result(result)
    paint = _Paint(color, unicode)
    sections = (_header, _compile, _diagnostics, _cases, _details, _performance, _notes)
    lines = [line for section in sections for line in section(result, paint)]
    return "\n".join([*lines, "", score_line(result, color)]) + "\n"
