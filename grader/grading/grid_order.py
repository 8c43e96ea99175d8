"""A grade must not depend on the cores a grading had. A backend that runs a case's blocks
at once, each on a thread of its own (the CPU backend's pool: RunOutcome.blocks_at_once),
leaves outputs that depend on which block ran first only where a block reads what another
stored, with no wait. The runs that watch loads say whether one did
(RunOutcome.blocks_read_each_other: the CPU backend's census case, and its run that
locates a race). At the grading's end, cases whose blocks ran at once run again one block
after another in grid order (Backend.run_in_grid_order), their results in place of the
first: every such case where a block read another's store, for one that passed may have
found that store done by luck; the failed ones where no watched run covered more than one
block (the census case of scan and reduction is one block), for a case that fails at
once may pass in grid order. tests/test_determinism.py holds every known-wrong kernel to
the same report on 1, 2 and 3 pool threads."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

from grader.judge.grading import hung_before
from grader.model.lab import Case
from grader.model.launch import Build, RunOutcome, read_in_either
from grader.model.result import CaseResult, Result, Status


@dataclass
class Later:
    """What a grading's runs said of their blocks, for the cases to run again at its end."""

    at_once: dict[str, Case] = field(default_factory=dict)  # their blocks ran at once
    read: bool | None = None  # blocks_read_each_other, over the runs that watched

    def note(self, case: Case, outcome: RunOutcome) -> None:
        if outcome.blocks_at_once:
            self.at_once[case.name] = case
        self.read = read_in_either(self.read, outcome.blocks_read_each_other)

    def again(self, results: list[CaseResult]) -> list[tuple[int, Case]]:
        """The cases to run again in grid order, each with its place among `results`; a
        timed-out one never (its run in grid order would wait as long)."""
        if self.read is False:
            return []
        wanted = {Status.FAILED, Status.ERROR} | ({Status.PASSED} if self.read else set())
        found = [(i, self.at_once.get(r.name)) for i, r in enumerate(results) if r.status in wanted]
        return [(i, case) for i, case in found if case is not None]


class Grading(Protocol):
    """What of a grading (grader.grading.pipeline.Grading) `again` uses."""

    result: Result
    later: Later

    def build_for(self, case: Case) -> Build: ...
    def run_case(
        self, case: Case, build: Build, ahead: bool = False, in_order: bool = False
    ) -> tuple[CaseResult, RunOutcome, float] | None: ...
    def stop_ready(self) -> None: ...


def again(grading: Grading) -> None:
    """Each case `grading.later` says to run again in grid order, its result in the first
    one's place; one that fails now stops the timing's preparation, as a failure does. A
    case after too many that hung in grid order is not run, as in a grading in turn."""
    cases = grading.result.cases
    for index, case in grading.later.again(cases):
        skipped = hung_before(case, cases[:index])
        if skipped is not None:
            cases[index] = skipped
            continue
        result, _, seconds = grading.run_case(case, grading.build_for(case), in_order=True)
        result.seconds += cases[index].seconds
        cases[index] = result
        if not result.passed:
            grading.stop_ready()
