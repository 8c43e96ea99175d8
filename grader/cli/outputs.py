"""The paths a command writes, checked before any work starts, so a typo cannot cost the
user a file: a report never replaces an input, a device, a FIFO or a file reached through
a symbolic link, two reports never share a path, and `-` means standard output."""

from __future__ import annotations

import os
import stat
from pathlib import Path

from grader.errors import UsageError
from grader.files import refuse_unsafe, same_file

STDOUT = "-"


def check_reports(reports: dict[str, str | None], inputs: list[Path]) -> None:
    """`reports` maps an option (json, html, ...) to its path or None. Raises UsageError
    for a path that is an input, is no regular file's place, or is another report's."""
    to_stdout = [f"--{name}" for name, target in reports.items() if target == STDOUT]
    if len(to_stdout) > 1:
        raise UsageError(
            f"{' and '.join(to_stdout)} ask for standard output (-); only one report can go there."
        )
    seen: list[tuple[str, Path]] = []
    for name, target in reports.items():
        if target is None or target == STDOUT:
            continue
        path = Path(target)
        for source in inputs:
            if same_file(path, source):
                raise UsageError(
                    f"--{name} {target} is {source}, the file being graded: the report would "
                    "replace it. Give the report another path."
                )
        refuse_unsafe(path, f"the --{name} report")
        for other, other_path in seen:
            if same_file(path, other_path):
                raise UsageError(f"--{other} and --{name} both write {target}; give each its own.")
        seen.append((name, path))


def check_out_folder(out: str | None, inputs: list[Path]) -> Path:
    """The folder a batch or merge writes: a folder of its own (not a link, a file or a
    device), neither one of the `inputs` nor inside one. Returns it as a Path."""
    if out is None:
        raise UsageError(
            'Say which folder to write into: --out OUT, GRADER_OUT=OUT, or out = "OUT" in '
            "grader.toml."
        )
    if out == STDOUT:
        raise UsageError("--out names the folder to write reports into; it cannot be - .")
    path = Path(out)
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        info = None
    if info is not None and stat.S_ISLNK(info.st_mode):
        raise UsageError(f"--out {out} is a symbolic link; give the folder's own path.")
    if info is not None and not stat.S_ISDIR(info.st_mode):
        raise UsageError(f"--out {out} exists and is not a folder.")
    for source in inputs:
        if same_file(path, source) or path.resolve().is_relative_to(Path(source).resolve()):
            raise UsageError(
                f"--out {out} is inside {source}, which the command reads: its reports would "
                "mix with what it grades. Give a folder outside it."
            )
    return path
