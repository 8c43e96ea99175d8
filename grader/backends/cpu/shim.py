"""The CUDA shim (runtime/include) a submission's module is compiled against on the CPU
backend, the flags of that compile, and the shim as a precompiled header (one for census
modules, one for the others), each built once per machine and cached under
`grader.defaults.cache_dir()/cpu/shim-HASH/`, HASH covering the runtime
(runner.runtime_hash) and the flags it was built with."""

from __future__ import annotations

import hashlib
import json
import os
import platform
import re
import resource
import subprocess
import tempfile
from functools import cache
from pathlib import Path

from grader import defaults
from grader.backends.cpu import runner
from grader.toolchain import cxx, special_functions

INCLUDE = runner.RUNTIME / "include"
SHIM = "grader_cuda.h"
# The shim less <cmath>'s special functions, which a module is compiled against (and which
# is precompiled) unless its file names one of them (toolchain.special_functions).
LEAN = "grader_lean.h"
# The student's module: optimised like nvcc's host side, with the line tables addr2line
# needs, frame pointers for finding the kernel's frame from a library function, no
# assumption that loops end (a hung kernel must hang here too), and no errno from maths.
# Hidden symbols without interposition let the kernel be inlined into the loop that
# runs a block's threads (only the registration's grader_* symbols are exported). Every
# module assumes strict aliasing, as nvcc's device code does (type-based alias analysis),
# so that a census case and the other cases run one compile's code: without it g++
# reloads `row_ptr[row + 1]` on every trip of a loop that stores a float (spmv-csr/wrong/
# adds_into_y.cu: 8.89 sectors a load request where Nsight Compute counts 9.94; 10.04
# with it), and `blockDim.x` on every thread of a block's loop (saxpy on one core, bench/
# cpu_backend.py: 3.16-3.25x plain C++ -> 2.94-3.04x).
MODULE_FLAGS = (
    "-std=gnu++17",
    "-O2",
    "-g",
    # lines and inlined frames for addr2line, without the variables' locations, which
    # nothing reads: 9% of g++'s CPU a module (conv2d's reference, 0.157 -> 0.142 CPU-s)
    "-fno-var-tracking",
    "-fPIC",
    "-shared",
    "-fvisibility=hidden",
    "-fno-semantic-interposition",
    "-fstrict-aliasing",
    "-fno-omit-frame-pointer",
    "-fno-math-errno",
    "-fno-finite-loops",
    "-w",
    "-Wl,-z,now",
    # the module needs only the libraries it takes a name from: g++ drops its default
    # --as-needed where a sanitizer is given, and ld then takes twice as long (the conv2d
    # reference's link: 0.057 -> 0.025 CPU-s), for libraries the runner has loaded anyway
    "-Wl,--as-needed",
    # calls into the runner (a store hook before every store) go through the GOT, not a
    # PLT stub: the matmul-tiled reference's Width-517 launch 1.33 s -> 1.15 s
    "-fno-plt",
    # printf is the runner's by assembler name (include/grader_cuda.h): no call of it may
    # become puts, or __printf_chk under _FORTIFY_SOURCE
    "-fno-builtin-printf",
    "-U_FORTIFY_SOURCE",
)
# An integer division by zero traps on x86-64 but silently gives 0 on aarch64; there the
# compiler inserts a trap before each division, which the runner reports as one.
if platform.machine().lower() in ("aarch64", "arm64"):
    MODULE_FLAGS += ("-fsanitize=integer-divide-by-zero", "-fsanitize-undefined-trap-on-error")


def _cpu_has(*features: str) -> bool:
    """Whether this machine's processors have every one of `features`: the first
    processor's flags in /proc/cpuinfo, read no further."""
    try:
        with open("/proc/cpuinfo", errors="replace") as info:
            flags = next((line for line in info if line.startswith("flags")), "")
    except OSError:
        return False
    return set(features) <= set(flags.partition(":")[2].split())


# On x86-64 with FMA3 (every such processor since 2013), fmaf() is one instruction rather
# than a call of libm's: the conv and matmul references call it in their inner loops (the
# matmul-tiled reference's Width-517 launch 0.89 s -> 0.58 s). No other product and sum is
# fused, so every value a module computes stays what it was.
if platform.machine().lower() in ("x86_64", "amd64") and _cpu_has("fma", "avx"):
    MODULE_FLAGS += ("-mfma", "-ffp-contract=off")
# CUDA's macro for the architecture nvcc targets, which a module is compiled for.
ARCH_MACRO = f"-D__CUDA_ARCH__={defaults.ARCH.removeprefix('sm_')}0"
# Every module calls the runner's __asan_storeN_noabort before each store it makes
# (runtime/stores.cpp: which block stored each output element); nothing else of a
# sanitizer (no red zones).
_HOOK_FLAGS = {
    "g++": ("-fsanitize=kernel-address",
            "--param", "asan-instrumentation-with-call-threshold=0",
            "--param", "asan-stack=0", "--param", "asan-globals=0"),
    "clang++": ("-fsanitize=kernel-address",
                "-mllvm", "-asan-instrumentation-with-call-threshold=0",
                "-mllvm", "-asan-stack=0", "-mllvm", "-asan-globals=0"),
}  # fmt: skip
# On x86-64, g++'s module checks each store inline instead (_shadow_fits): it reads the
# byte of the runner's shadow at (address >> 3) + SHADOW_OFFSET, and calls
# __asan_report_storeN_noabort only where it is not 0, in the granules of the outputs the
# pass watches (runtime/stores.cpp). The stores of shared memory, the stack and local
# arrays call nothing (the matmul-tiled reference's Width-517 launch, one pool thread:
# 0.83-0.85 s -> 0.24-0.25 s a pass); a barrier-free kernel's stores into its outputs
# still call.
SHADOW_OFFSET = 0x7FFF8000  # runtime/stores.cpp's
_INLINE_HOOKS = (
    "-fsanitize=kernel-address",
    f"-fasan-shadow-offset={SHADOW_OFFSET:#x}",
    "--param", f"asan-instrumentation-with-call-threshold={1 << 30}",
    "--param", "asan-stack=0", "--param", "asan-globals=0",
)  # fmt: skip


# Stores of an if and its else into the same place stay in their branches, so that a
# fault names the store's own line, not the line after the if (gcc sinks them into one;
# clang's equivalent is left as it is, untried).
_OWN_LINES = {"g++": ("-fno-tree-cselim",), "clang++": ()}
# A frame larger than a page (a local array of 160 KB) touches each page as it grows, so
# that it meets the fiber's guard page: without nvcc to refuse it, such an array once
# reached past the guard into other memory, and the report blamed a store past the end of
# M (g++; clang's, from clang 11, is left as it is, untried).
_STACK_PROBES = {"g++": ("-fstack-clash-protection",), "clang++": ()}
_NO_LOAD_HOOKS = {
    "g++": ("--param", "asan-instrument-reads=0"),
    "clang++": ("-mllvm", "-asan-instrument-reads=0"),
}
# A census module calls a hook before every load and every store, once each (runtime/
# counts.cpp, stores.cpp). Built by g++, with -fsanitize=thread's instrumentation: its
# address sanitizer checks an address once in a basic block, load or store alike (asan.cc,
# has_mem_ref_been_instrumented), so the store of a read-modify-write (bins[v]++,
# sdata[t] += sdata[t + s]) had no hook, where the thread sanitizer's pass hooks each
# access (__tsan_readN, __tsan_writeN) and makes each atomic builtin a call
# (runtime/atomics.cpp). The runner defines every one of them: no libtsan is linked
# (folder_flags), and nothing is called at a function's entry and exit. The pass hooks
# no copy of the C library's: memcpy, memmove and memset are no builtins here, so that g++
# makes none of constant size moves after the pass, and each call is the runner's
# (runtime/copies.cpp: folder_flags wraps them). clang++'s equivalent is left as it is,
# untried.
_COPIES = ("memcpy", "memmove", "memset")
_WRAPPED = "-Wl," + ",".join(f"--wrap={name}" for name in _COPIES)
# Any other module's copies are the runner's too: one of a size known only at run time is
# a call, past the store hooks, so two blocks updating an output element through memcpy
# went unseen outside the census case (histogram: bins[v] read and written with memcpy
# passed two public cases that bins[v]++ fails). Each byte a copy stores is checked as a
# store (runtime/copies.cpp); the loads it reads count only where a pass counts loads.
_CENSUS_HOOKS = {
    "g++": (
        "-fsanitize=thread",
        "--param",
        "tsan-instrument-func-entry-exit=0",
        *(f"-fno-builtin-{name}" for name in _COPIES),
    ),
    "clang++": _HOOK_FLAGS["clang++"],
}
# A census module's accesses make a profile's warp-level requests (runtime/profile.cpp),
# each one instruction's, as wide as the kernel's: a copy of an instruction in each path
# through a branch before it (gcc's jump threading) would split the requests of a warp
# whose lanes took both paths, and a float4 copied member by member (gcc's scalar
# replacement of aggregates) would be four 4-byte requests where a GPU makes one of 16
# bytes (the matmul-tiled reference's float4 shared loads: 0.5 bank conflicts a request
# with it, 0 without, as on a GPU). Vectorising, which has no GPU counterpart, needs no
# flag: the hooks' calls, inserted before the vectoriser runs, keep it from a loop.
_AS_WRITTEN = {"g++": ("-fno-thread-jumps", "-fno-tree-sra"), "clang++": ()}


@cache
def _shadow_fits() -> bool:
    """Whether the runner, which inherits this process's limits, can reserve the shadow
    that inline checks read: 16 TiB of address space (no memory), on x86-64, where no
    address-space limit (ulimit -v) forbids it. Where it cannot, its reservation fails
    before the submission's code runs: a setup error, never the kernel's crash."""
    if platform.machine().lower() not in ("x86_64", "amd64"):
        return False
    return resource.getrlimit(resource.RLIMIT_AS)[0] == resource.RLIM_INFINITY


def _store_hooks(kind: str) -> tuple[str, ...]:
    """The flags that hook the stores of a module that is no census module."""
    return _INLINE_HOOKS if kind == "g++" and _shadow_fits() else _HOOK_FLAGS[kind]


def pch_flags(census: bool) -> tuple[str, ...]:
    """The flags the shim is precompiled with (g++ only: a module's compile then parses
    the student's file alone, half its time): a module's less the linker's. A census
    module's accesses as written change no parse, but g++ takes no header precompiled
    with another sanitizer: a census module has a precompiled shim of its own."""
    hooks = _CENSUS_HOOKS["g++"] if census else (*_store_hooks("g++"), *_NO_LOAD_HOOKS["g++"])
    kept = (f for f in MODULE_FLAGS if f != "-shared" and not f.startswith("-Wl,"))
    return (*kept, *_codegen("g++"), *hooks, ARCH_MACRO)


def _codegen(kind: str) -> tuple[str, ...]:
    """The code-generation flags a module and its precompiled shim share (g++ takes a
    precompiled header only where they match)."""
    return (*_OWN_LINES[kind], *_STACK_PROBES[kind])


def _kind() -> str:
    return "clang++" if cxx.compiler().version.startswith("clang++") else "g++"


def inline_checks() -> bool:
    """Whether a module that is no census module checks its stores inline against the
    runner's shadow, calling a hook only into the outputs (g++ on x86-64), rather than
    calling one before every store."""
    return _store_hooks(_kind()) == _INLINE_HOOKS


def module_flags(census: bool) -> tuple[str, ...]:
    """How the student's module is compiled: with its store hooks, and with `census` its
    load hooks too, so that it counts its shared-memory loads and can be profiled. Both at
    -O2: a census module at -O1 compiles a fifth faster, but counts otherwise (the
    spmv-csr reference's profile: 473 shared-memory load requests, not 474)."""
    kind = _kind()
    if census:
        hooks = (*_CENSUS_HOOKS[kind], *_AS_WRITTEN[kind])
    else:
        hooks = (*_store_hooks(kind), *_NO_LOAD_HOOKS[kind], _WRAPPED)
    return (*MODULE_FLAGS, *_codegen(kind), *hooks)


def folder_flags(folder: Path, census: bool) -> list[str]:
    """What the compile of a module in `folder` needs besides its flags, for a census
    module built with -fsanitize=thread. g++ links libtsan wherever that is given, and the
    runner, not libtsan, must serve the module's hooks: an empty archive of that name in
    `folder`, searched before the toolchain's folders, links nothing in its place. Every
    reference to the C library's copies becomes one to the runner's (__wrap_memcpy). And
    the dump of the thread sanitizer's pass, where the atomics and copies it left unhooked
    show (unhooked_calls)."""
    if not census or "-fsanitize=thread" not in _CENSUS_HOOKS[_kind()]:
        return []
    (folder / "libtsan.a").write_bytes(b"!<arch>\n")
    return ["-L", str(folder), _WRAPPED, f"-fdump-tree-tsan1-lineno={folder / TSAN_DUMP}"]


# What a census module may not import from the C library (build.py): a copy that the
# runner's wrapper did not take (__real_memcpy, or a versioned name), another of the
# library's functions that reads or writes memory it is given, which no hook sees, or the
# lookup that would find one by name (dlsym(RTLD_DEFAULT, "memcpy")).
# the copies (memcpy, memmove, mempcpy, memset and their _chk forms, bcopy), which
# move a buffer's bytes out of sight, and the loader's lookups that could find one;
# not the functions that only compare or measure (memcmp, strlen): what they tell of a
# buffer is no copy of it, and g++ inlines them differently from one version to the next
_UNWRAPPED = re.compile(
    r"(?:__)?w?mem(?:p?cpy|move|set)\w*|bcopy|bzero|explicit_bzero|dl(?:v?sym|open)"
)


def unwrapped_copies(imports: list[str]) -> list[str]:
    """Of a census module's `imports` from other libraries, those of the C library's
    functions that read or write memory given them, in no hook's sight (_UNWRAPPED)."""
    return [name for name in imports if _UNWRAPPED.fullmatch(name)]


TSAN_DUMP = "tsan.txt"  # in the compile's folder
# A call of an atomic builtin in the pass's dump (every one it hooked is a __tsan_ call),
# or of a memory builtin of constant size (__builtin_memcpy (buf, in, 256)), which g++
# may copy with moves; one of a size known only when it runs is a call of memcpy, which
# the link wraps. With the place of its statement:
# "  [kernel.cu:12:9] _5 = __atomic_load_4 (_4, 42);"
_UNHOOKED = re.compile(
    r"^[ \t]*+(?:\[(?P<file>[^\]\n:]*+):(?P<line>\d++):\d++\][ \t]*+)?(?:\S++ = )?"
    r"(?:(?P<call>__(?:atomic|sync)_\w++) \("
    r"|(?P<copy>__builtin_(?:__)?(?:mem(?:p?cpy|move|set)|b(?:copy|zero))\w*+)"
    r" \((?:[^,()\n\"]*+, )*+\d++\);)",  # a string literal's copy reads no buffer
    re.MULTILINE,
)


def unhooked_calls(dump: str) -> list[tuple[str, int, str]]:
    """Each builtin that the thread sanitizer's pass left as it was, in its `dump`
    (TSAN_DUMP) of a census module, which g++ compiles as accesses that call no hook: an
    atomic one given no memory order C++ has, as in __atomic_load_n(p, 42), and a memory
    one of constant size named as a builtin (__builtin_memcpy(buf, in, 256): moves; a
    small one is folded into one access before the pass, and hooked; one of a size known
    only at run time is a call of memcpy, which the link wraps). As (file, line,
    builtin), file and line those of the statement (a header's, where it was inlined from
    one; "" and 0 where the dump gives none)."""
    return [
        (m["file"] or "", int(m["line"] or 0), m["call"] or m["copy"])
        for m in _UNHOOKED.finditer(dump)
    ]


def shim_include(census: bool, text: str = "") -> tuple[list[str], list[str]]:
    """The flags that force the shim into the compile of a module of `text` (a `census`
    one or not), from its precompiled header where there is one (g++ looks in that
    folder first), and the folders the compile reads for them besides the toolchain's:
    that one, and the shim's."""
    if special_functions.named(text):
        return ["-I", str(INCLUDE), "-include", SHIM, ARCH_MACRO], [str(INCLUDE)]
    flags = ["-I", str(INCLUDE), "-include", LEAN, ARCH_MACRO]
    precompiled = precompiled_shim(census)
    if precompiled is None:
        return flags, [str(INCLUDE)]
    return [f"-I{precompiled}", *flags], [str(precompiled), str(INCLUDE)]


@cache
def precompiled_shim(census: bool = False) -> Path | None:
    """The folder of the shim's precompiled header for a module (a `census` one or not),
    built on first use; None with clang++ (which does not look for one in an include
    folder), or where it could not be built (a module then compiles from the header)."""
    if _kind() == "clang++":
        return None
    # a foreign INCLUDE: its logs
    key = json.dumps([runner.runtime_hash(), str(INCLUDE), pch_flags(census)])
    folder = defaults.cache_dir() / "cpu" / f"shim-{hashlib.sha256(key.encode()).hexdigest()[:16]}"
    header = cxx.built_once(folder / f"{LEAN}.gch", lambda to: _build_shim(to, census))
    return folder if header.exists() else None


def _build_shim(folder: Path, census: bool) -> None:
    """The grader's own header, so not sandboxed; a failure leaves no folder."""
    with tempfile.TemporaryDirectory(prefix="grader-shim-", dir=folder.parent) as tmp:
        staged = Path(tmp) / "out"
        staged.mkdir()
        cmd = [cxx.compiler().path, *pch_flags(census), "-I", str(INCLUDE), "-x", "c++-header"]
        cmd += [str(INCLUDE / LEAN), "-o", str(staged / f"{LEAN}.gch")]
        if subprocess.run(cmd, capture_output=True, env=cxx.clean_env()).returncode == 0:
            os.replace(staged, folder)
