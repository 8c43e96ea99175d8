"""The profiles a grading makes (grader.grading.profiles): on the CPU backend the profile
case's own run is the profile run, one run; on any other backend a CPU backend of the
grading's own makes it, so that the rules it decides grade alike; the lab's own kernels'
profiles come from the cache once made."""

from __future__ import annotations

import contextlib
import shutil
import threading
import time
from dataclasses import replace
from pathlib import Path

import pytest
from process_kit import children

from grader import labs
from grader.backends.base import Wrapper
from grader.backends.cpu import CpuBackend
from grader.backends.cpu import profile as cpu_profile
from grader.errors import SetupError
from grader.grading import profiles
from grader.grading.alarm import DeadlinePassed
from grader.grading.pipeline import Options, grade
from grader.judge import cases as casegen
from grader.judge import rules
from grader.model.source import read_submission
from grader.toolchain import nvcc

SERIAL = labs.get("reduction").home / "wrong" / "serial_thread.cu"


class Counting(Wrapper):
    """The CPU backend, counting its profiled and plain runs (by the launch's first size)."""

    def __init__(self, inner, name: str = "cpu") -> None:
        super().__init__(inner)
        self.name = name
        self.profiled: list[int] = []
        self.plain = 0

    def profile(self, build, launch, timeout):
        self.profiled.append(launch.grid[0])
        return super().profile(build, launch, timeout)

    def run(self, build, launch, timeout):
        self.plain += 1
        return super().run(build, launch, timeout)

    def run_ahead(self, build, launch, timeout):
        self.plain += 1
        return self.inner.run_ahead(build, launch, timeout)


def _grade(backend, path: Path = SERIAL, lab: str = "reduction"):
    return grade(labs.get(lab), path, backend, Options(backend="cpu", timeout=20, timing=False))


@pytest.fixture(scope="module")
def cpu():
    with CpuBackend() as opened:
        yield opened


def test_on_the_cpu_the_profile_case_runs_once_and_that_run_is_profiled(cpu):
    _grade(cpu)  # the reference's profile made, and cached
    counting = Counting(cpu)
    result = _grade(counting)
    assert len(counting.profiled) == 1  # the profile case's own run; the reference's cached
    assert counting.plain == len(result.cases) - 1  # the other cases, not profiled
    assert result.profile is not None and result.profile.reference is not None
    assert result.profile.student.case == "n-100000"
    assert rules.broken(result) == {rules.BUSIEST}


def test_another_backend_grades_the_measured_rules_as_the_cpu_does(cpu):
    """A backend that is not the CPU one (here one named cuda that runs on the CPU) has
    the CPU model run the profile case on a CPU backend of the grading's own."""
    on_cpu = _grade(cpu)
    elsewhere = Counting(cpu, name="cuda")
    result = _grade(elsewhere)
    assert elsewhere.profiled == []  # the profile was made by another backend
    assert rules.broken(result) == rules.broken(on_cpu) == {rules.BUSIEST}
    assert result.score == on_cpu.score
    assert result.profile.student.to_json() == on_cpu.profile.student.to_json()


def test_on_another_backend_the_model_runs_the_profile_case_once(cpu, monkeypatch):
    """The run whose findings about races a GPU grading believes is the profile's own: no
    second CPU run (grader.judge.model_findings)."""
    _grade(cpu)  # the lab's own kernels' profiles, cached
    made = []
    real = profiles.run
    monkeypatch.setattr(profiles, "run", lambda *args: made.append(args[1].name) or real(*args))
    _grade(Counting(cpu, name="cuda"))
    assert made == ["n-100000"]


class Lagging(Counting):
    """A "cuda" backend on the CPU whose case runs end 0.3 s late, each end noted."""

    def __init__(self, inner) -> None:
        super().__init__(inner, name="cuda")
        self.ends: list[float] = []

    def run(self, build, launch, timeout):
        outcome = super().run(build, launch, timeout)
        time.sleep(0.3)
        self.ends.append(time.monotonic())
        return outcome


def test_on_another_backend_the_model_runs_beside_the_cases(cpu, monkeypatch):
    """The model's run starts once the kernel has built, while the GPU's cases still run,
    and is judged after them: its findings are the same as when it ran after the cases."""
    _grade(cpu)  # the lab's own kernels' profiles, cached
    started = []
    real = profiles.run
    monkeypatch.setattr(profiles, "run", lambda *a: started.append(time.monotonic()) or real(*a))
    lagging = Lagging(cpu)
    result = _grade(lagging)
    assert len(started) == 1 and len(lagging.ends) == len(result.cases)
    assert started[0] < lagging.ends[0]  # before the first case's run had ended
    assert rules.broken(result) == {rules.BUSIEST}


def runners() -> list[str]:
    """This process's CPU workers now (its compilers, of builds made ahead, may finish)."""
    return [c for c in children().values() if c.startswith("(runner)")]


class Stopped(Counting):
    """A "cuda" backend whose first case's run is stopped by the grading's deadline once
    the model's worker runs (DeadlinePassed, as its alarm raises it)."""

    def run(self, build, launch, timeout):
        give_up = time.monotonic() + 60
        while not runners():
            assert time.monotonic() < give_up, "the model's worker never started"
            time.sleep(0.05)
        raise DeadlinePassed

    run_ahead = run


def test_on_another_backend_a_grading_past_its_deadline_stops_the_models_worker(cpu, tmp_path):
    """The model's run beside the cases ends with the grading, its worker with it: a
    check does not outlive its deadline by the model's timeout (here an endless loop)."""
    _grade(cpu)  # the reference's sums and profiles cached: the one worker left is the model's
    path = tmp_path / "kernel.cu"
    path.write_text(SERIAL.read_text().replace("if (threadIdx.x != 0) return;", "for (;;) {}"))
    with pytest.raises(DeadlinePassed):
        _grade(Stopped(cpu, name="cuda"), path)
    time.sleep(0.5)
    assert not runners(), "the model's worker outlived the grading"
    modelling = [t for t in threading.enumerate() if t.name.startswith("grader-model")]
    for thread in modelling:  # a build it was making ends; no run starts after the close
        thread.join(timeout=15)
    assert not any(t.is_alive() for t in modelling)


def test_on_another_backend_a_file_that_does_not_build_is_not_modelled(cpu, monkeypatch, tmp_path):
    path = tmp_path / "kernel.cu"
    path.write_text(SERIAL.read_text().replace("return;", "return", 1))
    monkeypatch.setattr(profiles, "run", lambda *a: pytest.fail("the model ran"))
    result = _grade(Counting(cpu, name="cuda"), path)
    assert not result.compile.ok and result.profile is None


def test_the_labs_own_kernels_profiles_come_from_the_cache(cpu, monkeypatch):
    lab = labs.get("matmul-tiled")
    first = profiles.lab_kernel(
        lab, casegen.find_case(lab, "width-64", None), cpu, 20, "baseline.cu"
    )
    assert first is not None
    monkeypatch.setattr(profiles, "run", lambda *a: pytest.fail("profiled again"))
    again = profiles.lab_kernel(
        lab, casegen.find_case(lab, "width-64", None), cpu, 20, "baseline.cu"
    )
    assert again == first


def test_a_kernel_that_crashes_in_the_profile_case_has_no_profile_and_breaks_the_rules(
    cpu, tmp_path
):
    path = tmp_path / "kernel.cu"
    path.write_text(
        SERIAL.read_text().replace(
            "if (threadIdx.x != 0) return;",
            "if (n == 100000) __trap();\n    if (threadIdx.x != 0) return;",
        )
    )
    result = _grade(cpu, path)
    assert result.profile is None
    assert any(
        n.startswith("Why this speed is not shown: the grader profiles case n-100000")
        for n in result.notes
    )
    said = [d.message for d in result.diagnostics if "is not met in this report" in d.message]
    assert said and "there the kernel did not run to its end" in said[0]


class NoSandbox(Wrapper):
    """A CPU backend that cannot build here, as on a GPU machine without its sandbox."""

    def build(self, *args, **kwargs):
        raise SetupError("no sandbox here")


def test_where_the_model_cannot_run_on_a_gpu_the_rules_are_not_checked(cpu, monkeypatch):
    @contextlib.contextmanager
    def unusable(backend):
        yield NoSandbox(cpu)

    monkeypatch.setattr(profiles, "model_backend", unusable)
    result = _grade(Counting(cpu, name="cuda"))
    assert rules.broken(result) == set() and result.profile is None
    assert any(
        n.startswith("Not checked here: the lab's rule that no thread makes more than 1/8")
        and "the CPU model cannot run on this machine (no sandbox here)" in n
        for n in result.notes
    )
    # nor were races watched, which the same run watches on a GPU (grader.judge.model_findings)
    assert (
        "Races among the threads of a block, and barriers not every thread reaches, were not "
        "watched on this GPU: the grader's CPU model watches them in its run of the profile "
        "case, and the CPU model cannot run on this machine (no sandbox here)."
    ) in " ".join(result.notes)


def test_a_profile_made_without_ptxas_figures_is_not_the_one_kept_for_a_build_with_them(
    monkeypatch,
):
    """Occupancy comes from ptxas: a grading without nvcc (or a test that hides it) keeps
    a profile without it, which a later grading with nvcc must not take for its own (the
    sample run in docs/student.md lost the reference's occupancy so)."""
    assert nvcc.find() is not None
    lab = labs.get("matmul-tiled")
    case = casegen.find_case(lab, "width-64", None)
    submission, _ = read_submission(lab.home / "reference.cu")
    with_nvcc = profiles._entry(lab, case, submission)
    monkeypatch.setattr(nvcc, "find", lambda: None)
    assert profiles._entry(lab, case, submission) != with_nvcc


def test_a_labs_own_kernels_profile_is_found_without_a_build(cpu, monkeypatch):
    """A warm check finds the reference's profile by its file, before any build or draw: a
    cached build cost a check more than the rest of its profile, and so did spmv's draws."""
    lab = labs.get("matmul-tiled")
    case = casegen.find_case(lab, "width-64", None)
    first = profiles.lab_kernel(lab, case, cpu, 20, "reference.cu")
    assert first is not None
    monkeypatch.setattr(cpu, "build", lambda *a, **k: pytest.fail("built again"))
    monkeypatch.setattr(casegen, "public_cases", lambda *a, **k: pytest.fail("drawn again"))
    assert profiles.lab_kernel(lab, case, cpu, 20, "reference.cu") == first


def test_everything_that_decides_a_labs_own_kernels_profile_keys_its_entry(tmp_path, monkeypatch):
    lab = labs.get("matmul-tiled")
    case = casegen.find_case(lab, "width-64", None)
    submission, _ = read_submission(lab.home / "reference.cu")
    entry = profiles._entry(lab, case, submission)
    assert profiles._entry(lab, case, submission) == entry
    home = tmp_path / "matmul-tiled"
    shutil.copytree(lab.home, home)
    (home / labs.DEFINITION).write_text((lab.home / labs.DEFINITION).read_text() + "\n#\n")
    others = [
        profiles._entry(lab, case, replace(submission, text=submission.text + "\n")),
        profiles._entry(lab, replace(case, seed=case.seed + 1), submission),
        profiles._entry(lab, replace(case, sizes={**case.sizes, "Width": 65}), submission),
        profiles._entry(replace(lab, home=home), case, submission),
    ]
    monkeypatch.setattr(cpu_profile, "decided_by", lambda: ["another runtime"])
    others.append(profiles._entry(lab, case, submission))
    assert len({entry, *others}) == len(others) + 1
