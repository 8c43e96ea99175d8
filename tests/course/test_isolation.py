"""Keeping workers apart: killing a worker with all it started, also what left its process
group. (Their environment is tests/test_working_folder.py's.)"""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest

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
