"""Issue 34's attack, replayed: a student's clone commits a grader.toml that names a lab
root of its own, whose lab.py is Python that notes it ran, copies GRADER_SECRET out and
patches the scoring, and that sets the backend and timeouts. Graded from inside the clone
by `grader check`, by `grader batch` over a folder holding it, and by Gradescope's
run_autograder with the clone as the submission: no lab code of the clone runs, the secret
is never read, and the grade is the one the same kernel gets with no config at all."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest
from gradescope_kit import run_autograder
from hostile_kit import run_grader

from grader import labs
from grader.defaults import SECRET_ENV
from grader.errors import ExitCode
from grader.gradescope import build_autograder

SECRET = "course-secret-of-issue-34"
LAB = "matmul-naive"
# Passes the cases whose Width is a multiple of the block, fails the rest: 2 of 7 points,
# so a forged 7/7 and a timeout's 0 both show.
KERNEL = "wrong/no_boundary_check.cu"
# Every key that could decide the grade, each set to what would change it here: on this
# machine (no GPU) cuda stops the check, and timeouts this short fail every case.
CONFIG = """labs = ["x"]
backend = "cuda"
timeout = 0.001
submission_timeout = 0.001
out = "forged-grades"
color = "never"
jobs = 1
"""
LAB_PY = """import os
from pathlib import Path

Path({marker!r}).write_text("the clone's lab.py ran\\n")
Path({stolen!r}).write_text(os.environ.get("GRADER_SECRET", "not in this process"))
try:  # and every grading in this process scores full marks
    import dataclasses
    from grader.judge import scoring

    _total = scoring.total
    scoring.total = lambda *a, **k: dataclasses.replace(
        _total(*a, **k), points=_total(*a, **k).max_points
    )
except Exception:
    pass
from grader.labs.matmul import matmul_lab
from grader.model.lab import Scoring

LAB = matmul_lab("clone", "clone", Scoring(target_speedup=0.9, zero_speedup=0.3))
"""


@pytest.fixture
def clone(tmp_path) -> Path:
    """tmp_path/subs/alice: a git clone with the hostile grader.toml, its lab root and the
    kernel; what its lab.py would write goes to tmp_path/marker and tmp_path/stolen."""
    folder = tmp_path / "subs" / "alice"
    folder.mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(folder)], check=True)
    (folder / "grader.toml").write_text(CONFIG)
    definition = folder / "x" / "reference_kernels" / "clone-lab" / "lab.py"
    definition.parent.mkdir(parents=True)
    marker, stolen = tmp_path / "marker", tmp_path / "stolen"
    definition.write_text(LAB_PY.format(marker=str(marker), stolen=str(stolen)))
    (folder / "x" / "student_template" / "clone-lab").mkdir(parents=True)
    shutil.copyfile(labs.get(LAB).home / KERNEL, folder / "kernel.cu")
    return folder


def untouched(tmp_path: Path) -> None:
    """No lab code of the clone ran: nothing written, the secret not read."""
    assert not (tmp_path / "marker").exists(), "the clone's lab.py ran"
    assert not (tmp_path / "stolen").exists(), "the clone's lab.py read the secret"


def check(kernel: Path, cwd: Path, report: Path, *options: str) -> tuple[dict, str]:
    done = run_grader(
        "check", LAB, str(kernel), "--no-timing", "--json", str(report), *options,
        cwd=cwd, env={SECRET_ENV: SECRET},
    )  # fmt: skip
    assert done.returncode in (ExitCode.OK, ExitCode.FAILED), done.stdout + done.stderr
    return json.loads(report.read_text()), done.stderr


def grade(report: dict) -> tuple:
    """What decides the grade, and the backend it was graded on."""
    cases = [(case["name"], case["status"]) for case in report["cases"]]
    return report["backend"], report["status"], report["score"], report["max_score"], cases


@pytest.fixture
def honest(clone, tmp_path) -> dict:
    """The kernel's report from `grader check` with no config anywhere."""
    folder = tmp_path / "honest"
    folder.mkdir()
    shutil.copyfile(clone / "kernel.cu", folder / "kernel.cu")
    report, _ = check(folder / "kernel.cu", folder, tmp_path / "honest.json")
    # the hidden cases ran; it stops at the drawn profile case, so the rules are broken
    assert (report["score"], report["max_score"]) == (1.0, 7.0)
    return report


def test_check_from_inside_the_clone(clone, honest, tmp_path):
    report, err = check(clone / "kernel.cu", clone, tmp_path / "check.json")
    untouched(tmp_path)
    assert grade(report) == grade(honest)
    ignored = "labs, backend, timeout, submission_timeout, out, jobs"
    assert f"{clone / 'grader.toml'} sets {ignored}, which were not used" in err
    assert "--config PATH or GRADER_CONFIG=PATH" in err


def test_the_attack_is_real_where_a_ta_names_the_clones_file(clone, tmp_path):
    """The test above can fail: named, the same file is trusted and its lab.py runs."""
    done = run_grader("labs", "--config", "grader.toml", cwd=clone, env={SECRET_ENV: SECRET})
    assert done.returncode == ExitCode.OK, done.stderr
    assert (tmp_path / "marker").exists() and (tmp_path / "stolen").read_text() == SECRET


def batch(folder: Path, cwd: Path, out: Path) -> dict:
    """The one report of `grader batch` over `folder`, run in `cwd`."""
    done = run_grader(
        "batch", LAB, str(folder), "--out", str(out), "--jobs", "1",
        cwd=cwd, env={SECRET_ENV: SECRET},
    )  # fmt: skip
    assert done.returncode == ExitCode.OK, done.stdout + done.stderr
    assert "1 submissions" in done.stdout and "0 could not be graded" in done.stdout
    (report,) = out.glob("students/*/report.json")
    return json.loads(report.read_text())


def test_batch_over_a_folder_holding_the_clone_run_from_inside_it(clone, tmp_path):
    # the script goes to clone/bin/grader
    graded = batch(clone.parent, clone / "x", tmp_path / "grades")
    untouched(tmp_path)
    assert not (clone / "forged-grades").exists()
    honest = tmp_path / "honest-subs" / "alice"  # a batch times its kernels on a GPU: so
    honest.mkdir(parents=True)  # the honest grade is a batch's too
    shutil.copyfile(clone / "kernel.cu", honest / "kernel.cu")
    assert grade(graded) == grade(batch(honest.parent, tmp_path, tmp_path / "honest-grades"))


@pytest.mark.slow
def test_gradescope_with_the_clone_as_the_submission(clone, tmp_path, grader_wheel):
    """The autograder reads its settings from the zip alone: the same score as the kernel
    submitted by itself."""
    zip_path = build_autograder(LAB, tmp_path / "autograder.zip", secret=SECRET, wheel=grader_wheel)
    alone = run_autograder(
        zip_path, tmp_path / "alone", {"kernel.cu": (clone / "kernel.cu").read_text()}
    )
    shutil.copytree(clone, tmp_path / "attacked" / "submission")
    attacked = run_autograder(zip_path, tmp_path / "attacked", {})
    untouched(tmp_path)
    assert attacked["score"] == alone["score"] == 1.0
    assert [(t["name"], t.get("score"), t.get("status")) for t in attacked["tests"]] == [
        (t["name"], t.get("score"), t.get("status")) for t in alone["tests"]
    ]
