"""The cuda backend run from inside a student's clone that carries its own `grader/`,
`numpy/` and `pycuda/` packages: neither the probe nor the GPU worker imports them, and the
worker, which loads the student's module, has no secret in its environment."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from hostile_kit import SPY, SPY_LAB, imported, plant, run_grader

from grader.backends.cuda.client import WorkerProcess
from grader.defaults import SECRET_ENV
from grader.errors import ExitCode

SECRET = "course-secret-" + os.urandom(6).hex()
NOBODY = 65534  # the unprivileged user the CPU sandbox uses too


def _check(clone: Path, env: dict[str, str], prefix: tuple[str, ...] = ()) -> dict:
    done = run_grader(
        "check", SPY_LAB, "kernel.cu", "--backend", "cuda", "--json", "report.json",
        cwd=clone, env={SECRET_ENV: SECRET, **env}, prefix=prefix,
    )  # fmt: skip
    assert imported(clone.parent / "marker") == ""
    assert done.returncode == ExitCode.OK, done.stdout + done.stderr
    report = json.loads((clone / "report.json").read_text())
    assert report["backend"] == "cuda" and report["status"] == "passed"
    assert any(c["visibility"] == "hidden" for c in report["cases"])  # graded with the secret
    assert SECRET not in (clone / "report.json").read_text() + done.stdout
    print(done.stdout)  # the run, for the record (pytest -s shows it)
    return report


def test_check_on_the_gpu_from_a_hostile_clone(tmp_path):
    clone = plant(tmp_path / "clone", tmp_path / "marker")
    (clone / "kernel.cu").write_text(SPY)
    _check(clone, {})


def test_the_gpu_worker_imports_the_grader_and_sees_no_secret(tmp_path, monkeypatch):
    clone = plant(tmp_path / "clone", tmp_path / "marker")
    monkeypatch.chdir(clone)
    monkeypatch.setenv(SECRET_ENV, SECRET)
    monkeypatch.setenv("GITHUB_TOKEN", "ghp_" + SECRET)
    worker = WorkerProcess()
    try:
        assert worker.start().ok, worker.stderr_tail()
        environ = Path(f"/proc/{worker.process.pid}/environ").read_bytes().decode()
    finally:
        worker.stop()
    assert SECRET not in environ and "GITHUB_TOKEN" not in environ
    assert imported(tmp_path / "marker") == ""


@pytest.mark.skipif(os.geteuid() != 0, reason="run as an ordinary user, the test above is this")
@pytest.mark.skipif(not shutil.which("setpriv"), reason="needs util-linux's setpriv")
def test_check_on_the_gpu_from_a_hostile_clone_as_an_unprivileged_user():
    """Root here: the same `grader check`, run as uid 65534 in a folder of its own."""
    prefix = ("setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups")
    home = Path(tempfile.mkdtemp(prefix="grader-nobody-", dir="/tmp"))
    try:
        clone = plant(home / "clone", home / "marker")
        (clone / "kernel.cu").write_text(SPY)
        env = {"HOME": str(home), "TMPDIR": str(home), "GRADER_CACHE": str(home / "cache")}
        for path in [home, *home.rglob("*")]:
            os.chown(path, NOBODY, NOBODY)
        can = subprocess.run(
            [*prefix, sys.executable, "-c", "import grader, numpy, pycuda.driver"],
            cwd=home, env={**os.environ, **env}, capture_output=True, text=True,
        )  # fmt: skip
        if can.returncode != 0:
            last = (can.stderr.strip().splitlines() or ["?"])[-1]
            pytest.skip(f"uid {NOBODY} cannot run this Python and grader: {last}")
        _check(clone, env, prefix)
    finally:
        shutil.rmtree(home, ignore_errors=True)
