"""Whether a config file found by looking up may decide a grade (grader.cli.trust): only
outside the kernel's folder, every folder above it and its repository, or outside the
folder of submissions and its repository; under a command that grades nothing, never.
What a refused file still sets, and what the command says of it: tests/test_config.py."""

from __future__ import annotations

from pathlib import Path

from grader.cli.trust import Graded, refusal, repository


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
