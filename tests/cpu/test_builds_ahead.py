"""A grading on several cores compiles its later builds while its first cases run
(pipeline.Grading with grader.ahead), and each build's C++ compile while nvcc runs; what
it reports is what a grading on one core, building each in turn, reports: the same
builds, findings in the same order."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from cpu_kit import out

from grader import labs
from grader.backends.cpu import build as building
from grader.grading import pipeline
from grader.model.result import Kind
from grader.model.source import Submission
from grader.report.json import to_dict
from grader.toolchain import nvcc

NO_MASK_OF_7 = 'static_assert(MASK_WIDTH != 7, "this kernel takes no mask of width 7");\n'


def _graded(path, jobs: int) -> dict:
    options = pipeline.Options(backend="cpu", secret="ahead", timing=False, jobs=jobs)
    report = to_dict(pipeline.check("conv2d", path, options))
    report.pop("device")  # names the cores used
    for case in report["cases"]:
        case.pop("seconds")
    return report


def test_builds_made_ahead_give_the_report_builds_made_in_turn_give(tmp_path):
    path = tmp_path / "kernel.cu"
    reference = (labs.get("conv2d").home / "reference.cu").read_text()
    path.write_text(f"// {time.time_ns()}\n{reference}{NO_MASK_OF_7}")
    ahead = _graded(path, 2)  # cold: the file is new
    in_turn = _graded(path, 1)
    assert ahead == in_turn
    statuses = {c["sizes"]["MASK_WIDTH"]: set() for c in ahead["cases"]}
    for case in ahead["cases"]:
        statuses[case["sizes"]["MASK_WIDTH"]].add(case["status"])
    assert statuses == {3: {"passed"}, 5: {"passed"}, 7: {"error"}}
    assert [d["kind"] for d in ahead["diagnostics"]] == [Kind.COMPILE_ERROR.value]
    assert "no mask of width 7" in ahead["compile"]["log"]


@pytest.mark.skipif(nvcc.find() is None, reason="nvcc is not installed")
@pytest.mark.parametrize("overlap", [False, True], ids=["in-turn", "overlapping-nvcc"])
def test_a_kernel_only_nvcc_sees_is_registered_however_the_compile_started(kit, overlap):
    """The text shows no kernel (a macro makes it); nvcc finds it, so a compile started
    before nvcc ended, on the text's declarations, is made again with it."""
    source = (
        f"// {time.time_ns()}\n#define KERNEL(name) __global__ void name(float* p) "
        "{ p[threadIdx.x] = 2; }\nKERNEL(from_a_macro)\n"
    )
    built = building.build(Submission(Path("k.cu"), source), {}, (16, 16, 1), overlap=overlap)
    assert built.ok, built.compile.log
    ran = kit.run(built, "from_a_macro", 1, 4, [out("p", 4)])
    assert ran.completed and ran.buffers["p"].data.tolist() == [2.0] * 4


@pytest.mark.skipif(nvcc.find() is None, reason="nvcc is not installed")
def test_a_compile_started_early_has_ended_when_nvcc_refuses_the_file(tmp_path, monkeypatch):
    """Its compiler writes into the build cache: none is left running (or half-written)
    once the build has said that nvcc refuses the file."""
    monkeypatch.setenv("GRADER_CACHE", str(tmp_path))
    source = (
        f"// {time.time_ns()}\n#ifdef __NVCC__\n#error only nvcc stops here\n#endif\n"
        "__global__ void k(float* p) { p[threadIdx.x] = 1; }\n"
    )
    built = building.build(Submission(Path("k.cu"), source), {}, (16, 16, 1), overlap=True)
    assert not built.ok and "only nvcc stops here" in built.compile.log
    stored = [p.name for p in (tmp_path / "cpu").iterdir()]
    assert len([n for n in stored if n.startswith("mod-")]) == 1  # the early compile's
    assert [n for n in stored if n.startswith("grader-cc-")] == []  # none still staging
