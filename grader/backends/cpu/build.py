"""Compiling a submission for the CPU backend.

nvcc, where it exists, judges the CUDA first and provides the interface. The text then
compiled here is the submission, the grader's launch footer, and a registration footer
naming each kernel and variable, with the `__shared__` declarations rewritten (scan.py)
and every line kept where it was. The system C++ compiler turns it into a shared library,
cached by a hash of everything that goes into it."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import shutil
import tempfile
from dataclasses import dataclass, field, replace
from pathlib import Path

from grader import defaults
from grader.ahead import in_background
from grader.backends.cpu import runner, scan, shim
from grader.backends.cpu.describe import Variable, describe
from grader.backends.cpu.elf import Elf, ElfError
from grader.model import lexer
from grader.model.interface import Interface, LaunchDefaults, module_size
from grader.model.launch import Build
from grader.model.lexer import line_of
from grader.model.result import CompileInfo, Diagnostic, KernelResources, Kind
from grader.model.source import (
    LAUNCH_SYMBOL,
    SOURCE_ERRORS,
    Submission,
    last_line,
    left_open,
    open_at_end,
    with_footer,
)
from grader.toolchain import build_cache, cxx, libraries, nvcc, sandbox

ARCH = "cpu"
# Part of every build's cache key: raise it when what a build produces changes (4: the
# dependency list; 5: a census module's atomic builtins that call no hook are refused;
# 6: only a memory builtin of constant size is; 8: every module's copies are the runner's).
CACHE_VERSION = 8
_IDENT = re.compile(r"[A-Za-z_]\w*")


@dataclass
class Artifact:
    """What `run` needs of a build: the module, the name its source had when compiled
    (addr2line reports that name), each kernel's parameter type codes, each variable,
    whether the module uses float atomics (describe.Description.float_atomics), and the
    kernels nvcc's PTX shows to store only at their thread's element (thread_stores)."""

    module: Path
    source_name: str
    codes: dict[str, list[int]] = field(default_factory=dict)
    variables: dict[str, Variable] = field(default_factory=dict)
    dropped: dict[str, str] = field(default_factory=dict)  # kernel -> why not registered
    text: str = ""  # the submission, for what its text says around a finding's line
    float_atomics: bool = False
    census: bool = False  # built to count its shared-memory loads (runtime/counts.cpp)
    stores_by_thread: dict[str, dict[int, int]] = field(default_factory=dict)

    def carried(self) -> dict[str, Variable]:
        """The variables a launch's kernels share: writable __device__ (and __managed__)
        ones. A name that is no identifier is no registration's, and could not name a file."""
        return {
            name: var
            for name, var in self.variables.items()
            if var.space == "global" and var.writable and name.isidentifier()
        }


@dataclass
class Compiled:
    ok: bool
    log: str
    diagnostics: list[Diagnostic]
    module: Path | None
    dropped: dict[str, str]
    stopped: bool = False  # by a limit of the sandbox: not cached, it may not repeat
    deps: str = ""  # the compiler's dependency list (-MD): every header it read
    refused: bool = False  # the text would hide accesses from the hooks (Build.refused)


def build(
    submission: Submission,
    macros: dict[str, int],
    launch_defaults: LaunchDefaults,
    census: bool = False,
    overlap: bool = False,
) -> Build:
    """With `census`, the module counts the shared-memory loads it executes (a call before
    every load), which costs time: only for labs whose rules ask. With `overlap` (a core
    to spare), the C++ compile starts while nvcc runs, registering what the text declares;
    it is compiled again in the rare case that nvcc finds a kernel or variable more."""
    source = with_footer(submission, launch_defaults)
    # a function no backend runs is neither compiled nor refused here (a GPU ignores it)
    ran = scan.without_host_functions(source)
    prepared, shared = scan.rewrite_static_shared(scan.rewrite_dynamic_shared(ran))
    problems = scan.unsupported(scan.without_host_functions(submission.text))
    # a thread spinning on a plain load is seen only by the load hooks: a census module's
    hooked = census or scan.needs_load_hooks(submission.text)
    guess, early = None, None
    if overlap and nvcc.find() and not problems:
        guess = scan.registration_entries(*_declarations(source, None), len(shared))
        early = in_background(lambda: _compile(prepared, guess, macros, submission.name, hooked))
    try:
        inspection = nvcc.inspect(submission, macros, launch_defaults) if nvcc.find() else None
        if inspection is not None and not inspection.compile.ok:
            return Build(submission, macros, inspection.compile, None, inspection.diagnostics)
        if problems:
            diags = [
                Diagnostic(Kind.COMPILE_ERROR, p.sentence, line=p.line, refused=p.refused)
                for p in problems
            ]
            return _failed(submission, macros, diags)
        entries = scan.registration_entries(*_declarations(source, inspection), len(shared))
        if early is not None and entries == guess:
            compiled = early.result()
        else:
            compiled = _compile(prepared, entries, macros, submission.name, hooked)
    finally:
        if early is not None:  # never left running: its compiler writes into the build cache
            early.exception()
    if not compiled.ok:
        if inspection is not None and not compiled.refused:
            for d in compiled.diagnostics:
                d.message = f"nvcc compiles this file, but the CPU backend does not: {d.message}"
        found = compiled.diagnostics
        if inspection is None:
            found = _footer_reached(found, compiled.log, submission)
            found = nvcc.grader_macros(found, submission.text, macros, submission.name)
        return _failed(submission, macros, found, compiled.log, compiled.refused)
    missing = _undefined(compiled.module, source, submission.name)
    if missing:
        return _failed(submission, macros, missing)
    own = describe(compiled.module)
    if inspection is None:  # nvcc's compile, where there is one, said which it read
        own.interface.libraries = _libraries(compiled)
    artifact = Artifact(
        compiled.module,
        nvcc.safe_name(submission.name),
        own.codes,
        own.variables,
        compiled.dropped,
        submission.text,
        own.float_atomics,
        census,
    )
    if inspection is not None:
        artifact.stores_by_thread = {
            name: sig.stores_by_thread
            for name, sig in inspection.interface.kernels.items()
            if sig.stores_by_thread is not None
        }
        return Build(
            submission,
            macros,
            inspection.compile,
            _merge(inspection.interface, own.interface),
            list(inspection.diagnostics),
            artifact,
        )
    kernels = {n: k.resources or KernelResources() for n, k in own.interface.kernels.items()}
    info = CompileInfo(ok=True, log=compiled.log, kernels=kernels, arch=ARCH)
    found = nvcc.grader_macros([], submission.text, macros, submission.name)
    return Build(submission, macros, info, own.interface, found, artifact)


def _failed(
    submission: Submission, macros, diags: list[Diagnostic], log: str = "", refused: bool = False
) -> Build:
    info = CompileInfo(ok=False, log=log or "\n".join(d.message for d in diags), arch=ARCH)
    marked = [replace(d, refused=refused or d.refused) for d in diags]
    return Build(submission, macros, info, None, marked)


# What the runner gives the module; any other unversioned symbol is defined nowhere.
RUNTIME_SYMBOLS = frozenset(
    {
        "threadIdx", "blockIdx", "blockDim", "gridDim", "grader_rt_loop_stop",
        "grader_rt_float_atomics", "grader_rt_barrier", "grader_rt_warp", "grader_rt_loop_exit",
        "grader_rt_dynamic_shared", "grader_rt_static_shared", "grader_rt_active_mask",
        "grader_rt_trap", "grader_rt_clock64", "grader_device_printf",
        # counts.cpp: what a kernel executed (a kernel that calls them itself forges
        # nothing the rules would not take from one real load or atomic)
        "__grader_rt_atomic", "__asan_handle_no_return", "__asan_before_dynamic_init",
        "__asan_after_dynamic_init",
        *(f"__asan_{op}{n}_noabort" for op in ("load", "store") for n in (1, 2, 4, 8, 16, "N")),
        # an inline check's call, into an output (stores.cpp)
        *(f"__asan_report_store{n}_noabort" for n in (1, 2, 4, 8, 16, "_n")),
        # a census module's hooks where g++ built it (shim.py), atomics.cpp's operations,
        # copies.cpp's copies
        "__wrap_memcpy", "__wrap_memmove", "__wrap_memset",
        "__tsan_init", "__tsan_read_range", "__tsan_write_range", "__tsan_vptr_update",
        "__tsan_atomic_thread_fence", "__tsan_atomic_signal_fence",
        *(f"__tsan_{op}{n}" for op in ("read", "write") for n in (1, 2, 4, 8, 16)),
        *(f"__tsan_atomic{bits}_{op}" for bits in (8, 16, 32, 64) for op in (
            "load", "store", "exchange", "fetch_add", "fetch_sub", "fetch_and", "fetch_or",
            "fetch_xor", "fetch_nand", "compare_exchange_strong", "compare_exchange_weak")),
    }
)  # fmt: skip


def _undefined(module: Path, source: str, shown: str) -> list[Diagnostic]:
    """A compile error for each function or variable the file declares, uses and never
    defines (the module would not load)."""
    names = [n for n in Elf(module).undefined() if n not in RUNTIME_SYMBOLS]
    code = lexer.code(source) if names else ""
    out = []
    for name in names[: defaults.MAX_COMPILE_ERRORS]:  # each is looked for in the whole text
        readable = _demangle(name)
        plain = re.split(r"[(<]", readable)[0].split("::")[-1].strip()
        match = re.search(rf"\b{re.escape(plain)}\b", code) if plain else None
        line = line_of(code, match.start()) if match else None
        where = f"{shown}:{line}: " if line else ""
        message = f"{where}{readable} is declared and used, but never defined."
        out.append(Diagnostic(Kind.COMPILE_ERROR, message, line=line))
    return out


def _libraries(compiled: Compiled) -> dict[str, str]:
    """The CUDA libraries the module holds: the headers the compile read, and the names
    the module defines or uses (grader.toolchain.libraries)."""
    names = sorted(Elf(compiled.module).symbols)
    mangled = [n for n in names if n.startswith("_Z")]
    plain = [n for n in names if not n.startswith("_Z")]
    return libraries.found(libraries.dependencies(compiled.deps), nvcc.demangled(mangled) + plain)


def _demangle(symbol: str) -> str:
    return nvcc.demangled([symbol])[0] if symbol.startswith("_Z") else symbol


def _declarations(source: str, inspection) -> tuple[list, list]:
    kernels = scan.kernels(source)
    variables = [v for v in scan.variables(source) if v.name != LAUNCH_SYMBOL]
    if inspection is not None and inspection.interface is not None:
        # nvcc saw the kernels for certain; add any the text scan missed.
        known = {k.name for k in kernels}
        for name in inspection.interface.kernels:
            if _IDENT.fullmatch(name) and name not in known:
                kernels.append(scan.KernelDecl(name, 0, None, False))
        known = {v.name for v in variables}
        for name, const in inspection.interface.constants.items():
            if _IDENT.fullmatch(name) and name not in known and name != LAUNCH_SYMBOL:
                variables.append(scan.VariableDecl(name, name, const.space, 0))
    return kernels, variables


def _merge(theirs: Interface, ours: Interface) -> Interface:
    """nvcc's interface, with the C types it could not demangle (extern "C" kernels)
    taken from the registration."""
    for name, sig in theirs.kernels.items():
        mine = ours.kernels.get(name)
        if mine is None or len(mine.params) != len(sig.params):
            continue
        for param, own in zip(sig.params, mine.params, strict=True):
            if param.ctype is None:
                param.ctype = own.ctype
    return theirs


# -- compiling, with a cache ----------------------------------------------------------------


def _compile(
    text: str, entries: list[str], macros: dict[str, int], shown: str, census: bool
) -> Compiled:
    compiler = cxx.compiler()
    flags = shim.module_flags(census)
    name = nvcc.safe_name(shown)
    key = hashlib.sha256(
        json.dumps(
            [
                text,
                entries,
                sorted(macros.items()),
                compiler.version,
                runner.runtime_hash(),
                flags,
                defaults.ARCH,
                name,
                shown,
                CACHE_VERSION,
            ]
        ).encode()
    ).hexdigest()[:32]
    folder = defaults.cache_dir() / "cpu" / f"mod-{key}"
    cached = _load(folder)
    if cached is not None:
        build_cache.used(folder)
        return cached
    folder.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="grader-cc-", dir=folder.parent) as tmp:
        result = _compile_in(Path(tmp), text, entries, macros, name, shown, census)
        if result.stopped:
            return result
        if result.module is not None:
            refused = _refused(result.module)
            if refused:  # stored as a failure: no module in the cache
                result = Compiled(False, result.log, [refused], None, result.dropped)
        staged = Path(tmp) / "staged"
        staged.mkdir()
        if result.module is not None:
            shutil.move(str(result.module), staged / "module.so")
            result.module = folder / "module.so"
        meta = {
            "ok": result.ok,
            "log": result.log,
            "diagnostics": [d.to_json() for d in result.diagnostics],
            "dropped": result.dropped,
            "deps": result.deps,
            "refused": result.refused,
        }
        (staged / "meta.json").write_text(json.dumps(meta))
        with contextlib.suppress(OSError):  # another process stored the same build first
            os.replace(staged, folder)
    build_cache.stored()
    return result


def _load(folder: Path) -> Compiled | None:
    try:
        meta = json.loads((folder / "meta.json").read_text())
    except (OSError, ValueError):
        return None
    module = folder / "module.so"
    if meta["ok"] and not module.exists():
        return None
    return Compiled(
        meta["ok"],
        meta["log"],
        [Diagnostic.from_json(d) for d in meta["diagnostics"]],
        module if meta["ok"] else None,
        meta["dropped"],
        deps=meta.get("deps", ""),
        refused=meta.get("refused", False),
    )


def _refused(module: Path) -> Diagnostic | None:
    """Why a module that compiled is not graded: one larger than a module may be, or one
    the grader cannot read (the submission's inline assembly, or its own grader_ names),
    so that what reads it later (describe, _undefined) never fails."""
    try:
        Elf(module).undefined()
        return module_size(module.stat().st_size, describe(module).interface)
    except ElfError as error:
        return Diagnostic(Kind.COMPILE_ERROR, str(error))


def _compile_in(
    tmp: Path, text: str, entries: list[str], macros, name: str, shown: str, census: bool
) -> Compiled:
    entries = list(entries)
    dropped: dict[str, str] = {}
    flags = (*shim.module_flags(census), *shim.folder_flags(tmp, census))
    forced, reads = shim.shim_include(census, text)
    for _ in range(3):
        source = text + scan.registration(entries)
        (tmp / name).write_text(source, encoding="utf-8", errors=SOURCE_ERRORS)
        cmd = [
            cxx.compiler().path,
            *flags,
            *forced,
            *nvcc.macro_flags(macros),
            "-MD", "-MF", str(tmp / "module.d"),
            "-o", str(tmp / "module.so"),
            "-x", "c++", str(tmp / name),
        ]  # fmt: skip
        run = sandbox.run_compiler(cmd, tmp, reads=reads)
        if run.stopped:
            message = f"The CPU backend could not compile {shown}: {run.stopped}."
            diags = [Diagnostic(Kind.COMPILE_ERROR, message)]
            return Compiled(False, message, diags, None, {}, stopped=True)
        code, log = run.code, run.log
        log = _clean(log, tmp, name, shown)
        unhooked = _unhooked(tmp, source, name, shown) if code == 0 and census else []
        if unhooked:
            return Compiled(False, log, unhooked, None, dropped, refused=True)
        if code == 0:
            deps = (tmp / "module.d").read_text() if (tmp / "module.d").exists() else ""
            return Compiled(True, log, [], tmp / "module.so", dropped, deps=deps)
        errors = _errors(log, shown)
        poisoned = [e for e in errors if POISONED_ERROR.match(e.message)]
        if poisoned:
            said = {d.message: d for d in map(_unwatchable, poisoned)}  # once a line
            refusals = list(said.values())
            return Compiled(False, log, refusals, None, dropped, refused=True)
        bad = _registration_errors(log)
        if any(e.line for e in errors if e.line is not None) or not bad:
            return Compiled(False, log, errors or [_generic(log, shown)], None, dropped)
        # Only the registration failed (an overloaded kernel name, say): leave those
        # entries out and say why if the lab asks for one of them.
        for index in sorted(bad, reverse=True):
            if 0 <= index < len(entries):
                entry = entries.pop(index)
                match = re.match(r"__GRADER_(?:KERNEL|VARIABLE)\((\w+)", entry)
                if match:
                    dropped[match.group(1)] = bad[index]
    return Compiled(False, log, [_generic(log, shown)], None, dropped)


def _unhooked(tmp: Path, text: str, name: str, shown: str) -> list[Diagnostic]:
    """A compile error for each access of a census module that calls no hook, which would
    be missing from what the kernel is measured by, as if it had not been made: an atomic
    or memory builtin the thread sanitizer's pass left as it was (shim.unhooked_calls),
    and a function of the C library that reads or writes memory (shim.unwrapped_copies:
    __real_memcpy, where memcpy is the runner's)."""
    try:
        dump = (tmp / shim.TSAN_DUMP).read_text(errors="replace")
        imports = Elf(tmp / "module.so").imports()
    except (OSError, ElfError):
        return []
    out = []
    found = dict.fromkeys(shim.unhooked_calls(dump))  # a kernel has a copy in its loop
    for file, line, call in list(found)[: defaults.MAX_COMPILE_ERRORS]:
        own = file in (name, str(tmp / name)) and line > 0
        where = f"{shown}:{line}: " if own else ""
        header = Path(file).name or "a header"
        inlined = "" if own else f" (inlined from {header} into {shown})"
        out.append(
            Diagnostic(
                Kind.COMPILE_ERROR, where + _unseen(call, inlined), line=line if own else None
            )
        )
    for library in shim.unwrapped_copies(imports)[: defaults.MAX_COMPILE_ERRORS - len(out)]:
        out.append(_unwrapped(library, text, shown))
    return out


# g++'s error for a name the shim poisons (grader_cuda.h): an attribute that would take a
# function out of the sanitizer's hooks; `_errors` has put the file and line first
POISONED_ERROR = re.compile(r'^(?P<where>.*?:\d+: )attempt to use poisoned "(?P<name>\w+)"')


def _unwatchable(error: Diagnostic) -> Diagnostic:
    """The sentence for a poisoned name: what the attribute would hide, and what to do."""
    match = POISONED_ERROR.match(error.message)
    where, name = (match["where"], match["name"]) if match else ("", "the attribute")
    message = (
        f"{where}{name} would take the kernel out of the grader's sight of its loads and "
        "stores, which it checks and counts on every backend (races, bounds, the memory "
        "profile). Remove the attribute: nvcc ignores it anyway."
    )
    return replace(error, message=message)


def _unseen(call: str, inlined: str) -> str:
    """Why the builtin `call` is refused, a sentence."""
    if call.startswith("__builtin_"):
        plain = call.removeprefix("__builtin_").strip("_").removesuffix("_chk")
        return (
            f"{call}{inlined} is a copy g++ makes with moves the CPU backend cannot see. "
            f"Call {plain}, whose every byte it counts as a GPU reads it: a device memcpy "
            "is a loop of byte loads."
        )
    return (
        f"an atomic builtin ({call}){inlined} is given a memory order that C++ does not "
        "have, and g++ makes it an access the CPU backend cannot see. Give it one of the "
        "__ATOMIC_ orders, or use CUDA's atomic functions: nvcc compiles no GNU atomic "
        "builtin in a kernel."
    )


def _unwrapped(library: str, text: str, shown: str) -> Diagnostic:
    """The C library's function `library`, which a census module imports, refused with
    the line where the file names it (__real_memcpy, where plain memcpy is the runner's)."""
    code = lexer.code(text)
    match = re.search(rf"\b__real_{re.escape(library)}\b", code) or re.search(
        rf"\b{re.escape(library)}\b", code
    )
    line = line_of(code, match.start()) if match else None
    where = f"{shown}:{line}: " if line else ""
    what = "the memory it reads or writes"
    if library.startswith("dl"):
        what = f"what the functions it finds with {library} read or write"
    message = (
        f"{where}the kernel calls the C library's {library} itself, where the CPU backend "
        f"cannot count {what} (it counts every byte of memcpy, memmove and memset through "
        "its own). Read memory with loads, or with memcpy: nvcc compiles no other of the "
        "C library's memory functions in a kernel."
    )
    return Diagnostic(Kind.COMPILE_ERROR, message, line=line)


def _clean(log: str, tmp: Path, name: str, shown: str) -> str:
    log = log.replace(str(tmp) + os.sep, "").replace(str(shim.INCLUDE) + os.sep, "<cuda shim>/")
    if name != shown:
        log = re.sub(rf"(?m)^{re.escape(name)}:", lambda _: f"{shown}:", log)  # \ as is
    return log.strip()


# a line number of at most 9 digits: int() refuses thousands, and a log quotes the student
_MESSAGE = re.compile(
    r"^(?P<file>[^:\n]+):(?P<line>\d{1,9}):(?:\d+:)? (?P<sev>fatal error|error): (?P<msg>.*)$",
    re.MULTILINE,
)


def _errors(log: str, shown: str) -> list[Diagnostic]:
    """One compile_error per error g++ reported on a line of the student's file."""
    out: list[Diagnostic] = []
    for match in _MESSAGE.finditer(log):
        if match["file"] != shown:
            continue
        line = int(match["line"])
        out.append(
            Diagnostic(Kind.COMPILE_ERROR, f"{shown}:{line}: {match['msg'].strip()}", line=line)
        )
    return out[: defaults.MAX_COMPILE_ERRORS]


def _footer_reached(found: list[Diagnostic], log: str, submission: Submission) -> list[Diagnostic]:
    """`found`, or the one error that explains them where g++ failed in the footer (an
    error on a line past the student's last, or in what a line there includes)."""
    shown, last = submission.name, last_line(submission.text)
    places = rf"^(?:In file included from )?{re.escape(shown)}:(\d{{1,9}})[:,]"
    if not any(int(m.group(1)) > last for m in re.finditer(places, log, re.MULTILINE)):
        return found
    if open_at_end(submission.text) is None and any(d.line <= last for d in _errors(log, shown)):
        return found  # the errors on the student's lines say it
    return [left_open(submission.text, shown)]


def _registration_errors(log: str) -> dict[int, str]:
    """Registration entries the compiler rejected (index -> its first error). Errors in
    the footer's macros are reported inside the shim, with a note naming the footer line."""
    out: dict[int, str] = {}
    first_error = next((m["msg"].strip() for m in _MESSAGE.finditer(log)), "")
    pattern = rf"^{re.escape(scan.REGISTRATION_FILE)}:(\d{{1,9}}):"
    for match in re.finditer(pattern, log, re.MULTILINE):
        out.setdefault(int(match.group(1)) - 1, first_error)
    return out


def _generic(log: str, shown: str) -> Diagnostic:
    """An error whose line is not in the student's file (inside the CUDA shim, say): name
    the first line of the student's file the log mentions."""
    first = next((m for m in _MESSAGE.finditer(log)), None)
    mention = re.search(rf"^{re.escape(shown)}:(\d{{1,9}}):", log, re.MULTILINE)
    line = int(mention.group(1)) if mention else None
    detail = first["msg"].strip() if first else (log.strip().splitlines() or ["no message"])[-1]
    where = f" (from line {line})" if line else ""
    return Diagnostic(
        Kind.COMPILE_ERROR, f"The CPU backend could not compile {shown}{where}: {detail}", line=line
    )
