"""A grading's cases on several cores: a case's run started while the runs of the cases
before it go on, each result taken in the cases' order, so that the report is the one a
grading in turn makes (tests/cpu/test_cases_beside.py). A case the kernel hung too
often before is not run, as in turn: its run, and every later one, is stopped. A run the
backend could not make ahead (one that depends on what the earlier ones found, or one
that timed out beside another) is made again in turn and alone (`Beside.alone`)."""

from __future__ import annotations

import time
from collections import deque
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from typing import Protocol

from grader.backends.base import Backend
from grader.judge import rules
from grader.judge.grading import hung_before
from grader.model.lab import Case
from grader.model.launch import Build, RunOutcome
from grader.model.result import CaseResult, Result

# a case waiting: its build, the seconds before its run, and its run made ahead, its
# result where it cannot run, or None where it is not run ahead
Waiting = tuple[Case, Build, float, CaseResult | Future | None]
LOOKAHEAD = 8  # cases waiting for an earlier case's result, at most


class Grading(Protocol):
    """What of a grading (grader.grading.pipeline.Grading) its cases' runs use."""

    backend: Backend
    result: Result
    blocks: set[str]

    def build_for(self, case: Case) -> Build: ...
    def grade_case(self, case: Case) -> CaseResult: ...
    def add_case(self, result: CaseResult) -> None: ...
    def run_case(
        self, case: Case, build: Build, ahead: bool = False
    ) -> tuple[CaseResult, RunOutcome, float] | None: ...
    def count(self, case: Case, outcome: RunOutcome) -> None: ...
    def tell_case(self) -> None: ...


class Beside:
    def __init__(self, grading: Grading) -> None:
        self.grading = grading
        self.waiting: deque[Waiting] = deque()
        self.in_turn = False  # the cases left run one at a time

    def grade(self, cases: list[Case]) -> None:
        """Grading.grade_case for each case, a case's run started while those of the
        cases before it go on."""
        grading, waiting = self.grading, self.waiting
        width = grading.backend.concurrent_runs()
        with ThreadPoolExecutor(width, thread_name_prefix="grader-case") as pool:
            try:
                for case in cases:
                    if self.in_turn:
                        while waiting:
                            self.take()
                        grading.add_case(grading.grade_case(case))
                        continue
                    start = time.monotonic()
                    build = grading.build_for(case)  # absorbed, and its blocks decided, in order
                    item = rules.blocked(case, build, grading.blocks)
                    if item is None and hung_before(case, grading.result.cases) is None:
                        item = pool.submit(grading.run_case, case, build, True)
                    waiting.append((case, build, time.monotonic() - start, item))
                    self.make_room(width)
                while waiting:
                    self.take()
            except BaseException:
                grading.backend.stop_runs()  # the pool's threads end with their workers
                raise

    def make_room(self, width: int) -> None:
        """Wait until fewer than `width` runs go on, taking the results that are in from
        the head: a long run holds up the report's order, not the runs of the cases after
        it (a lab's large last cases beside its small ones; before, a run ahead could
        start only once every run before it was taken)."""
        while True:
            while self.waiting and (not _going(self.waiting[0]) or len(self.waiting) >= LOOKAHEAD):
                self.take()
            going = [w[3] for w in self.waiting if _going(w)]
            if len(going) < width:
                return
            wait(going, return_when=FIRST_COMPLETED)

    def take(self) -> None:
        """The result of the first case waiting, once those before it are taken."""
        grading = self.grading
        case, build, waited, item = self.waiting.popleft()
        grading.tell_case()
        if isinstance(item, CaseResult):
            item.seconds = waited
            grading.add_case(item)
            return
        result = hung_before(case, grading.result.cases)
        if result is not None:
            if item is not None:
                grading.backend.stop_runs()  # every run going on is of a case after this one
            seconds = waited
        else:
            made = item.result() if item is not None else None
            if made is None:
                self.alone()
                made = grading.run_case(case, build)
            result, outcome, seconds = made
            grading.count(case, outcome)
            seconds += waited
        result.seconds = seconds
        grading.add_case(result)

    def alone(self) -> None:
        """Stop the runs made ahead of the cases waiting, which are then made in turn, as
        are the cases after them: a run in turn has the cores to itself, and the wall
        clock that stops a kernel that waits then runs as in a grading in turn."""
        self.in_turn = True
        if any(isinstance(w[3], Future) for w in self.waiting):
            self.grading.backend.stop_runs()
        for index, (case, build, waited, item) in enumerate(self.waiting):
            if isinstance(item, Future):
                wait([item])  # ended by the stop; what it found is dropped
                self.waiting[index] = (case, build, waited, None)


def _going(item: Waiting) -> bool:
    """Whether the case's run made ahead goes on."""
    return isinstance(item[3], Future) and not item[3].done()
