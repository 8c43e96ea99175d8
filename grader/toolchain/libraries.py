"""Which CUDA libraries a compiled module holds, whatever the source spelled: the headers
its compiler read (the dependency list of the compile, `-MD`), and the names the module
defines or uses, demangled (`cub::`, `thrust::`; cuBLAS's C names). An `#include` through
another path (CUDA 13's `cccl/cub/...`), a digraph (`%:include`) or a macro reads the
same headers and leaves the same names."""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import PurePosixPath

# A library: the folders of its C++ headers and its namespaces, or the prefix of its C
# headers and functions.
_CXX = {"CUB": ("cub",), "Thrust": ("thrust",), "CUTLASS": ("cutlass", "cute")}
_C = {"cuBLAS": "cublas", "cuDNN": "cudnn", "cuFFT": "cufft", "NPP": "npp"}
_ROOTS = ("include", "cccl")  # the folders a library's headers are found in
_NAMESPACE = re.compile(
    r"(?<![\w:])(?P<space>" + "|".join(n for ns in _CXX.values() for n in ns) + r")::"
)
_C_NAME = re.compile(r"^(?P<prefix>" + "|".join(_C.values()) + r")[A-Z_]\w*$")


def dependencies(makefile: str) -> list[str]:
    """The files a compiler's `-MD` dependency list names (a make rule: `target: dep ...`,
    lines continued with a backslash, spaces in a name escaped)."""
    text = makefile.replace("\\\n", " ")
    _, _, deps = text.partition(": ")
    return [p.replace("\\ ", " ") for p in re.findall(r"(?:\\ |[^\s])+", deps)]


def _in_headers(paths: Iterable[str]) -> dict[str, str]:
    """Library name -> the first of its headers among `paths`, from the library's folder
    on (`cub/block/block_reduce.cuh`). A library's folder sits in an include folder (or
    in CUDA 13's `include/cccl/`): a user's own folder named `cub` is none."""
    found: dict[str, str] = {}
    for path in paths:
        parts = PurePosixPath(path).parts
        for i in range(1, len(parts)):
            if parts[i - 1] not in _ROOTS:
                continue
            last = i == len(parts) - 1
            library = next((lib for lib, dirs in _CXX.items() if parts[i] in dirs), None)
            if last:
                library = next((lib for lib, pre in _C.items() if parts[i].startswith(pre)), None)
            if library is not None:
                found.setdefault(library, "/".join(parts[i:]))
    return found


def _in_names(names: Iterable[str]) -> dict[str, str]:
    """Library name -> the first of `names` (demangled) that is one of its."""
    found: dict[str, str] = {}
    for name in names:
        for match in _NAMESPACE.finditer(name):
            library = next(lib for lib, ns in _CXX.items() if match["space"] in ns)
            found.setdefault(library, name)
        plain = _C_NAME.match(name)
        if plain:
            library = next(lib for lib, pre in _C.items() if pre == plain["prefix"])
            found.setdefault(library, name)
    return found


def found(headers: Iterable[str], names: Iterable[str]) -> dict[str, str]:
    """Library name -> what shows it, as a clause: the first of its headers the compile
    read (which says more to a student than a mangled name), else the first of its names
    in the module."""
    out = {lib: f"the compile read {header}" for lib, header in _in_headers(headers).items()}
    for lib, name in _in_names(names).items():
        out.setdefault(lib, f"the compiled module holds {name}")
    return out
