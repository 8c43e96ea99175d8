"""summary.html and the progress display."""

from __future__ import annotations

import io
import re

from batch_data import make_result
from lxml import html as lxml_html

from grader.batch import summary
from grader.batch.gradebook import Row
from grader.batch.progress import Progress
from grader.course.points import Standing
from grader.model.result import Result


def row(student: str, score: float, status: str, speedup=None, kinds=(), reason="") -> Row:
    return Row(student, "", "", student, score, 10.0, status, speedup, list(kinds), reason)


ROWS = [
    row("ann", 10, "passed", 1.1),
    row("ben", 9.5, "passed", 0.6),
    row("cat", 4, "failed", None, ["out_of_bounds", "race"]),
    row("dan", 0, "not_graded", None, ["timeout"], "Grading took longer than 60 s."),
    row("eli", 0, "compile_error", None, ["compile_error"], 'k.cu:3: expected a ";"'),
    row("<script>", 3, "failed", None, ["out_of_bounds"]),
]


def test_the_page_holds_charts_diagnostics_and_failures_and_nothing_external():
    page = summary.render("matmul-tiled", ROWS, "cuda", [])
    assert page.count("<svg") == 2
    assert 'out_of_bounds</td><td class="num">2' in page
    assert "Grading took longer than 60 s." in page
    assert 'href="students/dan/report.html"' in page
    assert "<script>" not in page and "&lt;script&gt;" in page
    assert not re.search(r"(src|href)=\"(https?:)?//", page)


def test_scores_fall_in_tenths_and_the_top_bin_holds_full_marks():
    chart = summary.score_chart(ROWS)
    counts = {bar.label: bar.count for bar in chart.bars}
    assert counts["90-100%"] == 2 and counts["40-50%"] == 1 and counts["0-10%"] == 2
    assert sum(counts.values()) == len(ROWS)


def test_without_a_gpu_the_page_says_speed_was_not_measured():
    page = summary.render("conv2d", [row("a", 7, "passed")], "cpu", [])
    assert page.count("<svg") == 1
    assert "speed is measured only on a GPU" in page


def test_progress_is_plain_lines_off_a_terminal():
    stream = io.StringIO()
    progress = Progress(stream, total=2, reused=3)
    progress.start()
    progress.graded("ann", "10/10", Standing.PASSED, 1.5)
    progress.graded("dan", "0/10", Standing.NOT_GRADED, 60.0)
    progress.finish()
    lines = stream.getvalue().splitlines()
    assert lines[0] == "3 submissions already graded; reusing their reports."
    assert lines[2] == "[1/2] ann: 10/10 passed (1.5 s)"
    assert lines[3] == "[2/2] dan: 0/10 not_graded (60.0 s)"  # the gradebook's word
    assert lines[-1].startswith("Finished 2 submissions in 0:0")
    assert lines[-1].endswith("1 could not be graded.")


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_progress_redraws_one_line_on_a_terminal():
    stream = Terminal()
    progress = Progress(stream, total=4)
    progress.start()
    progress.graded("ann", "10/10", Standing.PASSED, 1.0)
    progress.graded("dan", "0/10", Standing.NOT_GRADED, 1.0)
    text = stream.getvalue()
    assert "\r[############............] 2/4 done, 1 could not be graded, 0:0" in text
    assert "left" in text


# -- the class view ---------------------------------------------------------------------


def _graded(*families: str) -> Result:
    result = make_result("matmul-naive", failing=("width-100", "width-256")[: len(families)])
    for case, kind in zip((c for c in result.cases if not c.passed), families, strict=True):
        case.hint_kind = kind
        case.hint = f"A hint of the {kind} family <b>."
    return result


def test_causes_are_hint_families_ranked_by_submissions_with_links():
    results = {
        "ann": _graded("last_partial_tile"),
        "ben": _graded("last_partial_tile", "ghost_border"),
        "cat": _graded("transposed"),
        "dan": _graded(),
    }
    found = summary.causes(results)
    assert [(c.kind, c.submissions) for c in found] == [
        ("last_partial_tile", ["ann", "ben"]),
        ("ghost_border", ["ben"]),
        ("transposed", ["cat"]),
    ]
    rows = [row(name, 5, "failed") for name in results]
    page = summary.render("matmul-naive", rows, "cpu", [], results)
    doc = lxml_html.fromstring(page)
    (first, *_) = doc.xpath("//table[@class='causes']//tr[td]")
    cause = first.xpath("./td")[0]
    assert cause.text == summary.CAUSE_TITLES["last_partial_tile"]
    assert cause.xpath("./span")[0].text == "last_partial_tile"
    assert first.xpath("./td")[1].text_content() == "2"
    assert [a.get("href") for a in first.xpath(".//a")] == [
        "students/ann/report.html",
        "students/ben/report.html",
    ]
    assert "&lt;b&gt;" in page and "<b>" not in page


def test_every_submission_has_one_row_linked_to_its_report_with_its_group():
    results = {"team-1": _graded("transposed")}
    rows = [
        Row("zoe", "Zoe Z", "", "team-1", 5.0, 10.0, "failed", None, [], ""),
        Row("yan", "", "", "team-1", 5.0, 10.0, "failed", None, [], ""),
    ]
    doc = lxml_html.fromstring(summary.render("matmul-naive", rows, "cpu", [], results))
    (line,) = doc.xpath("//table[@class='submissions']//tr[td]")
    cells = [td.text_content() for td in line.xpath("./td")]
    assert line.xpath(".//a")[0].get("href") == "students/team-1/report.html"
    assert cells[1] == "yan, zoe (Zoe Z)" and cells[4] == "1 of 3" and cells[6] == "transposed"


def test_without_results_the_page_says_no_cause_is_known():
    page = summary.render("conv2d", [row("a", 7, "passed")], "cpu", [])
    assert "no wrong output matched a pattern" in page


def test_counts_agree_by_submission_when_a_group_shares_one():
    group = [
        Row("gus", "", "", "team", 4.0, 10.0, "failed", None, [], ""),
        Row("hal", "", "", "team", 4.0, 10.0, "failed", None, [], ""),
    ]
    counts = summary.counts(ROWS + group)
    assert (counts.submissions, counts.students) == (7, 8)
    found = (counts.passed, counts.failed, counts.compile_errors, counts.errors)
    assert sum(found) == counts.submissions and found == (2, 3, 1, 1)
    page = summary.render("matmul-tiled", ROWS + group, "cpu", [])
    assert "7 submissions of 8 students &middot;" in page
    assert ">2 passed<" in page and ">3 failed<" in page
    assert ">1 did not compile<" in page and ">1 could not be graded<" in page
    chart = summary.score_chart(summary.by_submission(ROWS + group))
    assert sum(bar.count for bar in chart.bars) == counts.submissions
