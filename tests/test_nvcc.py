"""What nvcc's log becomes for the student (grader.toolchain.nvcc.compile_diagnostics): a
launch from device code, which the grader never compiles for (no -rdc), says why it is
refused, wherever nvcc or ptxas said it. Where nvcc is found (nvcc.find). And the cubin
inspect keeps for the GPU worker, and what a kernel ptxas refuses gets."""

from __future__ import annotations

import os
from pathlib import Path

import cubin_kit
import pytest

from grader import labs
from grader.model.source import read_submission
from grader.toolchain import nvcc, sandbox

FRONT_END = (
    "kernel.cu(7): error: kernel launch from __device__ or __global__ functions requires "
    "separate compilation mode"
)
PTXAS = "ptxas fatal   : Unresolved extern function '__cudaCDP2GetParameterBuffer'"


def test_a_launch_from_device_code_is_refused_in_a_sentence_that_names_it():
    (found,) = nvcc.compile_diagnostics(FRONT_END, "kernel.cu")
    assert found.line == 7 and found.message.endswith(f"compilation mode. {nvcc.DEVICE_LAUNCH}")
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


# -- the cubin the GPU worker loads ---------------------------------------------------------

needs_nvcc = pytest.mark.skipif(nvcc.find() is None, reason="nvcc is not installed")
REFERENCES = sorted(Path(__file__).parents[1].glob("reference_kernels/*/reference.cu"))


@needs_nvcc
@pytest.mark.parametrize("path", REFERENCES, ids=lambda p: p.parent.name)
def test_the_cubin_the_worker_loads_is_the_module_pycuda_compiles(tmp_path, path):
    """The GPU worker loads inspect's cubin, not a second compile: the code PyCUDA's
    compile of the same text makes (what SourceModule runs: `nvcc --cubin -lineinfo` with
    the lab's macros, as kernel.cu), section for section but for those naming the file."""
    lab = labs.get(path.parent.name)
    macros = lab.macro_values(lab.full_sizes(lab.public_cases[0].sizes))
    submission, _ = read_submission(path)
    found = nvcc.inspect(submission, macros, lab.default_block)
    folder = tmp_path / "pycuda"
    folder.mkdir()
    (folder / "kernel.cu").write_text(found.source)
    flags = ["-arch", "sm_90", "-lineinfo", *nvcc.macro_flags(macros)]
    made = sandbox.run_compiler(
        [
            nvcc.find(),
            "--cubin",
            *flags,
            "-o",
            str(folder / "kernel.cubin"),
            str(folder / "kernel.cu"),
        ],
        folder,
    )
    assert made.code == 0, made.log
    assert cubin_kit.code(found.cubin) == cubin_kit.code((folder / "kernel.cubin").read_bytes())


@needs_nvcc
def test_a_kernel_ptxas_refuses_is_a_compile_error_on_either_backend(tmp_path):
    """nvcc -ptx takes 80,000 bytes of static shared memory; ptxas, and so a GPU, does not."""
    path = tmp_path / "mine.cu"
    path.write_text(
        "__global__ void matmul(const float* M, const float* N, float* P, int Width) {\n"
        "  __shared__ float big[20000];\n  big[threadIdx.x] = M[threadIdx.x];\n"
        "  __syncthreads();\n  P[threadIdx.x] = big[threadIdx.x + 1] + N[0] + Width;\n}\n"
    )
    submission, _ = read_submission(path)
    lab = labs.get("matmul-naive")
    found = nvcc.inspect(submission, {}, lab.default_block)
    assert not found.compile.ok and found.interface is None and not found.cubin
    assert [d.message for d in found.diagnostics] == [
        "mine.cu compiles to PTX, but ptxas, which turns PTX into the GPU's code, refused it: "
        "Entry function 'matmul(float const*, float const*, float*, int)' uses too much "
        "shared data (80000 bytes, 49152 max). A GPU could not load this kernel, so "
        "neither backend runs it."
    ]
