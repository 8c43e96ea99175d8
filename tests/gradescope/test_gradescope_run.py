"""The autograder zip end to end: unpacked into a folder laid out like Gradescope's
/autograder, its run_autograder grades the submission on the CPU backend and writes a
results.json that validates against the schema of Gradescope's documentation."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import zipfile
from decimal import Decimal
from importlib import metadata
from pathlib import Path

import jsonschema
import pytest
from gradescope_kit import run_autograder, unpack
from hostile_kit import SPY, imported, plant
from packaging_kit import pip_environment, site_packages

from grader import labs
from grader.defaults import cache_path
from grader.gradescope import build_autograder
from grader.gradescope.autograder import LOCKS
from grader.labroot import new_lab

SCHEMA = json.loads((Path(__file__).parent / "gradescope_results.schema.json").read_text())
SECRET = "gradescope-course-secret"
LAB = "matmul-naive"


@pytest.fixture(scope="module")
def autograder_zip(tmp_path_factory, grader_wheel) -> Path:
    out = tmp_path_factory.mktemp("zip") / "autograder.zip"
    return build_autograder(LAB, out, secret=SECRET, wheel=grader_wheel)


def _unlike_the_lock() -> list[str]:
    """The locked packages whose version here is not the lock's: setup.sh, run without an
    index, finds those already installed only when their versions are the lock's."""
    lock = LOCKS["cpu"].read_text()
    pinned = re.findall(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==(\S+)", lock, re.MULTILINE)
    found = []
    for name, version in pinned:
        try:
            here = metadata.version(name)
        except metadata.PackageNotFoundError:
            here = "none"
        found += [f"{name} {here} (the lock: {version})"] if here != version else []
    return found


def machine_and_reference_entries(cache: Path) -> set[str]:
    """The files of the grader's cache that a grading builds once per machine and lab:
    the sandbox, the CPU runner and shim, the reference's and baseline's profiles (not
    the reference's sums, each kept only where computing it took longer than reading it
    would, so a run may keep one that setup's grading computed faster)."""
    found = {p.relative_to(cache).as_posix() for p in cache.rglob("*") if p.is_file()}
    parts = ("sandbox/sandbox-", "cpu/runner-", "cpu/shim-", "profile/")
    for part in parts:
        assert any(name.startswith(part) for name in found), (part, sorted(found))
    return {name for name in found if name.startswith(parts)}


@pytest.mark.skipif(
    bool(_unlike_the_lock()),
    reason=f"this environment's packages are not the lock's: {', '.join(_unlike_the_lock())}; "
    "lock again (the command is in grader/gradescope/files/requirements-cpu.txt) or "
    "install the locked versions",
)
def test_setup_installs_the_zips_own_grader_and_run_autograder_uses_it(
    autograder_zip, venv_factory, tmp_path
):
    reference = (labs.get(LAB).home / "reference.cu").read_text()
    unpack(autograder_zip, tmp_path, {"kernel.cu": reference})
    # the test's venv has the compiler and Python setup.sh would install with apt-get
    (tmp_path / "venv").symlink_to(venv_factory("gradescope"))
    venv = tmp_path / "venv"
    env = {**pip_environment(venv), "AUTOGRADER_ROOT": str(tmp_path)}
    # as on Gradescope: no cache is set, and the scripts name the image's (not HOME's)
    for name in ("GRADER_CACHE", "XDG_CACHE_HOME"):
        env.pop(name, None)
    env["HOME"] = str(tmp_path / "home")
    setup = subprocess.run(
        ["bash", str(tmp_path / "source" / "setup.sh")], env=env, capture_output=True, text=True
    )
    assert setup.returncode == 0, setup.stdout + setup.stderr
    assert f"Graded {LAB}'s reference in " in setup.stdout, setup.stdout
    assert "16 of 16 cases passed." in setup.stdout, setup.stdout
    warmed = machine_and_reference_entries(tmp_path / "cache")
    where = subprocess.run(
        [str(venv / "bin" / "python"), "-c", "import grader; print(grader.__file__)"],
        cwd=tmp_path, env=env, capture_output=True, text=True,
    )  # fmt: skip
    assert Path(where.stdout.strip()).is_relative_to(site_packages(venv)), where.stderr
    run = subprocess.run(
        [str(tmp_path / "source" / "run_autograder")], env=env, capture_output=True, text=True
    )
    assert run.returncode == 0, run.stdout + run.stderr
    data = json.loads((tmp_path / "results" / "results.json").read_text())
    assert data["score"] == 7.0
    # the run built none of them again, and used no other cache
    assert machine_and_reference_entries(tmp_path / "cache") == warmed
    assert not (tmp_path / "home" / ".cache" / "cuda-lab-grader").exists()


def test_a_gpu_zip_warms_its_image_on_the_cpu_and_keeps_the_secret(tmp_path, grader_wheel):
    """An image is built without a GPU: setup.sh's warm-up grades the reference on the
    CPU backend whatever the zip's backend, and leaves the secret for the runs."""
    out = tmp_path / "a.zip"
    zip_path = build_autograder(LAB, out, backend="cuda", secret=SECRET, wheel=grader_wheel)
    unpack(zip_path, tmp_path / "autograder", {})
    warmed = subprocess.run(
        [sys.executable, "-P", "-m", "grader.gradescope", "--warm", str(tmp_path / "autograder")],
        capture_output=True, text=True, env={**os.environ, "GRADER_CACHE": str(cache_path())},
    )  # fmt: skip
    assert warmed.returncode == 0, warmed.stdout + warmed.stderr
    assert f"Graded {LAB}'s reference in " in warmed.stdout
    assert warmed.stdout.rstrip().endswith("16 of 16 cases passed."), warmed.stdout
    assert (tmp_path / "autograder" / "source" / "secret").read_text().strip() == SECRET


def test_a_correct_kernel_scores_every_case_and_the_secret_is_gone(autograder_zip, tmp_path):
    reference = (labs.get(LAB).home / "reference.cu").read_text()
    data = run_autograder(autograder_zip, tmp_path, {"kernel.cu": reference})
    jsonschema.Draft202012Validator(SCHEMA).validate(data)
    assert not (tmp_path / "source" / "secret").exists()
    tests = data["tests"]
    assert tests[0] == {
        "name": "Compile",
        "status": "passed",
        "output": tests[0]["output"],
        "output_format": "text",
        "visibility": "visible",
    }
    hidden = [t for t in tests if t["name"].startswith("hidden case")]
    assert len(hidden) == 13 and {t["visibility"] for t in hidden} == {"after_due_date"}
    assert all(t["status"] == "passed" for t in tests if t["name"] != "Why this speed")
    assert data["score"] == 7.0  # 3 public + 4 hidden points; no speed without a GPU
    assert "leaderboard" not in data
    assert isinstance(data["execution_time"], float) and data["execution_time"] > 0
    assert SECRET not in json.dumps(data)


def test_a_buggy_kernel_in_a_folder_loses_the_cases_it_fails(autograder_zip, tmp_path):
    buggy = (labs.get(LAB).home / "baseline.cu").read_text()
    buggy = buggy.replace("if (row < Width && col < Width) {", "{")
    data = run_autograder(autograder_zip, tmp_path, {"src/kernel.cu": buggy, "notes.txt": "hi"})
    jsonschema.Draft202012Validator(SCHEMA).validate(data)
    cases = [t for t in data["tests"] if t["name"].startswith(("public case", "hidden case"))]
    failed = [t for t in cases if t["status"] == "failed"]
    assert failed and all(t["score"] == 0 for t in failed)
    assert any("out_of_bounds" in t["output"] for t in failed)
    assert 0 < data["score"] < 7


def test_a_submission_without_one_kernel_gets_a_result_that_says_why(autograder_zip, tmp_path):
    data = run_autograder(autograder_zip, tmp_path, {"a.cu": "//", "b.cu": "//"})
    jsonschema.Draft202012Validator(SCHEMA).validate(data)
    assert data["score"] == 0
    assert "several .cu files" in data["output"] or "several .cu files" in json.dumps(data)


def test_grader_packages_beside_the_submission_are_never_imported(autograder_zip, tmp_path):
    """run_autograder runs in ROOT and the batch worker it starts loads the kernel: neither
    imports a `grader/` of the folder it runs in, and the kernel sees no secret."""
    marker = tmp_path / "marker"
    root = plant(tmp_path / "autograder", marker)
    plant(root / "submission", marker)
    data = run_autograder(autograder_zip, root, {"kernel.cu": SPY})
    assert imported(marker) == ""
    assert data["score"] == 7.0, json.dumps(data)[:3000]  # the hidden cases ran too
    assert "environment: PATH=" in json.dumps(data)  # the constructor ran, and saw that
    assert SECRET not in json.dumps(data)


def test_the_scripts_are_what_gradescope_runs(autograder_zip, tmp_path):
    with zipfile.ZipFile(autograder_zip) as archive:
        setup = archive.read("setup.sh").decode()
        run = archive.read("run_autograder").decode()
    assert setup.startswith("#!/usr/bin/env bash") and run.startswith("#!/usr/bin/env bash")
    assert "$ROOT/source/requirements.txt" in setup and "venv" in setup
    assert "--no-index --no-deps" in setup
    assert '"$PYTHON" -P -m grader.gradescope' in run  # never the folder it runs in
    if shutil.which("bash"):
        for name, text in (("setup.sh", setup), ("run_autograder", run)):
            (tmp_path / name).write_text(text)
            assert subprocess.run(["bash", "-n", str(tmp_path / name)]).returncode == 0


def test_a_source_over_the_limit_is_refused_from_its_size(autograder_zip, tmp_path):
    data = run_autograder(autograder_zip, tmp_path, {"kernel.cu": 8 << 30})
    jsonschema.Draft202012Validator(SCHEMA).validate(data)
    assert data["score"] == 0
    assert "a submission may be at most 262144 bytes" in data["tests"][0]["output"]


def test_a_zip_without_secret_tells_students_nothing_they_cannot_use(
    grader_wheel, tmp_path_factory, tmp_path
):
    zip_path = build_autograder(LAB, tmp_path_factory.mktemp("pub") / "a.zip", wheel=grader_wheel)
    baseline = (labs.get(LAB).home / "baseline.cu").read_text()
    data = run_autograder(zip_path, tmp_path, {"kernel.cu": baseline})
    text = json.dumps(data)
    for unasked in ("--no-timing", "--secret", "GRADER_SECRET", "secret"):
        assert unasked not in text, unasked
    assert "13 hidden cases, worth 4 points, were not run here" in data["output"]
    assert "Speed is scored only on a GPU" in data["output"]
    assert sum(Decimal(str(t.get("max_score", 0))) for t in data["tests"]) == 3
    assert data["score"] == 3.0


def test_a_course_lab_travels_in_the_zip_without_its_solutions(tmp_path, grader_wheel, monkeypatch):
    monkeypatch.setattr(labs, "_added", [])
    monkeypatch.delenv(labs.ENV, raising=False)
    root = tmp_path / "course"
    new_lab("course-histogram", "histogram", root, ["wrong"])  # which must not travel
    labs.add_roots([root])
    zip_path = build_autograder("course-histogram", tmp_path / "a.zip", wheel=grader_wheel)
    with zipfile.ZipFile(zip_path) as archive:
        names = archive.namelist()
    lab = "labs/reference_kernels/course-histogram"
    assert {f"{lab}/lab.py", f"{lab}/reference.cu"} <= set(names)
    assert not [n for n in names if "baseline" in n or "/wrong/" in n]
    labs._added.clear()  # the autograder finds the lab in its zip alone
    reference = (root / "reference_kernels" / "course-histogram" / "reference.cu").read_text()
    data = run_autograder(zip_path, tmp_path / "autograder", {"kernel.cu": reference})
    graded = [t for t in data["tests"] if t["name"] != "Why this speed"]  # worth no points
    assert all(t["status"] == "passed" for t in graded) and data["score"] == 3.0
