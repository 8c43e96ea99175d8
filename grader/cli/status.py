"""The status line of `grader check`: what the grading does now, redrawn in place on a
terminal's standard error, so that a student never waits on a silent screen (a cold build
takes seconds, a hung case up to its timeout).

Where standard error is not a terminal it writes nothing, unless asked (`-v`): then each
step is a plain line as it ends, with the seconds it took. Everything here is light:
it starts before the grader's modules are imported."""

from __future__ import annotations

import shutil
import threading
import time
from typing import TYPE_CHECKING, TextIO

if TYPE_CHECKING:  # the pipeline loads numpy and the backends: after the line appears
    from grader.grading.progress import Step

TICK = 0.25  # seconds between redraws: the clock of a waiting case moves visibly
QUIET_WAIT = 2.0  # seconds a case runs before the line says how long it may hang
_WHAT = {
    "loading": "loading the grader",
    "backend": "starting the backend (the first check on a machine builds its runtime)",
    "compile": "compiling",
    "sanitize": "running the public cases under compute-sanitizer",
    "timing": "timing your kernel against the reference",
}


class StatusLine:
    """A callable for Options.progress, told each step of one grading. `elsewhere` holds
    the points this check may leave to the course, by part ("hidden", "speed"): a case's
    line ends with them, as the score line does; `timeout` is a case's limit."""

    def __init__(
        self,
        stream: TextIO,
        timeout: float,
        elsewhere: dict[str, float] | None = None,
        plain: bool = False,
    ):
        self.stream = stream
        self.timeout = timeout
        self.elsewhere = {part: points for part, points in (elsewhere or {}).items() if points}
        self.live = hasattr(stream, "isatty") and stream.isatty()
        self.plain = plain and not self.live
        self.times: list[tuple[str, float]] = []  # each step, and the seconds it took
        self.step: Step | str | None = None  # "loading" is the line's own step
        self.since = time.monotonic()
        self.drawn = ""  # the line on the screen now
        self.lock = threading.Lock()
        self.stop = threading.Event()
        self.ticker = threading.Thread(target=self._tick, name="grader-status", daemon=True)
        self("loading")
        if self.live:
            self.ticker.start()

    def __call__(self, step: Step | str) -> None:
        with self.lock:
            self._end_step()
            self.step, self.since = step, time.monotonic()
            if getattr(step, "speed", None):  # this grading scores speed itself
                self.elsewhere.pop("speed", None)
            self._draw()

    def close(self) -> list[tuple[str, float]]:
        """Clear the line; the steps and their seconds."""
        self.stop.set()
        if self.ticker.is_alive():
            self.ticker.join()
        with self.lock:
            self._end_step()
            self.step = None
            if self.live:
                self.stream.write("\r\x1b[K")
                self.stream.flush()
        return self.times

    def _end_step(self) -> None:
        if self.step is None:
            return
        seconds = time.monotonic() - self.since
        name = "cases" if _name(self.step) == "case" else _name(self.step)
        if self.times and self.times[-1][0] == name:  # the cases, one after another
            seconds += self.times.pop()[1]
        self.times.append((name, seconds))
        if self.plain:
            self.stream.write(f"grader: {self.text(seconds, done=True)}\n")

    def _tick(self) -> None:
        while not self.stop.wait(TICK):
            with self.lock:
                self._draw()

    def _draw(self) -> None:
        if not self.live or self.step is None:
            return
        width = shutil.get_terminal_size().columns
        line = f"grader: {self.text(time.monotonic() - self.since)}"[: max(width - 1, 1)]
        if line != self.drawn:
            self.stream.write(f"\r{line}\x1b[K")
            self.stream.flush()
            self.drawn = line

    def text(self, seconds: float, done: bool = False) -> str:
        """What the line says of the step going on for `seconds`, or of one `done`."""
        name = _name(self.step)
        if done:
            return f"{_WHAT.get(name, 'cases')}, {seconds:.1f} s"
        if name != "case":
            return f"{_WHAT[name]}, {seconds:.0f} s"
        told = f"case {self.step.index} of {self.step.total}, {seconds:.0f} s"
        # a case that runs long: when it counts as hung, said in place of the story
        if seconds >= self.timeout:
            return f"{told}: hung past its {self.timeout:g} s, being stopped"
        if seconds >= QUIET_WAIT:
            return f"{told} (a case is stopped as hung at {self.timeout:g} s)"
        return f"{told}; {self.story()}" if self.elsewhere else told

    def story(self) -> str:
        """The points left to the course, as the score line will say them."""
        parts = ", ".join(f"{points:g} {part}" for part, points in self.elsewhere.items())
        return f"the course grades {sum(self.elsewhere.values()):g} more ({parts})"


def _name(step: Step | str) -> str:
    return step if isinstance(step, str) else step.stage
