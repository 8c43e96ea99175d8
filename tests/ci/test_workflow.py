"""`grader init-ci`: the workflow parses as YAML, installs the grader, runs `grader check`
exactly as docs/ta.md documents it, and reports the JUnit, the Markdown summary and
the points for GitHub Classroom."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from grader.ci import init_ci, workflow
from grader.ci.workflow import check_command, grader_requirement
from grader.errors import UsageError

DOCS = Path(__file__).resolve().parents[2] / "docs" / "ta.md"
WHEEL = "./.github/grader/cuda_lab_grader-0.1.0-py3-none-any.whl"
COMMIT = "0123456789abcdef0123456789abcdef01234567"
HASHED_URL = f"https://example.edu/g-1.0-py3-none-any.whl#sha256={'0' * 64}"


def steps(text: str) -> list[dict]:
    data = yaml.safe_load(text)
    return data["jobs"]["grade"]["steps"]


def step(text: str, name: str) -> dict:
    return next(s for s in steps(text) if s.get("name") == name)


def test_the_cpu_workflow_parses_and_runs_grader_check():
    text = workflow("matmul-naive", WHEEL)
    data = yaml.safe_load(text)
    job = data["jobs"]["grade"]
    assert job["name"] == "Autograding Tests"  # the check run GitHub Classroom reads
    assert job["runs-on"] == "ubuntu-latest"
    assert job["permissions"]["checks"] == "write"
    assert data["env"]["GRADER_PACKAGE"] == WHEEL
    assert "python -I -m pip install" in step(text, "Install the grader")["run"]
    grade = step(text, "Grade")["run"]
    command = check_command("matmul-naive", "kernel.cu", "cpu")
    assert command in grade
    assert (
        '--junit "$REPORT_DIR/grader-junit.xml" --markdown "$REPORT_DIR/grader-summary.md"'
        in command
    )
    # a fresh folder outside the checkout, for every later step too
    assert 'REPORT_DIR="$(mktemp -d "$RUNNER_TEMP/grader-' in grade
    assert 'echo "REPORT_DIR=$REPORT_DIR" >> "$GITHUB_ENV"' in grade
    assert "::stop-commands::" in grade  # the kernel's output cannot issue workflow commands
    summary = step(text, "Job summary")
    assert summary["if"] == "always()" and "GITHUB_STEP_SUMMARY" in summary["run"]
    assert '"$REPORT_DIR/grader-summary.md"' in summary["run"]
    upload = step(text, "Upload the JUnit report")
    assert upload["uses"].startswith("actions/upload-artifact@")
    assert upload["with"]["path"] == "${{ env.REPORT_DIR }}/grader-junit.xml"
    points = step(text, "Points")["run"]
    assert points.startswith("python -I - <<'PY'")  # nothing in the checkout is imported
    assert 'os.path.join(folder, "grader-report.json")' in points
    assert 'f"Points {score:g}/{top:g}"' in points
    assert "::notice title=Autograding complete::" in points
    report = step(text, "Report the points to GitHub Classroom")["run"]
    assert '--input "$RUNNER_TEMP/grader-points.json"' in report


def test_the_points_step_is_python_that_compiles():
    script = step(workflow("conv2d", WHEEL), "Points")["run"]
    body = script.split("<<'PY'\n", 1)[1].rsplit("PY", 1)[0]
    compile(body, "points", "exec")


def test_a_gpu_runner_label_runs_the_cuda_backend_there():
    text = workflow("matmul-tiled", f"{WHEEL}[gpu]", gpu_runner="gpu-h100")
    data = yaml.safe_load(text)
    assert data["jobs"]["grade"]["runs-on"] == "gpu-h100"
    assert check_command("matmul-tiled", "kernel.cu", "cuda") in step(text, "Grade")["run"]
    assert data["env"]["MAX_POINTS"] == "6"  # public cases and speed


@pytest.mark.parametrize("gpu_runner", [None, "gpu-h100"])
def test_classrooms_bot_commit_is_not_graded_and_its_dispatch_is(gpu_runner):
    """GitHub Classroom's own workflow's conventions: its bot's first commit is the
    untouched template, which would fail every student before they start."""
    data = yaml.safe_load(workflow("matmul-tiled", WHEEL, gpu_runner=gpu_runner))
    triggers = data[True]  # YAML 1.1 reads the key `on` as true
    assert set(triggers) == {"push", "workflow_dispatch", "repository_dispatch"}
    assert data["jobs"]["grade"]["if"] == "github.actor != 'github-classroom[bot]'"


def test_the_readme_documents_the_same_command():
    assert check_command("LAB", "kernel.cu", "cpu") in DOCS.read_text()


def test_hidden_cases_are_said_not_to_stay_secret():
    text = workflow("conv2d", WHEEL)
    assert "secret" in text and "would not stay secret" in text
    assert "--secret" not in text and "GRADER_SECRET" not in text


def test_init_ci_writes_once_and_commits_a_wheel_of_this_grader(tmp_path):
    out = tmp_path / ".github" / "workflows" / "grader.yml"
    written = init_ci("conv2d", out=out)
    wheel = tmp_path / WHEEL
    assert written == [out, wheel] and wheel.is_file()
    data = yaml.safe_load(out.read_text())
    assert data["name"] == "Autograding Tests"
    assert data["env"]["GRADER_PACKAGE"] == f"{WHEEL}[nvcc]"
    with pytest.raises(UsageError, match="already exists"):
        init_ci("conv2d", out=out)
    source = f"git+https://github.com/course/grader@{COMMIT}"
    assert init_ci("conv2d", out=out, force=True, grader_source=source) == [out]
    assert yaml.safe_load(out.read_text())["env"]["GRADER_PACKAGE"] == (
        f"cuda-lab-grader[nvcc] @ {source}"
    )


def test_the_workflow_must_go_where_github_runs_workflows(tmp_path):
    with pytest.raises(UsageError, match=r"\.github/workflows/"):
        init_ci("conv2d", out=tmp_path / "grader.yml")
    assert not list(tmp_path.iterdir())


@pytest.mark.parametrize(
    ("options", "why"),
    [
        ({"gpu_runner": "gpu runner"}, "runner label"),
        ({"gpu_runner": "gpu-h100"}, "state it with --runner-is-ephemeral"),  # issue 34
        ({"grader_source": "cuda-lab-grader"}, "bare package name"),
    ],
)
def test_a_refused_option_writes_nothing(tmp_path, options, why):
    with pytest.raises(UsageError, match=why):
        init_ci("conv2d", out=tmp_path / ".github" / "workflows" / "grader.yml", **options)
    assert not list(tmp_path.iterdir())


@pytest.mark.parametrize(
    ("source", "gpu", "expected"),
    [
        (f"git+https://github.com/c/g@{COMMIT}", False, f"cuda-lab-grader[nvcc] @ git+https://github.com/c/g@{COMMIT}"),
        (f"git+https://github.com/c/g@{COMMIT}", True, f"cuda-lab-grader[gpu] @ git+https://github.com/c/g@{COMMIT}"),
        (HASHED_URL, False, f"cuda-lab-grader[nvcc] @ {HASHED_URL}"),
        ("./vendor/g-1.0-py3-none-any.whl", False, "./vendor/g-1.0-py3-none-any.whl[nvcc]"),
        (f"mygrader[gpu,x] @ git+ssh://git@host/g@{COMMIT}", False, f"mygrader[gpu,x] @ git+ssh://git@host/g@{COMMIT}"),
        (f"mygrader @ git+ssh://git@host/g@{COMMIT}", True, f"mygrader[gpu] @ git+ssh://git@host/g@{COMMIT}"),
        ("./vendor/g-1.0-py3-none-any.whl", True, "./vendor/g-1.0-py3-none-any.whl[gpu]"),
    ],
)  # fmt: skip
def test_grader_sources_that_name_one_build(source, gpu, expected):
    assert grader_requirement(source, gpu) == expected


@pytest.mark.parametrize(
    ("source", "why"),
    [
        ("cuda-lab-grader", "bare package name"),
        ("cuda-lab-grader==0.1.0", "bare package name"),
        ("cuda-lab-grader>=0.1", "bare package name"),
        ("git+https://github.com/c/g", "does not name a commit"),
        ("git+https://github.com/c/g@main", "does not name a commit"),
        ("git+https://github.com/c/g@v1.0", "does not name a commit"),
        ("http://example.edu/g-1.0-py3-none-any.whl", "https URL"),
        ("https://example.edu/simple/", "https URL"),
    ],
)
def test_grader_sources_that_an_index_or_a_branch_could_change_are_refused(source, why):
    with pytest.raises(UsageError, match=why):
        grader_requirement(source)


@pytest.mark.parametrize("label", ["", "gpu runner", "a:b", "-x"])
def test_odd_runner_labels_are_refused(label):
    with pytest.raises(UsageError, match="runner label"):
        workflow("conv2d", WHEEL, gpu_runner=label)
