"""Finding the submissions in a folder, and who each belongs to.

Three layouts are read as they are:
- plain: every `.cu` file or subfolder of DIR is one submission, named after the student;
- Gradescope's "Export Submissions": a `submission_metadata.yml` beside `submission_<id>/`
  folders, which names each folder's submitters (a group submission has several);
- GitHub Classroom's clone of the student repositories: folders `<assignment>-<login>`,
  each a git clone; the student is the login.

Nothing here follows a symbolic link: a submission that links to another student's file,
or to a file of the grader's, would otherwise be graded (and its text shown in a compile
log) as the student's own. No folder stops the batch: a student's folder is walked
without recursion and within limits (depth, entries), and one that breaks them, or cannot
be read, becomes that student's row with the reason.

A student's id becomes their folder's name under OUT/students by an encoding that no two
ids share and that can be undone (safe_id, original_id): `bob~smith@uni.edu` and
`bob_smith@uni.edu` are two students."""

from __future__ import annotations

import hashlib
import os
import re
import stat
from dataclasses import dataclass, field
from pathlib import Path

from grader.errors import UsageError
from grader.files import readable

GRADESCOPE_METADATA = "submission_metadata.yml"
SOURCE_SUFFIX = ".cu"
TEMPLATE_FILE = "kernel.cu"  # the file `grader template` hands out, preferred among several
MAX_DEPTH = 32  # folders inside a student's folder, nested
MAX_ENTRIES = 20_000  # files and folders in one student's folder, hidden ones included
_KEPT = "._-@+"  # besides letters and digits, what a folder name shows as it is
ESCAPE = "%"  # safe_id writes any other character as %XX, one per byte of its UTF-8
MAX_NAME = 200  # bytes of a folder name (a file system allows 255)


@dataclass(frozen=True)
class Person:
    """One student a submission belongs to. `id` is what the gradebook's `student` column
    holds: the Gradescope SID (or email), the GitHub login, or the file or folder name."""

    id: str
    name: str = ""
    email: str = ""


@dataclass
class Entry:
    """One submission: its folder name under OUT/students, the students it belongs to,
    and the `.cu` file to grade, or why there is none."""

    id: str
    people: list[Person]
    origin: Path  # the file or folder in DIR
    source: Path | None = None
    problem: str = ""  # why no source could be chosen


@dataclass
class Found:
    entries: list[Entry]
    layout: str
    ignored: list[str] = field(default_factory=list)  # names in DIR that are no submission


def discover(folder: Path) -> Found:
    """Every submission in `folder`, sorted by id. Raises UsageError when the folder does
    not exist, or when two submissions would get the same id."""
    folder = Path(folder)
    if not folder.is_dir():
        raise UsageError(f"{folder} is not a folder of submissions.")
    metadata = _gradescope_metadata(folder)
    if metadata is not None:
        found = _gradescope(metadata)
    elif _is_classroom(folder):
        found = _classroom(folder)
    else:
        found = _plain(folder)
    _refuse_duplicates(found.entries)
    found.entries.sort(key=lambda e: e.id)
    return found


def safe_id(text: str) -> str:
    """A student id as one folder name: letters, digits and `._-@+` as they are (not a
    leading dot), every other character as %XX per byte of its UTF-8 (a file name's
    undecodable bytes as themselves), so no two ids share a name and original_id undoes
    it. A name longer than MAX_NAME bytes keeps its start and ends in `%%` and a digest,
    which no other encoding contains."""
    out = [
        ch if (ch.isalnum() or ch in _KEPT) and not (i == 0 and ch == ".") else _escaped(ch)
        for i, ch in enumerate(text)
    ]
    name = "".join(out) or ESCAPE
    if len(name.encode("utf-8", "surrogateescape")) <= MAX_NAME:
        return name
    digest = hashlib.sha256(text.encode("utf-8", "surrogateescape")).hexdigest()[:32]
    start, used = [], 0
    for part in out:
        used += len(part.encode("utf-8", "surrogateescape"))
        if used > MAX_NAME - 2 - len(digest):
            break
        start.append(part)
    return f"{''.join(start)}{ESCAPE * 2}{digest}"


def original_id(name: str) -> str | None:
    """The id safe_id made `name` from; None for a shortened name (its id is in the
    folder's grading.json) or one safe_id never makes."""
    if name == ESCAPE:
        return ""
    if ESCAPE * 2 in name:
        return None
    raw = bytearray()
    parts = re.split(r"%([0-9A-F]{2})", name)
    for i, part in enumerate(parts):
        if i % 2:
            raw.append(int(part, 16))
        elif ESCAPE in part:
            return None
        else:
            raw += part.encode("utf-8", "surrogateescape")
    text = raw.decode("utf-8", "surrogateescape")
    return text if safe_id(text) == name else None


def _escaped(ch: str) -> str:
    return "".join(f"%{b:02X}" for b in ch.encode("utf-8", "surrogateescape"))


# -- plain ------------------------------------------------------------------------------


def _visible(folder: Path) -> list[Path]:
    return sorted(p for p in folder.iterdir() if not p.name.startswith("."))


def _plain(folder: Path) -> Found:
    entries, ignored = [], []
    for path in _visible(folder):
        if path.is_symlink():
            entries.append(_linked(path))
        elif path.is_dir():
            entries.append(from_folder(path, path.name, [Person(readable(path.name))]))
        elif path.suffix == SOURCE_SUFFIX:
            entry = Entry(safe_id(path.stem), [Person(readable(path.stem))], path)
            _set_source(entry, path)
            entries.append(entry)
        else:
            ignored.append(readable(path.name))
    return Found(entries, "plain", ignored)


def _linked(path: Path) -> Entry:
    entry = Entry(safe_id(path.stem), [Person(readable(path.stem))], path)
    entry.problem = f"{readable(path.name)} is a symbolic link; submit the file itself."
    return entry


def from_folder(path: Path, id_text: str, people: list[Person]) -> Entry:
    """The submission in a folder: its one .cu file (never a link), or why there is none.
    A file's size is judged when it is graded, as `grader check` judges it."""
    entry = Entry(safe_id(id_text), people, path)
    try:
        candidates = source_files(path)
    except FolderProblem as problem:
        entry.problem = str(problem)
        return entry
    chosen, problem = choose_source(candidates, path)
    if chosen is None:
        entry.problem = problem
    else:
        _set_source(entry, chosen)
    return entry


def _set_source(entry: Entry, path: Path) -> None:
    info = path.lstat()
    if stat.S_ISLNK(info.st_mode):
        entry.problem = f"{readable(path.name)} is a symbolic link; submit the file itself."
    else:
        entry.source = path


class FolderProblem(Exception):
    """A student's folder the grader does not look through; the message says why."""


def source_files(folder: Path) -> list[Path]:
    """The `.cu` files under `folder`, hidden names (.git) and links left out, in the
    order of os.walk with sorted names. Walks without recursion, so no depth is too deep
    for Python, and raises FolderProblem for folders nested deeper than MAX_DEPTH, more
    than MAX_ENTRIES entries, or a folder that cannot be read."""
    found: list[Path] = []
    seen = 0
    todo = [(folder, 0)]
    while todo:
        current, depth = todo.pop()
        try:
            with os.scandir(current) as listing:
                children = []
                for child in listing:
                    seen += 1
                    if seen > MAX_ENTRIES:
                        raise FolderProblem(
                            f"{readable(folder.name)} holds more than {MAX_ENTRIES} files and "
                            "folders, so the grader did not look through it: submit the .cu "
                            "file without the rest."
                        )
                    children.append((child.name, child.is_dir(follow_symlinks=False)))
        except OSError as error:
            where = readable(str(current.relative_to(folder.parent)))
            raise FolderProblem(
                f"{where} cannot be read ({error.strerror or error}), so the grader could "
                "not look for the .cu file in it."
            ) from None
        children = sorted(c for c in children if not c[0].startswith("."))
        found += [current / n for n, is_dir in children if not is_dir and n.endswith(SOURCE_SUFFIX)]
        folders = [current / n for n, is_dir in children if is_dir]
        if folders and depth == MAX_DEPTH:
            raise FolderProblem(
                f"{readable(folder.name)} has folders nested more than {MAX_DEPTH} deep, so "
                "the grader did not look through it: submit the .cu file without them."
            )
        todo += [(sub, depth + 1) for sub in reversed(folders)]
    return found


def choose_source(candidates: list[Path], folder: Path) -> tuple[Path | None, str]:
    """The one `.cu` file to grade: the only one, or else the one named kernel.cu that is
    nearest the top. Returns (None, why) when there is no clear choice."""
    if len(candidates) == 1:
        return candidates[0], ""
    if not candidates:
        return None, f"There is no {SOURCE_SUFFIX} file in {readable(folder.name)}."
    named = [p for p in candidates if p.name == TEMPLATE_FILE]
    named.sort(key=lambda p: len(p.relative_to(folder).parts))
    if named and (len(named) == 1 or len(named[0].parts) < len(named[1].parts)):
        return named[0], ""
    listed = ", ".join(readable(str(p.relative_to(folder))) for p in candidates[:6])
    return None, (
        f"{readable(folder.name)} holds several {SOURCE_SUFFIX} files ({listed}); keep one, "
        f"or name the one to grade {TEMPLATE_FILE}."
    )


def _refuse_duplicates(entries: list[Entry]) -> None:
    seen: dict[str, Entry] = {}
    for entry in entries:
        if entry.id in seen:
            raise UsageError(
                f"Two submissions belong to student {entry.id!r}: {seen[entry.id].origin.name} "
                f"and {entry.origin.name}. Keep one of them."
            )
        seen[entry.id] = entry


# -- GitHub Classroom -------------------------------------------------------------------


def _classroom_prefix(names: list[str]) -> str:
    """The assignment prefix that every repository name shares, up to its last dash."""
    common = os.path.commonprefix(names)
    return common[: common.rfind("-") + 1] if "-" in common else ""


def _is_classroom(folder: Path) -> bool:
    folders = [p for p in _visible(folder) if p.is_dir() and not p.is_symlink()]
    if len(folders) < 2 or len(folders) != len(_visible(folder)):
        return False
    prefix = _classroom_prefix([p.name for p in folders])
    return bool(prefix) and all(os.path.lexists(p / ".git") for p in folders)


def _classroom(folder: Path) -> Found:
    folders = _visible(folder)
    prefix = _classroom_prefix([p.name for p in folders])
    entries = []
    for path in folders:
        login = path.name[len(prefix) :] or path.name
        entries.append(from_folder(path, login, [Person(readable(login))]))
    return Found(entries, "classroom")


# -- Gradescope -------------------------------------------------------------------------


def _gradescope_metadata(folder: Path) -> Path | None:
    """The export's metadata file, in DIR or in the one folder the export zip unpacks to."""
    direct = folder / GRADESCOPE_METADATA
    if direct.is_file():
        return direct
    inner = [p for p in _visible(folder) if p.is_dir()]
    if len(inner) == 1 and (inner[0] / GRADESCOPE_METADATA).is_file():
        return inner[0] / GRADESCOPE_METADATA
    return None


def _gradescope(metadata: Path) -> Found:
    root = metadata.parent
    submitters = parse_gradescope_metadata(metadata.read_text(encoding="utf-8", errors="replace"))
    entries, ignored = [], []
    for path in _visible(root):
        if path.name == GRADESCOPE_METADATA:
            continue
        if not path.is_dir() or path.is_symlink():
            ignored.append(readable(path.name))
            continue
        people = submitters.get(path.name) or [Person(readable(path.name))]
        first = people[0]
        entries.append(from_folder(path, first.id, people))
    return Found(entries, "gradescope", ignored)


def parse_gradescope_metadata(text: str) -> dict[str, list[Person]]:
    """Submitters per submission folder, from Gradescope's `submission_metadata.yml`.

    The file is YAML written by Ruby, with symbol keys:

        submission_123:
          :submitters:
          - :name: "Zo\\xEB Ad\\xE9la\\xEFde"
            :sid: '1815'
            :email: zoe@example.edu
          :created_at: ...

    It is read with PyYAML's safe_load, so escapes and quoting mean what YAML says (the
    name above is "Zoë Adélaïde"). Only each top-level key's `:submitters:` list is read.
    Raises UsageError for a file that is not YAML or not such a mapping."""
    import yaml  # only a Gradescope export needs it

    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as error:
        raise UsageError(
            f"{GRADESCOPE_METADATA} is not valid YAML ({_where(error)}): is this Gradescope's "
            "export as it unzips?"
        ) from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise UsageError(f"{GRADESCOPE_METADATA} does not map submission folders to submitters.")
    people: dict[str, list[Person]] = {}
    for folder, submission in data.items():
        found = submission.get(":submitters") if isinstance(submission, dict) else None
        if isinstance(found, list):
            people[str(folder)] = [_person(p) for p in found if isinstance(p, dict)]
    return people


def _where(error: Exception) -> str:
    mark = getattr(error, "problem_mark", None)
    return f"line {mark.line + 1}" if mark is not None else str(error)


def _text(value: object) -> str:
    """A field's text: a string or a number as written; nothing else is a name."""
    if isinstance(value, bool) or value is None:
        return ""
    return str(value) if isinstance(value, str | int | float) else ""


def _person(fields: dict) -> Person:
    name, sid, email = (_text(fields.get(f":{key}")) for key in ("name", "sid", "email"))
    return Person(sid or email or name or "unknown", name, email)
