"""Waiting for a child (grader.waiting): its exit status the moment it ends, without the
sleeps of Popen.wait's polling, and the same TimeoutExpired when it does not end."""

from __future__ import annotations

import subprocess
import sys
import threading
import time

import pytest

from grader import waiting


def test_the_exit_status_comes_without_sleeping_between_looks(monkeypatch):
    proc = subprocess.Popen(["sh", "-c", "sleep 0.2; exit 3"])

    def no_sleep(seconds: float) -> None:
        raise AssertionError(f"slept {seconds} s: polled")

    monkeypatch.setattr(time, "sleep", no_sleep)
    assert waiting.wait(proc, 30) == 3


def test_a_child_that_does_not_end_in_time_raises_timeout_expired():
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        start = time.monotonic()
        with pytest.raises(subprocess.TimeoutExpired):
            waiting.wait(proc, 0.3)
        assert 0.25 < time.monotonic() - start < 10
        assert proc.poll() is None
    finally:
        proc.kill()
    assert waiting.wait(proc, 30) == -9  # killed, as Popen reports a signal


def test_a_child_already_reaped_gives_its_status_again():
    proc = subprocess.Popen(["true"])
    proc.wait()
    assert waiting.wait(proc, 1) == 0


def test_a_wait_under_a_cancel_ends_when_it_is_set_and_others_do_not():
    cancel = waiting.Cancel()
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    ended: list[BaseException] = []

    def wait_under_cancel() -> None:
        try:
            waiting.wait(proc, 30)
        except BaseException as error:  # noqa: BLE001 - the test looks at it
            ended.append(error)

    try:
        thread = threading.Thread(target=waiting.under, args=(cancel, wait_under_cancel))
        thread.start()
        time.sleep(0.2)
        assert not ended
        start = time.monotonic()
        cancel.set()
        thread.join(10)
        assert time.monotonic() - start < 2
        assert [type(e) for e in ended] == [waiting.Cancelled]
        assert proc.poll() is None  # stopping it is the caller's
        with pytest.raises(subprocess.TimeoutExpired):  # this thread is under no cancel
            waiting.wait(proc, 0.2)
        with pytest.raises(waiting.Cancelled):  # set before: at once
            waiting.under(cancel, lambda: waiting.wait(proc, 30))
    finally:
        proc.kill()
    assert waiting.wait(proc, 30) == -9
