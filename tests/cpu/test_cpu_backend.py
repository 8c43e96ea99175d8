"""The CPU backend's note of its sandbox (grader/backends/cpu/backend.py): a report names
the worker's layers only where one is missing; at full strength only -v shows them."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from grader.backends.cpu import CpuBackend
from grader.toolchain.sandbox import Layers

WHOLE = Layers(landlock_abi=7, landlock=True, seccomp=True, userns=True, netns=True, ipcns=True)


def _report(layers: Layers) -> SimpleNamespace:
    return SimpleNamespace(first_setup=lambda kind: SimpleNamespace(layers=layers))


def test_a_sandbox_at_full_strength_is_a_detail_for_v():
    backend = CpuBackend()
    backend._note_layers(_report(WHOLE))
    assert not any("sandbox" in note for note in backend.notes)
    assert backend.details == [f"The CPU backend's sandbox: {WHOLE.describe()}."]


@pytest.mark.parametrize("missing", ["landlock", "seccomp", "netns"])
def test_a_sandbox_with_a_layer_missing_is_in_every_report(missing):
    layers = Layers(**{**WHOLE.__dict__, missing: False})
    backend = CpuBackend()
    backend._note_layers(_report(layers))
    assert f"The CPU backend's sandbox: {layers.describe()}." in backend.notes
