"""The whole grading's deadline in the main thread: an alarm that unwinds the grading."""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager


class DeadlinePassed(BaseException):
    """The whole grading took longer than its deadline. A BaseException, as Ctrl-C is: it
    unwinds through every `finally` that stops a worker or removes a folder, and no
    `except Exception` on the way keeps the grading going."""


@contextmanager
def deadline(seconds: float) -> Iterator[None]:
    """Raise DeadlinePassed in this thread once `seconds` have passed (SIGALRM, which only
    the main thread receives; elsewhere there is no deadline)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def expire(signum: int, frame: object) -> None:
        raise DeadlinePassed

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
