"""The JUnit XML report, for CI (GitLab, Jenkins, GitHub test-report actions).

One testsuite for the submission. A `compile` testcase fails on a build that did not
compile or broke the lab's interface or rules; one testcase per case (classname
`LAB.public` or `LAB.hidden`) fails on wrong output and errors on a crash or timeout; a
`diagnostics` testcase, only when there are any, fails on run-time findings outside the
cases; a `performance` testcase is skipped when nothing was timed, and its system-out says
why this speed where the kernel was profiled. Scores are suite properties; notes are the
suite's system-out.

The XML keeps to what the strictest readers accept (Jenkins' xUnit junit-10.xsd): no
`disabled` attribute, and a time on every testcase and suite in whole milliseconds, as a
plain decimal (a float sum could print in exponent form, which Jenkins rejects)."""

from __future__ import annotations

import xml.etree.ElementTree as ET

from junit_xml import TestCase, TestSuite, to_xml_report_string

from grader.model.result import CaseResult, Kind, Result, Status
from grader.report import common, measures


def _compile_case(result: Result) -> TestCase:
    build = common.build_diagnostics(result)
    case = TestCase("compile", classname=result.lab, stdout=common.printable(result.compile.log))
    if not result.compile.ok or build:
        message = build[0].message if build else "The kernel did not compile."
        # GitLab shows a failure's text, not its message, so the text is never empty; a
        # hang that left a rule unjudged comes before it
        found = [*common.stopped(result), *build]
        details = "\n".join(common.diagnostic(d) for d in found) or message
        case.add_failure_info(message=message, output=details, failure_type="build")
    return case


def _case(lab: str, case: CaseResult) -> TestCase:
    test = TestCase(
        case.name,
        classname=f"{lab}.{case.visibility}",
        elapsed_sec=case.seconds,
        stdout=common.printable(case.output) or None,
    )
    details = "\n".join([f"sizes {common.sizes(case.sizes)}", *common.case_details(case)])
    if case.status == Status.FAILED:
        test.add_failure_info(common.case_summary(case), details, str(case.status))
    elif case.status in (Status.ERROR, Status.TIMEOUT):
        test.add_error_info(common.case_summary(case), details, str(case.status))
    return test


def _checks_case(result: Result) -> TestCase | None:
    """Run-time findings outside any case (the sanitizer's, say) fail the submission, so
    they fail a testcase of their own; printf floods only inform."""
    found = [d for d in common.other_diagnostics(result) if d.kind != Kind.OUTPUT]
    if not found:
        return None
    case = TestCase("diagnostics", classname=result.lab)
    details = "\n".join(common.diagnostic(d) for d in found)
    case.add_failure_info(found[0].message, details, str(found[0].kind))
    return case


def _performance_case(result: Result) -> TestCase:
    perf = result.performance
    why = measures.section(result.profile).lines() if result.profile else []
    case = TestCase("performance", classname=result.lab, stdout="\n".join(why) or None)
    if perf is None:
        case.add_skipped_info("not timed", "\n".join(result.notes) or None)
        return case
    timed = (
        f"student {common.number(perf.student_ms)} ms, "
        f"reference {common.number(perf.reference_ms)} ms, "
        f"speedup {common.speedup(perf.speedup)}, spread {common.percent(perf.spread)}, "
        f"{common.points(perf.score)}/{common.points(perf.max_score)} points"
    )
    case.stdout = "\n".join([timed, *([perf.note] if perf.note else []), *why])
    return case


def _properties(result: Result) -> dict[str, str]:
    props = {
        "score": common.points(result.score),
        "max_score": common.points(result.max_score),
        "status": str(result.status),
        "backend": result.backend,
        "device": result.device,
        "hidden_cases_not_run": str(result.hidden_not_run),
    }
    if result.performance:
        props["speedup"] = f"{result.performance.speedup:.3f}"
        props["performance_score"] = common.points(result.performance.score)
    if result.grader_version:
        props["grader_version"] = result.grader_version
    return props


def suite(result: Result) -> TestSuite:
    cases = [
        _compile_case(result),
        *(_case(result.lab, c) for c in result.cases),
        _checks_case(result),
        _performance_case(result),
    ]
    informative = [d for d in common.other_diagnostics(result) if d.kind == Kind.OUTPUT]
    extra = [*result.notes, *(common.diagnostic(d) for d in informative)]
    return TestSuite(
        result.lab,
        [case for case in cases if case is not None],
        properties=_properties(result),
        file=result.submission,
        stdout="\n".join(extra) or None,
    )


def _seconds(value: float) -> str:
    return f"{max(0.0, value):.3f}"


def render(result: Result) -> str:
    # Every text made printable first: XML can hold bidi overrides, which a CI page obeys.
    # Its attributes are then set to what junit-10.xsd accepts.
    shown = common.printable_result(result)
    text = to_xml_report_string([suite(shown)], prettyprint=False, encoding="utf-8")
    root = ET.fromstring(text.encode("utf-8"))
    total = 0.0
    for element in root.iter("testsuite"):
        element.attrib.pop("disabled", None)
        times = [float(case.get("time") or 0.0) for case in element.iter("testcase")]
        for case, seconds in zip(element.iter("testcase"), times, strict=True):
            case.set("time", _seconds(seconds))
        element.set("time", _seconds(sum(round(s, 3) for s in times)))
        total += float(element.get("time"))
    root.attrib.pop("disabled", None)
    root.set("time", _seconds(total))
    ET.indent(root, "\t")
    return '<?xml version="1.0" encoding="utf-8"?>\n' + ET.tostring(root, "unicode") + "\n"
