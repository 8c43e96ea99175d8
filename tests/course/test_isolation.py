"""Keeping workers apart: killing a worker with all it started, also what left its process
group. (Their environment is tests/test_working_folder.py's.)"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time

import pytest

from grader.backends import gpu_status
from grader.course import isolation

pytestmark = pytest.mark.skipif(not os.path.isdir("/proc"), reason="needs Linux's /proc")

# A parent that starts a child in its own session (as a sandbox or a CUDA worker does) and
# a grandchild that keeps forking, then prints their pids.
TREE = """
import os, subprocess, sys, time
child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"],
                         start_new_session=True)
FORKS = "import os, time\\nfor _ in range(20):\\n    if os.fork() == 0: time.sleep(600)\\n"
bomb = subprocess.Popen([sys.executable, "-c", FORKS + "time.sleep(600)"])
print(child.pid, bomb.pid, flush=True)
time.sleep(600)
"""


def alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] not in ("Z", "X")
    except FileNotFoundError:
        return False


def test_kill_tree_ends_every_descendant_also_outside_the_group():
    parent = subprocess.Popen(
        [sys.executable, "-c", TREE], stdout=subprocess.PIPE, start_new_session=True, text=True
    )
    child, bomb = (int(p) for p in parent.stdout.readline().split())
    time.sleep(0.5)  # let the bomb fork
    tree = [parent.pid, *isolation.descendants(parent.pid)]
    assert child in tree and bomb in tree and len(tree) >= 20
    isolation.kill_tree(parent.pid)
    parent.wait(timeout=10)
    deadline = time.monotonic() + 5
    while any(alive(p) for p in tree) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not [p for p in tree if alive(p)]


HANG = """\
__global__ void matmul(const float* M, const float* N, float* P, int Width) {
    volatile float* out = P;
    while (true)
        out[0] = out[0] + 1.0f;
}
"""


@pytest.mark.parametrize("backend", ["cpu", pytest.param("cuda", marks=pytest.mark.gpu)])
def test_a_batch_killed_outright_leaves_no_worker_running(tmp_path, backend):
    """SIGKILL leaves the batch no chance to stop its workers, which are in sessions of
    their own: each dies with it, with all it started (on a GPU, the CUDA worker running
    the hung kernel), instead of running its hung case to the timeout."""
    if backend == "cuda" and not gpu_status()[0]:
        pytest.skip(f"no usable CUDA device: {gpu_status()[1]}")
    subs = tmp_path / "subs"
    subs.mkdir()
    (subs / "hangs.cu").write_text(HANG)
    err = tmp_path / "stderr"
    argv = [sys.executable, "-m", "grader", "batch", "matmul-naive", str(subs), "--out",
            str(tmp_path / "o"), "--backend", backend, "--jobs", "1", "--timeout", "300",
            "--public-only"]  # fmt: skip
    started: list[int] = []
    with open(err, "w") as stderr:
        batch = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=stderr)
        try:
            deadline = time.monotonic() + 120
            while not _runs_a_case(batch.pid):
                assert batch.poll() is None, err.read_text()
                assert time.monotonic() < deadline, f"no case ran: {err.read_text()}"
                time.sleep(0.2)
            time.sleep(2)  # inside the hung case
            started = isolation.descendants(batch.pid)
            batch.kill()
            batch.wait(timeout=30)
            deadline = time.monotonic() + 30
            while any(alive(p) for p in started) and time.monotonic() < deadline:
                time.sleep(0.1)
            left = [_command(p) for p in started if alive(p)]
        finally:
            batch.kill()
            for pid in started:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
    assert not left, f"still running after the batch was killed: {left}"


def _runs_a_case(batch: int) -> bool:
    """Whether the batch's worker has started a process of its own (a compiler, then the
    CPU backend's runner, which hangs)."""
    return any(isolation.descendants(worker) for worker in isolation.descendants(batch))


def _command(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read().replace(b"\0", b" ").decode(errors="replace")[:200]
    except FileNotFoundError:
        return str(pid)
