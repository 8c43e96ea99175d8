"""`grader init-ci`: the workflow parses as YAML, installs the grader, runs `grader check`
exactly as the README documents it, and reports the JUnit, the Markdown summary and
the points for GitHub Classroom."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from grader.ci import init_ci, workflow
from grader.ci.workflow import check_command
from grader.errors import UsageError

DOCS = Path(__file__).resolve().parents[2] / "README.md"


def steps(text: str) -> list[dict]:
    data = yaml.safe_load(text)
    return data["jobs"]["grade"]["steps"]


def step(text: str, name: str) -> dict:
    return next(s for s in steps(text) if s.get("name") == name)


def test_the_cpu_workflow_parses_and_runs_grader_check():
    text = workflow("matmul-naive")
    data = yaml.safe_load(text)
    job = data["jobs"]["grade"]
    assert job["name"] == "Autograding Tests"  # the check run GitHub Classroom reads
    assert job["runs-on"] == "ubuntu-latest"
    assert data["permissions"]["checks"] == "write"
    assert data["env"]["GRADER_PACKAGE"].startswith("cuda-lab-grader==")
    assert "pip install" in step(text, "Install the grader")["run"]
    grade = step(text, "Grade")["run"]
    command = check_command("matmul-naive", "kernel.cu", "cpu")
    assert command in grade
    assert "--junit grader-junit.xml --markdown grader-summary.md" in command
    assert "::stop-commands::" in grade  # the kernel's output cannot issue workflow commands
    summary = step(text, "Job summary")
    assert summary["if"] == "always()" and "GITHUB_STEP_SUMMARY" in summary["run"]
    upload = step(text, "Upload the JUnit report")
    assert upload["uses"].startswith("actions/upload-artifact@")
    assert upload["with"]["path"] == "grader-junit.xml"
    points = step(text, "Points")["run"]
    assert 'f"Points {score:g}/{top:g}"' in points
    assert "::notice title=Autograding complete::" in points


def test_the_points_step_is_python_that_compiles():
    script = step(workflow("conv2d"), "Points")["run"]
    body = script.split("<<'PY'\n", 1)[1].rsplit("PY", 1)[0]
    compile(body, "points", "exec")


def test_a_gpu_runner_label_runs_the_cuda_backend_there():
    text = workflow("matmul-tiled", gpu_runner="gpu-h100")
    data = yaml.safe_load(text)
    assert data["jobs"]["grade"]["runs-on"] == "gpu-h100"
    assert check_command("matmul-tiled", "kernel.cu", "cuda") in step(text, "Grade")["run"]
    assert "[gpu]" in data["env"]["GRADER_PACKAGE"]
    assert data["env"]["MAX_POINTS"] == "6"  # public cases and speed


def test_the_readme_documents_the_same_command():
    assert check_command("LAB", "kernel.cu", "cpu") in DOCS.read_text()


def test_hidden_cases_are_said_not_to_stay_secret():
    text = workflow("conv2d")
    assert "secret" in text and "would not stay secret" in text
    assert "--secret" not in text and "GRADER_SECRET" not in text


def test_init_ci_writes_once(tmp_path):
    out = init_ci("conv2d", out=tmp_path / ".github" / "workflows" / "grader.yml")
    assert yaml.safe_load(out.read_text())["name"] == "Autograding Tests"
    with pytest.raises(UsageError, match="already exists"):
        init_ci("conv2d", out=out)
    init_ci("conv2d", out=out, force=True)


@pytest.mark.parametrize("label", ["", "gpu runner", "a:b", "-x"])
def test_odd_runner_labels_are_refused(label):
    with pytest.raises(UsageError, match="runner label"):
        workflow("conv2d", gpu_runner=label)
