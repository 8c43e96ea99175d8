"""Session-wide fixtures: one wheel of the grader and one venv with it installed, shared by
every test of the grader as users install it (building either costs seconds)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from packaging_kit import fresh_venv, run_in

from grader.course.gpus import Gate
from grader.wheel import build_running_wheel


@pytest.fixture(scope="session")
def grader_wheel(tmp_path_factory) -> Path:
    """A wheel of this checkout's grader, built as `pip wheel` would."""
    return build_running_wheel(tmp_path_factory.mktemp("wheel"))


@pytest.fixture(scope="session")
def venv_factory(tmp_path_factory, grader_wheel):
    """Makes fresh venvs outside the checkout: the grader's dependencies, no grader."""

    def make(name: str) -> Path:
        return fresh_venv(tmp_path_factory.mktemp(name) / "venv", grader_wheel)

    return make


@pytest.fixture(scope="session")
def installed_grader(venv_factory, grader_wheel) -> Path:
    """A fresh venv with the grader installed from the wheel; its path."""
    venv = venv_factory("installed")
    done = run_in(venv, ["python", "-m", "pip", "install", str(grader_wheel)], cwd=venv)
    assert done.returncode == 0, done.stdout + done.stderr
    return venv


@pytest.fixture(autouse=True)
def _gpu_gate(request: pytest.FixtureRequest, tmp_path_factory) -> Iterator[None]:
    """The batch's gate among the test processes of one session (pytest -n), for every
    test marked `gpu`, wherever it lives: a test that asks for `gpu_alone` holds the GPU
    alone, as a batch's correctness runs and timing do, and every other holds it shared.
    On an H100, when only tests/gpu took it, the GPU tests outside that folder ran beside
    an alone test: a case's kernel read no NaN from the fill, and a timing with a budget of
    1.5 s ran 11.6 s."""
    if request.node.get_closest_marker("gpu") is None:
        yield
        return
    gate = Gate(tmp_path_factory.getbasetemp().parent / "gates", "gpu-tests")
    try:
        held = gate.alone() if "gpu_alone" in request.fixturenames else gate.shared()
        with held:
            yield
    finally:
        gate.close()


@pytest.fixture
def gpu_alone() -> None:
    """Nothing else of this test session runs kernels while the test runs (_gpu_gate)."""
