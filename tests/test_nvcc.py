"""What nvcc's log becomes for the student (grader.toolchain.nvcc.compile_diagnostics): a
launch from device code, which the grader never compiles for (no -rdc), says why it is
refused, wherever nvcc or ptxas said it. And where nvcc is found (nvcc.find)."""

from __future__ import annotations

import os

from grader.toolchain import nvcc

FRONT_END = (
    "kernel.cu(7): error: kernel launch from __device__ or __global__ functions requires "
    "separate compilation mode"
)
PTXAS = "ptxas fatal   : Unresolved extern function '__cudaCDP2GetParameterBuffer'"


def test_a_launch_from_device_code_is_refused_in_a_sentence_that_names_it():
    (found,) = nvcc.compile_diagnostics(FRONT_END, "kernel.cu")
    assert found.line == 7 and found.message.endswith(nvcc.DEVICE_LAUNCH)
    (found,) = nvcc.compile_diagnostics(PTXAS, "kernel.cu")
    assert "nvcc could not compile kernel.cu" in found.message
    assert found.message.endswith(nvcc.DEVICE_LAUNCH)


def test_other_errors_are_nvcc_s_own_words():
    log = 'kernel.cu(3): error: identifier "x" is undefined'
    (found,) = nvcc.compile_diagnostics(log, "kernel.cu")
    assert found.message == 'kernel.cu:3: identifier "x" is undefined'


def test_a_cuda_home_the_user_may_not_read_is_passed_over(tmp_path, monkeypatch):
    """Run as a user, an unreadable CUDA_HOME made Path.exists raise (PermissionError)."""
    shut = tmp_path / "cuda"
    (shut / "bin").mkdir(parents=True)
    shut.chmod(0)
    monkeypatch.setenv("CUDA_HOME", str(shut))
    monkeypatch.setenv("PATH", str(tmp_path))
    nvcc.find.cache_clear()  # found once a process: look again, and again after
    try:
        found = nvcc.find()
    finally:
        shut.chmod(0o700)
        nvcc.find.cache_clear()
    system = "/usr/local/cuda/bin/nvcc"
    assert found == (system if os.access(system, os.X_OK) else nvcc._from_wheels())
