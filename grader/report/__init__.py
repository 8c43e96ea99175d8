"""Renderers of one Result: terminal, HTML, Markdown, JSON and JUnit. Each module has a
`render(result) -> str`; `write_reports` writes the file formats."""

from __future__ import annotations

from importlib import import_module
from pathlib import Path

from grader.errors import GraderError
from grader.files import write_atomically
from grader.model.result import Result


class ReportWriteError(GraderError):
    """A report could not be written where the command line asked."""


# the file formats: their option name (and module), their name in a sentence, and what
# the option writes. The command line lists them before it grades, so a renderer is
# imported only when its format is written.
FORMATS: dict[str, tuple[str, str]] = {
    "json": ("JSON", "the JSON report"),
    "html": ("HTML", "a self-contained HTML report"),
    "junit": ("JUnit", "JUnit XML for CI"),
    "markdown": ("Markdown", "Markdown for a CI step summary"),
}


def render(name: str, result: Result) -> str:
    """`result` in the format FORMATS calls `name`."""
    return import_module(f"{__name__}.{name}").render(result)


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
        label, _ = FORMATS[name]
        path = Path(target)
        try:
            write_atomically(path, render(name, result))
        except OSError as error:
            reason = error.strerror or str(error)
            message = f"Could not write the {label} report to {path}: {reason}."
            raise ReportWriteError(message) from error
        written.append(path)
    return written
