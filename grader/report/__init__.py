"""Renderers of one Result: terminal, HTML, Markdown, JSON and JUnit. Each module has a
`render(result) -> str`; `write_reports` writes the file formats."""

from __future__ import annotations

import os
from pathlib import Path

from grader.errors import GraderError
from grader.report import html as html_report
from grader.report import json as json_report
from grader.report import junit as junit_report
from grader.report import markdown as markdown_report
from grader.result import Result


class ReportWriteError(GraderError):
    """A report could not be written where the command line asked."""


def _write_atomically(path: Path, text: str) -> None:
    """Write through a temporary file and rename it, so a reader (batch grading re-reads
    report.json) never sees half a report."""
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(f".{path.name}.partial")
    try:
        partial.write_text(text, encoding="utf-8")
        os.replace(partial, path)
    finally:
        partial.unlink(missing_ok=True)


def write_reports(
    result: Result,
    json: Path | str | None = None,
    html: Path | str | None = None,
    junit: Path | str | None = None,
    markdown: Path | str | None = None,
) -> list[Path]:
    """Write each report whose path is given, creating its folder. Returns the paths written.
    Raises ReportWriteError naming the report and the reason."""
    wanted = (
        ("JSON", json, json_report.render),
        ("HTML", html, html_report.render),
        ("JUnit", junit, junit_report.render),
        ("Markdown", markdown, markdown_report.render),
    )
    written = []
    for label, target, render in wanted:
        if target is None:
            continue
        path = Path(target)
        try:
            _write_atomically(path, render(result))
        except OSError as error:
            reason = error.strerror or str(error)
            message = f"Could not write the {label} report to {path}: {reason}."
            raise ReportWriteError(message) from error
        written.append(path)
    return written
