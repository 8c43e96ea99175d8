"""The submission and its text: reading it, static checks, and the footer the grader appends.

The footer goes after the student's last line, so compiler messages keep the student's
own line numbers. It fills in the launch macros the student did not define and exposes
their values as `grader_launch_config`, which the grader reads back from the module."""

from __future__ import annotations

import os
import re
import stat
from dataclasses import dataclass
from pathlib import Path

from grader.errors import UsageError
from grader.files import readable
from grader.model import lexer
from grader.model.interface import LAUNCH_MACROS, LaunchDefaults
from grader.model.lexer import line_of
from grader.model.result import Diagnostic, Kind

MAX_BYTES = 256 * 1024  # docs/threat-model.md's limit; a larger file is refused from its size alone
LAUNCH_SYMBOL = "grader_launch_config"


# How compiled text is written: a byte of the file that is not UTF-8 was read as a lone
# surrogate (surrogateescape), and is written back as that same byte.
SOURCE_ERRORS = "surrogateescape"


@dataclass
class Submission:
    """A student's source file as the grader read it: `text` for the grader's own checks
    and reports (a byte that is not UTF-8 reads as U+FFFD), `source` for the compilers
    (that byte kept as it is, written back with SOURCE_ERRORS), None where the two agree."""

    path: Path
    text: str
    source: str | None = None
    note: str = ""  # what every report says of the file itself (its encoding)

    @property
    def name(self) -> str:
        return readable(self.path.name)

    @property
    def compiled(self) -> str:
        """The text the compilers read: the file's own bytes, whatever their encoding."""
        return self.text if self.source is None else self.source


def read_source(path: Path) -> tuple[bytes | None, str]:
    """The file's bytes, or (None, why) for a file over MAX_BYTES, which is refused from
    its size before any byte is read, or for what is not a regular file. At most
    MAX_BYTES + 1 bytes are ever read, even from a file that grows meanwhile.
    Raises UsageError when the file cannot be opened."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)  # a FIFO must not block the grader
    except OSError as error:
        raise UsageError(f"{path} cannot be read: {error.strerror or error}.") from error
    with os.fdopen(fd, "rb") as file:
        info = os.fstat(file.fileno())
        if not stat.S_ISREG(info.st_mode):
            return None, f"{readable(path.name)} is not a regular file."
        size = info.st_size
        raw = file.read(MAX_BYTES + 1) if size <= MAX_BYTES else b""
    if size > MAX_BYTES or len(raw) > MAX_BYTES:
        size = max(size, len(raw))
        return None, (
            f"{readable(path.name)} is {size} bytes; a submission may be at most {MAX_BYTES} bytes "
            f"({MAX_BYTES // 1024} KiB), so it was not read."
        )
    return raw, ""


def gradable(path: Path, lab: str) -> None:
    """Raise the UsageError that says why `path` is no file to grade for `lab`: a
    symbolic link on its way, a folder, nothing, a device or FIFO, or a folder on its way
    the user may not enter."""
    link = link_on_the_way(path)
    if link == path:
        raise UsageError(f"{path} is a symbolic link; grade the file itself, not a link to it.")
    if link is not None:
        raise UsageError(
            f"{path} is reached through {link}, a symbolic link; grade the file by a path "
            "with no link in it."
        )
    mode = _mode(path)
    if mode is not None and stat.S_ISDIR(mode):
        kernels = sorted(str(p) for p in path.glob("*.cu")) or [str(path / "kernel.cu")]
        raise UsageError(
            f"{path} is a folder; give the kernel file in it: grader check {lab} "
            f"{' or '.join(kernels[:3])}."
        )
    if mode is None:
        raise UsageError(f"There is no file {path}.")
    if not stat.S_ISREG(mode):
        raise UsageError(f"{path} is not a regular file (a device or a FIFO); give a .cu file.")


def _mode(path: Path) -> int | None:
    """The file's mode, or None where there is no such file."""
    try:
        return path.stat().st_mode
    except PermissionError:
        raise UsageError(
            f"{path} cannot be read: you may not open it, or a folder on its way "
            "(permission denied). Grade a copy in a folder of your own."
        ) from None
    except OSError:  # no such file, or a path through a file
        return None


def link_on_the_way(path: Path) -> Path | None:
    """The first part of `path`, as it is written, that is a symbolic link: the file itself,
    or a folder it is reached through; None when there is none (or a part is missing).
    A repository's `kernel.cu` that links to another file, or its `src` that links to
    another folder, would otherwise have that file graded, and its text in the reports.
    The folders the grader is run from and the user's home, and those above them, are the
    user's own: a system's `/home` that links elsewhere is no part of a submission."""
    parts = Path(path).parts
    own = _own_folders()
    for end in range(1, len(parts) + 1):
        part = Path(*parts[:end])
        if part in own:
            continue
        try:
            if stat.S_ISLNK(os.lstat(part).st_mode):
                return part
        except OSError:
            return None
    return None


def _own_folders() -> set[Path]:
    """The working folder as the shell names it ($PWD, links kept) and the home folder,
    with every folder above them."""
    out: set[Path] = set()
    for name in (os.environ.get("PWD"), os.environ.get("HOME")):
        if name and os.path.isabs(name):
            folder = Path(name)
            out.update((folder, *folder.parents))
    return out


def read_submission(path: Path) -> tuple[Submission, list[Diagnostic]]:
    """Read a .cu file. Problems with the file itself come back as diagnostics. A file in
    another encoding than UTF-8 (Latin-1 from a Windows editor) is graded as it is: nvcc
    compiles its bytes, and only its name in the report's warning (`not_utf8`) says so."""
    raw, why = read_source(path)
    if raw is None:
        return Submission(path, ""), [Diagnostic(Kind.COMPILE_ERROR, why)]
    shown = readable(path.name)
    problems: list[Diagnostic] = []
    text, source = raw.decode("utf-8", errors="replace"), None
    note = not_utf8(raw, shown)
    if note:
        source = raw.decode("utf-8", errors=SOURCE_ERRORS).replace("\r\n", "\n")
    if "\0" in text:
        problems.append(Diagnostic(Kind.COMPILE_ERROR, f"{shown} contains NUL bytes."))
    return Submission(path, text.replace("\r\n", "\n"), source, note), problems


def not_utf8(raw: bytes, shown: str) -> str:
    """The warning for a file that is not UTF-8, naming its first such byte and line;
    "" for a UTF-8 file."""
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError as err:
        line = raw[: err.start].count(b"\n") + 1
        return (
            f"{shown} is not UTF-8 (byte 0x{raw[err.start]:02X} at line {line}): graded as it "
            "is; save it as UTF-8 to silence this."
        )
    return ""


# A submission is one file: the compilers must never be pointed at any other file, such
# as the secret, the hidden cases or another student's kernel, whose text a compile
# error would then quote into this student's report. The compilers' sandbox is what
# stops that; these rules only say so early, in a sentence.
_SYSTEM_HEADER = re.compile(r"^\s*<(?P<path>[^>]*)>")
QUOTED_INCLUDE = (
    "A submission is a single file: include only system headers, as "
    "#include <cstdio>, not files by a quoted or computed name."
)
PATH_INCLUDE = "Include system headers by name (#include <cuda_runtime.h>), not by a path."
OTHER_FILE = "A submission may not pull in other files (#include_next, #import, #embed, .incbin)."


def file_rules(text: str) -> list[Diagnostic]:
    """Each way the text asks a compiler to read another file, once, at its first line."""
    found = [
        (directive.line, sentence)
        for directive in lexer.directives(text)
        if (sentence := _directive_problem(directive.name, directive.rest))
    ]
    code = lexer.uncommented(text)
    incbin = re.search(r"\.incbin\b", code, re.IGNORECASE)
    if incbin:
        found.append((line_of(code, incbin.start()), OTHER_FILE))
    first: dict[str, int] = {}
    for line, sentence in sorted(found, key=lambda f: f[0]):  # a line's directive first
        first.setdefault(sentence, line)
    return [Diagnostic(Kind.COMPILE_ERROR, s, line=n) for s, n in first.items()]


def _directive_problem(name: str, rest: str) -> str | None:
    if name in ("include_next", "import", "embed"):
        return OTHER_FILE
    if name != "include":
        return None
    header = _SYSTEM_HEADER.match(rest)
    if header is None:
        return QUOTED_INCLUDE
    if header["path"].strip().startswith("/") or ".." in header["path"]:
        return PATH_INCLUDE
    return None


RESERVED = (
    f"{LAUNCH_SYMBOL} is the grader's own name: it carries the launch macros' values out of "
    "your module, and the grader launches your kernel with what it holds. Use another name."
)


def static_checks(text: str, forbidden: tuple[tuple[str, str], ...]) -> list[Diagnostic]:
    """The file rules, the grader's own name (renamed by a #define, the footer's copy
    would leave the file's own values to be read), and the lab's forbidden constructs,
    each once at its first line."""
    out = file_rules(text)
    code = lexer.uncommented(text)
    if re.search(rf"\b{LAUNCH_SYMBOL}\b", code):
        line = line_of(code, code.find(LAUNCH_SYMBOL))
        out.append(Diagnostic(Kind.COMPILE_ERROR, RESERVED, line=line))
    for pattern, sentence in forbidden:
        match = re.search(pattern, code)
        if match:
            out.append(Diagnostic(Kind.REQUIREMENT, sentence, line=line_of(code, match.start())))
    return out


def no_code(text: str, shown: str, kernels: list[str]) -> Diagnostic | None:
    """An empty file, or one of comments alone: nothing to compile, and no kernel."""
    if lexer.uncommented(text).strip():
        return None
    holds = "holds only comments" if text.strip() else "is empty"
    names = " and ".join(kernels)
    return Diagnostic(
        Kind.INTERFACE,
        f"{shown} {holds}: there is no kernel named {names} in it, so nothing was compiled. "
        "Write the kernel in this file (`grader template` gives a skeleton to start from).",
    )


def launch_footer(defaults: LaunchDefaults | tuple[int, int, int]) -> str:
    """C++ appended to the submission: launch macro defaults and their values. A bare
    block stands for LaunchDefaults(block)."""
    if not isinstance(defaults, LaunchDefaults):
        defaults = LaunchDefaults(tuple(defaults))
    lines = ["", "/* appended by the grader */"]
    for axis, default in zip("XYZ", defaults.block, strict=True):
        lines += [f"#ifndef BLOCK_{axis}", f"#define BLOCK_{axis} {default}", "#endif"]
    for axis, default in zip("XYZ", defaults.tile, strict=True):
        expression = default if re.fullmatch(r"BLOCK_[XYZ]", default) else f"({default})"
        lines += [f"#ifndef TILE_{axis}", f"#define TILE_{axis} {expression}", "#endif"]
    values = ", ".join(f"(int)({name})" for name in LAUNCH_MACROS)
    lines.append(f"__constant__ int {LAUNCH_SYMBOL}[{len(LAUNCH_MACROS)}] = {{{values}}};")
    return "\n".join(lines) + "\n"


def with_footer(submission: Submission, defaults: LaunchDefaults | tuple[int, int, int]) -> str:
    """What the compilers read: the file as it is (write it with SOURCE_ERRORS), then the
    footer."""
    text = submission.compiled
    text = text if text.endswith("\n") else text + "\n"
    return text + launch_footer(defaults)


def footer_errors(found: list[Diagnostic], text: str, shown: str) -> list[Diagnostic]:
    """`found` with the errors a compiler placed in the grader's footer, past the
    student's last line, replaced by one that says what nearly always puts them there:
    something the student's file leaves open at its end."""
    inside = [d for d in found if d.line is not None and d.line > last_line(text)]
    mine = [d for d in found if d not in inside]
    if not inside or (mine and open_at_end(text) is None):  # the errors in the file say it
        return mine
    return [*mine, left_open(text, shown)]


def last_line(text: str) -> int:
    """The number of the student's last line; the footer starts after it."""
    return text.count("\n") + (0 if text.endswith("\n") else 1)


def left_open(text: str, shown: str) -> Diagnostic:
    """A compile error for a file that leaves something open at its end, where the
    compiler failed in what follows it (the footer), whatever it said there."""
    last = last_line(text)
    message = (
        f"{shown}:{last}: the compiler reached the end of your file (line {last}) with "
        f"{open_at_end(text) or 'something still open (a bracket, parenthesis or declaration)'}"
        ", so it read the text the grader appends after your last line "
        "as part of it, and failed there. Close it in your file: every { needs its }, every "
        "/* its */."
    )
    return Diagnostic(Kind.COMPILE_ERROR, message, line=last)


def open_at_end(text: str) -> str | None:
    """What `text` leaves open at its end: a /* comment, or a { (the outermost one not
    closed), with its line; None when neither is."""
    comment = lexer.open_comment(text)
    if comment is not None:
        return f"a /* comment still open (it starts at line {comment})"
    code = lexer.unquoted(text)
    opened: list[int] = []
    for match in re.finditer(r"[{}]", code):
        if match.group(0) == "{":
            opened.append(match.start())
        elif opened:
            opened.pop()
    if opened:
        count = f"{len(opened)} {{ without their }}" if len(opened) > 1 else "a { without its }"
        return f"{count} (the first opens at line {line_of(code, opened[0])})"
    return None


def launch_values(raw: list[int]) -> dict[str, int]:
    return dict(zip(LAUNCH_MACROS, (int(v) for v in raw), strict=True))
