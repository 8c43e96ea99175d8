"""summary.html and the progress display."""

from __future__ import annotations

import io
import re

from grader.batch import summary
from grader.batch.gradebook import Row
from grader.batch.progress import Progress


def row(student: str, score: float, status: str, speedup=None, kinds=(), reason="") -> Row:
    return Row(student, "", "", student, score, 10.0, status, speedup, list(kinds), reason)


ROWS = [
    row("ann", 10, "passed", 1.1),
    row("ben", 9.5, "passed", 0.6),
    row("cat", 4, "failed", None, ["out_of_bounds", "race"]),
    row("dan", 0, "error", None, ["timeout"], "Grading took longer than 60 s."),
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
    assert counts["90-100%"] == 2 and counts["40-50%"] == 1 and counts["0-10%"] == 1
    assert sum(counts.values()) == len(ROWS)


def test_without_a_gpu_the_page_says_speed_was_not_measured():
    page = summary.render("conv2d", [row("a", 7, "passed")], "cpu", [])
    assert page.count("<svg") == 1
    assert "speed is measured only on a GPU" in page


def test_progress_is_plain_lines_off_a_terminal():
    stream = io.StringIO()
    progress = Progress(stream, total=2, reused=3)
    progress.start()
    progress.graded("ann", "10/10", "passed", 1.5)
    progress.graded("dan", "0/10", "error", 60.0)
    progress.finish()
    lines = stream.getvalue().splitlines()
    assert lines[0] == "3 submissions already graded; reusing their reports."
    assert lines[2] == "[1/2] ann: 10/10 passed (1.5 s)"
    assert lines[-1].startswith("Graded 2 submissions in 0:0")
    assert lines[-1].endswith("1 could not be graded.")


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_progress_redraws_one_line_on_a_terminal():
    stream = Terminal()
    progress = Progress(stream, total=4)
    progress.start()
    progress.graded("ann", "10/10", "passed", 1.0)
    progress.graded("dan", "0/10", "error", 1.0)
    text = stream.getvalue()
    assert "\r[############............] 2/4 done, 1 failed to grade, 0:0" in text
    assert "left" in text
