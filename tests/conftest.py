"""Session-wide fixtures: one wheel of the grader and one venv with it installed, shared by
every test of the grader as users install it (building either costs seconds)."""

from __future__ import annotations

from pathlib import Path

import pytest
from packaging_kit import fresh_venv, run_in

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
