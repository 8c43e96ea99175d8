"""The grader as users install it: a wheel carries the package, its runtime files and the
labs; installed in a fresh venv outside the checkout it lists, copies and grades; the
workflow that `grader init-ci` writes installs the wheel it committed and prints Points."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import zipfile
from pathlib import Path

import pytest
import yaml
from packaging_kit import CHECKOUT, run_in, site_packages

from grader import labs, paths
from grader.ci import workflow as ci_workflow
from grader.toolchain import nvcc
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
        ["python", "-c", f"from grader import labs; print(labs.get({LAB!r}).home)"],
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


def test_the_installed_wheel_builds_the_generator_for_the_host(installed_grader, tmp_path):
    """generator.h and generator.cpp travel in the wheel, and build where it is installed
    (the timing's checks draw whole buffers with them on a GPU machine)."""
    code = (
        "from grader.backends import generator, timing; "
        "w = generator.words((1, 2), 9, timing.generator_macros()); "
        "assert w is not None and (w == timing._hashed_stream((1, 2), 9)).all(); print('built')"
    )
    built = run_in(installed_grader, ["python", "-c", code], cwd=tmp_path, timeout=300)
    assert built.returncode == 0 and "built" in built.stdout, built.stderr


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


def _upload_artifact(step: dict, env_vars: dict[str, str], artifacts: Path) -> None:
    """A stand-in for actions/upload-artifact: the file `with.path` names, after GitHub's
    `${{ env.X }}` expressions, copied to artifacts/NAME (nothing when it is missing, as
    `if-no-files-found: warn` does)."""
    path = re.sub(r"\$\{\{ env\.(\w+) \}\}", lambda m: env_vars.get(m[1], ""), step["with"]["path"])
    if Path(path).is_file():
        (artifacts / step["with"]["name"]).write_bytes(Path(path).read_bytes())


def _run_steps(workflow: dict, repo: Path, runner: Path) -> dict[str, subprocess.CompletedProcess]:
    """Each `run:` step of the job as GitHub would run it (bash -e, in the checkout, with the
    workflow's env, RUNNER_TEMP, and what earlier steps wrote to GITHUB_ENV); of the
    actions, checkout and setup-python are what the test already made (the repository and
    the runner's venv) and upload-artifact copies into ../artifacts; the GitHub API call
    is skipped. A failed step skips the next ones unless they run `if: always()`."""
    env_vars = {k: str(v) for k, v in workflow["env"].items()}
    env_vars["GITHUB_STEP_SUMMARY"] = str(repo.parent / "step-summary.md")
    env_vars["RUNNER_TEMP"] = str(repo.parent / "runner-temp")
    github_env = repo.parent / "github-env"
    env_vars["GITHUB_ENV"] = str(github_env)
    Path(env_vars["RUNNER_TEMP"]).mkdir(exist_ok=True)
    artifacts = repo.parent / "artifacts"
    artifacts.mkdir(exist_ok=True)
    done: dict[str, subprocess.CompletedProcess] = {}
    failed = False
    for step in workflow["jobs"]["grade"]["steps"]:
        script = step.get("run")
        if failed and step.get("if") != "always()":
            continue
        if step.get("uses", "").startswith("actions/upload-artifact@"):
            _upload_artifact(step, env_vars, artifacts)
        if script is None or "gh api" in script:
            continue
        path = repo.parent / "step.sh"
        path.write_text(script)
        github_env.write_text("")
        argv = ["bash", "-e", str(path)]
        result = run_in(runner, argv, cwd=repo, env_extra=env_vars, timeout=600)
        env_vars.update(line.split("=", 1) for line in github_env.read_text().splitlines())
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
    assert workflow["env"]["GRADER_PACKAGE"] == f"./.github/grader/{wheels[0].name}[nvcc]"
    if nvcc._from_wheels() is None:  # the runner installs them from PyPI; here is no index
        workflow["env"]["GRADER_PACKAGE"] = f"./.github/grader/{wheels[0].name}"
    shutil.copyfile(labs.get(LAB).home / "reference.cu", repo / "kernel.cu")
    runner = venv_factory("runner")  # stands in for setup-python's fresh Python
    steps = _run_steps(workflow, repo, runner)
    install = steps["Install the grader"]
    assert install.returncode == 0, install.stdout + install.stderr
    assert "Successfully installed cuda-lab-grader-0.1.0" in install.stdout
    assert steps["Grade"].returncode == 0, steps["Grade"].stdout + steps["Grade"].stderr
    assert "Points 3/3" in steps["Points"].stdout
    assert f"## {LAB}: 3/3" in (tmp_path / "step-summary.md").read_text()
    junit = (tmp_path / "artifacts" / "grader-junit").read_text()  # the uploaded report
    assert "<testsuite" in junit and 'failures="0"' in junit
    which = run_in(runner, ["python", "-c", "import grader; print(grader.__file__)"], cwd=repo)
    assert Path(which.stdout.strip()).is_relative_to(site_packages(runner))


FORGED_REPORT = {"lab": LAB, "score": 10, "max_score": 10, "status": "passed", "cases": []}
# Modules a student commits so that the workflow's own Python would run them: the stop
# token known in advance, the points printed by a json that never reads the report.
PLANTED = {
    "secrets.py": "def token_hex(n):\n    return 'f' * 32\n",
    "json.py": "print('Points 10/10')\nraise SystemExit(0)\n",
    "pip/__init__.py": "",
    "pip/__main__.py": "print('forged pip')\n",
}


def _forged_repository(repo: Path, ta_file: Path) -> None:
    """A student repository that commits its own 10/10 report, summary and points, makes
    grader-junit.xml a link to a file of the TA's, and plants modules for python to find."""
    (repo / "grader-report.json").write_text(json.dumps(FORGED_REPORT))
    (repo / "grader-summary.md").write_text(f"## {LAB}: 10/10 (forged)\n")
    (repo / "grader-points.json").write_text('{"output": {"summary": "Points 10/10"}}')
    ta_file.write_text("the TA's own file\n")
    (repo / "grader-junit.xml").symlink_to(ta_file)
    for name, text in PLANTED.items():
        (repo / name).parent.mkdir(exist_ok=True)
        (repo / name).write_text(text)


@pytest.mark.parametrize(
    ("kernel", "package", "why"),
    [
        ("template", None, None),  # graded: its own 0 points
        (None, None, "No points: the grader wrote no report in this run"),  # check exits 2
        ("template", "./missing.whl", "No points: the Grade step did not run"),
    ],
)
def test_the_workflow_counts_only_the_report_this_run_wrote(
    installed_grader, grader_wheel, tmp_path, kernel, package, why
):
    repo = tmp_path / "repo"
    repo.mkdir()
    ta_file = tmp_path / "ta-file.txt"
    _forged_repository(repo, ta_file)
    if kernel:
        shutil.copyfile(labs.get(LAB).template_home / "kernel.cu", repo / "kernel.cu")
    stale = tmp_path / "runner-temp" / "grader-0123456789abcdef"  # an earlier run's folder
    stale.mkdir(parents=True)
    (stale / "grader-report.json").write_text(json.dumps(FORGED_REPORT))
    workflow = yaml.safe_load(ci_workflow(LAB, package or str(grader_wheel)))
    steps = _run_steps(workflow, repo, installed_grader)
    points = steps["Points"]
    assert points.returncode == 0, points.stderr
    assert "Points 0/3" in points.stdout and "10/10" not in points.stdout, points.stdout
    if why:
        assert why in points.stdout
    else:
        assert "No points" not in points.stdout
        assert f"## {LAB}: 0/3" in (tmp_path / "step-summary.md").read_text()
    assert "forged" not in (tmp_path / "step-summary.md").read_text()
    assert ta_file.read_text() == "the TA's own file\n"
    uploaded = tmp_path / "artifacts" / "grader-junit"  # never the repository's link
    assert not uploaded.exists() or "the TA's own file" not in uploaded.read_text()
    assert uploaded.exists() == bool(kernel and not package)
    sent = json.loads((tmp_path / "runner-temp" / "grader-points.json").read_text())
    assert sent["output"]["summary"].startswith("Points 0/3")
    if "Grade" in steps:  # the stop token is the workflow's, not the planted module's
        assert "::stop-commands::" in steps["Grade"].stdout
        assert "::stop-commands::" + "f" * 32 not in steps["Grade"].stdout


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
