"""Work done ahead of need: the values of known keys made in background threads, in the
order given, while the caller uses those made first. A grading knows from its cases every
build it will need, and compiles the later ones while the earlier ones' cases run; a
build starts its C++ compile while nvcc runs (`in_background`).

The threads are daemons, and `close` cancels what has not started and stops what has (a
wait for a compiler made ahead raises grader.waiting.Cancelled, and the compiler is
stopped): a grading ended by its deadline, a compile that timed out or Ctrl-C leaves no
compiler of its builds running, and waits only for them to stop."""

from __future__ import annotations

import contextvars
import threading
from collections import deque
from collections.abc import Callable, Hashable
from concurrent import futures
from concurrent.futures import Future
from functools import partial
from typing import Generic, TypeVar

from grader import waiting

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")
STOPPING = 10.0  # seconds close() waits for the makes it stopped (a compiler's sandbox: 5)


def in_background(make: Callable[[], V], name: str | None = None) -> Future[V]:
    """`make()`, made in a daemon thread of its own (called `name`), in the caller's
    context (so under its Cancel, if any)."""
    future: Future[V] = Future()

    def work() -> None:
        if future.set_running_or_notify_cancel():
            _settle(future, make)

    context = contextvars.copy_context()
    threading.Thread(target=context.run, args=(work,), name=name, daemon=True).start()
    return future


def _settle(future: Future[V], make: Callable[[], V]) -> None:
    try:
        future.set_result(make())
    except BaseException as error:  # noqa: BLE001 - whoever asks for the result raises it
        future.set_exception(error)


class Ahead(Generic[K, V]):
    """`get(key)` is `make(key)`, made by one of `workers` threads in the order of `keys`.
    With one worker, or one key, nothing is made ahead: `get` makes it then."""

    def __init__(self, make: Callable[[K], V], keys: list[K], workers: int) -> None:
        self._make = make
        keys = list(dict.fromkeys(keys))
        self._futures: dict[K, Future[V]] = {}
        self._cancel = waiting.Cancel()
        if workers > 1 and len(keys) > 1:
            self._futures = {key: Future() for key in keys}
            self._queue = deque(keys)
            for _ in range(min(workers, len(keys))):
                work = (self._cancel, self._work)
                threading.Thread(target=waiting.under, args=work, daemon=True).start()

    def get(self, key: K) -> V:
        """The value for `key`, waiting for it if a thread is making it; what making it
        raised is raised here. After `close`, what was not made is made here."""
        future = self._futures.get(key)
        if future is None or future.cancelled():
            return self._make(key)
        try:
            return future.result()
        except waiting.Cancelled:
            return self._make(key)

    def close(self) -> None:
        """Cancel what has not started, and stop what has: a process that exits next
        leaves no compiler behind."""
        for future in self._futures.values():
            future.cancel()
        self._cancel.set()
        futures.wait(self._futures.values(), timeout=STOPPING)

    def __enter__(self) -> Ahead[K, V]:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _work(self) -> None:
        while True:
            try:
                key = self._queue.popleft()
            except IndexError:
                return
            future = self._futures[key]
            if future.set_running_or_notify_cancel():
                _settle(future, partial(self._make, key))
