"""Writing the grader's own outputs (reports, the Gradescope zip, the CI workflow) without
harming the user's files. A path is written only as a regular file of its own: never
through a symbolic link, never over a device, a FIFO, a socket or a folder, and always
through a temporary file renamed into place, so that a reader never sees half of it and a
hard link to the old file keeps the old content."""

from __future__ import annotations

import os
import stat
import tempfile
from pathlib import Path

from grader.errors import UsageError


def unsafe_target(path: Path) -> str | None:
    """Why writing `path` could replace something that is not an output file, or None."""
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return None
    except NotADirectoryError:
        return "a part of its path is a file, not a folder"
    except OSError as error:
        return f"it cannot be examined ({error.strerror or error})"
    if stat.S_ISLNK(info.st_mode):
        return "it is a symbolic link (give the path of the file itself)"
    if stat.S_ISDIR(info.st_mode):
        return "it is a folder"
    if not stat.S_ISREG(info.st_mode):
        return "it is a device, a FIFO or a socket, not a regular file"
    return None


def refuse_unsafe(path: Path, what: str) -> None:
    """Raise UsageError when `path` is no place to write `what`."""
    why = unsafe_target(Path(path))
    if why:
        raise UsageError(f"The grader does not write {what} to {path}: {why}.")


def readable(name: str) -> str:
    """A file name as text: bytes that are not UTF-8 (which Python keeps as surrogates)
    written as \\xNN, so that the reports, the gradebook and the terminal, all UTF-8,
    can hold it."""
    return name.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")


def same_file(a: Path, b: Path) -> bool:
    """Whether two paths name one file: the same inode, or the same place once resolved."""
    try:
        return os.path.samefile(a, b)
    except OSError:
        return Path(a).resolve() == Path(b).resolve()


def write_atomically(path: Path, data: str | bytes, mode: int = 0o644) -> None:
    """Write `data` to `path` through a new temporary file beside it. Raises OSError when
    `path` is no regular file's place (its message says why) or cannot be written."""
    path = Path(path)
    why = unsafe_target(path)
    if why:
        raise OSError(why)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, partial = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".partial", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(data.encode("utf-8") if isinstance(data, str) else data)
            os.fchmod(out.fileno(), mode)
        os.replace(partial, path)
    finally:
        Path(partial).unlink(missing_ok=True)
