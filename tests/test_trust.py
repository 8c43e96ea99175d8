"""Which config file may decide a grade (grader.cli.trust): a file the user named always;
a file found by looking up only outside what is graded and its repository; under a
command that grades nothing, never. A refused file still sets colour and jobs, and the
command says once, on standard error, what it ignored and how to name a course's file."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from grader import cli, labs
from grader.cli.trust import Graded, refusal, repository
from grader.errors import ExitCode

ENV = ("GRADER_SECRET", "GRADER_LABS", "GRADER_TIMEOUT", "GRADER_BACKEND", "GRADER_JOBS",
       "GRADER_OUT", "GRADER_SUBMISSION_TIMEOUT", "GRADER_CONFIG", "NO_COLOR",
       "FORCE_COLOR")  # fmt: skip
HOSTILE = 'labs = ["x"]\ntimeout = 3600\nbackend = "cpu"\ncolor = "never"\njobs = 3\n'


@pytest.fixture(autouse=True)
def clean(monkeypatch, tmp_path):
    for name in ENV:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(labs, "_added", [])


def tree(root: Path, *paths: str) -> Path:
    """Make the files (and, for a trailing /, folders) under `root`; returns it."""
    for name in paths:
        path = root / name
        if name.endswith("/"):
            path.mkdir(parents=True, exist_ok=True)
        else:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text("")
    return root


def test_a_file_above_or_beside_the_kernel_or_in_its_repository_is_refused(tmp_path):
    tree(tmp_path, "clone/.git/", "clone/src/kernel.cu", "clone/docs/", "ta/")
    kernel = Graded.kernel(tmp_path / "clone" / "src" / "kernel.cu")
    found = {
        "clone/src/grader.toml": "its folder holds",  # beside it
        "clone/grader.toml": "its folder holds",  # above it
        "grader.toml": "its folder holds",  # far above it: nothing marks a student's folder
        "clone/src/deep/grader.toml": "the folder that holds",  # below its folder
        "clone/docs/grader.toml": f"inside {tmp_path / 'clone'}, the repository",
    }
    for name, reason in found.items():
        assert reason in (refusal(tmp_path / name, kernel, "check") or ""), name
    assert refusal(tmp_path / "ta" / "grader.toml", kernel, "check") is None  # a TA's own


def test_a_git_file_marks_a_repository_and_the_outermost_one_counts(tmp_path):
    """A worktree or submodule has a .git file; a .git the student's files carry inside
    the clone does not make the repository smaller."""
    tree(tmp_path, "clone/.git/", "clone/sub/.git", "clone/sub/kernel.cu", "clone/docs/")
    assert repository(tmp_path / "clone" / "sub") == tmp_path / "clone"
    kernel = Graded.kernel(tmp_path / "clone" / "sub" / "kernel.cu")
    reason = refusal(tmp_path / "clone" / "docs" / "grader.toml", kernel, "check")
    assert f"inside {tmp_path / 'clone'}, the repository that holds" in reason
    tree(tmp_path, "worktree/.git", "worktree/kernel.cu")  # a file, not a folder
    assert repository(tmp_path / "worktree") == tmp_path / "worktree"


def test_batch_trusts_a_file_above_the_submissions_outside_their_repository(tmp_path):
    tree(tmp_path, "ta/subs/alice/.git/", "ta/subs/alice/kernel.cu")
    subs = Graded.folder(tmp_path / "ta" / "subs")
    assert refusal(tmp_path / "ta" / "grader.toml", subs, "batch") is None
    inside = refusal(tmp_path / "ta" / "subs" / "alice" / "grader.toml", subs, "batch")
    assert inside == f"it is inside {tmp_path / 'ta' / 'subs'}, the folder of submissions"
    tree(tmp_path, "course/.git/", "course/subs/")  # submissions kept in a repository
    kept = Graded.folder(tmp_path / "course" / "subs")
    assert "the repository that holds the folder of submissions" in refusal(
        tmp_path / "course" / "grader.toml", kept, "batch"
    )


def test_a_command_that_grades_nothing_trusts_no_file_it_finds(tmp_path):
    assert "`grader labs` grades no submission" in refusal(tmp_path / "grader.toml", None, "labs")


def run(capsys, *argv: str) -> tuple[int, str, str]:
    code = cli.main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_config_says_what_a_refused_file_sets_and_what_it_ignored(capsys, tmp_path, monkeypatch):
    clone = tree(tmp_path / "clone", ".git/", "x/reference_kernels/", "src/kernel.cu")
    (clone / "grader.toml").write_text(HOSTILE)
    monkeypatch.chdir(clone / "src")
    code, out, err = run(capsys, "config", "kernel.cu")
    assert code == ExitCode.OK and err == ""  # config says it on standard output
    assert out.startswith(f"Config file: {clone / 'grader.toml'} (found looking up from here)")
    assert (
        "  read: color, jobs\n  ignored: labs, timeout, backend, since its folder holds "
        f"{clone / 'src' / 'kernel.cu'}, the kernel graded\n"
    ) in out
    assert "--config PATH or GRADER_CONFIG=PATH" in out
    assert str(clone / "x") not in out  # its lab roots are never listed
    assert re.search(rf"\n  color +never +{re.escape(str(clone / 'grader.toml'))}\n", out)
    code, out, err = run(capsys, "config", "--config", "../grader.toml")
    assert code == ExitCode.OK and err == ""  # named: read, its labs too
    assert "(named with --config)\n  read: labs, timeout, backend, color, jobs\n" in out
    assert labs.course_roots() == [clone / "x"]


def test_the_note_names_the_file_the_keys_and_the_way_to_name_a_course_file(capsys, tmp_path):
    tree(tmp_path, "x/reference_kernels/")
    (tmp_path / "grader.toml").write_text(HOSTILE)
    code, out, err = run(capsys, "labs")
    assert code == ExitCode.OK and "matmul-naive" in out
    assert err.count("\n") == 1 and err.startswith(f"grader: {tmp_path / 'grader.toml'} sets ")
    assert "labs, timeout, backend, which were not used: `grader labs` grades no submission" in err
    assert labs.course_roots() == []  # its lab root was never added
    (tmp_path / "grader.toml").write_text('color = "never"\njobs = 2\n')
    assert run(capsys, "labs")[2] == ""  # nothing ignored, nothing said


def test_a_named_file_must_exist_and_cannot_be_named_with_no_config(capsys, tmp_path):
    code, _, err = run(capsys, "labs", "--config", "nowhere.toml")
    assert code == ExitCode.USAGE and "The config file named with --config, nowhere.toml" in err
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "x"\n')
    code, _, err = run(capsys, "labs", "--config", "pyproject.toml")
    assert code == ExitCode.USAGE and "has no [tool.grader] table" in err
    code, _, err = run(capsys, "labs", "--config", "pyproject.toml", "--no-config")
    assert code == ExitCode.USAGE and "not allowed with argument" in err
