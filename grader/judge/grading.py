"""What a whole grading says, from the results of its cases: a race's reach across them,
the hints their failures share, a checker's findings, whether speed is measured, and the
status and score; and the result of a submission that could not be graded. Functions over
results: the pipeline runs the work and hands what it found here."""

from __future__ import annotations

import dataclasses

import grader
from grader import defaults
from grader.judge import hints, scoring
from grader.judge.verdict import INFORMATIVE
from grader.model.lab import Case, Lab
from grader.model.result import (
    CaseResult,
    CompileInfo,
    Diagnostic,
    Kind,
    RaceScope,
    Result,
    Status,
    Visibility,
)

SPEED_WAITS = "Speed is measured once every case passes; it earns 0 now."
# What a case whose numbers came out right is told of a race that reaches it.
RACE_LUCK = (
    "With a race the results depend on the order the threads happen to run in, so this "
    "case's right numbers were luck: it fails until the race is fixed."
)
REFUSED = "Not graded: the grader refuses this file (see its diagnostics)."
SANITIZER_FOUND = (
    "The output matched, but the sanitizer saw the kernel do something undefined (below): "
    "a result that is right by luck can be wrong on another GPU, size or run."
)


def not_graded(
    lab: Lab,
    submission: str,
    reason: str,
    kind: Kind,
    backend: tuple[str, str],
    cases: list[Case],
    hidden_run: bool,
    speed: bool,
) -> Result:
    """The result of a submission that could not be graded (`backend` is the backend's
    name and device): each of the grading's `cases` an error, no points, and the maximum
    it would have had, so that it adds up like the others."""
    results = [
        CaseResult(
            name=c.name,
            visibility=c.visibility,
            sizes=c.shown_sizes,
            status=Status.ERROR,
            hint=reason,
        )
        for c in cases
    ]
    most = scoring.total(lab.scoring, results, hidden_run, None, speed, False).max_points
    return Result(
        lab=lab.name,
        submission=submission,
        backend=backend[0],
        device=backend[1],
        status=Status.ERROR,
        score=0.0,
        max_score=most,
        compile=CompileInfo(ok=False, log=f"not graded: {reason}"),
        cases=results,
        diagnostics=[Diagnostic(kind, reason)],
        kernel=lab.kernel.name,
        grader_version=grader.__version__,
    )


def hung_before(case: Case, done: list[CaseResult]) -> CaseResult | None:
    """The case's result where the kernel hung in too many of the cases `done` before it:
    it is not run."""
    hangs = sum(c.status == Status.TIMEOUT for c in done)
    if hangs < defaults.MAX_TIMEOUTS:
        return None
    return CaseResult(
        name=case.name,
        visibility=case.visibility,
        sizes=case.shown_sizes,
        status=Status.TIMEOUT,
        hint=f"Not run: the kernel already hung in {hangs} cases.",
    )


def cross_case_hints(lab: Lab, result: Result) -> None:
    """The hints a finding elsewhere in the grading explains better (a launch warning of
    the compile section, another case's hint: EXPLAINED_ELSEWHERE), then a
    sentence from what the cases have in common, for each that failed, drawn from the
    cases it may name (Visibility.may_name)."""
    cases = result.cases
    _launch_explains(result)
    _explained_elsewhere(cases)
    by_sight = {
        sight: hints.cross_case(lab, [c for c in cases if sight.may_name(c.visibility)])
        for sight in Visibility
    }
    for case in cases:
        found = by_sight[case.visibility]
        if found and not case.passed:
            kind, sentence = found
            case.hint = f"{case.hint} {sentence}" if case.hint else sentence
            case.hint_kind = case.hint_kind or kind


# The hints a launch warning explains better: they would send the student to the grid's
# size or to bounds checks, where the file's own sizes disagree with the launch.
LAUNCH_EXPLAINS = {"nothing_written", "partly_unwritten", "last_partial_tile", "partial_tile_fault"}


def _launch_explains(result: Result) -> None:
    """A failing case whose hint speaks of the grid or the tiles, or that has none, where
    the compile section warns that the file's sizes disagree with the launch: it says so,
    with the warning's finding, and a hint of a repeating pattern (unwritten_pattern)
    adds it."""
    warnings = result.launch.warnings if result.launch else []
    if not warnings:
        return
    said = f"The launch warning under Compile says why: {warnings[0].split('. ')[0]}."
    for case in result.cases:
        if case.passed:
            continue
        if case.hint_kind == "unwritten_pattern":
            case.hint = f"{case.hint} {said}"
        elif case.hint_kind in LAUNCH_EXPLAINS or (case.hint is None and case.mismatches):
            case.hint, case.hint_kind = f"{_wrong(case)} {said}", "launch_warning"


def _wrong(case: CaseResult) -> str:
    """How much of the output a case got wrong, from its error map where it has one."""
    counts = case.error_map.counts if case.error_map else {}
    unwritten = counts.get("unwritten", 0)
    name = f" of {case.error_map.output}" if case.error_map else ""
    poison = f", {unwritten:,} of them holding the NaN the grader fills outputs with"
    return f"{case.mismatches:,} elements{name} are wrong{poison if unwritten else ''}."


# Hints another case's hint explains better: its family, the families it explains, and
# what it saw there, where the others' outputs cannot show it.
EXPLAINED_ELSEWHERE = {
    "read_before_set": (
        {"nothing_written", "partly_unwritten"},
        "the kernel reads the output before setting it, and what it computes from the NaN "
        "the grader fills outputs with is NaN too",
    ),
    "unwritten_pattern": (
        {"nothing_written", "partly_unwritten", "last_partial_tile"},
        "there the elements never written repeat in a pattern, which comes from the index "
        "arithmetic, not from the grid",
    ),
}


def _explained_elsewhere(cases: list[CaseResult]) -> None:
    """Where one case's output shows the cause (an output read before it was set, which
    the CPU backend's census run sees; a pattern of unwritten elements, which a small
    output is too small to show), a case it may name whose hint would send the student
    elsewhere says so instead."""
    for family, (explains, why) in EXPLAINED_ELSEWHERE.items():
        sources = [c for c in cases if c.hint_kind == family]
        for case in cases:
            source = next((c for c in sources if case.visibility.may_name(c.visibility)), None)
            if source is None or case.passed or case.hint_kind not in explains:
                continue
            case.hint = f"{_wrong(case)} Case {source.name} shows why: {why} (see that case)."
            case.hint_kind = family


def add_findings(case: CaseResult, found: list[Diagnostic]) -> None:
    """A checker's findings in the case's run (--sanitize): any that is more than
    informative fails it, as the CPU backend's own checks do."""
    known = {(d.kind, d.message) for d in case.diagnostics}
    case.diagnostics += [d for d in found if (d.kind, d.message) not in known]
    if case.passed and any(d.kind not in INFORMATIVE for d in found):
        case.status = Status.FAILED
        if not case.hint:
            case.hint, case.hint_kind = SANITIZER_FOUND, "sanitizer_found"


def race_fails_every_case(lab: Lab, cases: list[CaseResult]) -> None:
    """A race whose finding covers every case (RaceScope.EVERY_CASE, and RUNS where the
    CPU model did not place it) makes the kernel wrong in every case that may name the one
    it was found in: where its numbers came out right, that was luck, and a GPU has more
    of it than the CPU backend, whose threads take turns. So both backends grade it alike."""
    wide = (RaceScope.EVERY_CASE, RaceScope.RUNS)
    found = [(c, d) for c in cases for d in c.diagnostics if d.race_scope in wide]
    _race_located_elsewhere(found)
    for case in cases:
        seen = next(((c, d) for c, d in found if case.visibility.may_name(c.visibility)), None)
        if not case.passed or seen is None:
            continue
        raced, race = seen
        kernel = race.kernel or lab.kernel.name
        case.status = Status.FAILED
        case.diagnostics.append(
            Diagnostic(
                Kind.RACE,
                f"Case {raced.name} showed a race in {kernel} (see that case). {RACE_LUCK}",
                kernel=race.kernel,
                race_scope=RaceScope.EVERY_CASE,
            )
        )


def _race_located_elsewhere(found: list[tuple[CaseResult, Diagnostic]]) -> None:
    """A race a case's run showed but did not locate (the CPU backend watches the accesses
    of one run per module: its census case, and the first other case whose outputs the
    threads' order changed) points at a case it may name whose finding has the line."""
    located = [(c, d) for c, d in found if d.line is not None]
    for case, race in found:
        where = next(
            (c for c, d in located if c is not case and case.visibility.may_name(c.visibility)),
            None,
        )
        if race.line is None and where is not None:
            at = case.diagnostics.index(race)
            said = f"{race.message} Case {where.name} shows the line (see that case)."
            case.diagnostics[at] = dataclasses.replace(race, message=said)


def launchable(result: Result) -> bool:
    """Whether nothing found so far keeps the kernel from launching: no compile error, and
    no interface or resource finding."""
    unlaunched = (Kind.INTERFACE, Kind.COMPILE_ERROR, Kind.RESOURCES)
    return not any(d.kind in unlaunched for d in result.diagnostics)


def speed_unmeasured(
    cases: list[CaseResult], timing: bool, backend: str, measures: bool
) -> str | None:
    """Why the grading measures no speed, as a note for the report; None where it does:
    with `timing` asked, on a backend that `measures` it, once every case passed."""
    if not timing:
        return "Speed was not measured (--no-timing)."
    if not measures:
        return (
            f"Speed is scored only on a GPU; the {backend} backend checks correctness and "
            "memory safety."
        )
    if not cases or not all(c.passed for c in cases):
        return SPEED_WAITS
    return None


def refusal_fails_every_case(result: Result) -> None:
    """A file one of whose builds the grader refused (Diagnostic.refused: text that would
    hide the kernel's accesses from the checks, which the CPU backend's census build alone
    looks for where it is a copy) is graded in none of its cases, as a file that does not
    compile: its other builds ran a kernel the grader was kept from watching, and a
    student would otherwise keep the points of every case but the one or two the census
    build runs. A GPU grading, whose CPU model refused it (grader.judge.model_findings
    .refuse, on each case), is given the same findings: the refusal, once, and no rule
    that measures the work counted as broken, since nothing was graded."""
    lifted = [d for c in result.cases for d in c.diagnostics if d.refused]
    if not lifted and not any(d.refused for d in result.diagnostics):
        return
    result.diagnostics = [d for d in result.diagnostics if d.kind != Kind.REQUIREMENT]
    for refusal in lifted:
        if refusal not in result.diagnostics:
            result.diagnostics.append(refusal)
    result.cases = [
        CaseResult(
            name=c.name, visibility=c.visibility, sizes=c.sizes, status=Status.ERROR, hint=REFUSED
        )
        for c in result.cases
    ]


def conclude(lab: Lab, result: Result, hidden_run: bool, speed_graded: bool) -> None:
    """The result's score and status, from its cases and findings (a refused file's
    cases as not run), and a note for hidden cases that did not run."""
    refusal_fails_every_case(result)
    rule_broken = scoring.rule_broken(result)
    score = scoring.total(
        lab.scoring, result.cases, hidden_run, result.performance, speed_graded, rule_broken
    )
    result.score, result.max_score = score.points, score.max_points
    result.status = status(result)
    parts = {"hidden": lab.scoring.hidden * bool(result.hidden_not_run)}
    parts["speed"] = 0.0 if speed_graded else lab.scoring.performance
    result.elsewhere = {part: points for part, points in parts.items() if points}
    if result.hidden_not_run:
        result.notes.append(
            # said to students too (Gradescope, CI): no flag or secret they cannot have
            f"{result.hidden_not_run} hidden cases, worth {lab.scoring.hidden:g} points, were "
            "not run here: the course staff run them when they grade."
        )


def status(result: Result) -> Status:
    """error: nothing could be run; failed: graded with failures; passed: all passed."""
    if not result.cases or all(
        c.status == Status.ERROR and not c.diagnostics for c in result.cases
    ):
        return Status.ERROR
    failed = any(not c.passed for c in result.cases) or any(
        d.kind not in INFORMATIVE for d in result.diagnostics
    )
    return Status.FAILED if failed or not result.cases else Status.PASSED
