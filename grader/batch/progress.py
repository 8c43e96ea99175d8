"""What a batch shows while it runs: on a terminal, one line redrawn in place (a bar, how
many are done, how many could not be graded, the time left); elsewhere (a log, CI, Slurm)
one plain line per submission."""

from __future__ import annotations

import time
from typing import TextIO

from grader.course.points import Standing
from grader.report.common import printable

BAR = 24  # characters of the bar


def clock(seconds: float) -> str:
    seconds = int(round(seconds))
    hours, rest = divmod(seconds, 3600)
    return f"{hours}:{rest // 60:02d}:{rest % 60:02d}" if hours else f"{rest // 60}:{rest % 60:02d}"


class Progress:
    def __init__(self, stream: TextIO, total: int, reused: int = 0) -> None:
        self.stream = stream
        self.total = total  # submissions to grade in this run
        self.reused = reused
        self.done = 0
        self.failed = 0  # could not be graded
        self.started = time.monotonic()
        self.live = stream.isatty()

    def start(self) -> None:
        if self.reused:
            self.stream.write(f"{self.reused} submissions already graded; reusing their reports.\n")
        self.stream.write(f"Grading {self.total} submissions.\n")
        self.stream.flush()
        if self.live and self.total:
            self._redraw()

    def left(self) -> str:
        if not self.done:
            return "time left unknown"
        rate = (time.monotonic() - self.started) / self.done
        return f"{clock(rate * (self.total - self.done))} left"

    def graded(self, student: str, score: str, status: Standing, seconds: float) -> None:
        self.done += 1
        self.failed += status == Standing.NOT_GRADED
        if self.live:
            self._redraw()
            return
        name = printable(student)  # a folder name the student chose
        self.stream.write(
            f"[{self.done}/{self.total}] {name}: {score} {status} ({seconds:.1f} s)\n"
        )
        self.stream.flush()

    def _redraw(self) -> None:
        filled = BAR * self.done // max(1, self.total)
        bar = "#" * filled + "." * (BAR - filled)
        done = f"{self.done}/{self.total} done, {self.failed} could not be graded"
        line = f"\r[{bar}] {done}, {self.left()}"
        self.stream.write(line + "\x1b[K")  # clear what a longer previous line left
        self.stream.flush()

    def finish(self) -> None:
        if self.live and self.total:
            self.stream.write("\n")
        elapsed = time.monotonic() - self.started
        self.stream.write(
            f"Finished {self.done} submissions in {clock(elapsed)}"
            f"{f'; {self.failed} could not be graded' if self.failed else ''}.\n"
        )
        self.stream.flush()
