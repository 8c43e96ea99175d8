"""GPU tests: marked `gpu`, and skipped with the probe's reason where no CUDA device is
usable (no PyCUDA, no driver, no GPU). The probe runs in a subprocess, once."""

from __future__ import annotations

from pathlib import Path

import pytest

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
