"""`grader init-ci`: a GitHub Actions workflow for a student's repository (GitHub
Classroom), which runs `grader check` on every push and reports to the run's page and to
Classroom. It keeps Classroom's own conventions: the `repository_dispatch` trigger, and no
run for the commits of `github-classroom[bot]`, whose first is the untouched template.
With a GPU runner label it runs there on the cuda backend; otherwise on a GitHub-hosted
Ubuntu runner with the CPU backend.

The workflow installs a grader that exists and that the course chose, pinned to one
build: the pip requirement given as --grader-source (a git URL pinned to a commit, a
wheel's URL with its sha256, or a wheel's path), else the place the running grader was
installed from where it is such a pin, else (or with --vendor-wheel) a wheel of the
running grader, written into the repository beside the workflow. It never installs a bare
package name, which whoever registers it on an index would control.

It is hardened as GitHub advises: actions pinned by commit, no token left in the checkout,
permissions only for the job and only what it uses, a pip cache, and a concurrency group
that cancels the run of a superseded push. actionlint checks it in the grader's tests.

It fails closed: the student controls every file of the checkout, so the reports go to a
fresh folder the run makes outside it (REPORT_DIR, `mktemp -d` in $RUNNER_TEMP), and the
points come only from the report found there; without one they are 0, with the reason.
Its own Python runs isolated (`python -I`), never importing a module the repository holds.

Only public cases run: a student's repository can read whatever its workflow can, so the
course's secret cannot be given to it. The staff grade hidden cases with `grader batch`.

On a self-hosted GPU runner each student can run any command, since each can edit the
workflow: init_ci writes such a workflow only where the course states that the runner is
ephemeral and isolated, a fresh container per job with the GPU and nothing else, as the
recipe in docs/gpu-runner/ builds (GitHub's advice for runners that run untrusted code)."""

from __future__ import annotations

import json
import re
import shlex
from functools import cache
from pathlib import Path

import jinja2

import grader
from grader import labs
from grader.course.discover import TEMPLATE_FILE
from grader.errors import UsageError
from grader.files import refuse_unsafe, write_atomically
from grader.labroot import export, portable
from grader.wheel import DISTRIBUTION, build_running_wheel, installed_from

JINJA = Path(__file__).parent / "jinja"
WORKFLOWS = Path(".github/workflows")  # the only folder GitHub runs workflows from
DEFAULT_OUT = WORKFLOWS / "grader.yml"
WHEEL_DIR = Path(".github/grader")  # where the grader's wheel goes, from the repository root
LAB_ROOT = WHEEL_DIR / "labs"  # a course's own lab, as a lab root the workflow passes
HOSTED_RUNNER = "ubuntu-latest"
RUNNER_RECIPE = "docs/gpu-runner/README.md"  # in the grader's repository
JUNIT, MARKDOWN, REPORT = "grader-junit.xml", "grader-summary.md", "grader-report.json"
OUTPUTS = (("--junit", JUNIT), ("--markdown", MARKDOWN), ("--json", REPORT))
_LABEL = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")
_DIRECT = re.compile(
    r"(?P<name>[A-Za-z0-9][A-Za-z0-9._-]*)(?P<extras>\[[^\]]*\])?\s*@\s*(?P<url>\S+)"
)
_PINNED_GIT = re.compile(
    r"git\+[a-z]+://[^@\s]+(?:@[^@\s]+)?@[0-9a-f]{40}(?:[0-9a-f]{24})?(?:#\S*)?"
)
_HASHED = re.compile(r"#(?:.*&)?sha256=[0-9a-f]{64}(?:&|$)")
_SOURCE_HELP = (
    "a git URL pinned to a commit (git+https://github.com/COURSE/grader@<40-digit commit>), "
    "a wheel's URL with its hash (https://.../cuda_lab_grader-...whl#sha256=<64 hex "
    "digits>), or a wheel's path in the repository"
)


def check_command(lab: str, submission: str, backend: str, lab_root: str | None = None) -> str:
    """The `grader check` line the workflow runs (and docs/ta.md documents), writing its
    reports into the Grade step's fresh folder $REPORT_DIR; `lab_root` is the
    repository's copy of a course's own lab root."""
    # --no-config: a grader.toml the student commits changes nothing here
    argv = ["grader", "check", lab, submission, "--backend", backend, "--no-config"]
    argv += ["--labs", lab_root] if lab_root else []
    outputs = [f'{option} "$REPORT_DIR/{name}"' for option, name in OUTPUTS]
    return " ".join([shlex.join(argv), *outputs])


@cache
def _environment() -> jinja2.Environment:
    # [[ ]] instead of {{ }}, which GitHub expressions use themselves
    return jinja2.Environment(
        loader=jinja2.FileSystemLoader(JINJA),
        variable_start_string="[[",
        variable_end_string="]]",
        keep_trailing_newline=True,
        undefined=jinja2.StrictUndefined,
        autoescape=False,
    )


def grader_requirement(source: str, gpu: bool = False) -> str:
    """The pip requirement that installs the grader from `source`, with PyCUDA when `gpu`,
    else with NVIDIA's nvcc (a hosted runner has no CUDA toolkit, and without nvcc g++
    alone would judge the file). Refuses what is not pinned to one build: a bare name, a
    version range, a git branch."""
    source = source.strip()
    direct = _DIRECT.fullmatch(source)
    url = direct.group("url") if direct else source
    if url.startswith("git+"):
        if not _PINNED_GIT.fullmatch(url):
            raise UsageError(
                f"--grader-source {source!r} does not name a commit: a branch or tag can "
                f"move under the students. Give {_SOURCE_HELP}."
            )
    elif "://" in url:
        scheme = url.split("://", 1)[0]
        if scheme not in ("https", "file") or not url.split("#")[0].split("?")[0].endswith(".whl"):
            raise UsageError(
                f"--grader-source {source!r} is not a wheel's https URL. Give {_SOURCE_HELP}."
            )
        if not _HASHED.search(url):
            raise UsageError(
                f"--grader-source {source!r} has no hash: a file at a URL can be replaced. "
                "Add the wheel's #sha256=<64 hex digits> (sha256sum prints it), which pip "
                "checks."
            )
    elif not url.endswith(".whl"):
        raise UsageError(
            f"--grader-source {source!r} is not a place: a bare package name or version could "
            f"install whatever a package index holds under it. Give {_SOURCE_HELP}."
        )
    extra = "[gpu]" if gpu else "[nvcc]"
    if direct:
        return f"{direct.group('name')}{direct.group('extras') or extra} @ {url}"
    return f"{DISTRIBUTION}{extra} @ {url}" if "://" in url else f"{url}{extra}"


def pinned_source(direct: dict | None) -> str | None:
    """The pip requirement that installs again what PEP 610's `direct` describes, where a
    runner can reach it and it names one build: a git commit over https, or an https wheel
    with its sha256. None otherwise (a local file, a checkout, an index)."""
    direct = direct or {}
    url, vcs = direct.get("url", ""), direct.get("vcs_info") or {}
    if not url.startswith("https://"):
        return None
    if vcs.get("vcs") == "git" and re.fullmatch(r"[0-9a-f]{40}", vcs.get("commit_id", "")):
        sub = f"#subdirectory={direct['subdirectory']}" if direct.get("subdirectory") else ""
        return f"{DISTRIBUTION} @ git+{url}@{vcs['commit_id']}{sub}"
    archive = direct.get("archive_info") or {}
    digest = (
        archive.get("hashes", {}).get("sha256") or archive.get("hash", "").partition("sha256=")[2]
    )
    if url.endswith(".whl") and re.fullmatch(r"[0-9a-f]{64}", digest or ""):
        return f"{DISTRIBUTION} @ {url}#sha256={digest}"
    return None


def _check_runner(gpu_runner: str | None) -> None:
    if gpu_runner is not None and not _LABEL.fullmatch(gpu_runner):
        raise UsageError(f"{gpu_runner!r} is not a runner label (letters, digits, . _ -).")


def _check_isolated(gpu_runner: str | None, runner_is_ephemeral: bool) -> None:
    if gpu_runner is not None and not runner_is_ephemeral:
        raise UsageError(
            f"--gpu-runner {gpu_runner} puts every student's repository on that runner, and "
            "each student can edit the workflow, so each can run any command there: leave "
            "processes behind, read other jobs' folders, print any points. Use a runner that "
            "runs one job in a fresh container with the GPU and nothing else (the recipe: "
            f"{RUNNER_RECIPE} in the grader's repository), and state it with "
            "--runner-is-ephemeral."
        )


def workflow(
    lab: str,
    package: str,
    gpu_runner: str | None = None,
    submission: str = TEMPLATE_FILE,
    lab_root: str | None = None,
    workflow_path: str = DEFAULT_OUT.as_posix(),
) -> str:
    """The workflow's YAML text; it installs the grader with `pip install PACKAGE`, and
    lies at `workflow_path` in the repository (the key of its pip cache)."""
    spec = labs.get(lab)
    _check_runner(gpu_runner)
    backend = "cuda" if gpu_runner else "cpu"
    max_points = spec.scoring.public + (spec.scoring.performance if gpu_runner else 0.0)
    return (
        _environment()
        .get_template("grader.yml.j2")
        .render(
            lab=spec.name,
            version=grader.__version__,
            package=json.dumps(package),
            submission=submission,
            max_points=f"{max_points:g}",
            runs_on=json.dumps(gpu_runner) if gpu_runner else HOSTED_RUNNER,
            check=check_command(spec.name, submission, backend, lab_root),
            junit=JUNIT,
            summary=MARKDOWN,
            report=REPORT,
            workflow_path=workflow_path,
        )
    )


def repository_of(out: Path) -> Path:
    """The repository a workflow file at `out` belongs to; GitHub runs only the workflows
    in a repository's .github/workflows/."""
    out = Path(out)
    if out.parent.parts[-2:] != WORKFLOWS.parts:
        raise UsageError(
            f"GitHub runs workflows only from a repository's {WORKFLOWS}/ folder; give --out "
            f"REPOSITORY/{WORKFLOWS}/NAME.yml, not {out}."
        )
    return out.parent.parent.parent


def init_ci(
    lab: str,
    gpu_runner: str | None = None,
    out: Path = DEFAULT_OUT,
    force: bool = False,
    grader_source: str | None = None,
    vendor_wheel: bool = False,
    runner_is_ephemeral: bool = False,
) -> list[Path]:
    """Write the workflow to `out`, installing the grader from `grader_source`, else from
    the pinned place the running grader was installed from (a git commit, an https wheel
    with its hash), else, or with `vendor_wheel`, from a wheel of the running grader
    written into the repository's .github/grader/. Returns the files written. Refuses to
    overwrite an existing workflow without `force`, and a GPU runner unless the course
    states that it is ephemeral and isolated; refuses before it writes anything."""
    _check_runner(gpu_runner)
    _check_isolated(gpu_runner, runner_is_ephemeral)
    out = Path(out)
    repository = repository_of(out)
    refuse_unsafe(out, "the workflow")
    if out.exists() and not force:
        raise UsageError(f"{out} already exists; add --force to overwrite it.")
    spec = labs.get(lab)
    if grader_source is None and not vendor_wheel:
        grader_source = pinned_source(installed_from())
    package = None if grader_source is None else grader_requirement(grader_source, bool(gpu_runner))
    written, lab_root = [], None
    if portable(spec):  # a course's own lab travels with the repository
        # the reference only where the workflow times against it; never the baseline
        kernels = ("reference.cu",) if gpu_runner else ()
        written += export(spec, repository / LAB_ROOT, kernels)
        lab_root = LAB_ROOT.as_posix()
    if package is None:
        wheel = _replace_wheel(repository / WHEEL_DIR)
        written.append(wheel)
        local = f"./{(WHEEL_DIR / wheel.name).as_posix()}"
        package = grader_requirement(local, bool(gpu_runner))
    path = (WORKFLOWS / out.name).as_posix()
    write_atomically(out, workflow(lab, package, gpu_runner, lab_root=lab_root, workflow_path=path))
    return [out, *written]


def _replace_wheel(folder: Path) -> Path:
    """A wheel of the running grader in `folder`, instead of any earlier one of ours."""
    earlier = set(folder.glob(f"{DISTRIBUTION.replace('-', '_')}-*.whl"))
    wheel = build_running_wheel(folder)
    for path in earlier - {wheel}:
        path.unlink()
    return wheel
