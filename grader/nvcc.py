"""nvcc without a GPU: compile the submission to PTX and cubin, and read from them the
compiler's messages, the kernels' parameters, the `__constant__` symbols, the launch
macros and each kernel's registers, shared memory and spills.

Both backends use this where nvcc exists: nvcc is the judge of CUDA syntax."""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

from grader import build_cache, defaults
from grader.backends.base import Submission
from grader.interface import ConstantSig, Interface, KernelSig, ParamSig, canonical_ctype
from grader.result import CompileInfo, Diagnostic, KernelResources, Kind
from grader.source import LAUNCH_SYMBOL, launch_values, strip_comments, with_footer


@cache
def find() -> str | None:
    found = shutil.which("nvcc")
    if found:
        return found
    for root in (os.environ.get("CUDA_HOME"), "/usr/local/cuda"):
        if root and Path(root, "bin", "nvcc").exists():
            return str(Path(root, "bin", "nvcc"))
    return None


@cache
def version() -> str:
    nvcc = find()
    if not nvcc:
        return ""
    out = subprocess.run([nvcc, "--version"], capture_output=True, text=True).stdout
    match = re.search(r"release ([\d.]+)", out)
    return match.group(1) if match else out.strip().splitlines()[-1]


@dataclass
class Inspection:
    compile: CompileInfo
    interface: Interface | None
    diagnostics: list[Diagnostic] = field(default_factory=list)
    source: str = ""  # the text compiled: the submission and the footer


def safe_name(name: str) -> str:
    stem = re.sub(r"[^A-Za-z0-9_.-]", "_", Path(name).stem) or "kernel"
    return f"{stem}.cu"


def macro_flags(macros: dict[str, int]) -> list[str]:
    return [f"-D{k}={v}" for k, v in sorted(macros.items())]


def inspect(
    submission: Submission,
    macros: dict[str, int],
    default_block: tuple[int, int, int],
    arch: str = defaults.ARCH,
) -> Inspection:
    """Compile with nvcc and read everything the grader needs from the result."""
    source = with_footer(submission, default_block)
    key = _cache_key(source, macros, arch, submission.name)
    raw = _cache_load(key)
    if raw is None:
        with tempfile.TemporaryDirectory(prefix="grader-nvcc-") as tmp:
            raw = _compile(Path(tmp), submission.name, source, macros, arch)
        _cache_store(key, raw)
    result = _read(raw, submission.name, arch)
    result.diagnostics = grader_macros(result.diagnostics, submission.text, macros, submission.name)
    result.source = source
    return result


def run_compiler(cmd: list[str], cwd: Path, env: dict[str, str] | None = None) -> tuple[int, str]:
    """Run a compiler on student source: its exit code and its messages, or -1 and a
    sentence when it runs past the compile timeout (a template bomb, say)."""
    try:
        proc = subprocess.run(
            cmd,
            cwd=cwd,
            capture_output=True,
            text=True,
            errors="replace",
            timeout=defaults.COMPILE_TIMEOUT,
            env=env,
            stdin=subprocess.DEVNULL,
        )
    except subprocess.TimeoutExpired:
        return -1, f"compilation took longer than {defaults.COMPILE_TIMEOUT:.0f} s and was stopped"
    return proc.returncode, proc.stdout + proc.stderr


def _compile(tmp: Path, shown_name: str, source: str, macros, arch: str) -> dict:
    """nvcc's raw products: whether it compiled, its log, the PTX and ptxas's report."""
    nvcc = find()
    name = safe_name(shown_name)
    (tmp / name).write_text(source)
    flags = ["-arch", arch, "-lineinfo", *macro_flags(macros)]
    code, log = run_compiler([nvcc, "-ptx", *flags, name, "-o", "module.ptx"], tmp)
    raw = {"ok": code == 0, "log": clean_log(log, tmp, name, shown_name), "ptx": "", "ptxas": ""}
    if code == 0:
        raw["ptx"] = (tmp / "module.ptx").read_text()
        ptxas = str(Path(nvcc).with_name("ptxas"))
        ptxas_cmd = [ptxas, f"-arch={arch}", "-v", "module.ptx", "-o", "m.cubin"]
        _, raw["ptxas"] = run_compiler(ptxas_cmd, tmp)
    return raw


def _read(raw: dict, shown_name: str, arch: str) -> Inspection:
    log = raw["log"]
    if not raw["ok"]:
        return Inspection(
            CompileInfo(ok=False, log=log, arch=arch), None, compile_diagnostics(log, shown_name)
        )
    interface = parse_ptx(raw["ptx"])
    resources = parse_ptxas(raw["ptxas"])
    for sig in interface.kernels.values():
        sig.resources = resources.get(sig.symbol, KernelResources())
    kernels = {sig.name: sig.resources for sig in interface.kernels.values()}
    info = CompileInfo(ok=True, log=log, kernels=kernels, arch=arch)
    return Inspection(info, interface, compile_diagnostics(log, shown_name, errors_only=True))


def clean_log(log: str, tmp: Path, name: str, shown: str) -> str:
    log = log.replace(str(tmp) + os.sep, "").replace(name, shown)
    return "\n".join(line for line in log.splitlines() if line.strip()).strip()


_MESSAGE = re.compile(
    r"^(?P<file>.+?)\((?P<line>\d+)\): (?P<sev>error|warning)\b[^:]*: (?P<msg>.*)$"
)


def compile_diagnostics(log: str, shown: str, errors_only: bool = False) -> list[Diagnostic]:
    """One compile_error diagnostic per distinct error nvcc reported in the student's file."""
    out: list[Diagnostic] = []
    for raw in log.splitlines():
        match = _MESSAGE.match(raw.strip())
        if not match or match["sev"] != "error" or match["file"] != shown:
            continue
        out.append(
            Diagnostic(
                Kind.COMPILE_ERROR,
                f"{shown}:{match['line']}: {match['msg'].strip()}",
                line=int(match["line"]),
            )
        )
    if not out and not errors_only:
        first = next((ln for ln in log.splitlines() if "error" in ln.lower()), log[:300])
        out.append(Diagnostic(Kind.COMPILE_ERROR, f"nvcc could not compile {shown}: {first}"))
    return out[: defaults.MAX_COMPILE_ERRORS]


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
    code = strip_comments(source)
    lines = code.splitlines()
    for line, name in _redefinitions(lines, macros):
        out.append(_macro_diagnostic(shown, line, name, "#define", lines))
    if not any(d.kind == Kind.COMPILE_ERROR for d in found):
        return out
    for name in macros:
        for match in re.finditer(_declaring(name), code):
            line = code.count("\n", 0, match.start()) + 1
            out = [d for d in out if d.line != line]
            out.insert(0, _macro_diagnostic(shown, line, name, "declaration", lines))
    return out[: defaults.MAX_COMPILE_ERRORS]


_DIRECTIVE = re.compile(r"^\s*#\s*(\w+)\s*(.*)$")


def _redefinitions(lines: list[str], macros: dict[str, int]) -> list[tuple[int, str]]:
    """(line, name) of each #define or #undef of a grader macro that the preprocessor
    reaches with the grader's value set: not under `#ifndef NAME` (or `#if
    !defined(NAME)`, or the #else of `#ifdef NAME`), and not the same value again."""
    frames: list[tuple[str | None, bool]] = []  # (macro the branch says is unset, else)
    out = []
    for number, text in enumerate(lines, 1):
        match = _DIRECTIVE.match(text)
        if not match:
            continue
        word, rest = match.groups()
        if word in ("if", "ifdef", "ifndef"):
            frames.append((_unset_if(word, rest), word == "ifdef"))
        elif word in ("else", "elif") and frames:
            unset, flipped = frames[-1]
            frames[-1] = (unset, not flipped) if word == "else" else (None, False)
        elif word == "endif" and frames:
            frames.pop()
        elif word in ("define", "undef"):
            name = re.match(r"\w*", rest).group(0)
            unset = {u for u, flipped in frames if u and not flipped}
            value = rest[len(name) :].strip()
            if name in macros and name not in unset and value != str(macros[name]):
                out.append((number, name))
    return out


def _unset_if(word: str, rest: str) -> str | None:
    """The macro a conditional's first branch requires to be undefined."""
    if word == "ifndef":
        return rest.split()[0] if rest.split() else None
    if word == "ifdef":
        return rest.split()[0] if rest.split() else None  # unset in its #else
    found = re.fullmatch(r"!\s*defined\s*\(?\s*(\w+)\s*\)?", rest.strip())
    return found.group(1) if found else None


_TYPE_WORDS = (
    "static|const|constexpr|volatile|unsigned|signed|short|long|int|size_t|float|double|auto|char"
)


def _declaring(name: str) -> str:
    """A declaration whose declarator is `name`: `const int NAME = 5;`, `enum { NAME = 5 }`."""
    typed = rf"(?:\b(?:{_TYPE_WORDS})\b\s*)+\b{name}\s*(?:=|\{{|;|\[|,)"
    enumerated = rf"\benum\b[^;{{]*\{{[^}}]*\b{name}\s*="
    return rf"{typed}|{enumerated}"


def _macro_diagnostic(shown: str, line: int, name: str, how: str, lines: list[str]) -> Diagnostic:
    """The same sentence for every value the grader sets, so it is said once."""
    text = lines[line - 1] if 0 < line <= len(lines) else ""
    own = re.search(rf"\b{name}\b\s*(?:=\s*)?\(?\s*(\d+)", text)
    default = own.group(1) if own else "5"
    what = (
        f"#defines {name} again, replacing the value the grader sets"
        if how == "#define"
        else f"declares {name}, which the grader sets as a macro: the compiler sees a number "
        "where you wrote the name"
    )
    return Diagnostic(
        Kind.COMPILE_ERROR,
        f"{shown}:{line}: this line {what} (-D{name}=...). The grader sets {name} for every "
        f"case, and hidden cases use other values: use it as it is, and guard a default for "
        f"your own builds with #ifndef {name} / #define {name} {default} / #endif.",
        line=line,
    )


# -- PTX ----------------------------------------------------------------------------------

_ENTRY = re.compile(r"\.entry\s+(?P<symbol>[\w$]+)\s*\((?P<params>[^)]*)\)(?P<tail>[^{]*)\{")
_PARAM = re.compile(r"\.param\s+(?:\.align\s+\d+\s+)?\.(?P<type>\w+)\s+[\w$]+(?:\[(?P<n>\d+)\])?")
_VAR = re.compile(
    r"^\s*(?:\.visible\s+|\.global\s+(?=\.global))?\.(?P<space>const|global)\s+"
    r"(?:\.align\s+\d+\s+)?\.(?P<type>\w+)\s+(?P<name>[\w$]+)(?:\[(?P<n>\d*)\])?"
    r"(?:\s*=\s*\{(?P<init>[^}]*)\})?",
    re.MULTILINE,
)
_TYPE_BYTES = {"8": 1, "16": 2, "32": 4, "64": 8}


def _type_bytes(ptx_type: str) -> int:
    return _TYPE_BYTES.get(re.sub(r"\D", "", ptx_type) or "8", 4)


def parse_ptx(ptx: str) -> Interface:
    interface = Interface()
    symbols = [m["symbol"] for m in _ENTRY.finditer(ptx)]
    names = demangle(symbols)
    for match in _ENTRY.finditer(ptx):
        symbol = match["symbol"]
        name, ctypes = names.get(symbol, (symbol, None))
        params = [
            ParamSig(_type_bytes(p["type"]) * int(p["n"] or 1))
            for p in _PARAM.finditer(match["params"])
        ]
        if ctypes is not None and len(ctypes) == len(params):
            for param, ctype in zip(params, ctypes, strict=True):
                param.ctype = canonical_ctype(ctype)
        bounds = re.search(r"\.maxntid\s+(\d+)(?:,\s*(\d+))?(?:,\s*(\d+))?", match["tail"])
        max_threads = None
        if bounds:
            max_threads = 1
            for dim in bounds.groups():
                max_threads *= int(dim or 1)
        interface.kernels[name] = KernelSig(name, symbol, params, max_threads=max_threads)
    for var in _VAR.finditer(ptx):
        size = _type_bytes(var["type"]) * int(var["n"] or 1)
        if var["name"] == LAUNCH_SYMBOL:
            interface.launch = launch_values(_words(var["init"] or "", var["type"]))
            continue
        interface.constants[var["name"]] = ConstantSig(var["name"], size, var["space"])
    return interface


def _words(init: str, ptx_type: str) -> list[int]:
    values = [int(v, 0) for v in re.findall(r"-?(?:0x[0-9a-fA-F]+|\d+)", init)]
    width = _type_bytes(ptx_type)
    if width == 4:
        return values
    data = bytes(v & 0xFF for v in values)
    data += bytes(-len(data) % 4)
    return [int.from_bytes(data[i : i + 4], "little", signed=True) for i in range(0, len(data), 4)]


def demangle(symbols: list[str]) -> dict[str, tuple[str, list[str] | None]]:
    """symbol -> (plain name, parameter C types), with c++filt where it exists."""
    out: dict[str, tuple[str, list[str] | None]] = {}
    filt = shutil.which("c++filt") or shutil.which("cu++filt")
    texts = symbols
    if filt and symbols:
        proc = subprocess.run([filt], input="\n".join(symbols), capture_output=True, text=True)
        if proc.returncode == 0 and len(proc.stdout.splitlines()) == len(symbols):
            texts = proc.stdout.splitlines()
    for symbol, text in zip(symbols, texts, strict=True):
        if "(" in text and text.endswith(")"):
            name = text[: text.index("(")].split("::")[-1].strip()
            inner = text[text.index("(") + 1 : -1].strip()
            ctypes = [] if inner in ("", "void") else _split_params(inner)
            out[symbol] = (name, ctypes)
        else:
            plain = re.match(r"_Z\d+", symbol)
            out[symbol] = (symbol if not plain else _itanium_name(symbol), None)
    return out


def _itanium_name(symbol: str) -> str:
    match = re.match(r"_Z(\d+)", symbol)
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


def _cache_key(source: str, macros, arch: str, shown: str) -> str:
    blob = json.dumps([source, sorted(macros.items()), arch, shown, version()])
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
    path = _cache_path(key)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(f".{os.getpid()}.tmp")
    tmp.write_text(json.dumps(raw))
    tmp.replace(path)
    build_cache.stored()
