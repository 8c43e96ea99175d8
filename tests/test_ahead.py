"""Work done ahead (grader.ahead): values made in background threads in the order given,
raised where asked for, and nothing left waiting on a caller that stopped."""

from __future__ import annotations

import subprocess
import sys
import threading
import time

import pytest

from grader import waiting
from grader.ahead import Ahead, in_background


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
    threading.Timer(0.2, release.set).start()
    ahead.close()  # waits for the two started, which nothing can stop here
    assert ahead.get(0) == 0 and ahead.get(1) == 1
    assert sorted(made) == [0, 1]  # 2 and 3 were never started
    assert ahead.get(3) == 3 and made[-1] == 3


def _endless_child() -> str:
    """What a compiler made ahead does: wait for a child that would take 60 s."""
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        waiting.wait(proc, 120)
    finally:
        proc.kill()
        proc.wait()
    return "made ahead"


@pytest.mark.parametrize("nested", [False, True], ids=["in its thread", "in_background"])
def test_closing_stops_a_make_that_waits_for_a_child_and_get_makes_it_then(nested):
    """As a grading that ends stops the compilers of its builds made ahead (a build's C++
    compile runs in_background, in the build's context)."""
    main = threading.current_thread()
    waited = threading.Event()

    def make(key: int) -> str:
        if threading.current_thread() is main:
            return "made in turn"
        waited.set()
        return in_background(_endless_child).result() if nested else _endless_child()

    ahead = Ahead(make, [0, 1], workers=2)
    assert waited.wait(10)
    time.sleep(0.2)  # the child started and is waited for
    start = time.monotonic()
    ahead.close()
    assert time.monotonic() - start < 5
    assert ahead.get(0) == ahead.get(1) == "made in turn"
