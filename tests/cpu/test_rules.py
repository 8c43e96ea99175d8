"""Lab rules on the CPU backend, where the module shows no instructions (no nvcc): what
the kernel executed decides them (runtime/counts.cpp), and a library is found by what
the module holds (grader.toolchain.libraries). The GPU's census counts the same
(tests/gpu/test_cuda_backend.py). The rules that measure the work, from profiles built
by hand (tests/profile_kit.py)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import profile_kit
import pytest
from census_kit import DEAD_SHARED_READ, TILED
from cpu_kit import inp, integer, out

from grader import labs
from grader.grading.pipeline import Options, grade
from grader.judge import cases as casegen
from grader.judge import rules
from grader.model.result import CompileInfo, Kind, Result, Status
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


def _graded(tmp_path, lab: str, source: str, secret: str | None = None):
    path = tmp_path / "kernel.cu"
    path.write_text(source)
    from grader.backends.cpu import CpuBackend

    with CpuBackend() as backend:
        options = Options(backend="cpu", timeout=10, secret=secret)
        return grade(labs.get(lab), path, backend, options)


def test_without_nvcc_a_naive_multiply_breaks_the_traffic_rule_and_a_tile_keeps_it(
    tmp_path, no_nvcc
):
    """The CPU model measures what each output element reads, with or without nvcc."""
    broken = _graded(tmp_path, "matmul-tiled", DEAD_SHARED_READ)
    rules = [d for d in broken.diagnostics if d.kind == Kind.REQUIREMENT]
    assert len(rules) == 1 and "the naive kernel's amount" in rules[0].message
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


# -- the rules that measure the work (Lab.traffic, Lab.busiest_thread) --------------------


def _measured(lab: str, student, baseline=None, case="width-64", why="", reference=None):
    result = Result(
        lab=lab, submission="k.cu", backend="cpu", device="", status=Status.PASSED,
        score=0.0, max_score=0.0, compile=CompileInfo(ok=True), kernel="k",
    )  # fmt: skip
    rules.measured(labs.get(lab), result, case, student, why, baseline, reference)
    return result


def test_one_thread_that_makes_every_load_breaks_the_busiest_thread_rule():
    found = _measured("reduction", profile_kit.serial_reduction(), case="n-1000")
    assert [d.kind for d in found.diagnostics] == [Kind.REQUIREMENT]
    message = found.diagnostics[0].message
    assert message.startswith("One thread made 1000 of the 1000 global loads in case n-1000")
    assert "at most 1/8 of them" in message
    assert rules.broken(found) == {rules.BUSIEST}
    kept = _measured("reduction", profile_kit.reduction_reference(), case="n-1000")
    assert kept.diagnostics == []


def test_loads_other_threads_make_for_nothing_do_not_dilute_the_busiest_threads_share():
    """The serial thread's 1000 loads, and 7000 more its block's other threads make and
    throw away: 1/8 of its own 8000, but all of the reference's (250 float4 loads count
    as 1000)."""
    serial = profile_kit.serial_reduction()
    kernel = serial.kernels[0]
    diluted = replace(
        serial, kernels=[replace(kernel, global_loads=profile_kit.traffic(8000, 1.0, lanes=8000))]
    )
    assert _measured("reduction", diluted, case="n-1000").diagnostics == []  # the share alone
    reference = profile_kit.reduction_reference()
    found = _measured("reduction", diluted, case="n-1000", reference=reference)
    assert rules.broken(found) == {rules.BUSIEST}
    message = found.diagnostics[0].message
    assert "1000 global loads in case n-1000, 100% of the 1000 the lab's reference makes" in message
    assert "the kernel makes 8000 in all" in message
    kept = _measured("reduction", reference, case="n-1000", reference=reference)
    assert kept.diagnostics == []


def test_the_naive_kernels_traffic_breaks_the_tiled_labs_rule_and_a_tile_keeps_it():
    naive = profile_kit.naive()
    found = _measured("matmul-tiled", naive, baseline=naive)
    assert rules.broken(found) == {rules.TRAFFIC}
    message = found.diagnostics[0].message
    assert "512 bytes of global memory in case width-64, the naive kernel's amount" in message
    assert "at most 1/4 of that: stage tiles of M and N in shared memory" in message
    kept = _measured("matmul-tiled", profile_kit.tiled_reference(), baseline=naive)
    assert kept.diagnostics == []


@pytest.mark.parametrize(
    ("lab", "made", "opening", "figures", "rule"),
    [
        (
            "reduction",
            profile_kit.serial_reduction,
            "One thread made more than 1/8 of the global loads in a hidden case, the most the "
            "lab allows one thread. Spread the work",
            ("1000", "100%"),
            rules.BUSIEST,
        ),
        (
            "matmul-tiled",
            profile_kit.naive,
            "Each output element read more than 1/4 of the naive kernel's global bytes in a "
            "hidden case, the most the lab allows: stage tiles",
            ("512", "amount"),
            rules.TRAFFIC,
        ),
    ],
)
def test_at_a_hidden_case_the_rules_say_the_limit_not_the_kernels_figures(
    lab, made, opening, figures, rule
):
    """A figure of the kernel's own would tell the hidden profile case's size (the naive
    kernel's bytes per output are 8 * Width + 4; a share, of a kernel built for it), which
    the kernel must not know: it could do the work there alone. Gradescope holds these
    findings back until the due date; after it, they still give no figure."""
    profile = replace(made(), case=rules.HIDDEN_CASE, sizes={})
    found = _measured(lab, profile, baseline=profile, case=rules.HIDDEN_CASE)
    message = found.diagnostics[0].message
    assert message.startswith(opening)
    assert not any(figure in message for figure in figures)
    assert rules.broken(found) == {rule}


def test_a_profile_run_that_did_not_end_breaks_every_measured_rule_with_its_reason():
    found = _measured("matmul-tiled", None, why="there the kernel hung (see that case)")
    messages = [d.message for d in found.diagnostics]
    assert len(messages) == 2 and all("is not met in this report" in m for m in messages)
    assert all("in case width-64, and there the kernel hung" in m for m in messages)


def test_where_the_model_cannot_run_the_rules_are_not_checked_never_met():
    found = _measured("reduction", None, case=None, why="the CPU model cannot run here")
    assert found.diagnostics == []
    assert found.notes == [
        "Not checked here: the lab's rule that no thread makes more than 1/8 of the global "
        "loads, because the CPU model cannot run here; it is neither met nor broken in this "
        "report."
    ]


def test_without_a_baseline_profile_the_traffic_rule_is_a_note():
    found = _measured("matmul-tiled", profile_kit.naive(), baseline=None)
    assert found.diagnostics == [] and found.notes[0].startswith("Not checked here")


def test_a_case_where_the_reference_itself_breaks_the_busiest_thread_rule_decides_nothing():
    """A profile case too small for the work to spread (one output element, say)."""
    serial = profile_kit.serial_reduction()
    found = _measured("reduction", serial, case="n-1000", reference=serial)
    assert found.diagnostics == []
    assert "at case n-1000 even the lab's reference breaks it" in found.notes[0]


def test_with_a_secret_the_rules_are_measured_at_a_hidden_case_the_text_draws():
    """Without hidden cases, the lab's own profile case; with them, a hidden case of
    about its size, drawn anew for each text: no kernel knows its size beforehand."""
    lab = labs.get("matmul-naive")
    assert rules.profile_case(lab, casegen.cases_for(lab, None)) == "width-64"
    drawn = [rules.profile_case(lab, casegen.cases_for(lab, "s", f"// {i}\n")) for i in range(40)]
    assert set(drawn) == {"width-97", "random-1"}  # random-1: 57 x 57 with this secret
    assert drawn[0] == rules.profile_case(lab, casegen.cases_for(lab, "s", "// 0\n"))


def test_a_kernel_that_tiles_at_the_public_profile_case_alone_breaks_the_rule_graded(tmp_path):
    path = labs.get("matmul-tiled").home / "wrong" / "tiled_at_public_size_only.cu"
    public = _graded(tmp_path, "matmul-tiled", path.read_text())
    assert not [d for d in public.diagnostics if d.kind == Kind.REQUIREMENT]
    secret = _graded(tmp_path, "matmul-tiled", path.read_text(), secret="s")
    broken = [d.message for d in secret.diagnostics if d.kind == Kind.REQUIREMENT]
    assert len(broken) == 1 and "1/4 of the naive kernel's global bytes in a hidden" in broken[0]


def test_a_kernel_that_stops_at_the_drawn_case_breaks_the_rules_measured_nowhere_else(tmp_path):
    """A kernel that tiles at width-64 and stops itself at the sizes a hidden profile case
    is drawn from: its work is not measured at width-64 instead, where it knows the size."""
    path = labs.get("matmul-tiled").home / "wrong" / "stops_at_hidden_profile_sizes.cu"
    graded = _graded(tmp_path, "matmul-tiled", path.read_text(), secret="s")
    broken = [d.message for d in graded.diagnostics if d.kind == Kind.REQUIREMENT]
    assert len(broken) == 2 and all("in a hidden case" in m for m in broken)
    assert all("counts as broken until that run goes to its end" in m for m in broken)
    assert graded.profile is None


def test_a_lab_with_no_rule_on_what_executes_has_a_census_case_where_races_are_watched():
    from grader.judge import cases, rules

    lab = labs.get("reduction")  # its rules are all in the text
    every = cases.cases_for(lab, "secret")
    assert not any(rule.executes for rule in lab.requirements)
    assert rules.census_case(lab, every, watches_races=False) is None
    assert rules.census_case(lab, every, watches_races=True) == "n-1000"  # the smallest public


def test_spmv_profiles_power_law_rows_without_a_long_row_and_not_all_of_one_count():
    """The textbook's thread a row makes 69% of the loads where one row is long: a hidden
    case drawn there would take half its points for its comments. The hidden cases it
    is drawn among have power-law rows as the timed size's, where the block of the
    longest rows shows, no long row of their own, and not all the profile case's count."""
    for name in ("spmv-csr", "spmv-jds"):
        lab = labs.get(name)
        cases = {c.name: c for c in casegen.cases_for(lab, "s")}
        drawn = [cases[n].sizes for n in rules.profile_candidates(lab, list(cases.values()))]
        assert drawn and all(s["power_law"] and not s.get("long_row") for s in drawn)
        assert len({s["num_rows"] for s in drawn}) >= 2, drawn


def test_a_kernel_that_spreads_rows_at_32003_alone_breaks_the_rule_where_drawn_elsewhere():
    """validate-lab's profile at every hidden case a grading may draw: the attack kernel
    keeps the busiest-thread rule at 32003 rows alone; the textbook kernel everywhere."""
    from grader import validate
    from grader.backends.cpu import CpuBackend

    lab = labs.get("spmv-csr")
    with CpuBackend() as backend:
        attack = lab.home / "wrong" / "rows_spread_at_32003_only.cu"
        problems = validate._at_every_profile_case(lab, attack, backend, 10, set())
        assert len(problems) == 2 and all("One thread made" in p for p in problems)
        assert not any("32003x" in p.split(",")[0] for p in problems)
        assert (
            validate._at_every_profile_case(lab, lab.home / "baseline.cu", backend, 10, set()) == []
        )


def test_every_labs_hidden_profile_cases_are_not_all_of_the_public_ones_size():
    """A kernel that did the work at the public profile case's size alone would keep the
    rules whatever the draw; at least one candidate has another count of outputs."""
    for name, lab in labs.all_labs().items():
        cases = casegen.cases_for(lab, "s")
        named = rules.named_profile_case(lab, cases)
        drawn = rules.profile_candidates(lab, cases)
        if named is None or not drawn:
            continue
        outputs = {c.name: rules._outputs(lab, c) for c in cases}
        assert any(outputs[n] != outputs[named] for n in drawn), (name, drawn)
