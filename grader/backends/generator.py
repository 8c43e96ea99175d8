"""The generator that draws the timing's inputs, as C++ (generator.h) that the GPU worker
compiles with its helper kernels (grader.backends.cuda.helpers) and the host with g++,
once per machine, into a library for whole buffers (`words`). numpy's copy
(grader.backends.timing) is the rule where no compiler is found; tests tie the three.

Why the host has its own build: histogram's check draws 32 MiB a timed launch. numpy
takes some twenty passes for it, each a hold of the interpreter's lock, which a timing's
eight threads then wait for, and so does the grading's main thread running the cases."""

from __future__ import annotations

import ctypes
from functools import cache
from pathlib import Path

import numpy as np

from grader import defaults
from grader.errors import SetupError
from grader.toolchain import cxx

GENERATOR = Path(__file__).with_name("generator.h")
SOURCE = Path(__file__).with_name("generator.cpp")
FLAGS = ("-O3", "-fPIC")


def words(key: tuple[int, int], count: int, macros: dict[str, str]) -> np.ndarray | None:
    """Words 0 to `count` - 1 of the generator's stream under `key`, its constants the
    -D `macros`; None where the host cannot build the library."""
    library = _library(tuple(sorted(macros.items())))
    if library is None:
        return None
    out = np.empty(count, np.uint32)
    library.drawn_words(out.ctypes.data, count, key[0], key[1])  # the lock let go meanwhile
    return out


@cache
def _library(macros: tuple[tuple[str, str], ...]) -> ctypes.CDLL | None:
    flags = [*FLAGS, "-I", str(GENERATOR.parent), *(f"-D{name}={value}" for name, value in macros)]
    try:
        digest = cxx.source_hash([SOURCE, GENERATOR], repr(flags))
        folder = defaults.cache_dir() / "host" / f"generator-{digest}"
        built = cxx.built_once(folder / "libgenerator.so", lambda to: _build(to, flags))
        library = ctypes.CDLL(str(built))
        draw = library.drawn_words
    except (SetupError, OSError, AttributeError):  # AttributeError: no such function
        return None
    draw.argtypes = [ctypes.c_void_p, ctypes.c_ulonglong, ctypes.c_uint, ctypes.c_uint]
    draw.restype = None
    return library


def _build(folder: Path, flags: list[str]) -> None:
    who = "The grader could not build its generator for the host"
    cxx.build_program(folder, "libgenerator.so", [SOURCE], flags, ["-shared"], who, {})
