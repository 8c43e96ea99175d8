"""`grader init-ci`: a GitHub Actions workflow for a student's repository (GitHub
Classroom), which runs `grader check` on every push and reports to the run's page and to
Classroom. With a GPU runner label it runs there on the cuda backend; otherwise on a
GitHub-hosted Ubuntu runner with the CPU backend.

Only public cases run: a student's repository can read whatever its workflow can, so the
course's secret cannot be given to it. The staff grade hidden cases with `grader batch`."""

from __future__ import annotations

import json
import re
import shlex
from functools import cache
from pathlib import Path

import jinja2

import grader
from grader import labs
from grader.batch.discover import TEMPLATE_FILE
from grader.errors import UsageError

TEMPLATES = Path(__file__).parent / "templates"
DEFAULT_OUT = Path(".github/workflows/grader.yml")
HOSTED_RUNNER = "ubuntu-latest"
DISTRIBUTION = "cuda-lab-grader"
JUNIT, MARKDOWN, REPORT = "grader-junit.xml", "grader-summary.md", "grader-report.json"
_LABEL = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")


def check_command(lab: str, submission: str, backend: str) -> str:
    """The `grader check` line the workflow runs (and the README documents)."""
    argv = [
        "grader",
        "check",
        lab,
        submission,
        "--backend",
        backend,
        "--junit",
        JUNIT,
        "--markdown",
        MARKDOWN,
        "--json",
        REPORT,
    ]
    return shlex.join(argv)


@cache
def _environment() -> jinja2.Environment:
    # [[ ]] instead of {{ }}, which GitHub expressions use themselves
    return jinja2.Environment(
        loader=jinja2.FileSystemLoader(TEMPLATES),
        variable_start_string="[[",
        variable_end_string="]]",
        keep_trailing_newline=True,
        undefined=jinja2.StrictUndefined,
        autoescape=False,
    )


def workflow(lab: str, gpu_runner: str | None = None, submission: str = TEMPLATE_FILE) -> str:
    """The workflow's YAML text."""
    spec = labs.get(lab)
    if gpu_runner is not None and not _LABEL.fullmatch(gpu_runner):
        raise UsageError(f"{gpu_runner!r} is not a runner label (letters, digits, . _ -).")
    backend = "cuda" if gpu_runner else "cpu"
    extra = "[gpu]" if gpu_runner else ""
    max_points = spec.scoring.public + (spec.scoring.performance if gpu_runner else 0.0)
    return (
        _environment()
        .get_template("grader.yml.j2")
        .render(
            lab=spec.name,
            version=grader.__version__,
            package=f"{DISTRIBUTION}{extra}=={grader.__version__}",
            submission=submission,
            max_points=f"{max_points:g}",
            runs_on=json.dumps(gpu_runner) if gpu_runner else HOSTED_RUNNER,
            check=check_command(spec.name, submission, backend),
        )
    )


def init_ci(
    lab: str,
    gpu_runner: str | None = None,
    out: Path = DEFAULT_OUT,
    force: bool = False,
) -> Path:
    """Write the workflow to `out`; refuses to overwrite an existing file without `force`."""
    text = workflow(lab, gpu_runner)
    out = Path(out)
    if out.exists() and not force:
        raise UsageError(f"{out} already exists; add --force to overwrite it.")
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(text, encoding="utf-8")
    return out
