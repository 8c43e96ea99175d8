"""Whether a config file found by looking up from the working folder may decide a grade.

A student's repository can hold a grader.toml too, and a TA may grade from inside it: its
lab roots are Python the grader would import as the TA, and its backend, timeouts and
output folder would change the grade. So a file the user did not name decides a grade
only where no student can have put it: outside the folder that holds the kernel `check`
grades, every folder above it and its repository, or outside the folder of submissions
`batch` grades and that folder's repository (a TA's own folder above the submissions).

A repository is the outermost folder at or above a path that holds `.git` (a folder, or a
file in worktrees and submodules): a submission may carry a `.git` of its own, which must
not make the repository smaller. Without one, nothing marks where a student's folder ends,
which is why every folder above a kernel counts. A command that grades no submission has
nothing a file could lie outside of, so a file it finds decides nothing. When in doubt the
file is not trusted, and the course names its file instead (grader.cli.config)."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Graded:
    """What a command grades: one kernel (check), or a folder of submissions (batch)."""

    path: Path  # absolute
    submissions: bool  # a folder of submissions, each student's folder or file inside it

    @classmethod
    def kernel(cls, path: str | Path) -> Graded:
        return cls(Path(path).resolve(), submissions=False)

    @classmethod
    def folder(cls, path: str | Path) -> Graded:
        return cls(Path(path).resolve(), submissions=True)


def repository(folder: Path) -> Path | None:
    """The outermost folder at or above `folder` that holds `.git`, or None."""
    marked = [f for f in (folder, *folder.parents) if os.path.lexists(f / ".git")]
    return marked[-1] if marked else None


def refusal(found: Path, graded: Graded | None, verb: str) -> str | None:
    """Why the config file `found`, which the user did not name, may not decide a grade
    while `grader VERB` grades `graded` (None: nothing); None when it may."""
    if graded is None:
        return f"`grader {verb}` grades no submission, so a file it finds could be a student's"
    folder, graded_path = found.parent.resolve(), graded.path
    if graded.submissions:
        if folder.is_relative_to(graded_path):
            return f"it is inside {graded_path}, the folder of submissions"
        holder, what = graded_path, f"the folder of submissions {graded_path}"
    else:
        holder, what = graded_path.parent, f"{graded_path}, the kernel graded"
        if holder.is_relative_to(folder):
            return f"its folder holds {what}"
        if folder.is_relative_to(holder):
            return f"it is inside {holder}, the folder that holds {what}"
    repo = repository(holder)
    if repo is not None and folder.is_relative_to(repo):
        return f"it is inside {repo}, the repository that holds {what}"
    return None
