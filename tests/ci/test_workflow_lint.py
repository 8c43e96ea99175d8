"""The workflow `grader init-ci` writes, hardened: every variant passes actionlint; actions
are pinned by commit with their tag beside; the token has only what the job uses and is
not left in the checkout; pip downloads are cached; a newer push cancels the older run; a
student's grader.toml changes nothing; and the grader comes from one pinned build."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from grader.ci import init_ci, workflow
from grader.ci.workflow import check_command, grader_requirement, pinned_source
from grader.errors import UsageError

WHEEL = "./.github/grader/cuda_lab_grader-0.1.0-py3-none-any.whl"
COMMIT = "0123456789abcdef0123456789abcdef01234567"
DIGEST = "ab" * 32
GIT = f"cuda-lab-grader @ git+https://github.com/course/grader@{COMMIT}"
LABEL = "gpu-h100"
# The actions, each pinned to the commit its release tag names (read from the actions'
# own repositories); a tag can be moved to other code, a commit cannot.
PINNED = {
    "actions/checkout": ("3d3c42e5aac5ba805825da76410c181273ba90b1", "v7.0.1"),
    "actions/setup-python": ("5fda3b95a4ea91299a34e894583c3862153e4b97", "v7.0.0"),
    "actions/upload-artifact": ("bbbca2ddaa5d8feaa63e36b76fdaad77386f024f", "v7.0.0"),
}
VARIANTS = {
    "cpu, committed wheel": dict(lab="matmul-naive", package=WHEEL),
    "cpu, git commit": dict(lab="conv2d", package=GIT),
    "cpu, course lab root": dict(lab="matmul-naive", package=WHEEL, lab_root=".github/grader/labs"),
    "gpu runner, wheel": dict(lab="matmul-tiled", package=f"{WHEEL}[gpu]", gpu_runner=LABEL),
    "gpu runner, hashed URL": dict(
        lab="matmul-tiled",
        package=f"cuda-lab-grader[gpu] @ https://x.edu/g-1.0-py3-none-any.whl#sha256={DIGEST}",
        gpu_runner=LABEL,
    ),
    "another file name": dict(lab="scan", package=WHEEL, workflow_path=".github/workflows/a.yml"),
}


def actionlint() -> str:
    """The actionlint binary of the dev extra (beside this Python when not on PATH)."""
    found = shutil.which("actionlint") or shutil.which(
        "actionlint", path=Path(sys.executable).parent
    )
    assert found, "actionlint is missing: pip install -e '.[dev]' installs it"
    return found


@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_every_workflow_init_ci_writes_passes_actionlint(tmp_path, variant):
    options = dict(VARIANTS[variant])
    lab, package = options.pop("lab"), options.pop("package")
    path = tmp_path / ".github" / "workflows" / "grader.yml"
    path.parent.mkdir(parents=True)
    path.write_text(workflow(lab, package, **options))
    # a course with a GPU runner declares its label to actionlint, as actionlint asks
    config = tmp_path / ".github" / "actionlint.yaml"
    config.write_text(f"self-hosted-runner:\n  labels: [{LABEL}]\n")
    done = subprocess.run(
        [actionlint(), "-config-file", str(config), "-no-color", str(path)],
        cwd=tmp_path, capture_output=True, text=True,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout == ""


def test_actionlint_does_find_what_is_wrong(tmp_path):
    """The test above can fail: an unpinned, deprecated action and an unknown label."""
    text = workflow("conv2d", WHEEL, gpu_runner="no-such-label")
    text = re.sub(r"actions/checkout@[0-9a-f]{40}", "actions/checkout@v3", text)
    path = tmp_path / "grader.yml"
    path.write_text(text)
    done = subprocess.run([actionlint(), "-no-color", str(path)], capture_output=True, text=True)
    assert done.returncode == 1
    assert "no-such-label" in done.stdout and "actions/checkout@v3" in done.stdout


def test_actions_are_pinned_by_commit_with_the_tag_beside():
    text = workflow("conv2d", WHEEL)
    uses = re.findall(r"uses: (\S+)@(\S+)(.*)", text)
    assert {name for name, _, _ in uses} == set(PINNED)
    for name, ref, comment in uses:
        commit, tag = PINNED[name]
        assert ref == commit and comment.strip() == f"# {tag}", (name, ref, comment)


def test_the_token_has_only_what_the_job_uses_and_stays_out_of_the_checkout():
    data = yaml.safe_load(workflow("conv2d", WHEEL))
    assert data["permissions"] == {}
    job = data["jobs"]["grade"]
    assert job["permissions"] == {"contents": "read", "actions": "read", "checks": "write"}
    checkout = next(s for s in job["steps"] if s.get("uses", "").startswith("actions/checkout"))
    assert checkout["with"] == {"persist-credentials": False}


def test_pip_downloads_are_cached_and_a_newer_push_cancels_the_older_run(tmp_path):
    out = tmp_path / ".github" / "workflows" / "autograde.yml"
    init_ci("conv2d", out=out, grader_source=GIT)
    data = yaml.safe_load(out.read_text())
    assert data["concurrency"] == {
        "group": "${{ github.workflow }}-${{ github.ref }}",
        "cancel-in-progress": True,
    }
    python = next(s for s in data["jobs"]["grade"]["steps"] if "setup-python" in s.get("uses", ""))
    assert python["with"]["cache"] == "pip"
    assert python["with"]["cache-dependency-path"] == ".github/workflows/autograde.yml"
    assert (tmp_path / python["with"]["cache-dependency-path"]).is_file()


def test_a_students_grader_toml_changes_nothing_in_ci():
    assert "--no-config" in check_command("conv2d", "kernel.cu", "cpu").split()


@pytest.mark.parametrize(
    ("direct", "source"),
    [
        (
            {"url": "https://github.com/c/g", "vcs_info": {"vcs": "git", "commit_id": COMMIT}},
            f"cuda-lab-grader @ git+https://github.com/c/g@{COMMIT}",
        ),
        (
            {"url": "https://x.edu/g-1.0-py3-none-any.whl",
             "archive_info": {"hashes": {"sha256": DIGEST}}},
            f"cuda-lab-grader @ https://x.edu/g-1.0-py3-none-any.whl#sha256={DIGEST}",
        ),
        ({"url": "https://x.edu/g.whl", "archive_info": {"hash": f"sha256={DIGEST}"}},
         f"cuda-lab-grader @ https://x.edu/g.whl#sha256={DIGEST}"),
        ({"url": "file:///home/ta/g-1.0-py3-none-any.whl", "archive_info": {}}, None),
        ({"url": "https://x.edu/g-1.0-py3-none-any.whl", "archive_info": {}}, None),
        ({"url": "file:///home/ta/grader", "dir_info": {"editable": True}}, None),
        ({"url": "ssh://git@host/g", "vcs_info": {"vcs": "git", "commit_id": COMMIT}}, None),
        (None, None),
    ],
)  # fmt: skip
def test_the_pinned_place_this_grader_came_from_becomes_the_default_source(direct, source):
    assert pinned_source(direct) == source
    if source:
        name, _, url = source.partition(" @ ")  # init-ci accepts it, with NVIDIA's nvcc
        assert grader_requirement(source) == f"{name}[nvcc] @ {url}"


def test_the_vendored_wheel_stays_an_option(tmp_path):
    out = tmp_path / ".github" / "workflows" / "grader.yml"
    written = init_ci("conv2d", out=out, vendor_wheel=True)
    assert [p.suffix for p in written] == [".yml", ".whl"]
    assert yaml.safe_load(out.read_text())["env"]["GRADER_PACKAGE"] == f"{WHEEL}[nvcc]"


@pytest.mark.parametrize(
    "source",
    ["https://x.edu/g-1.0-py3-none-any.whl", "https://x.edu/g-1.0-py3-none-any.whl#sha256=12"],
)
def test_a_wheel_url_without_its_hash_is_refused(source):
    with pytest.raises(UsageError, match="has no hash"):
        grader_requirement(source)
