"""nvcc without a GPU: compile the submission to PTX and cubin, and read from them the
compiler's messages, the kernels' parameters, the `__constant__` symbols, the launch
macros and each kernel's registers, shared memory and spills.

Both backends use this where nvcc exists: nvcc is the judge of CUDA syntax."""

from __future__ import annotations

import base64
import bisect
import copy
import hashlib
import json
import os
import re
import shlex
import shutil
import site
import subprocess
import sysconfig
import tempfile
import threading
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import cache, lru_cache
from pathlib import Path

from grader import defaults
from grader.files import write_atomically
from grader.model import lexer
from grader.model.interface import (
    LAUNCH_MACROS,
    ConstantSig,
    Interface,
    KernelSig,
    LaunchDefaults,
    ParamSig,
    canonical_ctype,
    module_size,
)
from grader.model.lexer import Directive, last_before, line_of, next_of
from grader.model.result import CompileInfo, Diagnostic, KernelResources, Kind
from grader.model.source import (
    LAUNCH_SYMBOL,
    SOURCE_ERRORS,
    Submission,
    footer_errors,
    launch_values,
    with_footer,
)
from grader.toolchain import (
    build_cache,
    libraries,
    ptx,
    sandbox,
    scratch,
    special_functions,
    thread_stores,
)


@cache
def find() -> str | None:
    found = shutil.which("nvcc")
    if found:
        return found
    for root in (os.environ.get("CUDA_HOME"), "/usr/local/cuda"):
        # os.access, not Path.exists: a folder the user may not read is passed over
        if root and os.access(Path(root, "bin", "nvcc"), os.X_OK):
            return str(Path(root, "bin", "nvcc"))
    return _from_wheels()


# What a report says where the CPU backend compiles without nvcc
MISSING = (
    "nvcc was not found, so g++ alone compiled the file: it accepts code that nvcc, and so "
    "a GPU grading, refuses (a kernel that calls a host function such as std::fill or "
    "qsort), and no kernel's registers are counted"
)
MISSING_NOTE = (
    f"{MISSING}. Install the grader with its nvcc extra (pip install '.[nvcc]' in its "
    "folder, or the wheel's file name followed by [nvcc]; Linux), or the CUDA toolkit."
)


def missing_note() -> str:
    """The note a CPU grading's report carries where no nvcc judges its compiles; ""."""
    return "" if find() else MISSING_NOTE


# NVIDIA's Python wheels of CUDA 13 (the grader's `nvcc` extra) put nvcc, with its headers,
# cicc and ptxas beside it, under a site-packages folder here
WHEEL_NVCC = Path("nvidia", "cu13", "bin", "nvcc")


def _from_wheels() -> str | None:
    """nvcc of NVIDIA's wheels installed for this Python, or None. A system toolkit comes
    first: on a GPU machine it is the one its driver runs."""
    folders = [sysconfig.get_path("purelib"), sysconfig.get_path("platlib")]
    folders += getattr(site, "getsitepackages", list)()
    if site.ENABLE_USER_SITE:
        folders.append(site.getusersitepackages())
    for folder in dict.fromkeys(folders):
        path = Path(folder, WHEEL_NVCC)
        if os.access(path, os.X_OK):
            return str(path)
    return None


@cache
def version() -> str:
    nvcc = find()
    if not nvcc:
        return ""
    try:
        out = subprocess.run([nvcc, "--version"], capture_output=True, text=True).stdout
    except OSError:  # found, then gone or not runnable: no version to tell
        return ""
    match = re.search(r"release ([\d.]+)", out)
    return match.group(1) if match else (out.strip().splitlines() or [""])[-1]


@dataclass
class Inspection:
    compile: CompileInfo
    interface: Interface | None
    diagnostics: list[Diagnostic] = field(default_factory=list)
    source: str = ""  # the text compiled: the submission and the footer
    ptx: str = ""  # what nvcc made of it, for the GPU's census (backends/cuda/census.py)
    # ptxas's cubin of that PTX, which the GPU worker loads: the module PyCUDA's compile
    # (`nvcc --cubin`) makes, section for section, but for the file's path in the line
    # table (tests/test_nvcc.py)
    cubin: bytes = b""


# The folder the nvcc of sandboxed_nvcc may use; compile_folder sets it.
COMPILE_DIR_ENV = "GRADER_COMPILE_DIR"


def sandboxed_nvcc() -> str:
    """An executable that runs nvcc sandboxed as inspect's compiles are, for PyCUDA's
    compiler (what SourceModule runs), which runs nvcc itself: inside compile_folder(),
    the only folder it may use is that one, where PyCUDA writes its copy of the source."""
    placeholder = "@FOLDER@"
    argv = sandbox.sandboxed([find()], placeholder)
    line = " ".join(shlex.quote(a) for a in argv).replace(
        placeholder, f'"${{{COMPILE_DIR_ENV}:?is not set: use nvcc.compile_folder()}}"'
    )
    # the version in the script, and so in its name, which the worker's cubin keys hold
    script = f'#!/bin/sh\n# nvcc {version()}\nexec {line} "$@"\n'
    path = (
        defaults.cache_dir()
        / "nvcc"
        / f"sandboxed-{hashlib.sha256(script.encode()).hexdigest()[:16]}"
    )
    if path.exists():
        build_cache.used(path)  # the worker is about to run it: not evicted meanwhile
    else:
        write_atomically(path, script, mode=0o755)
    return str(path)


@contextmanager
def compile_folder() -> Iterator[str]:
    """A private folder for PyCUDA's compile, removed afterwards: its temporary files go
    there (tempfile.tempdir) and sandboxed_nvcc's compiler may use nothing else."""
    with tempfile.TemporaryDirectory(prefix=scratch.prefix("nvcc")) as folder:
        saved = tempfile.tempdir, os.environ.get(COMPILE_DIR_ENV)
        tempfile.tempdir, os.environ[COMPILE_DIR_ENV] = folder, folder
        try:
            yield folder
        finally:
            tempfile.tempdir = saved[0]
            if saved[1] is None:
                os.environ.pop(COMPILE_DIR_ENV, None)
            else:
                os.environ[COMPILE_DIR_ENV] = saved[1]


def safe_name(name: str) -> str:
    stem = re.sub(r"[^A-Za-z0-9_.-]", "_", Path(name).stem) or "kernel"
    return f"{stem}.cu"


def macro_flags(macros: dict[str, int]) -> list[str]:
    return [f"-D{k}={v}" for k, v in sorted(macros.items())]


def inspect(
    submission: Submission,
    macros: dict[str, int],
    launch_defaults: LaunchDefaults,
    arch: str = defaults.ARCH,
) -> Inspection:
    """Compile with nvcc and read everything the grader needs from the result."""
    source = with_footer(submission, launch_defaults)
    key = _cache_key(source, macros, arch, submission.name)
    with _compiling(key):  # a census build and its plain twin, made at once, share one,
        raw = _cache_load(key)
        if raw is None:
            with tempfile.TemporaryDirectory(prefix=scratch.prefix("nvcc")) as tmp:
                raw = _compile(Path(tmp), submission.name, source, macros, arch)
            if not raw["stopped"]:  # a timeout may not repeat on a quieter machine
                _cache_store(key, raw)
        result = _read(raw, submission.name, arch)  # and one reading of its PTX
    found = footer_errors(result.diagnostics, submission.text, submission.name)
    result.diagnostics = grader_macros(found, submission.text, macros, submission.name)
    result.source = source
    result.ptx = raw["ptx"]
    return result


def _compile(tmp: Path, shown_name: str, source: str, macros, arch: str) -> dict:
    """nvcc's raw products, each program sandboxed: whether it compiled, its log, the PTX
    and ptxas's report. `stopped` says a limit of the sandbox stopped it."""
    nvcc = find()
    name = safe_name(shown_name)
    (tmp / name).write_text(source, encoding="utf-8", errors=SOURCE_ERRORS)
    lean = _lean_flags(tmp, source)
    flags = ["-arch", arch, "-lineinfo", *macro_flags(macros), *lean]
    ptx, deps = tmp / "module.ptx", tmp / "module.d"
    reads = may_read_files(source)
    headers = None if reads else _known_headers(macros, arch, bool(lean))
    listing = ["-MD", "-MF", str(deps)] if headers is None else []
    run = sandbox.run_compiler(
        [nvcc, "-ptx", *flags, *listing, "-o", str(ptx), str(tmp / name)], tmp
    )
    raw = {
        "ok": run.code == 0 and not run.stopped,
        "log": clean_log(run.log, tmp, name, shown_name),
    }
    raw.update(ptx="", ptxas="", deps="", stopped=run.stopped)
    if raw["ok"]:
        raw["ptx"] = ptx.read_text()
        if headers is not None:
            raw["deps"] = _rule(ptx, tmp / name, headers)
        elif deps.exists():
            names = [n for n in libraries.dependencies(deps.read_text()) if n != str(tmp / LEAN)]
            raw["deps"] = _rule(ptx, Path(names[0]), names[1:]) if names else ""
            if not reads:
                _learn_headers(macros, arch, bool(lean), names, tmp / name)
        raw.update(_assembled(tmp, Path(nvcc).with_name("ptxas"), ptx, arch))
    return raw


def _assembled(tmp: Path, ptxas: Path, ptx: Path, arch: str) -> dict:
    """ptxas's report, its cubin (base64) where it made one of at most MODULE_BYTES, and
    `stopped` where a limit of the sandbox stopped it, as for nvcc."""
    cubin = tmp / "module.cubin"
    run = sandbox.run_compiler(
        [str(ptxas), f"-arch={arch}", "-lineinfo", "-v", "-o", str(cubin), str(ptx)], tmp
    )
    size = cubin.stat().st_size if cubin.is_file() else 0
    kept = cubin.read_bytes() if 0 < size <= defaults.MODULE_BYTES else b""
    made = {"ptxas": run.log, "module_bytes": size, "cubin": base64.b64encode(kept).decode()}
    return {**made, "stopped": run.stopped}


# -- a compile without <cmath>'s special functions ----------------------------------------
#
# Included before nvcc's own `-include cuda_runtime.h`: libstdc++'s configuration less the
# special functions (grader.toolchain.special_functions), and what their header would have
# declared besides (std::min, std::numeric_limits), so that a file that names none of them
# compiles to the same PTX with the same messages, in 0.24 s of nvcc -ptx where 0.30.
LEAN = "grader_lean_cmath.h"
_LEAN_HEADER = """\
#if __has_include(<bits/c++config.h>)
#include <bits/c++config.h>
#undef _GLIBCXX_USE_STD_SPEC_FUNCS
#include <bits/stl_algobase.h>
#include <limits>
#include <type_traits>
#endif
"""


def _lean_flags(tmp: Path, source: str) -> list[str]:
    """The flags that compile `source` in `tmp` without the special functions, the header
    written there; none where it names one, or where a comma in the folder's name would
    split -Xcompiler's list."""
    if special_functions.named(source) or "," in str(tmp):
        return []
    (tmp / LEAN).write_text(_LEAN_HEADER)
    return ["-Xcompiler", f"-include,{tmp / LEAN}"]


# -- the dependency list without -MD ----------------------------------------------------
#
# -MD has nvcc preprocess the file a second time, host-side (a sixth of its time). A file
# no directive of which can read a file reads, on that side, only what nvcc's own
# `-include cuda_runtime.h` reads, which nvcc and the flags alone decide: its list is
# another such file's, learnt once from a -MD compile with the same flags.

# What may read a file: a directive that names one, and a test of whether one exists,
# which an `#if` or a macro's definition may hold; `import <x.h>;` under C++20.
_READING_DIRECTIVES = {"include", "include_next", "import", "embed"}
_READING_WORDS = re.compile(r"\b(?:__has_include|__has_include_next|__has_embed|import)\b")


def may_read_files(source: str) -> bool:
    """Whether `source` may have the compiler read a file (#include, #include_next,
    #import, #embed, __has_include), in any spelling the compiler reads (grader.model.lexer)."""
    reads = any(d.name in _READING_DIRECTIVES for d in lexer.directives(source))
    return reads or _READING_WORDS.search(lexer.unquoted(source)) is not None


def _headers_path(macros, arch: str, lean: bool) -> Path:
    blob = json.dumps([find(), version(), sorted(macros.items()), arch, lean, CACHE_VERSION])
    key = hashlib.sha256(blob.encode()).hexdigest()[:32]
    return defaults.cache_dir() / "nvcc" / f"includes-{key}.json"


def _known_headers(macros, arch: str, lean: bool) -> list[str] | None:
    """What a file that reads no file reads with these flags, as -MD wrote it; None until
    a compile has learnt it."""
    path = _headers_path(macros, arch, lean)
    try:
        headers = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    build_cache.used(path)
    return headers


def _learn_headers(macros, arch: str, lean: bool, names: list[str], source: Path) -> None:
    """Keep the files a -MD list `names` after `source`, the compiled file. A list in which
    the library rule finds a library is never kept: it is no file's that reads nothing,
    and kept, it would give every later such file the library's finding."""
    if not names or names[0] != str(source) or libraries.found(names[1:], ()):
        return
    write_atomically(_headers_path(macros, arch, lean), json.dumps(names[1:]))
    build_cache.stored()


def _rule(target: Path, source: Path, headers: list[str]) -> str:
    """A dependency list as -MD writes it."""
    names = [f"{_escaped(target)} : {_escaped(source)}", *map(_escaped, headers)]
    return " \\\n    ".join(names) + "\n"


def _escaped(path: Path | str) -> str:
    return str(path).replace(" ", "\\ ")


def _read(raw: dict, shown_name: str, arch: str) -> Inspection:
    log = raw["log"]
    if raw.get("stopped"):
        message = f"nvcc could not compile {shown_name}: {raw['stopped']}."
        info = CompileInfo(ok=False, log=f"{message}\n{log}".strip(), arch=arch)
        return Inspection(info, None, [Diagnostic(Kind.COMPILE_ERROR, message)])
    if not raw["ok"]:
        return Inspection(
            CompileInfo(ok=False, log=log, arch=arch), None, compile_diagnostics(log, shown_name)
        )
    interface = parse_ptx(raw["ptx"], raw.get("deps", ""))
    too_large = module_size(raw["module_bytes"], interface)
    if too_large:
        return Inspection(CompileInfo(ok=False, log=log, arch=arch), None, [too_large])
    if not raw["cubin"] and _PTXAS_ERROR.search(raw["ptxas"]):  # so no GPU could load it
        log = f"{log}\n{raw['ptxas']}".strip()
        refused = Diagnostic(Kind.COMPILE_ERROR, _unassembled(raw["ptxas"], shown_name))
        return Inspection(CompileInfo(ok=False, log=log, arch=arch), None, [refused])
    resources = parse_ptxas(raw["ptxas"])
    for sig in interface.kernels.values():
        sig.resources = resources.get(sig.symbol, KernelResources())
    kernels = {sig.name: sig.resources for sig in interface.kernels.values()}
    info = CompileInfo(ok=True, log=log, kernels=kernels, arch=arch)
    found = compile_diagnostics(log, shown_name, errors_only=True)
    cubin = base64.b64decode(raw["cubin"])
    return Inspection(info, interface, found, cubin=cubin)


def _unassembled(log: str, shown: str) -> str:
    """Why ptxas made no GPU code of the PTX: its errors, with the kernels' names."""
    errors = [ln.split(":", 1)[-1].strip() for ln in log.splitlines() if _PTXAS_ERROR.search(ln)]
    said = "; ".join(errors)
    symbols = sorted(set(re.findall(r"\b_Z\w+", said)))
    for symbol, text in zip(symbols, demangled(symbols), strict=True):  # one c++filt
        said = said.replace(symbol, text)
    said = re.sub(r"\b0x([0-9a-fA-F]+)\b", lambda m: str(int(m[1], 16)), said)  # bytes
    return _explained(
        f"{shown} compiles to PTX, but ptxas, which turns PTX into the GPU's code, refused "
        f"it: {said}. A GPU could not load this kernel, so neither backend runs it."
    )


_PTXAS_ERROR = re.compile(r"\b(error|fatal)\b")


def clean_log(log: str, tmp: Path, name: str, shown: str) -> str:
    log = log.replace(str(tmp) + os.sep, "").replace(name, shown)
    return "\n".join(line for line in log.splitlines() if line.strip()).strip()


# nvcc's front end writes "file(12): error: ...", its preprocessor (the host compiler's)
# "file:12:3: fatal error: ...".
# Bounded, as the log quotes the student's lines: a line number int() can read, and a few
# words between the severity and the message, so no line is read again from every colon.
_MESSAGE = re.compile(
    r"^(?P<file>.+?)(?:\((?P<line>\d{1,9})\):|:(?P<cline>\d{1,9}):(?:\d+:)?) "
    r"(?:fatal )?(?P<sev>error|warning)\b[^:]{0,100}: (?P<msg>.*)$"
)


# What nvcc says of a kernel launched from device code (without -rdc, which the grader
# never passes): at a `<<<...>>>`, and ptxas at the device runtime's calls spelt out.
_DEVICE_LAUNCH = re.compile(
    r"launch from __device__ or __global__ functions|Unresolved extern function '__cudaCDP"
)
DEVICE_LAUNCH = (
    "A kernel may not launch kernels (dynamic parallelism): the grader launches each of the "
    "lab's kernels itself and times each launch to its end, so work left running after a "
    "kernel returns would be neither timed nor checked. Do the work in the kernel the "
    "grader launches."
)


def compile_diagnostics(log: str, shown: str, errors_only: bool = False) -> list[Diagnostic]:
    """One compile_error diagnostic per distinct error nvcc reported in the student's file;
    a launch from device code says why it is refused."""
    out: list[Diagnostic] = []
    for raw in log.splitlines():
        match = _MESSAGE.match(raw.strip())
        if not match or match["sev"] != "error" or match["file"] != shown:
            continue
        line = int(match["line"] or match["cline"])
        message = _explained(f"{shown}:{line}: {match['msg'].strip()}")
        out.append(Diagnostic(Kind.COMPILE_ERROR, message, line=line))
    if not out and not errors_only:
        first = next((ln for ln in log.splitlines() if "error" in ln.lower()), log[:300])
        message = _explained(f"nvcc could not compile {shown}: {first}")
        out.append(Diagnostic(Kind.COMPILE_ERROR, message))
    return out[: defaults.MAX_COMPILE_ERRORS]


def _explained(message: str) -> str:
    """nvcc's words, ended as a sentence, then why a launch from device code is refused."""
    if not _DEVICE_LAUNCH.search(message):
        return message
    return f"{message.rstrip().rstrip('.')}. {DEVICE_LAUNCH}"


# -- the grader's own macros, defined again ------------------------------------------------


def grader_macros(
    found: list[Diagnostic], source: str, macros: dict[str, int], shown: str
) -> list[Diagnostic]:
    """`found` with every use of a macro the grader sets as a name of the file's own
    explained: a declaration of it (`const int MASK_WIDTH = 3;` reads `const int 5 = 3;`
    to the compiler) replaces the errors on its line, and an unguarded `#define` of another
    value (or `#undef`), which compilers only warn about, becomes an error: the file would
    ignore the value each case sets. Read from the text, so every compiler agrees."""
    out = list(found)
    for directive, name in _redefinitions(lexer.directives(source), macros):
        out.append(_macro_diagnostic(shown, directive.line, name, "#define", directive.rest))
    if not any(d.kind == Kind.COMPILE_ERROR for d in found):
        return out
    # each declaration replaces what was said of its line; the last one said first
    code = lexer.uncommented(source)
    lines = code.split("\n")
    declared: dict[int, Diagnostic] = {}
    for name in macros:
        for at in _declarations(code, name):
            line = line_of(code, at)
            declared.pop(line, None)
            declared[line] = _macro_diagnostic(shown, line, name, "declaration", lines[line - 1])
    out = [*reversed(declared.values()), *(d for d in out if d.line not in declared)]
    return out[: defaults.MAX_COMPILE_ERRORS]


def _redefinitions(
    directives: list[Directive], macros: dict[str, int]
) -> list[tuple[Directive, str]]:
    """Each #define or #undef of a grader macro, with the macro, that the preprocessor
    reaches with the grader's value set: not under `#ifndef NAME` (or `#if
    !defined(NAME)`, or the #else of `#ifdef NAME`), and not the same value again."""
    frames: list[tuple[str | None, bool]] = []  # (macro the branch says is unset, else)
    unset: Counter[str | None] = Counter()  # what the open branches say, kept as they change
    out = []
    for directive in directives:
        word, rest = directive.name, directive.rest.lstrip()
        if word in ("if", "ifdef", "ifndef"):
            frames.append((_unset_if(word, rest), word == "ifdef"))
            unset[_required(frames[-1])] += 1
        elif word in ("else", "elif") and frames:
            unset[_required(frames[-1])] -= 1
            said, flipped = frames[-1]
            frames[-1] = (said, not flipped) if word == "else" else (None, False)
            unset[_required(frames[-1])] += 1
        elif word == "endif" and frames:
            unset[_required(frames.pop())] -= 1
        elif word in ("define", "undef"):
            name = re.match(r"\w*", rest).group(0)
            value = rest[len(name) :].strip()
            if name in macros and not unset[name] and value != str(macros[name]):
                out.append((directive, name))
    return out


def _required(frame: tuple[str | None, bool]) -> str | None:
    """The macro a branch requires to be unset where the preprocessor is now in it."""
    said, flipped = frame
    return said if said and not flipped else None


def _unset_if(word: str, rest: str) -> str | None:
    """The macro a conditional's first branch requires to be undefined (#ifdef: its
    #else)."""
    if word in ("ifdef", "ifndef"):
        return rest.split()[0] if rest.split() else None
    found = re.fullmatch(r"!\s*defined\s*\(?\s*(\w+)\s*\)?", rest.strip())
    return found.group(1) if found else None


_TYPE_WORDS = (
    "static|const|constexpr|volatile|unsigned|signed|short|long|int|size_t|float|double|auto|char"
)


_TYPE_WORD_BEFORE = re.compile(rf"\b(?:{_TYPE_WORDS})\b\s*$")


def _declarations(code: str, name: str) -> list[int]:
    """Where each declaration whose declarator is `name` starts: `const int NAME = 5;` at
    its first type word, `enum { NAME = 5 }` at `enum`. Read back from each use of the
    name, so that no long run of type words is read again from each of its words."""
    found = []
    for use in re.finditer(rf"\b{name}\s*(=|\{{|;|\[|,)", code):
        typed = _type_words_before(code, use.start())
        enum = _enum_around(code, use.start()) if use[1] == "=" else None
        at = typed if typed is not None else enum
        if at is not None:
            found.append(at)
    return found


def _type_words_before(code: str, offset: int) -> int | None:
    """Where the type words just before `offset` start (`const int` of `const int NAME`)."""
    start = None
    while word := _TYPE_WORD_BEFORE.search(code, max(0, offset - 64), offset):
        start = offset = word.start()
    return start


def _enum_around(code: str, offset: int) -> int | None:
    """The `enum` whose braces hold `offset`, with no `}` between its `{` and it."""
    opened, enums = _enum_braces(code)
    inner = bisect.bisect_left(opened, offset) - 1
    if inner < 0 or opened[inner] < last_before(code, "}", offset):
        return None
    return enums[opened[inner]]


@lru_cache(maxsize=4)
def _enum_braces(code: str) -> tuple[list[int], dict[int, int]]:
    """The `{` of each enum, in order, and the first `enum` keyword that opens each."""
    enums: dict[int, int] = {}
    for keyword in re.finditer(r"\benum\b", code):
        brace = next_of(code, ";{", keyword.end())
        if brace >= 0 and code[brace] == "{":
            enums.setdefault(brace, keyword.start())
    return sorted(enums), enums


def _macro_diagnostic(shown: str, line: int, name: str, how: str, text: str) -> Diagnostic:
    """The same sentence for every value the grader sets, so it is said once; `text` is
    the line's, where a value of the file's own is the default to advise."""
    own = re.search(rf"\b{name}\b\s*(?:=\s*)?\(?\s*(\d+)", text)
    default = own.group(1) if own else "5"
    what = (
        f"#defines {name} again, replacing the value the grader sets"
        if how == "#define"
        else f"declares {name}, which the grader sets as a macro: the compiler sees a number "
        "where you wrote the name"
    )
    # a #define compiles (compilers warn), but the file then ignores the lab's value: the
    # file against the lab, as a misnamed __constant__ is; a declaration does not compile
    kind = Kind.INTERFACE if how == "#define" else Kind.COMPILE_ERROR
    return Diagnostic(
        kind,
        f"{shown}:{line}: this line {what} (-D{name}=...). The grader sets {name} for every "
        f"case, and hidden cases use other values: use it as it is, and guard a default for "
        f"your own builds with #ifndef {name} / #define {name} {default} / #endif.",
        line=line,
    )


# -- PTX ----------------------------------------------------------------------------------

_ENTRY = re.compile(r"\.entry\s+(?P<symbol>[\w$]+)\s*\((?P<params>[^)]*)\)(?P<tail>[^{]*)\{")
# counts of at most 18 digits: int() refuses thousands, and no array is larger
_PARAM = re.compile(
    r"\.param\s+(?:\.align\s+\d+\s+)?\.(?P<type>\w+)\s+[\w$]+(?:\[(?P<n>\d{1,18})\])?"
)
_VAR = re.compile(
    r"^\s*(?:\.visible\s+|\.global\s+(?=\.global))?\.(?P<space>const|global)\s+"
    r"(?:\.attribute\(\.managed\)\s+)?(?:\.align\s+\d+\s+)?\.(?P<type>\w+)\s+(?P<name>[\w$]+)(?:\[(?P<n>\d{0,18})\])?"
    r"(?:\s*=\s*\{(?P<init>[^}]*)\})?",
    re.MULTILINE,
)
_TYPE_BYTES = {"8": 1, "16": 2, "32": 4, "64": 8}


def _type_bytes(ptx_type: str) -> int:
    return _TYPE_BYTES.get(re.sub(r"\D", "", ptx_type) or "8", 4)


def parse_ptx(text: str, deps: str = "") -> Interface:
    """What the module offers, read from its PTX without comments or string literals (an
    `asm` statement's comment declares nothing and reads nothing), and the libraries it
    holds, from its names and from `deps`, the compile's dependency list. A copy of what
    the same text gave before: a batch reads the reference's PTX for every submission,
    and parsing it takes longer than the rest of a cached build (0.07 s for conv3d's)."""
    return copy.deepcopy(_parsed_ptx(text, deps))


@lru_cache(maxsize=64)
def _parsed_ptx(text: str, deps: str) -> Interface:
    code = ptx.clean(text)
    interface = Interface()
    symbols = [m["symbol"] for m in _ENTRY.finditer(code)]
    mangled = sorted(set(re.findall(r"\b_Z[\w$]+", code)) | set(symbols))
    texts = dict(zip(mangled, demangled(mangled), strict=True))  # one c++filt for all
    names = {s: _signature(s, texts[s]) for s in symbols}
    interface.libraries = libraries.found(libraries.dependencies(deps), texts.values())
    overloaded = {n for n, k in Counter(n for n, _ in names.values()).items() if k > 1}
    for match in _ENTRY.finditer(code):
        symbol = match["symbol"]
        name, ctypes = names.get(symbol, (symbol, None))
        params = [
            ParamSig(_type_bytes(p["type"]) * int(p["n"] or 1))
            for p in _PARAM.finditer(match["params"])
        ]
        if ctypes is not None and len(ctypes) == len(params):
            for param, ctype in zip(params, ctypes, strict=True):
                param.ctype = canonical_ctype(ctype)
        bounds = re.search(
            r"\.maxntid\s+(\d{1,9})(?:,\s*(\d{1,9}))?(?:,\s*(\d{1,9}))?", match["tail"]
        )
        max_threads = None
        if bounds:
            max_threads = 1
            for dim in bounds.groups():
                max_threads *= int(dim or 1)
        interface.kernels[name] = KernelSig(name, symbol, params, max_threads=max_threads)
    for var in _VAR.finditer(code):
        size = _type_bytes(var["type"]) * int(var["n"] or 1)
        if var["name"] == LAUNCH_SYMBOL:
            words = _words(var["init"] or "", var["type"])
            interface.launch = launch_values(words) if len(words) == len(LAUNCH_MACROS) else {}
            continue
        interface.constants[var["name"]] = ConstantSig(var["name"], size, var["space"])
    _reads(code, interface, overloaded)
    return interface


# -- what each kernel's code reads ----------------------------------------------------------


def _reads(code: str, interface: Interface, overloaded: set[str]) -> None:
    """Which kernels read shared memory and which __constant__ variables, and which use
    atomics, in their own instructions or those of a device function they call (`code`
    is clean PTX: grader.toolchain.ptx says why): the module's word, not the text's. And
    which store only at their thread's element, where one name is one kernel."""
    table = ptx.functions(code)
    constants = {n for n, c in interface.constants.items() if c.space == "const"}
    interface.dynamic_shared = bool(re.search(r"\.extern\s+\.shared\b", code))
    for sig in interface.kernels.values():
        body = [ins for function in ptx.reached(table, sig.symbol) for ins in function.body]
        sig.reads_shared = any(ptx.reads_shared(ins) for ins in body)
        sig.atomics = any(ptx.is_atomic(ins) for ins in body)
        words = {w for ins in body for w in re.findall(r"[\w$]+", ins.operands)}
        sig.reads_constants = frozenset(constants & words)
        if sig.name not in overloaded and sig.symbol in table:
            sig.stores_by_thread = thread_stores.stores_by_thread(table[sig.symbol])


def _words(init: str, ptx_type: str) -> list[int]:
    values = [int(v, 0) for v in re.findall(r"-?(?:0x[0-9a-fA-F]{1,16}|[1-9]\d{0,18}|0)", init)]
    width = _type_bytes(ptx_type)
    if width == 4:
        return values
    data = bytes(v & 0xFF for v in values)
    data += bytes(-len(data) % 4)
    return [int.from_bytes(data[i : i + 4], "little", signed=True) for i in range(0, len(data), 4)]


def demangle(symbols: list[str]) -> dict[str, tuple[str, list[str] | None]]:
    """symbol -> (plain name, parameter C types), with c++filt where it exists."""
    return {s: _signature(s, text) for s, text in zip(symbols, demangled(symbols), strict=True)}


def _signature(symbol: str, text: str) -> tuple[str, list[str] | None]:
    """(plain name, parameter C types) of `symbol`, demangled as `text`."""
    if "(" in text and text.endswith(")"):
        name = text[: text.index("(")].split("::")[-1].strip()
        inner = text[text.index("(") + 1 : -1].strip()
        return name, [] if inner in ("", "void") else _split_params(inner)
    plain = re.match(r"_Z\d+", symbol)
    return (symbol if not plain else _itanium_name(symbol)), None


def demangled(symbols: list[str]) -> list[str]:
    """`symbols` (names the submission chose) as c++filt writes them, sandboxed like a
    compiler; as they are where there is no c++filt."""
    filt = shutil.which("c++filt") or shutil.which("cu++filt")
    if not filt or not symbols:
        return symbols
    with tempfile.TemporaryDirectory(prefix=scratch.prefix("filt")) as tmp:
        run = sandbox.run_compiler([filt], Path(tmp), stdin_text="\n".join(symbols))
    lines = run.log.splitlines()
    return lines if run.code == 0 and len(lines) == len(symbols) else symbols


def _itanium_name(symbol: str) -> str:
    match = re.match(r"_Z(\d{1,9})", symbol)
    length = int(match.group(1))
    return symbol[match.end() : match.end() + length]


def _split_params(inner: str) -> list[str]:
    parts, depth, current = [], 0, ""
    for char in inner:
        if char in "<(":
            depth += 1
        elif char in ">)":
            depth -= 1
        if char == "," and depth == 0:
            parts.append(current.strip())
            current = ""
        else:
            current += char
    parts.append(current.strip())
    return parts


_FUNC = re.compile(r"Function properties for ([\w$]+)")
_FRAME = re.compile(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads")
_USED = re.compile(r"Used (\d+) registers")
_SMEM = re.compile(r"(\d+) bytes smem")
_CMEM = re.compile(r"(\d+) bytes cmem\[0\]")


def parse_ptxas(log: str) -> dict[str, KernelResources]:
    """Per-symbol resources from `ptxas -v`."""
    out: dict[str, KernelResources] = {}
    current: KernelResources | None = None
    for line in log.splitlines():
        if match := re.search(r"Compiling entry function '([\w$]+)'", line):
            current = out.setdefault(match.group(1), KernelResources())
        elif (match := _FUNC.search(line)) and match.group(1) in out:
            current = out[match.group(1)]
        elif current is not None:
            if match := _FRAME.search(line):
                frame, stores, loads = map(int, match.groups())
                current.local_bytes, current.spill_stores, current.spill_loads = (
                    frame,
                    stores,
                    loads,
                )
            if match := _USED.search(line):
                current.registers = int(match.group(1))
                smem = _SMEM.search(line)
                current.shared_bytes = int(smem.group(1)) if smem else 0
                cmem = _CMEM.search(line)
                current.constant_bytes = int(cmem.group(1)) if cmem else 0
    return out


# -- cache --------------------------------------------------------------------------------


# Part of every cache key: raise it when what a compile produces changes (2: sandboxed,
# 4: the dependency list, 5: the cubin).
CACHE_VERSION = 5


_locks: dict[str, threading.Lock] = {}
_locks_lock = threading.Lock()


@contextmanager
def _compiling(key: str) -> Iterator[None]:
    """Held by the one thread of this process that compiles `key`; others wait for it."""
    with _locks_lock:
        lock = _locks.setdefault(key, threading.Lock())
    with lock:
        yield


def _cache_key(source: str, macros, arch: str, shown: str) -> str:
    blob = json.dumps([source, sorted(macros.items()), arch, shown, version(), CACHE_VERSION])
    return hashlib.sha256(blob.encode()).hexdigest()


def _cache_path(key: str) -> Path:
    return defaults.cache_dir() / "nvcc" / f"{key}.json"


def _cache_load(key: str) -> dict | None:
    try:
        found = json.loads(_cache_path(key).read_text())
    except (OSError, ValueError):
        return None
    build_cache.used(_cache_path(key))
    return found


def _cache_store(key: str, raw: dict) -> None:
    write_atomically(_cache_path(key), json.dumps(raw))
    build_cache.stored()
