"""A grading on several cores starts a case's run while the runs of the cases before it
go on (grader.grading.beside), and reports what a grading in turn reports
(tests/test_determinism.py compares every known-wrong kernel's public cases). Here, with
hidden cases too: the run that must be made in turn is, and the runs that must stop do."""

from __future__ import annotations

import subprocess
import threading
import time

import pytest
from process_kit import children

from grader import defaults, labs, waiting
from grader.backends.cpu.backend import CpuBackend
from grader.grading import pipeline, profiles
from grader.model.result import Status
from grader.report.json import to_dict


def _graded(lab: str, name: str, jobs: int, **options) -> dict:
    path = labs.get(lab).home / "wrong" / name
    chosen = pipeline.Options(backend="cpu", secret="beside", timing=False, jobs=jobs, **options)
    report = to_dict(pipeline.check(lab, path, chosen))
    report.pop("device")  # names the cores used
    for case in report["cases"]:
        case.pop("seconds")
    return report


def _counted(monkeypatch) -> dict[str, int]:
    """How often each way of running was called, and how many runs made ahead were going
    on, at most, when a run in turn started: the submission's runs, not the profiles of
    the lab's own kernels (pipeline.Grading.model_beside)."""
    calls = {"run": 0, "run_ahead": 0, "beside_in_turn": 0}
    going = {"run_ahead": 0}
    # the profile case's run (grading.pipeline.run_case) counts as a run, in turn or ahead
    ways = {"run": "run", "run_ahead": "run_ahead", "profile": "run", "profile_ahead": "run_ahead"}
    for name, way in ways.items():
        method = getattr(CpuBackend, name)

        def counting(self, *args, _method=method, _name=way):
            if threading.current_thread().name == profiles.LAB_THREAD:
                return _method(self, *args)  # the lab's own kernels, beside the cases
            calls[_name] += 1
            if _name == "run":
                calls["beside_in_turn"] = max(calls["beside_in_turn"], going["run_ahead"])
                return _method(self, *args)
            going["run_ahead"] += 1
            try:
                return _method(self, *args)
            finally:
                going["run_ahead"] -= 1

        monkeypatch.setattr(CpuBackend, name, counting)
    return calls


def test_a_race_is_located_in_the_case_a_grading_in_turn_locates_it(monkeypatch):
    in_turn = _graded("conv2d", "missing_syncthreads.cu", 1)
    calls = _counted(monkeypatch)
    beside = _graded("conv2d", "missing_syncthreads.cu", 2)
    assert beside == in_turn
    assert calls["run_ahead"] and calls["run"]  # each module's first race, run again in turn
    assert calls["beside_in_turn"] == 0
    located = [
        d for c in beside["cases"] for d in c["diagnostics"] if "__syncthreads" in d["message"]
    ]
    assert located, beside["cases"][0]["diagnostics"]


def test_the_runs_after_a_kernels_last_allowed_hang_are_stopped(monkeypatch):
    in_turn = _graded("matmul-naive", "infinite_loop.cu", 1, timeout=1.0)
    calls = _counted(monkeypatch)
    beside = _graded("matmul-naive", "infinite_loop.cu", 2, timeout=1.0)
    assert beside == in_turn
    statuses = [c["status"] for c in beside["cases"]]
    assert statuses == [Status.TIMEOUT.value] * len(statuses)
    assert calls["run_ahead"] <= defaults.MAX_TIMEOUTS + 1  # one more was going on, and ended
    assert calls["run"] == defaults.MAX_TIMEOUTS  # each hang decided by a run in turn,
    assert calls["beside_in_turn"] == 0  # alone
    assert list(children().values()) == []


def test_a_grading_past_its_deadline_leaves_no_worker_running():
    started = time.monotonic()
    report = _graded("matmul-naive", "infinite_loop.cu", 2, timeout=10.0, submission_timeout=2.0)
    assert time.monotonic() - started < 6.0  # not the cases' 10 s
    assert report["status"] == Status.ERROR.value
    assert "was stopped" in report["diagnostics"][0]["message"]
    assert list(children().values()) == []


def test_a_grading_past_its_deadline_stops_the_labs_own_profiles(monkeypatch):
    """Made beside the cases, they end with the grading: no process of theirs (here a
    stand-in that would wait a minute) outlives it."""

    def slow(*args):
        proc = subprocess.Popen(["sleep", "60"])
        try:
            waiting.wait(proc, 120)
        finally:
            proc.kill()
            proc.wait()

    monkeypatch.setattr(profiles, "lab_kernels", slow)
    started = time.monotonic()
    report = _graded("matmul-naive", "infinite_loop.cu", 2, timeout=10.0, submission_timeout=2.0)
    assert time.monotonic() - started < 6.0
    assert "was stopped" in report["diagnostics"][0]["message"]
    assert list(children().values()) == []


def test_ctrl_c_as_the_labs_own_profiles_start_stays_a_ctrl_c(monkeypatch):
    """Ctrl-C between the Cancel made for them and their thread's start: the grading ends
    with KeyboardInterrupt (exit 130), not an error of its own (it waited on no thread)."""

    def interrupted(*args):
        raise KeyboardInterrupt

    monkeypatch.setattr(profiles, "lab_kernels_ahead", interrupted)
    with pytest.raises(KeyboardInterrupt):
        _graded("matmul-naive", "../reference.cu", 2)
    assert list(children().values()) == []


def test_the_profile_case_runs_beside_the_other_cases(monkeypatch):
    """Its run, the longest of a warm check where the profile case is the census case
    (conv3d's 16x16x16), is stopped as a run ahead is, and so needs no turn of its own."""
    made = []
    ahead = CpuBackend.profile_ahead

    def counted(self, *args):
        made.append(ahead(self, *args))
        return made[-1]

    monkeypatch.setattr(CpuBackend, "profile_ahead", counted)
    report = _graded("matmul-tiled", "../reference.cu", 2)
    assert report["profile"] is not None
    assert len(made) == 1 and made[0] is not None, made


def test_the_labs_own_profiles_are_made_beside_the_cases(monkeypatch):
    """The reference's and the baseline's profiles, a cold check's last step otherwise,
    are made in a thread of their own while the cases run, and the report shows them."""
    threads = []
    made = profiles.lab_kernels

    def counted(*args):
        threads.append(threading.current_thread().name)
        return made(*args)

    monkeypatch.setattr(profiles, "lab_kernels", counted)
    report = _graded("matmul-tiled", "../reference.cu", 2)
    assert report["profile"]["reference"] is not None
    assert threads == [profiles.LAB_THREAD], threads
