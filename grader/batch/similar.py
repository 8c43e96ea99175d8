"""The class's similar pairs (grader.course.similarity) as pages a person reads: a table of
the most similar pairs, each linking a page that shows the two texts side by side with
the passages they share marked. The batch's summary.html holds the table, and
`grader similar` writes it as similar.html; each pair's page is similar/pair-N.html
beside it. Evidence for a person to read, never a grade.

A batch compares the texts its reports hold (each report.json's source, which the
grader read and wrote), so that one run, a resumed run and a merge of shards find the
same pairs; `grader similar` reads the submissions' files, and public solutions too."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

import jinja2

from grader import defaults, labs
from grader.course.discover import SOURCE_SUFFIX, TEMPLATE_FILE, discover
from grader.course.similarity import Comparison, Pair, Passage, common_limit, kept_names
from grader.errors import GraderError, UsageError
from grader.files import readable
from grader.model.lab import Lab
from grader.model.source import read_source
from grader.report.common import environment

JINJA = Path(__file__).parent / "jinja"
PAGES = "similar"  # the folder of pair pages, beside the table's page
TABLE = "similar.html"  # `grader similar`'s table
MAX_PUBLIC = 10_000  # files read from a folder of public solutions


@dataclass(frozen=True)
class Shown:
    """A pair in the table, and its page's path relative to the table's page."""

    pair: Pair
    page: str
    passages: int


@dataclass(frozen=True)
class Line:
    number: int
    text: str
    passage: int | None  # the shared passage it belongs to, counted from 1


@dataclass
class SimilarReport:
    """What was compared, and the pairs found."""

    lab: str
    compared: int  # submissions with a text
    public: int  # public solutions read
    common: int  # the most submissions a passage may be in and still link two of them
    threshold: float
    found: int  # pairs at the threshold or above
    shown: list[Shown]  # the most similar of them
    skipped: list[str] = field(default_factory=list)  # sentences: what was not compared
    table: Path | None = None  # similar.html, when `grader similar` wrote it


def _template(lab: Lab) -> str:
    path = lab.template_home / TEMPLATE_FILE if lab.template_home else None
    try:
        return path.read_text(encoding="utf-8", errors="replace") if path else ""
    except OSError:
        return ""  # a lab without a template: nothing to leave out


def compare(
    lab: Lab,
    submissions: Mapping[str, str],
    public: Mapping[str, str],
    threshold: float,
    pages: Path | None,
    back: str = "",
) -> SimilarReport:
    """Compare the class, with the lab's template left out of every text. With `pages`,
    write each listed pair's page into pages/similar/, replacing those of an earlier run;
    `back` is the table's page, which each links back to."""
    common = common_limit(len(submissions))
    comparison = Comparison(submissions, public, kept_names(lab), _template(lab), common)
    found = comparison.pairs(threshold)
    report = SimilarReport(
        lab.name, len(submissions), len(public), common, threshold, len(found), []
    )
    listed = found[: defaults.SIMILAR_PAIRS]
    if pages is None:
        report.shown = [Shown(p, "", len(comparison.passages(p))) for p in listed]
        return report
    folder = Path(pages) / PAGES
    folder.mkdir(parents=True, exist_ok=True)
    for old in folder.glob("pair-*.html"):
        old.unlink()
    for number, pair in enumerate(listed, 1):
        passages = comparison.passages(pair)
        page = f"pair-{number}.html"
        (folder / page).write_text(_pair_page(comparison, pair, passages, back), encoding="utf-8")
        report.shown.append(Shown(pair, f"{PAGES}/{page}", len(passages)))
    return report


def for_batch(out: Path, lab: Lab, texts: Mapping[str, str]) -> SimilarReport:
    """The batch's most similar pairs, their pages written under OUT/similar/."""
    return compare(lab, texts, {}, defaults.SIMILAR_THRESHOLD, out, back="../summary.html")


def run_similar(
    lab_name: str,
    folder: Path,
    *,
    against: Path | None = None,
    threshold: float = defaults.SIMILAR_THRESHOLD,
    out: Path | None = None,
) -> SimilarReport:
    """Compare the submissions in `folder`, with each other and with the public solutions
    in `against`; with `out`, write similar.html and the pairs' pages there."""
    lab = labs.get(lab_name)
    texts, skipped = _submissions(Path(folder))
    public, unread = public_solutions(Path(against)) if against else ({}, [])
    if out is not None:
        out.mkdir(parents=True, exist_ok=True)
    report = compare(lab, texts, public, threshold, out, back=f"../{TABLE}")
    report.skipped = skipped + unread
    if out is not None:
        report.table = out / TABLE
        report.table.write_text(_table_page(report), encoding="utf-8")
    return report


def _text(path: Path) -> tuple[str | None, str]:
    """The file's text (any encoding: what is not UTF-8 is replaced), or None and why."""
    try:
        raw, why = read_source(path)
    except GraderError as error:
        return None, str(error)
    return (None, why) if raw is None else (raw.decode("utf-8", errors="replace"), "")


def _submissions(folder: Path) -> tuple[dict[str, str], list[str]]:
    texts, skipped = {}, []
    for entry in discover(folder).entries:
        if entry.source is None:
            skipped.append(f"{entry.id}: {entry.problem}")
            continue
        text, why = _text(entry.source)
        if text is None:
            skipped.append(f"{entry.id}: {why}")
        else:
            texts[entry.id] = text
    return texts, skipped


def public_solutions(folder: Path) -> tuple[dict[str, str], list[str]]:
    """Every .cu and .cuh file under `folder`, by its path from the folder's parent, never
    through a symbolic link; and what was not read, and why."""
    if not folder.is_dir():
        raise UsageError(f"--against {folder} is not a folder of public solutions.")
    texts, skipped = {}, []
    for root, folders, files in os.walk(folder):  # os.walk follows no link to a folder
        folders.sort()
        for name in sorted(files):
            path = Path(root) / name
            if path.suffix not in (SOURCE_SUFFIX, ".cuh") or path.is_symlink():
                continue
            shown = readable(str(path.relative_to(folder.parent)))
            if len(texts) == MAX_PUBLIC:
                skipped.append(f"{shown}: more than {MAX_PUBLIC} public solutions were given")
                return texts, skipped
            text, why = _text(path)
            if text is None:
                skipped.append(f"{shown}: {why}")
            else:
                texts[shown] = text
    return texts, skipped


# -- pages -----------------------------------------------------------------------------


@cache
def _environment() -> jinja2.Environment:
    return environment(JINJA)


def lines(text: str, spans: list[tuple[int, int]]) -> list[Line]:
    """The text's lines, each with the first of the shared passages (first and last line)
    that holds it."""
    marks: list[int | None] = [None] * (text.count("\n") + 1)
    for number, (first, last) in enumerate(spans, 1):
        for index in range(first - 1, min(last, len(marks))):
            if marks[index] is None:
                marks[index] = number
    return [Line(i, t, marks[i - 1]) for i, t in enumerate(text.split("\n"), 1)]


def _pair_page(comparison: Comparison, pair: Pair, passages: list[Passage], back: str) -> str:
    sides = [
        (
            pair.first,
            pair.of_first,
            lines(comparison.texts[pair.first], [p.first for p in passages]),
        ),
        (
            pair.second,
            pair.of_second,
            lines(comparison.texts[pair.second], [p.second for p in passages]),
        ),
    ]
    return (
        _environment()
        .get_template("similar_pair.html.j2")
        .render(pair=pair, passages=passages, sides=sides, back=back)
    )


def _table_page(report: SimilarReport) -> str:
    return _environment().get_template("similar.html.j2").render(report=report)
