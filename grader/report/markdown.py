"""The Markdown report, for a CI step summary (GitHub's job summary renders it).

Markdown has no autoescape, so every piece of text from the Result passes a filter: `md`
for running text and table cells, `code` for logs and printf output in a fence that no
backtick run inside can close."""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path

import jinja2

from grader.model.result import Result
from grader.report import common, maps, measures

JINJA = Path(__file__).parent / "jinja"
OUTPUT_LINES = 40  # printf lines per case; a job summary is read, not archived
LOG_LINES = 60
MAP_LINES = 40

# CommonMark lets a backslash escape any ASCII punctuation; these are the ones that can
# start emphasis, code, links, HTML, headings or table cells anywhere in a line, and the
# line starts that would make a list item, a heading underline or an ordered list.
_SPECIAL = re.compile(r"([\\`*_{}\[\]<>#+|~])")
_LINE_START = re.compile(r"^([-=])|^(\d+)([.)])")
_STATUS_MARK = {"passed": "✅", "failed": "❌", "error": "💥", "timeout": "⏱️"}


def md(text: object) -> str:
    """Text safe inside a paragraph or a table cell: one line, punctuation escaped."""
    flat = " ".join(common.printable(str(text)).split())
    escaped = _SPECIAL.sub(r"\\\1", flat).replace("&", "&amp;")
    return _LINE_START.sub(lambda m: f"\\{m[1]}" if m[1] else f"{m[2]}\\{m[3]}", escaped)


def code(text: str, max_lines: int) -> str:
    """A fenced block of at most `max_lines` lines, and a line saying how many were cut."""
    shown, left = common.excerpt(text, max_lines, width=400)
    body = "\n".join(shown)
    longest = max((len(run) for run in re.findall(r"`+", body)), default=0)
    fence = "`" * max(3, longest + 1)
    block = f"{fence}text\n{body}\n{fence}"
    return block + (f"\n\n… {left} more lines" if left else "")


def text_map(emap) -> str:
    return "\n".join(maps.text_map(emap))


def status(value: object) -> str:
    return f"{_STATUS_MARK.get(str(value), '')} {value}".strip()


@cache  # batch grading renders hundreds of reports from the same compiled template
def _environment() -> jinja2.Environment:
    # Markdown, not HTML: the md and code filters do the escaping
    env = common.environment(JINJA, autoescape=False)
    env.filters.update(
        md=md,
        code=code,
        status=status,
        case_details=common.case_details,
        diagnostic=common.diagnostic,
        text_map=text_map,
    )
    return env


def render(result: Result) -> str:
    template = _environment().get_template("report.md.j2")
    return template.render(
        r=result,
        findings=common.findings(result),
        score=common.score(result),
        passed=sum(c.passed for c in result.cases),
        output_lines=OUTPUT_LINES,
        log_lines=LOG_LINES,
        map_lines=MAP_LINES,
        first_mapped=next((c for c in result.cases if c.error_map and not c.passed), None),
        why=measures.section(result.profile) if result.profile else None,
        why_title=measures.TITLE,
    )
