"""The grader's side of a GPU worker (grader.backends.cuda.client), without a GPU: the
worker `grader check` starts before its own imports, and which backend takes it. Its
talk with a real worker: tests/gpu/test_cuda_backend.py."""

from __future__ import annotations

import subprocess

import pytest

import grader.backends
from grader import spawn
from grader.backends.cuda import client


class Started:
    """A stand-in for WorkerProcess that counts the workers started."""

    count = 0

    def __init__(self) -> None:
        Started.count += 1
        self.number = Started.count


@pytest.fixture(autouse=True)
def _no_processes(monkeypatch) -> None:
    Started.count = 0
    monkeypatch.setattr(client, "WorkerProcess", Started)
    monkeypatch.setattr(client, "_early", [])


def test_the_worker_started_early_is_the_first_backend_takes_and_only_once():
    client.start_early()
    client.start_early()  # one is waiting already
    assert Started.count == 1
    assert client.first_worker().number == 1
    assert client.first_worker().number == 2  # a later backend starts its own


@pytest.mark.parametrize(
    ("name", "usable", "started"),
    [("cpu", True, 0), ("auto", False, 0), ("auto", True, 1), ("cuda", True, 1)],
)
def test_a_check_starts_its_worker_early_only_for_a_usable_gpu(monkeypatch, name, usable, started):
    monkeypatch.setattr(grader.backends, "gpu_status", lambda: (usable, "why"))
    grader.backends.start_early(name)
    assert Started.count == started


def test_a_check_reaches_its_early_start_without_numpy_or_the_backends_modules():
    """What `grader check` imports before it starts its worker: the CLI, the probe and
    this module, and none of numpy, a backend or the labs' model, which then load while
    the worker starts."""
    code = (
        "import sys, grader.cli, grader.backends\n"
        "from grader.backends.cuda import client, probe\n"
        "heavy = ('numpy', 'grader.backends.base', 'grader.backends.cuda.backend',"
        " 'grader.model.lab', 'grader.grading.pipeline')\n"
        "print(sorted(name for name in heavy if name in sys.modules))\n"
    )
    found = subprocess.run(spawn.python_code(code), capture_output=True, text=True, check=True)
    assert found.stdout.strip() == "[]", found.stderr
