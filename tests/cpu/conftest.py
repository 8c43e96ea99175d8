"""Fixtures for the CPU backend's tests (helpers are in cpu_kit.py)."""

from __future__ import annotations

import os
import sys

import numpy as np
import pytest
from cpu_kit import Kit

from grader.toolchain import nvcc

if not sys.platform.startswith("linux"):
    pytest.skip("the CPU backend's sandbox needs Linux", allow_module_level=True)


@pytest.fixture(scope="session")
def kit() -> Kit:
    from grader.backends.cpu import CpuBackend

    return Kit(CpuBackend())


@pytest.fixture
def no_nvcc(monkeypatch):
    """Build as on a laptop without the CUDA toolkit: nvcc is off PATH and not found, so
    the interface comes from the CPU build's own registration."""
    path = os.environ.get("PATH", "").split(os.pathsep)
    kept = [d for d in path if not os.path.exists(os.path.join(d, "nvcc"))]  # never raises
    monkeypatch.setenv("PATH", os.pathsep.join(kept))
    monkeypatch.delenv("CUDA_HOME", raising=False)
    monkeypatch.setattr(nvcc, "find", lambda: None)


@pytest.fixture
def rng() -> np.random.Generator:
    return np.random.default_rng(1234)
