"""Where a batch's time goes (grader.course.stages): a worker's clock around its
backend, and what the batch takes of a worker's figures."""

from __future__ import annotations

import time

from grader.backends.base import Backend
from grader.course import stages


class Slow(Backend):
    """Builds take 0.1 s, runs 0.2 s: a stand-in whose only behaviour is its time."""

    name = "slow"

    def device(self) -> str:
        return "nothing"

    def build(self, submission, macros, launch_defaults, census=False):
        time.sleep(0.1)

    def run(self, build, launch, timeout):
        time.sleep(0.2)


def test_a_workers_clock_splits_a_grading_into_its_stages_and_starts_again():
    clocked = stages.Clocked(Slow())
    clocked.build(None, {}, (1, 1, 1))
    clocked.run(None, None, 1.0)
    clocked.run(None, None, 1.0)
    taken = clocked.take(graded=5.0)
    assert set(taken) == {stages.COMPILE, stages.CASES, stages.TIMING, stages.GRADING}
    assert 0.1 <= taken[stages.COMPILE] < taken[stages.CASES] and taken[stages.CASES] >= 0.4
    assert taken[stages.TIMING] == 0 and abs(sum(taken.values()) - 5.0) < 1e-9
    assert clocked.take(graded=0.0) == dict.fromkeys(taken, 0.0)


def test_the_batch_keeps_only_stages_it_knows_with_finite_seconds():
    sent = {"compile": 1.5, "cases": "2", "timing": float("nan"), "reports": -1, "mine": 3}
    assert stages.read(sent) == {"compile": 1.5}
    assert stages.read(["compile", 1.0]) == {}
