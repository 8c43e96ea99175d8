"""The memory profiles a grading makes (issue 31), scheduled. The CPU model measures the
student's kernel at the lab's profile case on every backend, so that the rules that
measure the work (grader.judge.rules.measured) decide the same on every machine: on the
CPU backend the profile run is that case's own run; on a GPU a CPU backend of the
grading's own makes it, beside the GPU's cases, and what that run saw of the threads of
each block (races, barriers) fails the GPU's cases as on the CPU (run_beside, then
watch). The reference's profile (what "why this speed" compares with) and the
baseline's (what a traffic rule divides by) are made the same way, on the public case's
fixed values, and kept in the grader's cache (`profile/`) by lab, case and file. Where
asked (`--profile`), Nsight Compute counts the student's and the reference's kernels on
the GPU: those explain, and never decide a rule."""

from __future__ import annotations

import contextlib
import hashlib
import json
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from functools import partial
from pathlib import Path

import grader
from grader import defaults, labs, waiting
from grader.ahead import in_background
from grader.backends.base import Backend, BackendUnavailable
from grader.errors import GraderError
from grader.files import write_atomically
from grader.judge import cases as casegen
from grader.judge import model_findings, rules
from grader.judge.launch import make_launch
from grader.judge.profiling import case_profile
from grader.model.lab import Case, Lab
from grader.model.launch import Build, RunOutcome
from grader.model.profile import KernelProfile, Profile, Source
from grader.model.result import Diagnostic, Result, Visibility
from grader.model.source import SOURCE_ERRORS, Submission, read_submission
from grader.toolchain import build_cache

CACHE_FORMAT = 3  # bump when what an entry holds, or how the model counts, changes
CPU = "cpu"
LAB_THREAD = "grader-lab-profiles"  # the thread of lab_kernels_ahead


@dataclass
class Measured:
    """A kernel's profile run: its profile, or why there is none (a clause: "there the
    kernel hung (see that case)"); `here`: False where the CPU model could not run on
    this machine at all, which is no fault of the kernel's; `refused`: why the model's
    build refused the text (Build.refused), which fails the kernel on every backend."""

    profile: Profile | None
    why: str = ""
    here: bool = True
    refused: list[Diagnostic] = field(default_factory=list)


@contextlib.contextmanager
def model_backend(backend: Backend) -> Iterator[Backend | str]:
    """The backend that runs the CPU model: the grading's own where it is the CPU
    backend, else one opened for the profile runs. A grading takes a clause in its place
    as why there is no model (bench/profile_cost.py's measure without the profile)."""
    if backend.name == CPU:
        yield backend
        return
    from grader.backends.cpu import CpuBackend  # a GPU grading's only use of the CPU's

    allowed = getattr(backend, "allow_unsandboxed", False)
    with CpuBackend(jobs=1, allow_unsandboxed=allowed) as opened:
        yield backend.model_of(opened)


def from_run(
    lab: Lab, case: Case, build: Build, outcome: RunOutcome, kernels: list[KernelProfile]
) -> Measured:
    """The profile of a run the CPU model made of `case` (Backend.profile): none where
    the run did not go to its end, or a kernel of the lab was not profiled."""
    if not outcome.completed:
        how = "hung" if outcome.timed_out else "did not run to its end"
        return Measured(None, f"there the kernel {how} (see that case)")
    missing = [k.name for k in lab.kernels if k.name not in {p.kernel for p in kernels}]
    if missing or build.interface is None:
        return Measured(None, f"there {', '.join(missing) or 'the kernel'} was not profiled")
    return Measured(case_profile(lab, case, build.interface, kernels, Source.CPU_MODEL))


def run(
    lab: Lab, case: Case, submission: Submission, model: Backend, timeout: float
) -> tuple[RunOutcome | None, Measured]:
    """`submission` built for the CPU model and run at `case` with its profile taken; on
    a machine where the model cannot build or run, why (Measured.here False)."""
    macros = lab.macro_values(case.sizes)
    try:
        build = model.build(submission, macros, lab.launch_defaults, census=True)
        if build.refused:
            why = "there the grader refused the file (see its diagnostics)"
            refusals = [d for d in build.diagnostics if d.refused]
            return None, Measured(None, why, refused=refusals)
        if not build.ok or build.interface is None:
            return None, Measured(None, "there the kernel did not build for the CPU model")
        launch, _ = make_launch(lab, case, casegen.make_inputs(lab, case), build.interface)
        outcome, kernels = model.profile(build, launch, timeout)
    except (GraderError, BackendUnavailable) as why:
        return None, Measured(None, f"the CPU model cannot run on this machine ({why})", False)
    return outcome, from_run(lab, case, build, outcome, kernels)


def run_beside(
    lab: Lab, case: Case, submission: Submission, model: Backend, timeout: float
) -> Future[tuple[RunOutcome | None, Measured]]:
    """On a GPU: `run`, in a thread, while the GPU runs the cases (a warm check's model
    run of spmv's profile case costs 0.15 s; a cold one's build, seconds). Nothing else
    uses the model meanwhile; a grading that ends early leaves it to the model backend's
    close, which stops its workers."""
    pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="grader-model")
    made = pool.submit(run, lab, case, submission, model, timeout)
    pool.shutdown(wait=False)
    return made


def watch(case: Case, made: tuple[RunOutcome | None, Measured], result: Result) -> Measured:
    """On a GPU, once the cases are judged: what the model's run of `case` (`run`) saw
    of the threads of each block fails the GPU's cases as the CPU backend's own findings
    fail its, and places the GPU's own races of two runs (grader.judge.model_findings);
    where the model ran nothing, a note says that nothing was watched. The run the
    profile needs anyway: it costs nothing more."""
    outcome, measured = made
    if measured.refused:
        model_findings.refuse(measured.refused, result.cases)
    elif outcome is None:
        result.notes.append(model_findings.unwatched(measured.why))
    else:
        model_findings.believe(case, outcome, result.cases)
        model_findings.placed(outcome, result.cases)
    return measured


def lab_kernel(lab: Lab, case: Case, model: Backend, timeout: float, file: str) -> Profile | None:
    """The profile of the lab's own `file` (reference.cu, baseline.cu) at `case`, a public
    one with its fixed values (the same for every submission), from the cache where this
    file was profiled there before: found without a build or the case's draw, which cost
    a warm check more than the rest of its profile (13 ms a file; spmv's draws, 15 ms);
    None where it cannot be made (the report says what is missing)."""
    if lab.home is None or not (lab.home / file).is_file():
        return None
    submission, _ = read_submission(lab.home / file)
    entry = _entry(lab, _undrawn(lab, case), submission)
    cached = _cached(entry)
    if cached is not None:
        return cached
    case = next((c for c in casegen.public_cases(lab) if c.name == case.name), case)
    made = run(lab, case, submission, model, timeout)[1].profile
    if made is not None:
        with contextlib.suppress(OSError):
            write_atomically(entry, json.dumps(made.to_json()))
            build_cache.stored()
    return made


def lab_kernels(
    lab: Lab, case: Case, model: Backend, timeout: float
) -> tuple[Profile | None, Profile | None]:
    """The reference's profile at `case` (lab_kernel), and the baseline's where a traffic
    rule divides by it."""
    own = (lab, case, model, timeout)
    reference = lab_kernel(*own, "reference.cu")
    return reference, lab_kernel(*own, "baseline.cu") if lab.traffic else None


def lab_kernels_ahead(
    lab: Lab, case: Case, model: Backend, timeout: float, cancel: waiting.Cancel
) -> Future[tuple[Profile | None, Profile | None]]:
    """lab_kernels in a thread (LAB_THREAD), while the cases run: on the CPU backend a
    cold check's last step otherwise (0.03-0.37 s a lab, with the other core idle). Its
    runs are the lab's own kernels', which no stop of the runs made ahead ends; `cancel`
    stops its compilers and workers (a grading that ends early)."""
    make = partial(waiting.under, cancel, partial(lab_kernels, lab, case, model, timeout))
    return in_background(make, name=LAB_THREAD)


def _undrawn(lab: Lab, case: Case) -> Case:
    """`case` as its profile's key names it: a public case by its declared sizes and its
    fixed seed, before the lab's draw adds the sizes it defines (which the lab's
    definition, the sizes and the seed decide)."""
    declared = next((c for c in lab.public_cases if c.name == case.name), None)
    if declared is None:
        return case
    seed = casegen.derive_seed(casegen.PUBLIC_KEY, lab.name, case.name)
    return Case(case.name, declared.sizes, Visibility.PUBLIC, seed)


def _entry(lab: Lab, case: Case, submission: Submission) -> Path:
    """Where a lab kernel's profile at `case` is kept, by everything that decides it: the
    file's text and name, the case (its sizes and seed, and the lab's definition, which
    draws the inputs, sets the macros and counts the outputs and flops), the grader's
    version, and what builds, runs and counts the module on this machine
    (cpu.profile.decided_by). The file is the grader's or the course's own, never a
    submission's: no student's text reaches a key."""
    from grader.backends.cpu import profile as cpu_profile  # where the model is built

    definition = lab.home / labs.DEFINITION
    source = submission.compiled.encode(errors=SOURCE_ERRORS)
    what = [
        CACHE_FORMAT, grader.__version__, lab.name, case.name, sorted(case.sizes.items()),
        case.seed, submission.name, _digest(source), lab.launch_defaults,
        _digest(definition.read_bytes()) if definition.is_file() else "",
        cpu_profile.decided_by(),
    ]  # fmt: skip
    key = hashlib.sha256(json.dumps(what).encode()).hexdigest()[:40]
    return defaults.cache_dir() / "profile" / f"{key}.json"


def _digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _cached(entry: Path) -> Profile | None:
    try:
        found = Profile.from_json(json.loads(entry.read_text()))
    except (OSError, ValueError, KeyError, TypeError):
        return None
    build_cache.used(entry)
    return found


def nsight(
    lab: Lab, case: Case, backend: Backend, student: Build, timeout: float
) -> tuple[tuple[Profile, Profile] | None, str]:
    """Nsight Compute's profiles of the `student`'s build and the reference's at `case`
    on this GPU; None, with a note saying why, where it did not count both (then the CPU
    model's are shown, so that both come from one source)."""
    reference, _ = read_submission(lab.home / "reference.cu")
    macros = lab.macro_values(case.sizes)
    builds = [student, backend.build(reference, macros, lab.launch_defaults)]
    if not all(b.ok and b.interface is not None for b in builds):
        return None, ""
    inputs = casegen.make_inputs(lab, case)
    runs = [(b, make_launch(lab, case, inputs, b.interface)[0]) for b in builds]
    try:
        found = backend.nsight(runs, timeout)
    except BackendUnavailable as why:
        return None, f"--profile: Nsight Compute did not run: {why}"
    failed = next((m.note for m in found if not m.ok), None)
    if failed is not None:
        return None, (
            f"--profile: Nsight Compute did not count both kernels ({failed}); the CPU "
            "model's profiles are shown."
        )
    made = []
    for (build, _), counted in zip(runs, found, strict=True):
        kernels, note = counted.kernels(), counted.remarks()
        profile = case_profile(lab, case, build.interface, kernels, Source.NSIGHT_COMPUTE, note)
        profile.dram_bytes = counted.dram_bytes()
        made.append(profile)
    return (made[0], made[1]), ""


def label(case: Case) -> str:
    """The case's name as reports give it: a hidden one's stays out of sight."""
    return case.name if case.visibility == Visibility.PUBLIC else rules.HIDDEN_CASE


def as_shown(case: Case, *made: Profile | None) -> tuple[Profile | None, ...]:
    """Profiles made at `case` as reports show them: at a hidden case, named as none is,
    with no sizes."""
    if case.visibility == Visibility.PUBLIC:
        return made
    return tuple(p and replace(p, case=rules.HIDDEN_CASE, sizes={}) for p in made)
