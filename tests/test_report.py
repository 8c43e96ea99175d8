"""Every renderer on hand-built Results: JSON against the schema and back, JUnit against
what CI servers read, HTML and Markdown escaping, and the terminal with and without colour."""

from __future__ import annotations

import json
import math
import re
import xml.etree.ElementTree as ET
from dataclasses import replace
from pathlib import Path

import jsonschema
import profile_kit
import pytest
from lxml import etree
from lxml import html as lxml_html

from grader.model.result import (
    CaseResult,
    Cause,
    CompileInfo,
    Diagnostic,
    KernelResources,
    Kind,
    LaunchMacros,
    Mismatch,
    Performance,
    Result,
    Status,
)
from grader.report import ReportWriteError, common, terminal, write_reports
from grader.report import html as html_report
from grader.report import json as json_report
from grader.report import junit as junit_report
from grader.report import markdown as markdown_report
from grader.report import render as render_format

ROOT = Path(__file__).resolve().parents[1]
DATA = Path(__file__).parent / "data" / "reports"
SCHEMA = json.loads((ROOT / "grader" / "schema" / "report.schema.json").read_text())
XSD = etree.XMLSchema(etree.parse(str(DATA / "junit.xsd")))
SCRIPT = "<script>alert('pwned')</script>"
ANSI = "\x1b["

# The keys of the report contract as DESIGN.md writes it.
DESIGN_KEYS = {
    "": {
        "lab", "submission", "backend", "device", "status", "score", "max_score",
        "compile", "cases", "performance", "diagnostics",
    },
    "compile": {"ok", "log", "registers", "shared_bytes"},
    "case": {
        "name", "visibility", "sizes", "status", "max_abs_error", "mismatches",
        "first_mismatch", "hint", "diagnostics",
    },
    "mismatch": {"index", "expected", "got"},
    "performance": {"student_ms", "reference_ms", "speedup", "spread", "score"},
    "diagnostic": {"kind", "message", "kernel", "thread", "block", "line"},
}  # fmt: skip


def _compile_ok(**kernels: KernelResources) -> CompileInfo:
    kernels = kernels or {
        "matmul": KernelResources(
            registers=32,
            shared_bytes=2048,
            local_bytes=0,
            spill_stores=0,
            spill_loads=0,
            constant_bytes=0,
        )
    }
    return CompileInfo(
        ok=True, log="ptxas info    : Used 32 registers", kernels=kernels, arch="sm_90"
    )


def _result(**changes) -> Result:
    fields = dict(
        lab="matmul-tiled",
        submission="kernel.cu",
        backend="cpu",
        device="CPU backend (16 cores)",
        status=Status.PASSED,
        score=3.0,
        max_score=6.0,
        compile=_compile_ok(),
        kernel="matmul",
        grader_version="0.1.0",
        notes=[
            "Speed is scored only on a GPU; the cpu backend checks correctness.",
            "13 hidden cases were not run: they need the course's secret.",
        ],
        hidden_not_run=13,
    )
    fields.update(changes)
    return Result(**fields)


def _passed_case(name: str, width: int, visibility: str = "public") -> CaseResult:
    return CaseResult(
        name=name,
        visibility=visibility,
        sizes={"Width": width},
        status=Status.PASSED,
        max_abs_error=2.4e-7,
        seconds=0.125,
    )


def passing() -> Result:
    return _result(cases=[_passed_case("16", 16), _passed_case("64", 64)])


def failing() -> Result:
    launch = LaunchMacros(
        values={
            "BLOCK_X": 16,
            "BLOCK_Y": 16,
            "BLOCK_Z": 1,
            "TILE_X": 16,
            "TILE_Y": 16,
            "TILE_Z": 1,
        },
        defined=[],
        warnings=[
            "Line 11 steps blockIdx.y by TILE_WIDTH = 32, but the grader's blocks each cover 16."
        ],
    )
    boundary = CaseResult(
        name="517",
        visibility="hidden",
        sizes={"Width": 517},
        status=Status.FAILED,
        max_abs_error=math.nan,
        mismatches=2069,
        first_mismatch=Mismatch(
            index=(512, 3), expected=1.2345678, got=None
        ),  # grading's spelling of NaN
        hint="Only the last partial tile is wrong | check the boundary conditions.",
        diagnostics=[
            Diagnostic(
                Kind.OUT_OF_BOUNDS,
                f"read past the end of M {SCRIPT}",
                kernel="matmul",
                thread=(3, 0, 0),
                block=(32, 0, 0),
                line=12,
            )
        ],
        output=f"tile {SCRIPT}\n```\n\x1b[31mred\x1b[0m\n"
        + "".join(f"row {i}\n" for i in range(30)),
        seconds=0.5,
    )
    hang = CaseResult(
        name="33",
        visibility="public",
        sizes={"Width": 33},
        status=Status.TIMEOUT,
        diagnostics=[Diagnostic(Kind.TIMEOUT, "The kernel did not finish within 10 s.")],
    )
    crash = CaseResult(
        name="1",
        visibility="hidden",
        sizes={"Width": 1},
        status=Status.ERROR,
        diagnostics=[Diagnostic(Kind.CRASH, "an illegal address", block=(0, 0, 0))],
    )
    return _result(
        status=Status.FAILED,
        score=1.5,
        max_score=10.0,
        cases=[_passed_case("16", 16), boundary, hang, crash],
        diagnostics=[
            Diagnostic(Kind.REQUIREMENT, "matmul-tiled must stage tiles in shared memory.", line=3),
            Diagnostic(
                Kind.RACE,
                "a race on shared memory",
                kernel="matmul",
                thread=(0, 1, 0),
                block=(2, 0, 0),
                line=20,
            ),
        ],
        hidden_not_run=0,
        notes=[],
        launch=launch,
    )


def compile_error() -> Result:
    log = f'kernel.cu(7): error: identifier "tile" is undefined {SCRIPT}\n1 error detected'
    not_run = CaseResult(name="16", visibility="public", sizes={"Width": 16}, status=Status.ERROR)
    return _result(
        status=Status.ERROR,
        score=0.0,
        compile=CompileInfo(ok=False, log=log),
        cases=[not_run],
        diagnostics=[Diagnostic(Kind.COMPILE_ERROR, 'identifier "tile" is undefined', line=7)],
        kernel="matmul",
    )


def timed() -> Result:
    perf = Performance(
        student_ms=0.41,
        reference_ms=0.76,
        speedup=1.854,
        spread=0.004,
        score=3.0,
        max_score=3.0,
        sizes={"Width": 4096},
        rounds=6,
        student_samples=[0.41, 0.42, 0.40, 0.41, 0.43, 0.41],
        reference_samples=[0.76, 0.75, 0.77, 0.76, 0.76, 0.78],
    )
    return _result(
        backend="cuda",
        device="NVIDIA H200, driver 570.86",
        score=10.0,
        max_score=10.0,
        cases=[_passed_case("16", 16), _passed_case("517", 517, "hidden")],
        performance=perf,
        notes=[],
        hidden_not_run=0,
    )


def profiled() -> Result:
    """On the CPU: the naive kernel with rows from threadIdx.x, its profile beside the
    reference's, a note with the student's text in it."""
    student = replace(profile_kit.rows_from_x(), note=f"a note {SCRIPT}")
    return replace(passing(), profile=profile_kit.report(student, profile_kit.naive()))


def roofline() -> Result:
    """Timed on a GPU, with the roofline."""
    report = profile_kit.report(
        profile_kit.tile_read_down_column(), profile_kit.tiled_reference(), profile_kit.roofline()
    )
    return replace(timed(), profile=report)


SAMPLES = {
    "passing": passing,
    "failing": failing,
    "compile_error": compile_error,
    "timed": timed,
    "profiled": profiled,
    "roofline": roofline,
}


@pytest.fixture(params=sorted(SAMPLES))
def sample(request) -> Result:
    return SAMPLES[request.param]()


def _strict_json(text: str):
    def refuse(name):
        raise ValueError(f"{name} is not JSON")

    return json.loads(text, parse_constant=refuse)


# -- JSON -------------------------------------------------------------------------------


def test_schema_is_a_valid_draft_2020_12_schema():
    jsonschema.Draft202012Validator.check_schema(SCHEMA)


def test_json_report_validates_against_the_schema(sample):
    jsonschema.validate(_strict_json(json_report.render(sample)), SCHEMA)


def test_json_report_is_the_result_to_json(sample):
    data = _strict_json(json_report.render(sample))
    assert data == json_report.to_dict(sample)
    assert set(data) == set(sample.to_json())


def test_json_writes_non_finite_values_as_strings():
    data = _strict_json(json_report.render(failing()))
    case = data["cases"][1]
    assert case["max_abs_error"] == "NaN"
    assert case["first_mismatch"] == {"index": [512, 3], "expected": 1.2345678, "got": None}
    result = passing()
    result.cases[0].first_mismatch = Mismatch(index=(0,), expected=-math.inf, got=math.inf)
    data = _strict_json(json_report.render(result))
    assert data["cases"][0]["first_mismatch"]["got"] == "Infinity"
    assert data["cases"][0]["first_mismatch"]["expected"] == "-Infinity"
    jsonschema.validate(data, SCHEMA)


def test_schema_has_every_key_of_the_design_contract():
    defs = SCHEMA["$defs"]
    objects = {
        "": SCHEMA,
        "compile": defs["compile"],
        "case": defs["case"],
        "mismatch": defs["mismatch"],
        "performance": defs["performance"],
        "diagnostic": defs["diagnostic"],
    }
    for name, keys in DESIGN_KEYS.items():
        assert keys <= set(objects[name]["required"]), name


def test_schema_kinds_are_the_result_kinds():
    kinds = SCHEMA["$defs"]["diagnostic"]["properties"]["kind"]["enum"]
    assert sorted(kinds) == sorted(str(kind) for kind in Kind)
    assert "output" in kinds


@pytest.mark.parametrize(
    "spoil",
    [
        lambda d: d.pop("cases"),
        lambda d: d.update(extra=1),
        lambda d: d.update(backend="opencl"),
        lambda d: d["cases"][1]["diagnostics"][0].update(kind="segfault"),
        lambda d: d["cases"][1]["first_mismatch"].update(got="nan"),
        lambda d: d["cases"][1].update(status="skipped"),
        lambda d: d["diagnostics"][1].update(thread=[0, 1]),
        lambda d: d["compile"].pop("spill_bytes"),
    ],
    ids=["missing", "extra", "backend", "kind", "nan-spelling", "status", "dim3", "compile"],
)
def test_schema_rejects_reports_off_the_contract(spoil):
    data = json_report.to_dict(failing())
    spoil(data)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(data, SCHEMA)


def test_result_from_json_is_the_exact_inverse(sample):
    data = _strict_json(json_report.render(sample))
    again = json_report.result_from_json(data)
    assert json_report.to_dict(again) == data
    # the raw to_json (NaN as floats) reads back too
    assert json_report.to_dict(json_report.result_from_json(sample.to_json())) == data


def test_result_from_json_restores_the_dataclasses():
    original = passing()
    again = json_report.result_from_json(original.to_json())
    assert again == original
    assert isinstance(again.status, Status) and isinstance(again.cases[0].status, Status)


def test_result_from_json_keeps_nan_as_float():
    again = json_report.result_from_json(_strict_json(json_report.render(failing())))
    assert math.isnan(again.cases[1].max_abs_error)
    assert again.cases[1].first_mismatch == Mismatch(index=(512, 3), expected=1.2345678, got=None)
    fixture = json_report.read(DATA / "failing.json")  # spells got as "NaN"
    assert math.isnan(fixture.cases[1].first_mismatch.got)
    assert again.diagnostics[1].thread == (0, 1, 0)
    assert again.cases[1].diagnostics[0].kind == Kind.OUT_OF_BOUNDS


def test_result_from_json_finds_the_kernel_the_report_describes():
    helper = KernelResources(
        registers=8, shared_bytes=0, local_bytes=0, spill_stores=0, spill_loads=0, constant_bytes=0
    )
    main = KernelResources(
        registers=40,
        shared_bytes=4096,
        local_bytes=16,
        spill_stores=4,
        spill_loads=4,
        constant_bytes=0,
    )
    result = _result(compile=_compile_ok(helper=helper, matmul=main), kernel="matmul")
    data = result.to_json()
    assert data["compile"]["registers"] == 40
    assert json_report.result_from_json(data).to_json() == data


def test_result_from_json_refuses_what_is_not_a_report():
    with pytest.raises(json_report.ReportFormatError, match="not a grader report"):
        json_report.result_from_json({"lab": "matmul-tiled"})
    data = json_report.to_dict(failing())
    data["status"] = "great"
    with pytest.raises(json_report.ReportFormatError):
        json_report.result_from_json(data)


def test_read_names_the_file_it_cannot_read(tmp_path):
    bad = tmp_path / "report.json"
    bad.write_text("{ half a report")
    with pytest.raises(json_report.ReportFormatError, match="report.json"):
        json_report.read(bad)


def test_the_fixture_report_is_valid_and_round_trips():
    data = _strict_json((DATA / "failing.json").read_text())
    jsonschema.validate(data, SCHEMA)
    assert json_report.to_dict(json_report.read(DATA / "failing.json")) == data


# -- JUnit ------------------------------------------------------------------------------


def _gitlab_cases(xml: str) -> list[dict]:
    """Read the XML the way GitLab's JUnit parser does: testsuites/testsuite/testcase, the
    status from the first failure, error or skipped child, and that child's text."""
    root = ET.fromstring(xml)
    suites = [root] if root.tag == "testsuite" else root.findall("testsuite")
    found = []
    for suite in suites:
        for case in suite.findall("testcase"):
            status, output = "success", None
            for tag, name in (("failure", "failed"), ("error", "error"), ("skipped", "skipped")):
                child = case.find(tag)
                if child is not None:
                    status, output = name, child.text or child.get("message")
                    break
            found.append(
                {
                    "name": case.get("name"),
                    "classname": case.get("classname"),
                    "status": status,
                    "output": output,
                    "time": float(case.get("time", "0")),
                    "stdout": case.findtext("system-out"),
                }
            )
    return found


def _properties(xml: str) -> dict[str, str]:
    root = ET.fromstring(xml)
    return {p.get("name"): p.get("value") for p in root.iter("property")}


def test_junit_validates_against_the_xsd(sample):
    document = etree.fromstring(junit_report.render(sample).encode())
    assert XSD.validate(document), XSD.error_log


def test_junit_xsd_rejects_what_readers_would_misread():
    xml = junit_report.render(failing())
    two_outcomes = xml.replace("</failure>", "</failure><error message='x'>y</error>", 1)
    no_name = re.sub(r'<testcase name="[^"]*"', "<testcase", xml, count=1)
    for broken in (two_outcomes, no_name):
        assert not XSD.validate(etree.fromstring(broken.encode()))


def test_junit_failing_submission_as_gitlab_reads_it():
    xml = junit_report.render(failing())
    cases = {c["name"]: c for c in _gitlab_cases(xml)}
    assert list(cases) == ["compile", "16", "517", "33", "1", "diagnostics", "performance"]
    assert cases["16"]["status"] == "success"
    assert cases["16"]["classname"] == "matmul-tiled.public"
    boundary = cases["517"]
    assert boundary["classname"] == "matmul-tiled.hidden"
    assert boundary["status"] == "failed"
    assert "first mismatch at [512, 3]" in boundary["output"]
    assert "thread (3,0,0), block (32,0,0)" in boundary["output"]
    assert SCRIPT in boundary["stdout"]  # printf output, escaped by XML itself
    assert "\x1b" not in boundary["stdout"]
    assert cases["33"]["status"] == "error" and "10 s" in cases["33"]["output"]
    assert cases["1"]["status"] == "error"
    assert cases["compile"]["status"] == "failed"  # the requirement diagnostic
    assert cases["diagnostics"]["status"] == "failed" and "race" in cases["diagnostics"]["output"]
    assert cases["performance"]["status"] == "skipped"


def test_junit_failure_message_is_the_hint():
    root = ET.fromstring(junit_report.render(failing()))
    failure = root.find(".//testcase[@name='517']/failure")
    assert failure.get("message").startswith("Only the last partial tile is wrong")


def test_junit_compile_error():
    cases = {c["name"]: c for c in _gitlab_cases(junit_report.render(compile_error()))}
    assert cases["compile"]["status"] == "failed"
    assert 'identifier "tile" is undefined' in cases["compile"]["output"]
    assert SCRIPT in cases["compile"]["stdout"]  # the log, as text
    assert cases["16"]["status"] == "error"


def test_junit_scores_are_suite_properties():
    props = _properties(junit_report.render(timed()))
    assert props["score"] == "10" and props["max_score"] == "10"
    assert props["speedup"] == "1.854"
    cases = {c["name"]: c for c in _gitlab_cases(junit_report.render(timed()))}
    assert cases["performance"]["status"] == "success"
    assert "speedup 1.85x" in cases["performance"]["stdout"]
    assert "speedup" not in _properties(junit_report.render(passing()))


def test_junit_passing_has_no_failures():
    root = ET.fromstring(junit_report.render(passing()))
    suite = root.find("testsuite")
    assert (suite.get("failures"), suite.get("errors"), suite.get("skipped")) == ("0", "0", "1")
    assert "hidden cases were not run" in suite.findtext("system-out")


def test_junit_times_are_plain_decimals():
    result = passing()
    result.cases[0].seconds = 1.2e-5  # a float sum this small prints as 1.2e-05
    xml = junit_report.render(result)
    assert XSD.validate(etree.fromstring(xml.encode())), XSD.error_log
    assert "e-0" not in xml


def test_junit_has_no_disabled_attribute_and_a_time_everywhere(sample):
    root = ET.fromstring(junit_report.render(sample))
    assert not [e.tag for e in root.iter() if "disabled" in e.attrib]  # junit-10.xsd
    suite = root.find("testsuite")
    times = [c.get("time") for c in suite.iter("testcase")]
    assert all(re.fullmatch(r"\d+\.\d{3}", t) for t in times), times
    assert re.fullmatch(r"\d+\.\d{3}", suite.get("time"))
    assert float(suite.get("time")) == pytest.approx(sum(map(float, times)), abs=1e-9)
    assert root.get("time") == suite.get("time")


def test_junit_suite_time_is_rounded_not_a_float_sum():
    result = passing()
    result.cases = [_passed_case(str(i), 16) for i in range(3)]
    for case in result.cases:
        case.seconds = 0.1  # 0.1 + 0.1 + 0.1 is 0.30000000000000004 as a float
    suite = ET.fromstring(junit_report.render(result)).find("testsuite")
    assert suite.get("time") == "0.300"


# -- HTML -------------------------------------------------------------------------------


def test_html_has_the_sections():
    page = html_report.render(failing())
    doc = lxml_html.fromstring(page)
    rows = doc.xpath("//table[@class='cases']//tr")
    assert len(rows) == 1 + 4
    assert "1.5/10" in page
    assert doc.xpath("//table[@class='diagnostics']")
    assert "thread (3,0,0), block (32,0,0)" in page
    assert doc.xpath("//table[@class='resources']")
    assert doc.xpath("//pre[@class='output']")
    assert "first mismatch at [512, 3]: expected 1.234568, got NaN" in page


def test_html_every_case_link_has_its_anchor_and_a_hint_shows_once(sample):
    doc = lxml_html.fromstring(html_report.render(sample))
    targets = [a.get("href")[1:] for a in doc.xpath("//a[starts-with(@href, '#')]")]
    assert all(doc.xpath(f"//*[@id='{target}']") for target in targets), targets
    text = doc.text_content()
    for case in sample.cases:
        if case.hint:
            assert text.count(case.hint) == 1, case.name


def test_html_escapes_student_text():
    for result in (failing(), compile_error()):
        page = html_report.render(result)
        assert "<script" not in page.lower()
        assert "&lt;script&gt;" in page
        assert "\x1b" not in page


def test_html_compile_log_is_shown():
    doc = lxml_html.fromstring(html_report.render(compile_error()))
    log = doc.xpath("//pre[@class='compile-log']")[0].text_content()
    assert 'identifier "tile" is undefined <script>' in log


def test_html_is_self_contained():
    page = html_report.render(timed())
    assert not re.search(r"<(link|script|img|iframe)\b", page)
    urls = set(re.findall(r"https?://[^\s\"'<>]+", page))
    assert urls <= {"http://www.w3.org/2000/svg"}


def test_html_timing_chart_per_round():
    doc = lxml_html.fromstring(html_report.render(timed()))
    lines = doc.xpath("//svg//polyline")
    assert [line.get("class") for line in lines] == ["student", "reference"]
    assert all(len(line.get("points").split()) == 6 for line in lines)


def test_html_timing_chart_of_medians_without_samples():
    # a report re-read from JSON has no per-round samples
    again = json_report.result_from_json(timed().to_json())
    doc = lxml_html.fromstring(html_report.render(again))
    bars = doc.xpath("//svg//rect")
    widths = [float(bar.get("width")) for bar in bars]
    assert [bar.get("class") for bar in bars] == ["student", "reference"]
    assert widths[0] < widths[1]  # 0.41 ms against 0.76 ms


def test_html_without_timing_says_so():
    page = html_report.render(passing())
    assert "<svg" not in page and "Not timed." in page


# -- Markdown ---------------------------------------------------------------------------


def test_markdown_case_table():
    text = markdown_report.render(failing())
    assert "## matmul-tiled: 1.5/10" in text
    lines = text.splitlines()
    start = lines.index("| Case | Visibility | Sizes | Status | Max error | Mismatches |")
    table = lines[start : lines.index("", start)]
    assert len(table) == 2 + 4  # header, rule, one row per case
    assert all(line.count("|") - line.count("\\|") == 7 for line in table)


def test_markdown_failing_details_and_diagnostics():
    text = markdown_report.render(failing())
    assert "#### 517 (hidden)" in text
    assert "first mismatch at \\[512, 3\\]" in text
    assert "Only the last partial tile is wrong \\| check" in text
    assert "### Diagnostics" in text and "race: a race on shared memory" in text


def test_markdown_escapes_student_text():
    text = markdown_report.render(failing())
    outside_code = re.sub(r"(`{3,})text\n.*?\n\1", "", text, flags=re.S)
    assert re.search(r"(?<!\\)<script", outside_code) is None  # only \<script, shown as text
    assert "\\<script\\>" in outside_code
    assert "\x1b" not in text


def test_markdown_output_fence_outlasts_backticks_in_output():
    text = markdown_report.render(failing())
    assert "````text\n" in text  # the printf output holds a ``` line
    assert "more lines" not in text  # 33 lines fit in the summary's 40


def test_markdown_performance_and_compile_log():
    assert "| 0.41 ms | 0.76 ms | 1.85x | 0.4% | 3/3 |" in markdown_report.render(timed())
    text = markdown_report.render(compile_error())
    assert "### Compile log" in text and "identifier" in text


# -- terminal ---------------------------------------------------------------------------


def test_terminal_summary_without_colour():
    text = terminal.render(failing(), color=False)
    assert ANSI not in text and "\x1b" not in text
    for expected in (
        "matmul-tiled  kernel.cu",
        "Compile  ok (sm_90)",
        "matmul: 32 registers, 2.0 KiB shared",
        "Cases  1 of 4 passed",
        "2069 mismatches; first mismatch at [512, 3]: expected 1.234568, got NaN",
        "hint: Only the last partial tile is wrong",
        "out_of_bounds: read past the end of M",
        "(kernel matmul, line 12, thread (3,0,0), block (32,0,0))",
        "requirement: matmul-tiled must stage tiles in shared memory. (line 3)",
        "| tile <script>",
        f"... {33 - terminal.OUTPUT_LINES} more lines",
    ):
        assert expected in text, expected
    assert text.rstrip().endswith("Score 1.5/10")


def test_terminal_case_table_is_aligned():
    lines = terminal.render(failing()).splitlines()
    start = lines.index("Cases  1 of 4 passed") + 1
    table = lines[start : start + 5]
    column = table[0].index("status")
    assert [row[column:].split()[0] for row in table] == [
        "status", "passed", "failed", "timeout", "error"
    ]  # fmt: skip


def test_terminal_details_at_most_a_few_failing_cases():
    result = failing()
    boundary = result.cases[1]
    result.cases = [
        CaseResult(
            name=f"w{i}",
            visibility="hidden",
            sizes={"Width": i},
            status=Status.FAILED,
            max_abs_error=1.0,
            mismatches=1,
            first_mismatch=boundary.first_mismatch,
        )
        for i in range(terminal.DETAILED_CASES + 3)
    ]
    result.cases[0].mismatches = 2  # says something of its own
    text = terminal.render(result)
    # the four that say the same are one block under their four names
    assert text.count("1 mismatch; first mismatch") == 1
    assert "w1, w2, w3, w4 (hidden): failed" in text
    assert text.count("2 mismatches; first mismatch") == 1
    assert "... and 3 more failing: w5, w6, w7" in text


def test_terminal_says_once_why_no_case_could_run():
    result = failing()
    reason = "The lab launches a kernel named matmul, but your file does not define one."
    result.diagnostics = [Diagnostic(Kind.INTERFACE, reason)]
    result.cases = [
        CaseResult(
            name=f"w{i}", visibility="public", sizes={"Width": i}, status=Status.ERROR, hint=reason
        )
        for i in range(3)
    ]
    text = terminal.render(result)
    assert text.count(reason) == 1
    assert "w0, w1, w2 (public): error" in text and "not run, for the finding" in text


def test_terminal_shows_one_passing_case_output_when_no_failure_has_any():
    result = passing()
    for case in result.cases:
        case.output = f"hello from {case.name}\n"
    text = terminal.render(result)
    assert "| hello from 16" in text and "hello from 64" not in text


def test_terminal_colour_only_when_asked():
    plain = terminal.render(failing(), color=False)
    coloured = terminal.render(failing(), color=True)
    assert ANSI in coloured
    assert re.sub(r"\x1b\[[0-9;]*m", "", coloured) == plain


def test_terminal_performance_and_notes():
    text = terminal.render(timed())
    assert "student 0.41 ms, reference 0.76 ms, speedup 1.85x, spread 0.4%, 3/3 points" in text
    text = terminal.render(passing())
    assert "Performance  not timed (see the notes)" in text
    assert "- 13 hidden cases were not run" in text
    assert text.rstrip().endswith("Score 3/6")


def test_terminal_compile_error_shows_the_compilers_first_errors_with_their_caret():
    result = compile_error()
    result.compile.log = (
        'kernel.cu(7): error: identifier "tile" is undefined\n'
        "      float v = tile[ty][tx];\n"
        "                ^\n\n1 error detected"
    )
    text = terminal.render(result)
    assert (
        "Compile  FAILED\n"
        '  | kernel.cu(7): error: identifier "tile" is undefined\n'
        "  |       float v = tile[ty][tx];\n"
        "  |                 ^\n"
    ) in text
    assert "compile_error: identifier" not in text  # the log already says it, with its line


def test_terminal_compile_error_said_only_by_the_grader_is_a_diagnostic():
    result = compile_error()
    result.compile.log = 'identifier "tile" is undefined'  # no compiler's words: a refusal
    text = terminal.render(result)
    assert 'compile_error: identifier "tile" is undefined (line 7)' in text
    assert "  | " not in text


@pytest.mark.parametrize(
    ("elsewhere", "said"),
    [
        ({"hidden": 4.0, "speed": 3.0}, " on the public cases; 7 more points are graded by the "
         "course (4 hidden, 3 speed)"),
        ({"speed": 3.0}, "; 3 more points are graded by the course (3 speed)"),
        ({}, ""),
    ],
)  # fmt: skip
def test_the_score_line_says_what_the_course_grades(elsewhere, said):
    result = compile_error()
    result.status, result.score, result.max_score = Status.PASSED, 3.0, 3.0
    result.elsewhere = elsewhere
    assert terminal.score_line(result) == f"Score 3/3{said}"
    assert terminal.render(result).endswith(f"\nScore 3/3{said}\n")


def test_the_terminal_wraps_to_its_width_and_v_adds_the_whole_log_and_the_details():
    result = compile_error()
    result.compile.log = "\n".join(f"k.cu({n}): error: the {n}th error of many" for n in range(30))
    result.details = ["The CPU backend's sandbox: landlock, seccomp, namespaces."]
    short = terminal.render(result, columns=40)
    assert max(len(line) for line in short.splitlines()) <= 40
    assert "18 more lines in the compile log (-v shows it)" in terminal.render(result)
    assert "sandbox" not in short
    full = terminal.render(result, verbose=True)
    assert "k.cu(29): error" in full and "more lines" not in full
    assert "  - The CPU backend's sandbox: landlock, seccomp, namespaces." in full


class _Stream:
    def __init__(self, tty: bool):
        self.tty = tty

    def isatty(self) -> bool:
        return self.tty


def test_use_color(monkeypatch):
    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.setenv("TERM", "xterm")
    assert terminal.use_color(_Stream(True))
    assert not terminal.use_color(_Stream(False))
    assert terminal.use_color(_Stream(False), "always")
    assert not terminal.use_color(_Stream(True), "never")
    monkeypatch.setenv("NO_COLOR", "1")
    assert not terminal.use_color(_Stream(True))
    assert terminal.use_color(_Stream(True), "always")


def test_common_number_spells_non_finite():
    assert common.number(math.nan) == "NaN"
    assert common.number(-math.inf) == "-inf"
    assert common.number(None) == "-"
    assert common.points(7.5) == "7.5" and common.points(10.0) == "10"


# -- writing ----------------------------------------------------------------------------


def test_write_reports_writes_only_what_is_asked(tmp_path):
    written = write_reports(
        failing(), json=tmp_path / "out" / "r.json", markdown=str(tmp_path / "r.md")
    )
    assert written == [tmp_path / "out" / "r.json", tmp_path / "r.md"]
    assert sorted(p.name for p in tmp_path.rglob("*") if p.is_file()) == ["r.json", "r.md"]
    assert json_report.read(tmp_path / "out" / "r.json").cases[1].first_mismatch.index == (512, 3)


def test_write_reports_says_what_it_could_not_write(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("")
    with pytest.raises(
        ReportWriteError, match=r"Could not write the HTML report to .*file/r\.html"
    ):
        write_reports(passing(), html=blocker / "r.html")


def test_write_reports_replaces_no_link_and_keeps_hard_links_apart(tmp_path):
    precious = tmp_path / "precious.txt"
    precious.write_text("mine")
    (tmp_path / "link.json").symlink_to(precious)
    with pytest.raises(ReportWriteError, match="symbolic link"):
        write_reports(passing(), json=tmp_path / "link.json")
    (tmp_path / "old.json").write_text("old")
    (tmp_path / "twin.json").hardlink_to(tmp_path / "old.json")
    write_reports(passing(), json=tmp_path / "old.json")
    assert precious.read_text() == "mine" and (tmp_path / "twin.json").read_text() == "old"
    assert json_report.read(tmp_path / "old.json").status == "passed"
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "link.json", "old.json", "precious.txt", "twin.json"
    ]  # fmt: skip


def test_the_launch_and_its_warnings_are_in_every_format():
    result = failing()
    text = terminal.render(result)
    assert "launch: block 16 x 16 x 1, tile 16 x 16 x 1: all the grader's defaults" in text
    assert "warning: Line 11 steps blockIdx.y by TILE_WIDTH = 32" in text
    assert "Line 11 steps blockIdx.y" in markdown_report.render(result)
    assert "Line 11 steps blockIdx.y" in html_report.render(result)
    data = _strict_json(json_report.render(result))
    assert data["launch"]["warnings"] == result.launch.warnings and data["launch"]["defined"] == []


# -- why this speed ---------------------------------------------------------------------


def test_schema_causes_are_the_result_causes():
    causes = SCHEMA["$defs"]["advice"]["properties"]["cause"]["enum"]
    assert sorted(causes) == sorted(str(cause) for cause in Cause)


def test_the_profile_goes_to_json_and_back():
    data = _strict_json(json_report.render(roofline()))
    assert data["profile"]["advice"][0]["cause"] == "bank_conflicts"
    assert data["profile"]["student"]["kernels"][0]["shared_loads"]["sectors"] == 270336
    assert data["profile"]["roofline"]["peak_bytes"] == 4e12
    assert json_report.result_from_json(data).profile == roofline().profile
    assert _strict_json(json_report.render(passing()))["profile"] is None


def test_terminal_says_why_under_performance_on_the_cpu():
    text = terminal.render(profiled())
    after = text[text.index("Performance  not timed (see the notes)") :]
    assert after.index("Why this speed: case width-64 (Width=64), measured by the CPU model") < (
        after.index("Notes")
    )
    table = re.search(r"global loads: sectors per request +8\.5 +2\n", after)
    listed = "global loads: sectors per request: 8.5 (reference: 2)\n" in after
    assert table or listed  # a table where it fits 80 columns, else a measure to a line
    assert "- Global loads and stores are uncoalesced: loads 8.5 sectors per request" in after
    assert "Your kernel: a note <script>" in after  # shown as text: a terminal runs no script
    assert "Why this speed" not in terminal.render(passing())


def test_terminal_says_why_after_the_timing_and_the_roofline():
    text = terminal.render(roofline())
    assert text.index("speedup 1.85x") < text.index("Why this speed") < text.index("Roofline: ")


def test_html_why_this_speed_section_and_roofline():
    doc = lxml_html.fromstring(html_report.render(roofline()))
    assert doc.xpath("//h2[@id='why']/text()") == ["Why this speed"]
    cells = doc.xpath("//table[@class='measures']//tr[td]/td/text()")
    assert cells[:3] == ["global loads: sectors per request", "4", "16"]
    assert "bank conflicts" in doc.xpath("//ul[@class='advice']/li/text()")[0]
    svg = doc.xpath("//svg[contains(@class, 'roofline')]")[0]
    dots = svg.xpath(".//circle")
    assert [d.get("class") for d in dots] == ["student", "reference"]
    width, height = float(svg.get("width")), float(svg.get("height"))
    for dot in dots:
        assert 0 < float(dot.get("cx")) < width and 0 < float(dot.get("cy")) < height
    (low, high) = (float(d.get("cy")) for d in dots)
    assert low > high  # the student's 800 GFLOP/s is drawn below the reference's 5200
    assert len(svg.xpath(".//polyline[@class='roof']")[0].get("points").split()) == 3


def test_html_roofline_of_a_lab_without_flops_is_bandwidth_bars():
    result = roofline()
    result.profile.roofline = profile_kit.roofline(flops=False)
    svg = lxml_html.fromstring(html_report.render(result)).xpath("//svg[@class='roofline']")[0]
    assert not svg.xpath(".//circle")
    bars = svg.xpath(".//rect")
    assert [b.get("class") for b in bars] == ["student", "reference"]
    assert float(bars[0].get("width")) < float(bars[1].get("width"))  # 1600 against 3000 GB/s
    assert "1600 of 4000 GB/s" in svg.xpath("string(.)")


def test_html_why_escapes_the_profiles_text():
    page = html_report.render(profiled())
    assert "<script" not in page.lower() and "a note &lt;script&gt;" in page
    assert "<svg" not in page  # no timing, no roofline


def test_markdown_why_this_speed():
    text = markdown_report.render(roofline())
    assert "### Why this speed" in text
    assert "| shared loads: bank conflicts per request | 15\\.5 | 1 |" in text
    assert "- Shared-memory loads and stores have bank conflicts" in text
    assert "Roofline: yours 800 GFLOP/s" in text
    assert "\\<script\\>" in markdown_report.render(profiled())
    assert "Why this speed" not in markdown_report.render(timed())


def test_junit_performance_says_why_in_its_system_out():
    for result in (profiled(), roofline()):
        suite = ET.fromstring(junit_report.render(result)).find("testsuite")
        case = suite.find("testcase[@name='performance']")
        out = case.find("system-out").text
        assert out.count("Why this speed: case width-64") == 1
        assert result.profile.advice[0].message in out
    case = ET.fromstring(junit_report.render(timed())).find(".//testcase[@name='performance']")
    assert "Why this speed" not in ET.tostring(case, "unicode")


def test_a_profile_without_a_reference_says_so_in_one_line():
    result = profiled()
    result.profile = profile_kit.report(profile_kit.rows_from_x(), None)
    text = terminal.render(result)
    assert "The reference could not be profiled, so nothing is compared." in text
    for name in ("html", "markdown", "junit"):
        assert "could not be profiled" in render_format(name, result), name


def hung() -> Result:
    """A kernel that hung in the case whose run judges the lab's rule (issue 32): the
    rule's finding was left unjudged by the hang."""
    rule = Diagnostic(
        Kind.REQUIREMENT,
        "Not checked: the case hung. The lab's rule that the kernel uses shared memory is "
        "not met in this report.",
    )
    timeout = Diagnostic(Kind.TIMEOUT, "The kernel did not finish within 1 s, at line 9.")
    case = CaseResult(
        name="width-64",
        visibility="public",
        sizes={"Width": 64},
        status=Status.TIMEOUT,
        diagnostics=[timeout],
    )
    secret = replace(case, name="secret-1", visibility="hidden")
    return _result(status=Status.FAILED, cases=[case, secret], diagnostics=[rule])


def test_a_hang_comes_before_the_rule_it_left_unjudged_in_every_report():
    first, then = "In case width-64: The kernel did not finish", "Not checked: the case hung."
    texts = {
        "terminal": terminal.render(hung(), color=False),
        "markdown": markdown_report.render(hung()),
        "html": html_report.render(hung()),
        "junit": _gitlab_cases(junit_report.render(hung()))[0]["output"],
    }
    for name, text in texts.items():
        assert first in text and then in text, name
        assert text.index(first) < text.index(then), name
        assert "In case secret-1" not in text, name
