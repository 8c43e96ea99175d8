"""The GPU's census module (grader.backends.cuda.census), without a GPU: the instrumented
PTX of real kernels still assembles (ptxas), and each count sits before the instruction
it counts, under that instruction's guard. Counting on the GPU itself is in
tests/gpu/test_cuda_backend.py."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from grader import defaults, labs
from grader.backends.cuda import census
from grader.model.source import Submission, read_submission
from grader.toolchain import nvcc

pytestmark = pytest.mark.skipif(nvcc.find() is None, reason="nvcc is not installed")

# Shared memory read through a generic pointer, and an atomic on it, under a guard.
GENERIC = """\
__device__ __noinline__ float pick(const float* tile, int i) { return tile[i]; }
__global__ void matmul(const float* M, const float* N, float* P, int Width) {
    __shared__ float tile[256];
    tile[threadIdx.x] = M[threadIdx.x];
    __syncthreads();
    const float* src = Width > 100 ? M : tile;
    P[threadIdx.x] = pick(src, 255 - threadIdx.x) * N[0] * Width;
    if (Width > 5) atomicAdd((float*)src, 1.0f);
}
"""


def _ptx(source: str, lab: str) -> str:
    spec = labs.get(lab)
    found = nvcc.inspect(Submission(Path("k.cu"), source), {"NUM_BINS": 256}, spec.launch_defaults)
    assert found.compile.ok, found.compile.log
    return found.ptx


def _assembles(text: str, tmp_path: Path) -> None:
    path = tmp_path / "census.ptx"
    path.write_text(text)
    ptxas = shutil.which("ptxas") or str(Path(nvcc.find()).with_name("ptxas"))
    done = subprocess.run(
        [ptxas, f"-arch={defaults.ARCH}", "-o", str(tmp_path / "census.cubin"), str(path)],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr


@pytest.mark.parametrize("lab", ["matmul-tiled", "histogram", "reduction", "scan"])
def test_the_references_instrumented_still_assemble(lab, tmp_path):
    source = read_submission(labs.get(lab).home / "reference.cu")[0].text
    name = census.symbol()
    text = census.instrument(_ptx(source, lab), name)
    assert f".visible .global .align 8 .u64 {name}[2]" in text
    assert text.count(f"red.global.add.u64 [{name}") > 0
    _assembles(text, tmp_path)


def test_generic_accesses_count_only_in_shared_memory_and_atomics_count(tmp_path):
    name = census.symbol()
    text = census.instrument(_ptx(GENERIC, "matmul-tiled"), name)
    _assembles(text, tmp_path)
    count = rf"red\.global\.add\.u64 \[{name}\+"
    shared = rf"isspacep\.shared %{name}_p, %rd\d+; @%{name}_p {count}0\], 1; \}} "
    assert re.search(shared + r"ld\.f32", text)  # the generic load in pick()
    assert re.search(shared + rf"{count}8\], 1; atom\.add\.f32", text)


def test_a_count_keeps_the_guard_of_the_instruction_it_counts():
    text = (
        ".version 8.0\n.target sm_90\n.address_size 64\n"
        ".visible .entry k()\n{\n\t.reg .pred %p<2>;\n"
        "$L__BB0_1:\n\t@!%p1 ld.shared.f32 \t%f1, [%r1];\n\tret;\n}\n"
    )
    out = census.instrument(text, "census_x")
    assert "$L__BB0_1:\n\t@!%p1 red.global.add.u64 [census_x+0], 1; @!%p1 ld.shared.f32" in out
