"""Which cases a grading runs again with their blocks in grid order at its end
(grader.grading.grid_order), from what the runs said of their blocks. The kernels that
need it are graded end to end by tests/test_determinism.py on 1, 2 and 3 pool threads."""

from __future__ import annotations

from dataclasses import dataclass, field

from grader.grading import grid_order
from grader.model.lab import Case
from grader.model.launch import RunOutcome
from grader.model.result import CaseResult, Result, Status, Visibility

NAMES = ("small", "middle", "large", "larger")


def _case(name: str) -> Case:
    return Case(name, {"n": 1})


def _result(name: str, status: Status) -> CaseResult:
    return CaseResult(name=name, visibility=Visibility.PUBLIC, sizes={}, status=status)


def _later(statuses, at_once=NAMES, read=(None,)) -> tuple[grid_order.Later, list[CaseResult]]:
    later = grid_order.Later()
    for name in NAMES:
        later.note(_case(name), RunOutcome(blocks_at_once=name in at_once))
    for said in read:  # the census case's run, on one pool thread
        later.note(_case("census"), RunOutcome(blocks_read_each_other=said))
    return later, [_result(n, s) for n, s in zip(NAMES, statuses, strict=True)]


P, F, T = Status.PASSED, Status.FAILED, Status.TIMEOUT


def again(later, results) -> list[str]:
    return [case.name for _, case in later.again(results)]


def test_where_a_block_read_anothers_store_every_case_at_once_runs_again_but_a_hang():
    later, results = _later([P, F, T, P], at_once=("small", "middle", "large"), read=(True,))
    assert again(later, results) == ["small", "middle"]


def test_where_no_watched_run_covered_two_blocks_the_failed_cases_run_again():
    later, results = _later([P, F, F, P])
    assert again(later, results) == ["middle", "large"]


def test_where_the_watched_blocks_read_none_of_each_others_stores_nothing_runs_again():
    later, results = _later([P, F, F, P], read=(False,))
    assert again(later, results) == []


def test_one_watched_run_that_saw_a_read_outweighs_one_that_saw_none():
    for read in [(False, True), (True, False), (None, True, None)]:
        later, results = _later([P, F, P, P], read=read)
        assert again(later, results) == ["small", "middle", "large", "larger"], read


@dataclass
class _Grading:
    result: Result
    later: grid_order.Later
    ran: list[str] = field(default_factory=list)
    stopped: bool = False

    def build_for(self, case):
        return None

    def run_case(self, case, build, ahead=False, in_order=False):
        assert in_order and not ahead
        self.ran.append(case.name)
        return _result(case.name, T), RunOutcome(timed_out=True), 1.0

    def stop_ready(self):
        self.stopped = True


def test_reruns_take_the_first_results_places_and_stop_after_as_many_hangs_as_in_turn():
    later, results = _later([F, F, F, F])
    result = Result(
        lab="l", submission="k.cu", backend="cpu", device="", status=Status.FAILED,
        score=0.0, max_score=0.0, compile=None, kernel="k", cases=results,
    )  # fmt: skip
    grading = _Grading(result, later)
    grid_order.again(grading)
    assert grading.ran == ["small", "middle"] and grading.stopped  # MAX_TIMEOUTS hangs
    assert [c.status for c in result.cases] == [T, T, T, T]
    assert result.cases[2].hint == "Not run: the kernel already hung in 2 cases."
