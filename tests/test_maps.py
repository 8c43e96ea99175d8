"""Error maps and the annotated source in every renderer: the terminal's character map
(at most 40 columns, colour only when asked, ASCII where block characters cannot be
written), Markdown's fenced map, and the HTML report's inline SVG map and annotated
source, which stay self-contained and well-formed with hostile student text."""

from __future__ import annotations

import io
import re
from html.parser import HTMLParser
from pathlib import Path

from lxml import etree
from lxml import html as lxml_html

from grader.model.result import (
    CaseResult,
    Diagnostic,
    ErrorMap,
    Kind,
    MapSlice,
    Mismatch,
    Result,
    Status,
)
from grader.report import annotate, maps, terminal
from grader.report import html as html_report
from grader.report import json as json_report
from grader.report import markdown as markdown_report

FIXTURE = Path(__file__).parent / "data" / "reports" / "failing.json"
SCRIPT = "<script>alert('pwned')</script>"
COUNTS = dict.fromkeys(("padding", "right", "wrong", "nan", "unwritten", "padding_written"), 0)


def _map(rows: list[str] | list[list[str]], shape, cell=(1, 1), tile=(16, 16), columns=None):
    planes = rows if isinstance(rows[0], list) else [rows]
    slices = [
        MapSlice(rows=p, z=None if len(shape) < 3 else z, label=label)
        for p, (z, label) in zip(planes, _labels(len(planes), shape), strict=True)
    ]
    counts = dict(COUNTS)
    for letter, name in (
        ("r", "right"),
        ("w", "wrong"),
        ("x", "padding_written"),
        ("p", "padding"),
    ):
        counts[name] = sum(row.count(letter) for p in planes for row in p)
    return ErrorMap(
        output="P",
        shape=tuple(shape),
        columns=columns or shape[-1],
        cell=cell,
        tile=tile,
        counts=counts,
        slices=slices,
    )


def _labels(count: int, shape) -> list[tuple[int, str]]:
    if count == 1:
        return [(0, "")]
    return [(0, "first"), (shape[0] // 2, "worst inside"), (shape[0] - 1, "last")][:count]


def _right_half_wrong(size: int = 64) -> ErrorMap:
    return _map(["r" * (size // 2) + "w" * (size // 2)] * size, (size, size))


def _failing_case(name: str, emap: ErrorMap | None) -> CaseResult:
    return CaseResult(
        name=name,
        visibility="public",
        sizes={"Width": 64},
        status=Status.FAILED,
        mismatches=3,
        error_map=emap,
    )


def _result(*cases: CaseResult, source: str = "") -> Result:
    from grader.model.result import CompileInfo

    return Result(
        lab="matmul-tiled",
        submission="kernel.cu",
        backend="cpu",
        device="test",
        status=Status.FAILED,
        score=0.0,
        max_score=3.0,
        compile=CompileInfo(ok=True),
        cases=list(cases),
        kernel="matmul",
        source=source,
    )


def _map_lines(text: str) -> list[str]:
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if "Error map of" in line)
    end = next(i for i in range(start, len(lines)) if "Legend:" in lines[i])
    return lines[start + 1 : end]


def _cells_in(line: str, unicode: bool = True) -> int:
    glyphs = set(maps.GLYPHS[unicode].values()) - {" "}
    return sum(ch in glyphs for ch in line)


# -- terminal ---------------------------------------------------------------------------


def test_terminal_draws_the_map_of_the_first_failing_case_only():
    result = _result(
        _failing_case("first", _right_half_wrong()), _failing_case("second", _right_half_wrong())
    )
    text = terminal.render(result)
    assert text.count("Error map of P (64 x 64)") == 1
    assert text.index("Error map") > text.index("first (public)")
    assert text.index("Error map") < text.index("second (public)")
    body = _map_lines(text)
    assert all(line.strip().endswith("█") for line in body if _cells_in(line))
    assert "Legend: █ wrong (2048)  · right (2048)" in text


def test_terminal_map_is_at_most_40_columns_for_every_shape():
    wide = _map(["r" * 200 + "x" * 50] * 120, (120, 200), columns=250)
    big = _map(["r" * 129 + "w"] * 130, (517, 517), cell=(4, 4))
    planes = [["w" * 33] * 9, ["r" * 33] * 9, ["w" * 33] * 9]
    deep = _map(planes, (17, 9, 33), tile=(8, 8))
    for emap in (wide, big, deep):
        text = "\n".join(maps.text_map(emap))
        assert max(_cells_in(line) for line in _map_lines(text)) <= maps.TEXT_COLUMNS


def test_terminal_map_of_a_3d_output_names_its_slices():
    planes = [["w" * 20] * 18, ["r" * 20] * 18, ["w" * 20] * 18]
    text = "\n".join(maps.text_map(_map(planes, (12, 18, 20), tile=(8, 8))))
    assert re.search(r"z=0 first\s+z=6 worst\s+z=11 last", text)


def test_terminal_map_keeps_the_partial_tile_in_its_own_column():
    # 517 wide in cells of 4: one character a tile of 16, the last 5 elements alone
    text = "\n".join(maps.text_map(_map(["r" * 128 + "ww"] * 130, (517, 517), cell=(4, 4))))
    body = _map_lines(text)
    assert all(line[1:] == "·" * 32 + "█" for line in body)
    assert "1 character = 16 x 32 elements" in text


def test_terminal_colour_only_when_asked_and_ascii_fallback():
    result = _result(_failing_case("c", _right_half_wrong()))
    plain = terminal.render(result)
    assert "\x1b[" not in plain
    assert "\x1b[31m█" in terminal.render(result, color=True)
    ascii_text = terminal.render(result, unicode=False)
    assert "#" in "".join(_map_lines(ascii_text))
    assert all(ord(ch) < 128 for line in _map_lines(ascii_text) for ch in line)


def test_use_unicode_follows_the_stream_encoding():
    assert terminal.use_unicode(io.TextIOWrapper(io.BytesIO(), encoding="utf-8"))
    assert not terminal.use_unicode(io.TextIOWrapper(io.BytesIO(), encoding="ascii"))


# -- Markdown ---------------------------------------------------------------------------


def test_markdown_maps_are_fenced_and_all_but_the_first_folded():
    result = _result(
        _failing_case("a", _right_half_wrong()), _failing_case("b", _right_half_wrong())
    )
    text = markdown_report.render(result)
    fences = re.findall(r"```text\nError map of P.*?```", text, re.S)
    assert len(fences) == 2
    assert text.count("<details><summary>error map of b</summary>") == 1
    assert "error map of a" not in text


# -- HTML -------------------------------------------------------------------------------


class _Balance(HTMLParser):
    """Every element closed, in order (void elements excepted), and ids unique."""

    VOID = {"meta", "br", "hr", "img", "input", "link", "col", "wbr", "source"}
    SVG_EMPTY = {"rect", "path", "line", "polyline", "circle"}

    def __init__(self) -> None:
        super().__init__()
        self.stack: list[str] = []
        self.ids: list[str] = []

    def handle_starttag(self, tag, attrs):
        self.ids += [v for k, v in attrs if k == "id"]
        if tag not in self.VOID:
            self.stack.append(tag)

    def handle_startendtag(self, tag, attrs):
        self.ids += [v for k, v in attrs if k == "id"]

    def handle_endtag(self, tag):
        assert self.stack and self.stack[-1] == tag, f"</{tag}> closes <{self.stack[-1:]}>"
        self.stack.pop()


def _well_formed(page: str) -> None:
    checker = _Balance()
    checker.feed(page)
    checker.close()
    assert checker.stack == [], checker.stack
    assert len(checker.ids) == len(set(checker.ids)), "repeated ids"
    for svg in re.findall(r"<svg\b.*?</svg>", page, re.S):
        etree.fromstring(svg.encode())  # strict XML: SVG must be well-formed


def _report_of_fixture() -> str:
    return html_report.render(json_report.read(FIXTURE))


def test_html_map_is_inline_svg_with_tiles_and_legend():
    page = _report_of_fixture()
    doc = lxml_html.fromstring(page)
    (box,) = doc.xpath("//div[@class='error-map']")
    (svg,) = box.xpath(".//svg")
    assert svg.get("viewbox") == "0 0 130 130"
    assert [p.get("class") for p in svg.xpath(".//path")] == ["cell-n"]
    lines = svg.xpath(".//line[@class='tile']")
    assert len(lines) == 2 * (512 // 16)  # every tile edge inside 517, both axes
    legend = " ".join(li.text_content() for li in box.xpath(".//ul[@class='legend']/li"))
    assert "NaN: 2069 elements" in legend and "right: 265220 elements" in legend
    assert "1 cell = 4 x 4 elements" in box.text_content()


def test_html_counts_one_as_one_and_keeps_numbers_whole():
    """ "1 mismatch" and "wrong: 1 element" (issue 20), and a number's cell never wraps
    inside it (4.363e- / 06)."""
    emap = _map(["r" * 15 + "w"] * 1 + ["r" * 16] * 15, (16, 16))
    case = _failing_case("c", emap)
    case.mismatches = 1
    case.first_mismatch = Mismatch(index=(0, 15), expected=1.0, got=2.0)
    page = html_report.render(_result(case))
    doc = lxml_html.fromstring(page)
    text = " ".join(doc.text_content().split())
    assert "1 mismatch;" in text and "1 mismatches" not in text
    legend = " ".join(li.text_content() for li in doc.xpath("//ul[@class='legend']/li"))
    assert "wrong: 1 element" in legend and "wrong: 1 elements" not in legend
    rule = re.search(r"td\.num \{[^}]*\}", page).group(0)
    assert "white-space: nowrap" in rule


def test_html_map_merges_runs_into_rectangles():
    plane = maps.svg_map(_right_half_wrong()).planes[0]
    assert plane.paths == [("w", "M32 0h32v64h-32z")]


def test_html_map_of_a_3d_output_has_three_captioned_slices_and_pitched_padding():
    planes = [["w" * 20 + "xppp"] * 18, ["r" * 20 + "pppp"] * 18, ["w" * 20 + "pppp"] * 18]
    emap = _map(planes, (12, 18, 20), tile=(8, 8), columns=24)
    page = html_report.render(_result(_failing_case("c", emap)))
    doc = lxml_html.fromstring(page)
    captions = [f.text_content() for f in doc.xpath("//div[@class='error-map']//figcaption")]
    assert captions == ["z = 0 (first)", "z = 6 (worst inside)", "z = 11 (last)"]
    assert len(doc.xpath("//svg//line[@class='row-end']")) == 3
    assert "written into the row padding" in page
    _well_formed(page)


def test_html_tiles_too_small_to_draw_are_said_not_drawn():
    emap = _map(["r" * 128 + "w" * 128] * 256, (1024, 1024), cell=(4, 4), tile=(4, 4))
    drawn = maps.svg_map(emap)
    assert drawn.planes[0].tile_xs == [] and "too small" in drawn.tiles


def test_one_finding_on_a_line_in_every_case_is_one_note():
    """The same access past the end, found by another thread in each of six cases, is one
    note on its line with how many more there were (issue 20: it was said six times)."""
    cases = []
    for i in range(6):
        case = _failing_case(f"c{i}", None)
        case.diagnostics = [
            Diagnostic(Kind.OUT_OF_BOUNDS, f"Thread ({i},0,0) read N[{100 + i}]", line=2)
        ]
        cases.append(case)
    source = annotate.annotate(_result(*cases, source="a\nb = N[i];\nc\n"))
    (note,) = source.lines[1].notes
    assert note.message == "Thread (0,0,0) read N[100] (and 5 more like it, in other cases)"


def test_html_annotated_source_marks_the_lines_findings_name():
    doc = lxml_html.fromstring(_report_of_fixture())
    marked = doc.xpath("//table[@class='source']//tr[@class='marked']")
    assert [row.get("id") for row in marked] == ["L3", "L12"]
    note = marked[1].xpath("./td[@class='note']")[0].text_content()
    assert "out_of_bounds" in note and "thread (3,0,0), block (32,0,0)" in note
    code = doc.xpath("//tr[@id='L1']/td[@class='code']")[0].text_content()
    assert code == f"// matmul {SCRIPT}"
    # the fixture's race is on line 20 of a 14-line file: in what the grader appended
    (beyond,) = doc.xpath("//h2[@id='source']/following-sibling::ul[1]/li")
    assert beyond.text_content().startswith("line 20: race")


def test_html_with_hostile_source_stays_escaped_self_contained_and_well_formed():
    source = f"{SCRIPT}\n\x1b[31m</td></tr></table><img src=x onerror=alert(1)>\n" + "x" * 5000
    diags = [Diagnostic(Kind.COMPILE_ERROR, f"bad {SCRIPT}", line=2)]
    result = _result(_failing_case("c", _right_half_wrong()), source=source)
    result.diagnostics = diags
    page = html_report.render(result)
    assert "<script" not in page.lower() and "<img" not in page and "\x1b" not in page
    assert not re.search(r"<(link|script|img|iframe|object|embed)\b", page)
    assert set(re.findall(r"https?://[^\s\"'<>]+", page)) <= {"http://www.w3.org/2000/svg"}
    assert "…" in page  # the 5000-character line is cut
    _well_formed(page)


def test_html_fixture_report_is_well_formed():
    _well_formed(_report_of_fixture())


def test_annotated_source_of_a_long_file_shows_windows_around_findings():
    source = "".join(f"line {n}\n" for n in range(1, 1001))
    result = _result(source=source)
    result.diagnostics = [
        Diagnostic(Kind.RACE, "a race", line=500),
        Diagnostic(Kind.TIMEOUT, "in the footer", line=1004),
    ]
    shown = annotate.annotate(result)
    numbers = [line.number if line else None for line in shown.lines]
    assert numbers == [None, *range(494, 507), None]
    assert shown.beyond == [(1004, annotate.Note("timeout", "in the footer"))]
    assert shown.marked == 1


def test_a_finding_that_every_case_repeats_is_one_note_on_its_line():
    cases = [_failing_case(name, None) for name in ("a", "b")]
    for case in cases:
        case.diagnostics = [Diagnostic(Kind.RACE, "a race", thread=(1, 0, 0), line=2)]
    shown = annotate.annotate(_result(*cases, source="x\ny\n"))
    assert shown.lines[1].notes == [annotate.Note("race", "a race (thread (1,0,0))")]
    assert shown.marked == 1 and not shown.beyond


def test_no_source_no_section():
    doc = lxml_html.fromstring(html_report.render(_result(_failing_case("c", None))))
    assert not doc.xpath("//table[@class='source']") and not doc.xpath("//svg")
