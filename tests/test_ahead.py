"""Work done ahead (grader.ahead): values made in background threads in the order given,
raised where asked for, and nothing left waiting on a caller that stopped."""

from __future__ import annotations

import threading

import pytest

from grader.ahead import Ahead


def test_later_values_are_made_while_the_first_is_still_being_made():
    release = threading.Event()
    made = []

    def make(key: int) -> int:
        if key == 0:
            assert release.wait(10), "the other keys were never made meanwhile"
        made.append(key)
        if len(made) == 2:  # key 1 and 2 done: one thread made both while key 0 waited
            release.set()
        return key * 10

    with Ahead(make, [0, 1, 2], workers=2) as ahead:
        assert [ahead.get(k) for k in (0, 1, 2)] == [0, 10, 20]
    assert made == [1, 2, 0]


def test_what_making_a_value_raised_is_raised_by_get_and_the_others_still_come():
    def make(key: str) -> str:
        if key == "bad":
            raise ValueError("no such build")
        return key.upper()

    with Ahead(make, ["bad", "good"], workers=2) as ahead:
        with pytest.raises(ValueError, match="no such build"):
            ahead.get("bad")
        assert ahead.get("good") == "GOOD"


def test_with_one_worker_each_value_is_made_when_asked_for_in_the_callers_thread():
    threads = []

    def make(key: int) -> int:
        threads.append(threading.current_thread())
        return key

    ahead = Ahead(make, [1, 2], workers=1)
    assert threads == []
    assert ahead.get(2) == 2 and threads == [threading.current_thread()]


def test_closing_cancels_what_has_not_started_and_a_later_get_makes_it_then():
    started, release = threading.Event(), threading.Event()
    made = []

    def make(key: int) -> int:
        made.append(key)
        if key < 2:
            started.set()
            release.wait(10)
        return key

    ahead = Ahead(make, [0, 1, 2, 3], workers=2)
    assert started.wait(10)
    ahead.close()
    release.set()
    assert ahead.get(0) == 0 and ahead.get(1) == 1
    assert sorted(made) == [0, 1]  # 2 and 3 were never started
    assert ahead.get(3) == 3 and made[-1] == 3
