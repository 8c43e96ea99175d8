"""The student's source with the lines that diagnostics name marked, each with what was
found there, for the HTML report. A long file is shown as windows around the marked
lines. The text is the student's: the template escapes it, and control characters are
shown as escapes here as everywhere else (common.printable)."""

from __future__ import annotations

from dataclasses import dataclass, field

from grader.model.result import Diagnostic, Result
from grader.report import common

MAX_LINES = 400  # a file this long is shown whole
CONTEXT = 6  # lines kept around each marked line of a longer file
LINE_WIDTH = 300


@dataclass(frozen=True)
class Note:
    kind: str
    message: str


@dataclass
class Line:
    number: int
    text: str
    notes: list[Note] = field(default_factory=list)


@dataclass
class Source:
    lines: list[Line | None]  # None stands for lines left out
    beyond: list[tuple[int, Note]]  # findings on lines past the end of the file
    marked: int


def _notes(result: Result) -> dict[int, list[Note]]:
    """Findings by line: the build's and every case's, one of each kind on a line (the
    same access past the end, found by another thread in each case, is one finding), with
    how many more there were."""
    found: dict[int, dict[str, list[Diagnostic]]] = {}
    for diag in result.all_diagnostics():
        if diag.line is not None:
            found.setdefault(diag.line, {}).setdefault(str(diag.kind), []).append(diag)
    return {
        line: [Note(kind, _message(same[0]) + _more(len(same) - 1)) for kind, same in kinds.items()]
        for line, kinds in found.items()
    }


def _more(count: int) -> str:
    return f" (and {count} more like it, in other cases)" if count else ""


def _message(diag: Diagnostic) -> str:
    where = ", ".join(
        part
        for part in (
            f"thread {common.triple(diag.thread)}" if diag.thread else "",
            f"block {common.triple(diag.block)}" if diag.block else "",
        )
        if part
    )
    return diag.message + (f" ({where})" if where else "")


def _shown(count: int, marked: set[int]) -> list[int | None]:
    """Line numbers to show, with None where lines are left out."""
    if count <= MAX_LINES:
        return list(range(1, count + 1))
    keep = sorted(
        {n for m in marked for n in range(m - CONTEXT, m + CONTEXT + 1) if 1 <= n <= count}
    ) or list(range(1, MAX_LINES + 1))
    shown: list[int | None] = []
    previous = 0
    for n in keep:
        shown += [n] if n == previous + 1 else [None, n]
        previous = n
    return shown + ([None] if previous != count else [])


def annotate(result: Result) -> Source | None:
    """The annotated source, or None when the report holds no source."""
    if not result.source:
        return None
    texts = common.printable(result.source).rstrip("\n").split("\n")
    notes = _notes(result)
    inside = {n for n in notes if n <= len(texts)}
    beyond = [(n, note) for n, found in sorted(notes.items()) if n not in inside for note in found]
    lines = [
        None if n is None else Line(n, common.cut(texts[n - 1], LINE_WIDTH), notes.get(n, []))
        for n in _shown(len(texts), inside)
    ]
    return Source(lines, beyond, len(inside))
