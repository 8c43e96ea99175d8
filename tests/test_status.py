"""The status line of `grader check` (grader/cli/status.py): on a terminal it appears at
once and says which step runs, how long a case has waited and when it counts as hung;
elsewhere it writes nothing, or plain lines with -v."""

from __future__ import annotations

import fcntl
import io
import os
import re
import select
import struct
import subprocess
import sys
import termios
import time
from pathlib import Path

import pytest

from grader.cli.status import StatusLine
from grader.grading.progress import Step
from grader.labs import get

ROOT = Path(__file__).resolve().parents[1]
LAB = "matmul-naive"
COLUMNS = 80
_ESCAPE = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


class _Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_a_case_says_its_number_its_clock_and_when_it_counts_as_hung():
    status = StatusLine(io.StringIO(), timeout=10, elsewhere={"hidden": 4.0, "speed": 3.0})
    status(Step("case", 2, 3))
    told = "case 2 of 3, 1 s; the course grades 7 more (4 hidden, 3 speed)"
    assert status.text(1.2) == told
    assert status.text(6.0) == "case 2 of 3, 6 s (a case is stopped as hung at 10 s)"
    assert status.text(11.0) == "case 2 of 3, 11 s: hung past its 10 s, being stopped"
    status(Step("compile"))
    assert status.text(3.0) == "compiling, 3 s"
    assert [name for name, _ in status.close()] == ["loading", "cases", "compile"]


def test_a_grading_that_scores_speed_leaves_only_the_hidden_points_to_the_course():
    status = StatusLine(io.StringIO(), timeout=10, elsewhere={"hidden": 4.0, "speed": 3.0})
    status(Step("compile", speed=True))
    status(Step("case", 1, 3))
    assert status.text(0.0) == "case 1 of 3, 0 s; the course grades 4 more (4 hidden)"
    with_the_secret = StatusLine(io.StringIO(), timeout=10, elsewhere={"hidden": 0.0})
    with_the_secret(Step("case", 1, 3, speed=True))
    assert with_the_secret.text(0.0) == "case 1 of 3, 0 s"


def test_off_a_terminal_it_writes_nothing_and_with_v_a_plain_line_per_step():
    quiet, plain = io.StringIO(), io.StringIO()
    for stream, verbose in ((quiet, False), (plain, True)):
        status = StatusLine(stream, timeout=10, plain=verbose)
        status(Step("compile"))
        status(Step("case", 1, 2))
        status(Step("case", 2, 2))
        status.close()
    assert quiet.getvalue() == ""
    lines = plain.getvalue().splitlines()
    assert [re.sub(r"[\d.]+ s", "S", line) for line in lines] == [
        "grader: loading the grader, S",
        "grader: compiling, S",
        "grader: cases, S",
        "grader: cases, S",
    ]


def test_on_a_terminal_the_line_is_redrawn_in_place_and_cleared():
    stream = _Tty()
    status = StatusLine(stream, timeout=10)
    status(Step("compile"))
    status.close()
    text = stream.getvalue()
    assert text.startswith("\rgrader: loading the grader, 0 s\x1b[K\rgrader: compiling, 0 s")
    assert text.endswith("\r\x1b[K") and "\n" not in text


def _pty(columns: int) -> tuple[int, int]:
    main, child = os.openpty()
    fcntl.ioctl(child, termios.TIOCSWINSZ, struct.pack("HHHH", 24, columns, 0, 0))
    return main, child


def _read_all(main: int, process: subprocess.Popen, started: float) -> tuple[bytes, float]:
    """Everything the terminal received, and the seconds to its first byte of status."""
    out, first = b"", None
    while True:
        ready, _, _ = select.select([main], [], [], 0.1)
        if ready:
            try:
                chunk = os.read(main, 65536)
            except OSError:  # the child's side closed
                break
            out += chunk
            if first is None and b"grader: " in out:
                first = time.monotonic() - started
        elif process.poll() is not None:
            break
    return out, first if first is not None else float("inf")


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="a pty and the CPU backend")
def test_under_a_terminal_of_80_columns_the_status_comes_within_2_s_and_no_line_is_wider(
    tmp_path,
):
    kernel = tmp_path / "kernel.cu"
    kernel.write_bytes((get(LAB).home / "baseline.cu").read_bytes())
    main, child = _pty(COLUMNS)
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES", "NO_COLOR")}
    env.update(TERM="xterm", PYTHONPATH=os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")]))
    argv = [sys.executable, "-m", "grader", "check", LAB, str(kernel), "--backend", "cpu"]
    started = time.monotonic()
    process = subprocess.Popen(
        argv, stdin=child, stdout=child, stderr=child, env=env, start_new_session=True
    )
    os.close(child)
    try:
        raw, first = _read_all(main, process, started)
        code = process.wait(timeout=600)
    finally:
        if process.poll() is None:
            process.kill()
        os.close(main)
    text = raw.decode("utf-8", "replace")
    assert code == 0, text
    assert first < 2.0, f"the first status came after {first:.1f} s"
    assert "grader: compiling" in text and "grader: case 1 of 3" in text
    assert "; the course grades 7 more (4 hidden, 3 speed)" in text  # as the score line
    # what the terminal shows: each \r starts the line again, escapes take no room
    shown = [line for line in re.split(r"[\r\n]", _ESCAPE.sub("", text)) if line]
    assert max(len(line) for line in shown) <= COLUMNS, max(shown, key=len)
    assert any(line.startswith("Score 3/3 on the public cases") for line in shown)
    assert "sandbox" not in text  # jargon to a student, where every layer is there
