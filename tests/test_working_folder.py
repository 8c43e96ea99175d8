"""A TA runs the grader from inside a student's clone, which carries its own `grader/`
package: no command, on any backend, imports it (the helpers the grader starts run
isolated, on the grader's own import path), and no process that loads student code has
the secret in its environment."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from hostile_kit import SPY, SPY_LAB, imported, plant, run_grader

import grader
from grader import spawn
from grader.defaults import SECRET_ENV
from grader.errors import ExitCode

SECRET = "course-secret-" + os.urandom(6).hex()


@pytest.fixture
def clone(tmp_path) -> Path:
    """A student's repository with hostile packages and the spy kernel in it."""
    folder = plant(tmp_path / "clone", tmp_path / "marker")
    (folder / "kernel.cu").write_text(SPY)
    return folder


def test_a_helper_imports_the_grader_that_started_it_not_the_working_folders(clone, monkeypatch):
    monkeypatch.chdir(clone)
    monkeypatch.setenv(SECRET_ENV, SECRET)
    show = "import grader, json, os, sys\n"
    show += "print(json.dumps([grader.__file__, sys.path, dict(os.environ)]))"
    env = {**spawn.helper_env(), "PYTHONPATH": str(clone)}  # -I ignores it
    done = subprocess.run(spawn.python_code(show), env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    where, path, seen = json.loads(done.stdout)
    assert where == grader.__file__
    assert str(clone) not in path and "" not in path
    assert SECRET_ENV not in seen and SECRET not in json.dumps(seen)
    probe = subprocess.run(
        spawn.python_module("grader.backends.cuda.probe"), env=env, capture_output=True, text=True
    )
    assert "ok" in json.loads(probe.stdout.splitlines()[-1]), probe.stderr  # it ran, as itself
    assert imported(clone.parent / "marker") == ""


def test_a_helper_finds_what_its_parent_found_through_pythonpath(tmp_path):
    """As on a machine that runs the grader from a checkout with PYTHONPATH=/tmp/site:$PWD:
    -I drops PYTHONPATH, so the parent's path is handed over instead."""
    site = tmp_path / "site"
    site.mkdir()
    (site / "only_on_pythonpath.py").write_text("WHERE = __file__\n")
    parent = (
        "import subprocess; from grader import spawn\n"
        "show = 'import only_on_pythonpath as m, grader; print(m.WHERE, grader.__file__)'\n"
        "print(subprocess.run(spawn.python_code(show), env=spawn.helper_env(),\n"
        "                     capture_output=True, text=True, check=True).stdout)\n"
    )
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(site), os.environ.get("PYTHONPATH", "")]),
    }
    done = subprocess.run(
        [sys.executable, "-c", parent], cwd=tmp_path, env=env, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == [str(site / "only_on_pythonpath.py"), grader.__file__]


def test_the_helper_environment_is_built_not_copied(monkeypatch):
    monkeypatch.setenv("GRADER_SECRET", "s3cret")
    monkeypatch.setenv("GITHUB_TOKEN", "ghp_x")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "k")
    monkeypatch.setenv("LD_PRELOAD", "/tmp/evil.so")
    monkeypatch.setenv("GRADER_CACHE", "/tmp/cache")
    monkeypatch.setenv("LC_MESSAGES", "C")
    monkeypatch.setenv("NVIDIA_DRIVER_CAPABILITIES", "compute")
    env = spawn.helper_env({"CUDA_VISIBLE_DEVICES": "3"})
    assert "GRADER_SECRET" not in env and "s3cret" not in "".join(env.values())
    assert not {"GITHUB_TOKEN", "AWS_SECRET_ACCESS_KEY", "LD_PRELOAD"} & set(env)
    assert env["GRADER_CACHE"] == "/tmp/cache" and env["LC_MESSAGES"] == "C"
    assert env["NVIDIA_DRIVER_CAPABILITIES"] == "compute"
    assert env["CUDA_VISIBLE_DEVICES"] == "3"
    done = subprocess.run(
        spawn.python_code("import grader.course.grading_worker"), env=env, capture_output=True
    )
    assert done.returncode == 0, done.stderr


def _printed(report: dict) -> str:
    return "".join(case.get("output", "") for case in report["cases"])


@pytest.mark.parametrize("backend", ["auto", "cpu", "cuda"])
def test_check_never_imports_the_clones_grader(clone, backend):
    done = run_grader(
        "check", SPY_LAB, "kernel.cu", "--backend", backend, "--json", "report.json",
        cwd=clone, env={SECRET_ENV: SECRET},
    )  # fmt: skip
    assert imported(clone.parent / "marker") == ""
    if backend == "cuda" and done.returncode == ExitCode.USAGE:  # no GPU here: the probe's
        assert "needs a usable NVIDIA GPU" in done.stderr  # own reason, not its failure
        assert "the CUDA probe failed" not in done.stderr, done.stderr
        pytest.skip("no usable GPU: the cuda report's hidden cases and secrecy are not checked")
    assert done.returncode == ExitCode.OK, done.stdout + done.stderr
    text = (clone / "report.json").read_text()
    assert SECRET not in text and SECRET not in done.stdout
    report = json.loads(text)
    hidden = [c for c in report["cases"] if c["visibility"] == "hidden"]
    assert hidden and report["status"] == "passed"  # the hidden cases ran, with the secret
    if report["backend"] == "cpu":  # the module's constructor ran, and saw only this
        assert "environment: PATH=" in _printed(report)
        assert SECRET_ENV not in _printed(report)


@pytest.mark.parametrize("backend", ["auto", "cpu"])
def test_batch_never_imports_the_clones_grader(clone, backend):
    subs = clone / "submissions"
    (subs / "ann").mkdir(parents=True)
    (subs / "ann" / "kernel.cu").write_text(SPY)
    done = run_grader(
        "batch", SPY_LAB, "submissions", "--out", "out", "--backend", backend, "--jobs", "1",
        cwd=clone, env={SECRET_ENV: SECRET},
    )  # fmt: skip
    assert done.returncode == ExitCode.OK, done.stdout + done.stderr
    assert imported(clone.parent / "marker") == ""
    assert "1 passed, 0 failed, 0 did not compile, 0 could not be graded" in done.stdout
    written = [p for p in (clone / "out").rglob("*") if p.is_file()]
    reports = [p for p in written if p.name == "report.json"]
    assert reports and all(SECRET not in p.read_text(errors="replace") for p in written)
    report = json.loads(reports[0].read_text())
    if report["backend"] == "cpu":
        assert "environment: PATH=" in _printed(report)


@pytest.mark.parametrize("backend", ["all", "cpu"])
def test_validate_lab_never_imports_the_clones_grader(clone, backend):
    done = run_grader("validate-lab", "histogram", "--backend", backend, cwd=clone, env={})
    assert done.returncode == ExitCode.OK, done.stdout + done.stderr
    assert imported(clone.parent / "marker") == ""
