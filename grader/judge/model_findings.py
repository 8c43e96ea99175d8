"""What the CPU model saw of the threads of each block, believed on a GPU. A grading on
a GPU has the CPU model run the profile case (grader.grading.profiles), and that run
watches what the CPU backend watches in its census case: every shared-memory access
that races among a block's threads, two threads storing into one element, and a
barrier that not every thread of a block reaches. A GPU runs such a kernel and often
gets the right numbers by luck, so without this a kernel's grade would depend on the
backend that graded it. Each finding reaches the cases the CPU backend's own would:

- a race among a block's threads (RaceScope.EVERY_CASE) fails every case, a public one
  too where the profile case is hidden (then the sentence names no case and no size);
- two threads of a block storing into one element (RaceScope.STORES) fail every case
  too: the CPU backend's thread orders find them in each case where they happen, but no
  run watches the GPU's other cases, whose lanes may leave the right value by luck;
- a race of one case (RaceScope.CASE: two blocks storing into one element) fails the
  profile case;
- a barrier not every thread reaches fails the profile case; and where the GPU's own
  run of that case came out right, every case, as a race does: the GPU let the waiting
  threads go on, and does so at every size (the CPU backend sees it in each case).
- a file whose text the model's build refused (Build.refused: an attribute that would
  take the kernel out of the hooks) fails every case, as the CPU backend's build fails.

The GPU's own finding of a case whose two runs gave different outputs (RaceScope.RUNS)
does not say whether threads of a block or blocks raced: it reaches every case, as a
block's race does, unless the model's run placed it among blocks (placed).

Not believed, because the backends differ there by design, and each case's own run
finds them on each backend: what a kernel computes from shared memory nobody wrote (NaN
on the CPU, stale values on a GPU), accesses out of bounds, crashes and hangs.
Functions over results: the pipeline runs the model and hands its outcome here."""

from __future__ import annotations

import dataclasses
import re

from grader.judge.grading import RACE_LUCK
from grader.judge.rules import HIDDEN_CASE
from grader.model.lab import Case
from grader.model.launch import RunOutcome
from grader.model.result import CaseResult, Diagnostic, Kind, RaceScope, Status

BELIEVED = (Kind.RACE, Kind.BARRIER_DIVERGENCE)
HOW_TO_SEE = (
    "`grader check` with --backend cpu shows it on any machine, and with --sanitize on a "
    "GPU, compute-sanitizer's racecheck and synccheck may."
)
BARRIER_LUCK = (
    "A barrier that some of the threads it waits for never reach is undefined: the GPU let "
    "the waiting threads go on, so this case's right numbers were luck: it fails until "
    "every thread reaches each barrier it waits at."
)
WHAT = {Kind.RACE: "a race", Kind.BARRIER_DIVERGENCE: "threads waiting at different barriers"}
# the shared array a race finding names, as the CPU backend writes it (Ms[0][3]): its name
# alone, since the element depends on the sizes; an identifier, whatever the record held
SHARED = re.compile(r"__shared__ (\w+)")


def unwatched(why: str) -> str:
    """The note of a GPU grading whose CPU model ran nothing (`why`, a clause: "there the
    kernel did not build for the CPU model")."""
    return (
        "Races among the threads of a block, and barriers not every thread reaches, were "
        "not watched on this GPU: the grader's CPU model watches them in its run of the "
        f"profile case, and {why}. {HOW_TO_SEE}"
    )


def refuse(refusals: list[Diagnostic], cases: list[CaseResult]) -> None:
    """Fail every case for what the CPU model's build refused in the file (Build.refused:
    an attribute that would hide the kernel's accesses from the checks), as the CPU
    backend's build fails them: the GPU ran the kernel, but with the grader blind to its
    threads' accesses, which the text chose. The sentences name lines, no case; the
    grading's conclusion lifts them onto the result, which then holds what the CPU
    backend's holds (grader.judge.grading.refusal_fails_every_case)."""
    said = [
        dataclasses.replace(
            refusal,
            message=f"The grader's CPU model, which watches every grading's memory accesses, "
            f"refused this file: {refusal.message}",
        )
        for refusal in refusals
    ]
    for case in cases:
        for diagnostic in said:
            _fail(case, diagnostic)


def believed(outcome: RunOutcome) -> list[Diagnostic]:
    """The findings of the model's run that a grading on a GPU believes."""
    return [d for d in outcome.diagnostics if d.kind in BELIEVED]


def believe(case: Case, outcome: RunOutcome, cases: list[CaseResult]) -> None:
    """Fail the GPU's `cases` for what the CPU model's run of `case` (the profile case)
    found, each finding where the CPU backend's own would reach."""
    own = next((c for c in cases if c.name == case.name), None)
    if own is None:
        return
    lucky = own.passed  # the GPU's run of the very case the model saw go wrong
    for finding in believed(outcome):
        _fail(own, _as_found(finding))
        if _every_case(finding, lucky):
            for other in cases:
                if other is not own and other.passed:
                    _fail(other, _pointer(finding, case, other))


def placed(outcome: RunOutcome, cases: list[CaseResult]) -> None:
    """The GPU's races of two runs that differed (RaceScope.RUNS) narrowed to the case
    each showed in, where the model's whole run of the profile case found only races of
    one case (two blocks storing into one element): the race the CPU backend would find
    there too, and fail that case alone for. Where the model found a race among a block's
    threads, a barrier, or nothing, or its run did not end, they keep reaching every case:
    a block's race the model did not see at its size may be theirs."""
    found = believed(outcome)
    if not outcome.completed or not found:
        return
    if any(d.kind != Kind.RACE or d.race_scope != RaceScope.CASE for d in found):
        return
    for case in cases:
        case.diagnostics = [
            dataclasses.replace(d, race_scope=RaceScope.CASE)
            if d.race_scope == RaceScope.RUNS
            else d
            for d in case.diagnostics
        ]


def _every_case(finding: Diagnostic, lucky: bool) -> bool:
    if finding.kind == Kind.RACE:
        return finding.race_scope in (RaceScope.EVERY_CASE, RaceScope.STORES)
    return lucky


def _fail(case: CaseResult, said: Diagnostic) -> None:
    if (said.kind, said.message) not in {(d.kind, d.message) for d in case.diagnostics}:
        case.diagnostics.append(said)
    case.status = Status.FAILED if case.passed else case.status


def _as_found(finding: Diagnostic) -> Diagnostic:
    """The finding on the profile case itself, in the CPU backend's words."""
    return dataclasses.replace(
        finding,
        message=f"The grader's CPU model ran this case too, and found: {finding.message} "
        f"{HOW_TO_SEE}",
    )


def _pointer(finding: Diagnostic, found: Case, case: CaseResult) -> Diagnostic:
    """What a case the GPU passed is told of a finding that reaches it: where the model
    found it, by the case's name where `case` may name it, else located with no word of
    the hidden case it came from (its outputs, values and blocks tell of its sizes)."""
    kernel = finding.kernel or "the kernel"
    luck = RACE_LUCK if finding.kind == Kind.RACE else BARRIER_LUCK
    what = f"The grader's CPU model found {WHAT[finding.kind]} in {kernel}"
    if case.visibility.may_name(found.visibility):
        message = f"{what} in case {found.name} (see that case). {luck}"
    else:
        shared = SHARED.search(finding.message)
        array = f", on __shared__ {shared[1]}," if shared else ""
        thread = "thread ({},{},{}) of a block".format(*finding.thread) if finding.thread else ""
        line = f"line {finding.line}" if finding.line else ""
        at = " at ".join(part for part in (thread, line) if part)
        where = f"{array} in {HIDDEN_CASE}{f': {at}' if at else ''}"
        message = f"{what}{where}. {luck} {HOW_TO_SEE}"
    return Diagnostic(
        finding.kind,
        message,
        kernel=finding.kernel,
        line=finding.line,
        race_scope=finding.race_scope,
    )
