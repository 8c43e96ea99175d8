"""Lab rules on the CPU backend, where the module shows no instructions (no nvcc): what
the kernel executed decides them (runtime/counts.cpp), and a library is found by what
the module holds (grader.toolchain.libraries). The GPU's census counts the same
(tests/gpu/test_cuda_backend.py)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from census_kit import DEAD_SHARED_READ, TILED
from cpu_kit import inp, integer, out

from grader import labs
from grader.grading.pipeline import Options, grade
from grader.model.result import Kind, Status
from grader.model.source import Submission


def _run(kit, source: str, census: bool, width: int = 32):
    build = kit.backend.build(Submission(Path("k.cu"), source), {}, (16, 16, 1), census=census)
    assert build.ok, build.diagnostics
    rng = np.random.default_rng(0)
    m, n = (rng.random((width, width), np.float32) for _ in range(2))
    args = [inp("M", m), inp("N", n), out("P", width * width), integer("Width", width)]
    outcome = kit.run(build, "matmul", (width // 16, width // 16), (16, 16), args)
    assert outcome.completed, outcome.diagnostics
    np.testing.assert_allclose(outcome.buffers["P"].data.reshape(width, width), m @ n, 1e-4)
    return outcome.executed["matmul"]


def test_a_census_build_counts_the_shared_loads_and_atomics_that_ran(kit, no_nvcc):
    tiled = _run(kit, TILED, census=True)
    assert tiled.shared_loads == 32 * 32 * 2 * 16 * 2 and tiled.atomics == 0
    dead = _run(kit, DEAD_SHARED_READ, census=True)
    assert (dead.shared_loads, dead.atomics) == (0, 32 * 32)


def test_a_plain_build_counts_atomics_but_not_loads(kit, no_nvcc):
    plain = _run(kit, DEAD_SHARED_READ, census=False)
    assert (plain.shared_loads, plain.atomics) == (None, 32 * 32)


def _graded(tmp_path, lab: str, source: str):
    path = tmp_path / "kernel.cu"
    path.write_text(source)
    from grader.backends.cpu import CpuBackend

    with CpuBackend() as backend:
        return grade(labs.get(lab), path, backend, Options(backend="cpu", timeout=10))


def test_without_nvcc_a_dead_shared_load_breaks_the_tiled_rule_and_a_tile_keeps_it(
    tmp_path, no_nvcc
):
    broken = _graded(tmp_path, "matmul-tiled", DEAD_SHARED_READ)
    rules = [d for d in broken.diagnostics if d.kind == Kind.REQUIREMENT]
    assert len(rules) == 1 and "executed no load from shared memory in case" in rules[0].message
    assert broken.score == broken.max_score / 2
    kept = _graded(tmp_path, "matmul-tiled", TILED)
    assert kept.status == Status.PASSED
    assert not any(n.startswith("Not checked") for n in kept.notes)


def test_without_nvcc_an_unread_constant_mask_is_not_checked_here(tmp_path, no_nvcc):
    source = (labs.get("conv2d").home / "reference.cu").read_text()
    result = _graded(tmp_path, "conv2d", source)
    assert result.status == Status.PASSED
    assert any(
        n.startswith("Not checked here: the lab's rule that the kernel reads the mask Mc")
        for n in result.notes
    )


THRUST_NAMES = """\
namespace thrust { __device__ float plus(float a, float b) { return a + b; } }
__global__ void reduction(const float* input, float* output, int n) {
    if (threadIdx.x == 0) output[blockIdx.x] = thrust::plus(input[0], 0.0f);
}
"""


def test_without_nvcc_a_library_is_found_by_the_names_the_module_holds(tmp_path, no_nvcc):
    result = _graded(tmp_path, "reduction", THRUST_NAMES)
    found = [d.message for d in result.diagnostics if d.kind == Kind.REQUIREMENT]
    assert found and "Thrust: the compiled module holds thrust::plus(float, float)" in found[0]
    assert result.status == Status.ERROR and result.score == 0
    assert all(c.status == Status.ERROR and not c.passed for c in result.cases)


def test_the_counts_are_out_of_the_modules_reach(kit, no_nvcc):
    """They are kept by the runner's pool threads (rt::tw); a module that names the runner's
    own symbols is refused before it runs, as one that names anything undefined."""
    source = (
        "namespace rt { struct Worker; extern thread_local Worker* tw; }\n"
        "__global__ void k(float* out) { out[0] = rt::tw != 0; }\n"
    )
    build = kit.build(source)
    assert not build.ok
    assert "rt::tw is declared and used, but never defined" in build.diagnostics[0].message


def test_a_lab_with_no_rule_on_what_executes_has_a_census_case_where_races_are_watched():
    from grader.judge import cases, rules

    lab = labs.get("reduction")  # its rules are all in the text
    every = cases.cases_for(lab, "secret")
    assert not any(rule.executes for rule in lab.requirements)
    assert rules.census_case(lab, every, watches_races=False) is None
    assert rules.census_case(lab, every, watches_races=True) == "n-1000"  # the smallest public
