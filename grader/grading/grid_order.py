"""A grade must not depend on the cores a grading had. A backend that runs a case's blocks
at once, each on a thread of its own (the CPU backend's pool: RunOutcome.blocks_at_once),
runs them again one after another in grid order (Backend.run_in_grid_order) where what
they did may have depended on which ran first: at once, a case that failed; at the
grading's end, every case whose blocks ran at once, where a run saw a block read what
another had stored (RunOutcome.blocks_read_each_other: blocks that read each other's
work with no wait may find it done by luck). tests/test_determinism.py holds every
known-wrong kernel to the same report on 1, 2 and 3 pool threads."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol

from grader.backends.base import Backend
from grader.model.lab import Case
from grader.model.launch import Build, Launch, RunOutcome
from grader.model.result import CaseResult, Result

Judged = tuple[CaseResult, RunOutcome]


def run(
    backend: Backend,
    run_args: tuple[Build, Launch, float],
    judged: Callable[[RunOutcome], CaseResult],
    ahead: bool = False,
    in_order: bool = False,
) -> Judged | None:
    """The case's run (`run_ahead` with `ahead`, and its None), judged; in grid order with
    `in_order`, or again so where it failed after its blocks ran at once."""
    if in_order:
        outcome = backend.run_in_grid_order(*run_args, ahead)
    else:
        outcome = (backend.run_ahead if ahead else backend.run)(*run_args)
    if outcome is None:
        return None
    found = judged(outcome)
    if outcome.blocks_at_once and not found.passed:
        return run(backend, run_args, judged, ahead, in_order=True)
    return found, outcome


@dataclass
class Later:
    """What a grading's runs said of their blocks, for the cases to run again at its end."""

    at_once: dict[str, Case] = field(default_factory=dict)  # their blocks ran at once
    blocks_meet: bool = False  # a run saw a block read what another had stored

    def note(self, case: Case, outcome: RunOutcome) -> None:
        if outcome.blocks_at_once:
            self.at_once[case.name] = case
        self.blocks_meet = self.blocks_meet or outcome.blocks_read_each_other

    def again(self, results: list[CaseResult]) -> list[tuple[int, Case]]:
        """The cases to run again in grid order, each with its place among `results`."""
        if not self.blocks_meet:
            return []
        found = [(i, self.at_once.get(r.name)) for i, r in enumerate(results)]
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
    one's place; one that fails now stops the timing's preparation, as a failure does."""
    cases = grading.result.cases
    for index, case in grading.later.again(cases):
        result, _, seconds = grading.run_case(case, grading.build_for(case), in_order=True)
        result.seconds += cases[index].seconds
        cases[index] = result
        if not result.passed:
            grading.stop_ready()
