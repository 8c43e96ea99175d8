"""Renderers of one Result: terminal, HTML, Markdown, JSON and JUnit. Each module has a
`render(result) -> str`; `write_reports` writes the file formats."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from grader.errors import GraderError
from grader.files import write_atomically
from grader.report import html as html_report
from grader.report import json as json_report
from grader.report import junit as junit_report
from grader.report import markdown as markdown_report
from grader.result import Result


class ReportWriteError(GraderError):
    """A report could not be written where the command line asked."""


# the file formats: their option name, their name in a sentence, and their renderer
FORMATS: dict[str, tuple[str, Callable[[Result], str]]] = {
    "json": ("JSON", json_report.render),
    "html": ("HTML", html_report.render),
    "junit": ("JUnit", junit_report.render),
    "markdown": ("Markdown", markdown_report.render),
}


def write_reports(
    result: Result,
    json: Path | str | None = None,
    html: Path | str | None = None,
    junit: Path | str | None = None,
    markdown: Path | str | None = None,
) -> list[Path]:
    """Write each report whose path is given, creating its folder, through a temporary
    file (batch grading re-reads report.json), and never through a link or over a device.
    Returns the paths written. Raises ReportWriteError naming the report and the reason."""
    targets = {"json": json, "html": html, "junit": junit, "markdown": markdown}
    written = []
    for name, target in targets.items():
        if target is None:
            continue
        label, render = FORMATS[name]
        path = Path(target)
        try:
            write_atomically(path, render(result))
        except OSError as error:
            reason = error.strerror or str(error)
            message = f"Could not write the {label} report to {path}: {reason}."
            raise ReportWriteError(message) from error
        written.append(path)
    return written
