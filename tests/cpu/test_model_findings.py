"""What the CPU model saw of the threads of each block, believed on a GPU
(grader.judge.model_findings), from the CPU backend's real run of known-wrong kernels at
their profile case, as a GPU grading makes it (grader.grading.profiles.run). The GPU's
case results are written here as a GPU that got lucky reports them: every case passed,
or the profile case failed by its numbers. No GPU runs, and none is pretended to."""

from __future__ import annotations

import dataclasses
import re

import pytest

from grader import labs
from grader.backends.cpu import CpuBackend
from grader.grading import profiles
from grader.grading.pipeline import Options, grade
from grader.judge import cases as casegen
from grader.judge import grading, model_findings, rules, scoring
from grader.model.lab import Case, Lab
from grader.model.launch import RunOutcome
from grader.model.result import CaseResult, Diagnostic, Kind, RaceScope, Status
from grader.model.source import read_submission

SECRET = "agreement-secret"  # bench/agreement.py's: its profile case of matmul is width-97


@pytest.fixture(scope="module")
def model():
    with CpuBackend(jobs=1) as opened:
        yield opened


def wrong(lab: str, name: str):
    return labs.get(lab).home / "wrong" / name


def profile_run(model, lab: Lab, name: str, secret: str | None):
    """The profile case, and the model's outcome there, as a GPU grading makes them."""
    submission, _ = read_submission(wrong(lab.name, name))
    cases = casegen.cases_for(lab, secret, submission.text)
    case = next(c for c in cases if c.name == rules.profile_case(lab, cases))
    outcome, _ = profiles.run(lab, case, submission, model, 20)
    assert outcome is not None and outcome.completed
    return case, cases, outcome


def lucky(cases: list[Case], failed: tuple[str, ...] = ()) -> list[CaseResult]:
    """The GPU's results: every case passed, but those `failed` by their numbers."""
    return [
        CaseResult(
            name=c.name,
            visibility=c.visibility,
            sizes=c.shown_sizes,
            status=Status.FAILED if c.name in failed else Status.PASSED,
        )
        for c in cases
    ]


def said(case: CaseResult) -> str:
    return " ".join(d.message for d in case.diagnostics)


def test_a_race_the_model_found_fails_every_case_and_says_where(model):
    lab = labs.get("matmul-tiled")
    case, cases, outcome = profile_run(model, lab, "no_second_sync.cu", None)
    assert case.name == "width-64"
    gpu = lucky(cases)
    model_findings.believe(case, outcome, gpu)
    assert all(c.status == Status.FAILED for c in gpu)
    own = next(c for c in gpu if c.name == case.name)
    [found] = own.diagnostics
    assert found.kind == Kind.RACE and found.line == 21 and found.thread is not None
    assert found.message.startswith("The grader's CPU model ran this case too, and found: ")
    assert "read __shared__ Ms[0][0] at line 21" in found.message
    assert "--backend cpu" in found.message and "racecheck" in found.message
    for other in (c for c in gpu if c is not own):
        assert said(other).startswith(
            "The grader's CPU model found a race in matmul in case width-64 (see that case)."
        )


def test_two_threads_storing_one_element_fail_every_case_on_a_gpu(model):
    """every_thread_stores.cu: every thread of a block stores its own sum into the block's
    element. The CPU backend's thread orders find that in each case where it happens, and
    fail that case (RaceScope.STORES); on a GPU no run watches the other cases, whose
    lanes may store in an order that leaves the right sum, so the model's finding reaches
    every case, and does not place the GPU's own race of two runs among blocks."""
    lab = labs.get("reduction")
    case, cases, outcome = profile_run(model, lab, "every_thread_stores.cu", None)
    [found] = model_findings.believed(outcome)
    assert found.race_scope == RaceScope.STORES and "both stored into output[0]" in found.message
    gpu = lucky(cases)
    raced = two_runs_differed(next(c for c in gpu if c.name != case.name))
    model_findings.believe(case, outcome, gpu)
    model_findings.placed(outcome, gpu)
    assert not any(c.passed for c in gpu)
    assert RaceScope.RUNS in {d.race_scope for d in raced.diagnostics}


def test_a_public_case_is_told_of_a_race_at_a_hidden_profile_case_without_its_name_or_sizes(
    model,
):
    lab = labs.get("matmul-tiled")
    case, cases, outcome = profile_run(model, lab, "no_second_sync.cu", SECRET)
    assert case.name == "width-97" and str(case.visibility) == "hidden"
    gpu = lucky(cases)
    model_findings.believe(case, outcome, gpu)
    assert all(c.status == Status.FAILED for c in gpu)
    public = [c for c in gpu if str(c.visibility) == "public"]
    for told in public:
        text = said(told)
        assert text.startswith(
            "The grader's CPU model found a race in matmul, on __shared__ Ms, in a hidden case: "
        )
        assert re.search(r"thread \(\d+,\d+,\d+\) of a block at line 21\.", text)
        # neither the case nor what its sizes make: 97, 97 x 97 outputs, its blocks
        assert not re.search(r"width-97|\b97\b|9409|block \(", text), text
    hidden = next(c for c in gpu if c.name == "width-517")
    assert "in case width-97 (see that case)" in said(hidden)
    assert "differs between two runs" in said(next(c for c in gpu if c.name == "width-97"))


def test_a_barrier_fails_every_case_where_the_gpu_got_the_profile_case_right(model):
    lab = labs.get("reduction")
    case, cases, outcome = profile_run(model, lab, "sync_inside_branch.cu", None)
    gpu = lucky(cases)
    model_findings.believe(case, outcome, gpu)
    assert all(c.status == Status.FAILED for c in gpu)
    own = next(c for c in gpu if c.name == case.name)
    assert own.diagnostics[0].kind == Kind.BARRIER_DIVERGENCE
    assert "inside the if at line 15" in own.diagnostics[0].message
    other = next(c for c in gpu if c is not own)
    assert said(other).startswith(
        f"The grader's CPU model found threads waiting at different barriers in reduction in "
        f"case {case.name} (see that case). A barrier that some of the threads it waits for "
        "never reach is undefined"
    )


def test_a_barrier_where_the_gpu_failed_the_profile_case_fails_that_case_alone(model):
    # the tile loop inside `if (row < Width && col < Width)`: in a partial tile the threads
    # outside P skip the barrier and the loads, so the GPU's numbers are wrong there too,
    # and right where every tile is whole (width-64), as on the CPU backend
    lab = labs.get("matmul-tiled")
    case, cases, outcome = profile_run(model, lab, "sync_inside_if.cu", SECRET)
    gpu = lucky(cases, failed=(case.name,))
    model_findings.believe(case, outcome, gpu)
    own = next(c for c in gpu if c.name == case.name)
    assert [d.kind for d in own.diagnostics] == [Kind.BARRIER_DIVERGENCE]
    others = [c for c in gpu if c is not own]
    assert all(c.status == Status.PASSED and not c.diagnostics for c in others)


def test_what_the_backends_see_differently_is_not_believed(model):
    # missing_syncthreads reads the tiles before they are loaded: the race is believed,
    # the NaN the CPU fills shared memory with is the CPU's own
    lab = labs.get("matmul-tiled")
    _, _, outcome = profile_run(model, lab, "missing_syncthreads.cu", None)
    assert {d.kind for d in outcome.diagnostics} == {Kind.RACE, Kind.NAN}
    assert [d.kind for d in model_findings.believed(outcome)] == [Kind.RACE]
    submission, _ = read_submission(wrong("matmul-tiled", "no_boundary_check.cu"))
    case = casegen.find_case(lab, "width-100", None)
    ran, _ = profiles.run(lab, case, submission, model, 20)
    assert ran is not None and Kind.OUT_OF_BOUNDS in {d.kind for d in ran.diagnostics}
    assert model_findings.believed(ran) == []


@pytest.mark.parametrize(
    ("lab", "name"), [("matmul-tiled", "no_second_sync.cu"), ("reduction", "sync_inside_branch.cu")]
)
def test_a_lucky_gpu_scores_what_the_cpu_backend_does(model, lab, name, tmp_path):
    """The points of a GPU that passed every case, once it believes the model, against the
    CPU backend's own grading of the same file (public cases, as `grader check` has them)."""
    spec = labs.get(lab)
    on_cpu = grade(spec, wrong(lab, name), model, Options(backend="cpu", timing=False))
    case, cases, outcome = profile_run(model, spec, name, None)
    gpu = lucky(cases)
    model_findings.believe(case, outcome, gpu)
    points = scoring.correctness(spec.scoring, gpu, hidden_run=False).points
    assert points == scoring.correctness(spec.scoring, on_cpu.cases, hidden_run=False).points == 0


def test_a_file_the_model_refuses_fails_every_case_as_on_the_cpu(model):
    """A race wearing no_sanitize_address, which would take the kernel out of the hooks:
    the model's build refuses the file (not a feature the CPU backend lacks), and a GPU
    that got every case right by luck fails them all, as the CPU backend's build does."""
    lab = labs.get("reduction")
    submission, _ = read_submission(wrong("reduction", "unsanitized_missing_sync.cu"))
    cases = casegen.cases_for(lab, None, submission.text)
    case = next(c for c in cases if c.name == rules.profile_case(lab, cases))
    outcome, measured = profiles.run(lab, case, submission, model, 20)
    assert outcome is None and measured.here and measured.profile is None
    [refusal] = measured.refused
    assert refusal.kind == Kind.COMPILE_ERROR and refusal.line == 8
    gpu = lucky(cases)
    model_findings.refuse(measured.refused, gpu)
    assert all(c.status == Status.FAILED for c in gpu)
    assert all(said(c).startswith("The grader's CPU model, which watches") for c in gpu)
    assert all("unsanitized_missing_sync.cu:8: no_sanitize_address" in said(c) for c in gpu)
    points = scoring.correctness(lab.scoring, gpu, hidden_run=False).points
    assert points == 0


class LuckyGpu(CpuBackend):
    """A GPU as a grading sees one, whose cases run what its own compile built: here the
    CPU backend's plain builds, which run a copy the CPU model's census build refuses.
    The grading has the CPU model run the profile case apart, as on a GPU."""

    name = "cuda"

    def build(self, submission, macros, launch_defaults, census=False):
        return super().build(submission, macros, launch_defaults)

    def watches_races(self) -> bool:
        return False


def test_a_file_the_model_refuses_gets_the_cpu_backends_findings_on_a_gpu(model):
    """serial_builtin_copy.cu: one thread's loads by __builtin_memcpy, a copy no hook
    sees. Both gradings refuse it with its line, grade no case, and count no rule that
    measures the work as broken (the GPU's profile, refused, had done so)."""
    lab = labs.get("reduction")
    path = wrong("reduction", "serial_builtin_copy.cu")
    on_cpu = grade(lab, path, model, Options(backend="cpu", timing=False))
    with LuckyGpu(jobs=1) as gpu:
        on_gpu = grade(lab, path, gpu, Options(backend="cuda", timing=False))

    def findings(result):
        cases = [(c.name, c.status, c.hint, c.diagnostics) for c in result.cases]
        said = [(d.kind, d.line, d.refused) for d in result.diagnostics]
        return cases, said, result.status, result.score

    assert findings(on_gpu) == findings(on_cpu)
    assert [(d.kind, d.line) for d in on_cpu.diagnostics] == [(Kind.COMPILE_ERROR, 20)]
    [refusal] = on_gpu.diagnostics
    assert refusal.message.startswith("The grader's CPU model, which watches")
    assert refusal.message.endswith(on_cpu.diagnostics[0].message)


# the atomics of histogram's reference made with PTX's own instruction
PTX_ATOMICS = """\
__global__ void histogram(const unsigned char* input, unsigned int* bins, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) asm volatile("red.global.add.u32 [%0], 1; // one more" :: "l"(&bins[input[i]]));
}
"""


@pytest.mark.parametrize(
    ("source", "refused"),
    [
        (PTX_ATOMICS, False),
        (wrong("histogram", "asm_comment_atomics.cu").read_text(), True),  # a comment's
    ],
    ids=["ptx", "comment"],
)
def test_inline_ptx_is_no_refusal_and_an_asm_of_a_comment_is(model, tmp_path, source, refused):
    """Inline PTX the CPU backend cannot run is no fault of the text's: the model's build
    fails without refusing, and a GPU grading only notes that nothing was watched. An asm
    whose text is a comment runs nothing and names an instruction for the file's readers:
    refused on both backends, with its line."""
    lab = labs.get("histogram")
    path = tmp_path / "k.cu"
    path.write_text(source)
    submission, _ = read_submission(path)
    cases = casegen.cases_for(lab, None, submission.text)
    case = next(c for c in cases if c.name == rules.profile_case(lab, cases))
    outcome, measured = profiles.run(lab, case, submission, model, 20)
    assert outcome is None and bool(measured.refused) == refused
    if refused:
        assert [d.line for d in measured.refused] == [7]
        assert "asm statement whose text is only a comment" in measured.refused[0].message
    else:
        assert measured.why == "there the kernel did not build for the CPU model"


def two_runs_differed(case: CaseResult) -> CaseResult:
    """A GPU case whose two runs gave different outputs (grader.judge.verdict.unsteady)."""
    case.status = Status.FAILED
    race = Diagnostic(Kind.RACE, "Two runs of this case gave different results", kernel="k")
    case.diagnostics.append(dataclasses.replace(race, race_scope=RaceScope.RUNS))
    return case


@pytest.mark.parametrize(
    ("lab", "name"), [("conv2d", "halo_threads_store.cu"), ("conv3d", "swapped_width_height.cu")]
)
def test_two_runs_the_model_places_among_blocks_fail_their_case_alone(model, lab, name):
    """halo_threads_store.cu: the halo threads store 0 into the neighbouring blocks'
    outputs; swapped_width_height.cu strides rows by H. The model finds two blocks
    storing into one element (a race of one case), so the GPU's own race of two runs
    reaches its case alone, as the CPU backend's does, and the other cases keep their
    pass."""
    lab = labs.get(lab)
    case, cases, outcome = profile_run(model, lab, name, SECRET)  # W != H there
    assert {d.race_scope for d in model_findings.believed(outcome)} == {RaceScope.CASE}
    gpu = lucky(cases, failed=(case.name,))
    raced = next(c for c in gpu if c.name != case.name)
    two_runs_differed(raced)
    model_findings.believe(case, outcome, gpu)
    model_findings.placed(outcome, gpu)
    grading.race_fails_every_case(lab, gpu)
    failed = {c.name for c in gpu if not c.passed}
    assert failed == {case.name, raced.name}
    assert [d.race_scope for d in raced.diagnostics] == [RaceScope.CASE]


@pytest.mark.parametrize(
    ("lab", "name"), [("matmul-tiled", "no_second_sync.cu"), ("reduction", "sync_inside_branch.cu")]
)
def test_two_runs_the_model_does_not_place_among_blocks_fail_every_case(model, lab, name):
    """A race among a block's threads, or a barrier, at the profile case: the GPU's own
    race of two runs may be theirs, and keeps reaching every case."""
    spec = labs.get(lab)
    case, cases, outcome = profile_run(model, spec, name, None)
    gpu = lucky(cases, failed=(case.name,))
    raced = two_runs_differed(next(c for c in gpu if c.name != case.name))
    model_findings.placed(outcome, gpu)
    assert [d.race_scope for d in raced.diagnostics] == [RaceScope.RUNS]
    grading.race_fails_every_case(spec, gpu)
    assert not any(c.passed for c in gpu)


def test_two_runs_the_model_saw_nothing_of_fail_every_case():
    """The model's run found nothing, or did not end: a race of a block it did not see at
    its size may be what the two runs showed."""
    lab = labs.get("matmul-naive")
    blocks = Diagnostic(Kind.RACE, "Blocks both wrote P[0]", race_scope=RaceScope.CASE)
    for outcome in (RunOutcome(), RunOutcome(diagnostics=[blocks], crashed=True)):
        gpu = lucky([casegen.find_case(lab, n, None) for n in ("width-64", "width-100")])
        two_runs_differed(gpu[0])
        model_findings.placed(outcome, gpu)
        grading.race_fails_every_case(lab, gpu)
        assert not gpu[1].passed
