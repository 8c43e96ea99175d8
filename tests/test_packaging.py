"""The grader as users install it: a wheel carries the package, its runtime files and the
labs; installed in a fresh venv outside the checkout it lists, copies and grades; the
workflow that `grader init-ci` writes installs the wheel it committed and prints Points."""

from __future__ import annotations

import json
import shutil
import subprocess
import zipfile
from pathlib import Path

import yaml
from packaging_kit import CHECKOUT, run_in, site_packages

from grader import paths
from grader.wheel import build_running_wheel, requirements

LAB = "matmul-naive"


def _tracked(folder: str) -> list[str]:
    """The checkout's files under `folder`, as git tracks them (else as they lie)."""
    if shutil.which("git") and (CHECKOUT / ".git").exists():
        done = subprocess.run(
            ["git", "ls-files", "--", folder], cwd=CHECKOUT, capture_output=True, text=True
        )
        if done.returncode == 0 and done.stdout.strip():
            return done.stdout.split()
    root = CHECKOUT / folder
    return [
        p.relative_to(CHECKOUT).as_posix()
        for p in root.rglob("*")
        if p.is_file() and "__pycache__" not in p.parts
    ]


def test_the_wheel_carries_every_package_file_and_the_labs(grader_wheel):
    with zipfile.ZipFile(grader_wheel) as archive:
        names = set(archive.namelist())
    expected = set(_tracked("grader"))
    for folder in paths.LAB_FOLDERS:
        expected |= {f"grader/lab_root/{name}" for name in _tracked(folder)}
    assert expected - names == set()
    runtime = {n for n in names if n.startswith("grader/backends/cpu/runtime/")}
    assert {n.rsplit(".", 1)[-1] for n in runtime} >= {"S", "cpp", "h"}
    assert not any("__pycache__" in n or n.endswith(".pyc") for n in names)
    assert set(requirements(grader_wheel)) >= {"numpy>=1.24", "jinja2>=3.1"}
    assert any(r.startswith("pycuda") for r in requirements(grader_wheel, "gpu"))


def test_the_installed_wheel_lists_copies_and_grades_a_template(installed_grader, tmp_path):
    labs = run_in(installed_grader, ["grader", "labs"], cwd=tmp_path)
    assert labs.returncode == 0 and "matmul-tiled" in labs.stdout, labs.stderr
    where = run_in(
        installed_grader,
        ["python", "-c", f"from grader import paths; print(paths.reference_dir({LAB!r}))"],
        cwd=tmp_path,
    )
    reference = Path(where.stdout.strip())
    assert reference.is_relative_to(site_packages(installed_grader)), where.stderr
    copied = run_in(installed_grader, ["grader", "template", LAB, "work"], cwd=tmp_path)
    assert copied.returncode == 0, copied.stderr
    assert (tmp_path / "work" / "kernel.cu").is_file()
    check = ["grader", "check", LAB, "work/kernel.cu", "--backend", "cpu", "--json", "r.json"]
    template = run_in(installed_grader, check, cwd=tmp_path, timeout=600)
    assert template.returncode == 1, template.stdout + template.stderr  # TODOs fail, graded
    assert "Score 0/3" in template.stdout
    assert json.loads((tmp_path / "r.json").read_text())["status"] in ("failed", "error")
    solved = [*check[:3], str(reference / "reference.cu"), *check[4:6]]
    assert run_in(installed_grader, solved, cwd=tmp_path, timeout=600).returncode == 0


def test_an_installed_grader_makes_a_wheel_of_itself(installed_grader, tmp_path):
    made = run_in(
        installed_grader,
        ["python", "-c", "import sys; from grader.wheel import build_running_wheel as b; "
         "print(b(__import__('pathlib').Path(sys.argv[1])))", str(tmp_path)],
        cwd=tmp_path,
    )  # fmt: skip
    assert made.returncode == 0, made.stderr
    again = Path(made.stdout.strip())
    with zipfile.ZipFile(again) as archive:
        names = set(archive.namelist())
        assert archive.testzip() is None
        record = archive.read("cuda_lab_grader-0.1.0.dist-info/RECORD").decode()
    assert "grader/lab_root/student_template/matmul-tiled/kernel.cu" in names
    assert "grader/backends/cpu/runtime/fiber_x86_64.S" in names
    assert "cuda_lab_grader-0.1.0.dist-info/entry_points.txt" in names
    assert all(line.split(",")[0] in names for line in record.splitlines())
    # the same files, metadata and all, as the wheel it was installed from
    assert requirements(again) == requirements(build_running_wheel(tmp_path / "src"))


def _run_steps(workflow: dict, repo: Path, runner: Path) -> dict[str, subprocess.CompletedProcess]:
    """Each `run:` step of the job as GitHub would run it (bash -e, in the checkout, with the
    workflow's env), skipping `uses:` actions and the GitHub API call; a failed step skips
    the next ones unless they run `if: always()`."""
    env_vars = {k: str(v) for k, v in workflow["env"].items()}
    summary = repo.parent / "step-summary.md"
    env_vars["GITHUB_STEP_SUMMARY"] = str(summary)
    done: dict[str, subprocess.CompletedProcess] = {}
    failed = False
    for step in workflow["jobs"]["grade"]["steps"]:
        script = step.get("run")
        if script is None or "gh api" in script:
            continue
        if failed and step.get("if") != "always()":
            continue
        path = repo.parent / "step.sh"
        path.write_text(script)
        argv = ["bash", "-e", str(path)]
        result = run_in(runner, argv, cwd=repo, env_extra=env_vars, timeout=600)
        done[step["name"]] = result
        failed = failed or result.returncode != 0
    return done


def test_the_init_ci_workflow_installs_its_wheel_and_prints_points(
    installed_grader, venv_factory, tmp_path
):
    repo = tmp_path / "repo"
    repo.mkdir()
    wrote = run_in(installed_grader, ["grader", "init-ci", LAB], cwd=repo)
    assert wrote.returncode == 0, wrote.stderr
    wheels = list((repo / ".github" / "grader").glob("*.whl"))
    assert len(wheels) == 1
    workflow = yaml.safe_load((repo / ".github" / "workflows" / "grader.yml").read_text())
    assert workflow["env"]["GRADER_PACKAGE"] == f"./.github/grader/{wheels[0].name}"
    shutil.copyfile(paths.reference_dir(LAB) / "reference.cu", repo / "kernel.cu")
    runner = venv_factory("runner")  # stands in for setup-python's fresh Python
    steps = _run_steps(workflow, repo, runner)
    install = steps["Install the grader"]
    assert install.returncode == 0, install.stdout + install.stderr
    assert "Successfully installed cuda-lab-grader-0.1.0" in install.stdout
    assert steps["Grade"].returncode == 0, steps["Grade"].stdout + steps["Grade"].stderr
    assert "Points 3/3" in steps["Points"].stdout
    assert f"## {LAB}: 3/3" in (tmp_path / "step-summary.md").read_text()
    which = run_in(runner, ["python", "-c", "import grader; print(grader.__file__)"], cwd=repo)
    assert Path(which.stdout.strip()).is_relative_to(site_packages(runner))


def test_the_quick_start_makes_a_venv_first_and_says_what_macos_and_windows_use():
    readme = (CHECKOUT / "README.md").read_text()
    quick = readme.split("## Quick start", 1)[1].split("\n## ", 1)[0]
    commands = [line.strip() for line in quick.splitlines() if line.startswith("    ")]
    assert commands[0].startswith("python3 -m venv .venv && . .venv/bin/activate && pip install")
    assert "python3-venv" in quick and "PEP 668" in quick
    assert "**On Windows**" in quick and "WSL 2" in quick
    assert "**On macOS**" in quick and "Linux virtual machine or container" in quick
    ci = (CHECKOUT / ".ci" / "run").read_text()
    assert "python3 -m venv .venv" in ci and "pip install -q -e '.[dev]'" in ci
