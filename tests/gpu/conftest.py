"""GPU tests: marked `gpu`, and skipped with the probe's reason where no CUDA device is
usable (no PyCUDA, no driver, no GPU). The probe runs in a subprocess, once."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from grader.course.gpus import Gate

HERE = Path(__file__).parent


def _in_this_folder(item: pytest.Item) -> bool:
    return HERE in Path(str(item.path)).parents


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    mine = [item for item in items if _in_this_folder(item)]
    if not mine:
        return
    from grader.backends.cuda import probe

    usable, why = probe()
    for item in mine:
        item.add_marker(pytest.mark.gpu)
        if not usable:
            item.add_marker(pytest.mark.skip(reason=f"no usable CUDA device: {why}"))


@pytest.fixture(scope="module")
def backend():
    from grader.backends.cuda import CudaBackend

    with CudaBackend() as cuda:
        yield cuda


@pytest.fixture(autouse=True)
def _gpu_gate(request: pytest.FixtureRequest, tmp_path_factory) -> Iterator[None]:
    """The batch's gate among the test processes of one session (pytest -n): a test that
    asks for `gpu_alone` holds the GPU alone, as a batch's correctness runs and timing do,
    and every other test here holds it shared."""
    if not _in_this_folder(request.node):
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
