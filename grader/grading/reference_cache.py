"""The reference's sums of a case (grader.judge.compare.Sums: the expected outputs and
what their tolerance is made of), kept in the grader's cache (`reference/`) for the cases
whose inputs every submission shares: the hidden ones, drawn from the course's secret, and
the public ones with their fixed values (a grading without the secret), and only where
computing them takes longer than reading them back (not scan's cumulative sums, a few
milliseconds for megabytes). A public case that the secret and the submission's text draw
is computed afresh: its entry would serve no other submission, and a batch's would push
compiled modules out of the cache.

An entry is kept by everything that decides it: the lab's name and code (its folder's
Python files, and the grader's that compute references and tolerances), the case's sizes
with the launch macros, the digest of the inputs themselves, numpy's version and the
machine's architecture. Only the grader's own process computes and writes entries; the
student's processes cannot reach the cache (docs/threat-model.md). An entry that does not
load, or does not hold each output at its shape, is computed afresh."""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import platform
import time
import zipfile
from functools import cache
from pathlib import Path

import numpy as np

from grader import defaults
from grader.ast_lock import HELD as AST_LOCK
from grader.files import write_atomically
from grader.judge import cases as casegen
from grader.judge.compare import Sums, sums
from grader.model.lab import Case, Lab
from grader.model.result import Visibility
from grader.toolchain import build_cache

CACHE_FORMAT = 1  # bump when what an entry holds changes
KIND = "reference"
# What reading an entry back costs, at most: a file's opening and np.load (0.5-1 ms
# here), then its bytes at 0.5 GB/s (conv2d's, scan's: 0.5-1 GB/s). An entry is kept only
# where computing it took longer.
READ_SECONDS = 1e-3
READ_RATE = 5e8
PARTS = ("expected", "bound", "terms")  # the fields of Sums, in an entry as PART.OUTPUT
# the grader's own code that turns inputs into Sums, besides the lab's folder
PACKAGE = Path(__file__).resolve().parents[1]
GRADER_CODE = ("labs", "judge/cases.py", "judge/compare.py", "model/lab.py")


def reference_sums(lab: Lab, case: Case, sized: Case, inputs: dict[str, np.ndarray]) -> Sums:
    """compare.sums of `sized` (`case` with the launch macros among its sizes) on
    `inputs`, from the cache where every submission shares the case's inputs."""
    if lab.home is None or not shared(lab, case):
        return sums(lab, sized, inputs)
    entry = _entry(lab, sized, inputs)
    found = _cached(lab, sized, entry)
    if found is not None:
        return found
    start = time.perf_counter()
    found = sums(lab, sized, inputs)
    took = time.perf_counter() - start
    if took > READ_SECONDS + _bytes(found) / READ_RATE:  # else reading back costs more
        with contextlib.suppress(OSError):
            write_atomically(entry, _packed(found))
            build_cache.stored()
    return found


def shared(lab: Lab, case: Case) -> bool:
    """Whether every submission's grading draws `case`'s inputs alike: a hidden case, or a
    public one with its fixed values."""
    fixed = casegen.derive_seed(casegen.PUBLIC_KEY, lab.name, case.name)
    return case.visibility == Visibility.HIDDEN or case.seed == fixed


def _entry(lab: Lab, sized: Case, inputs: dict[str, np.ndarray]) -> Path:
    digest = hashlib.sha256()
    for name in sorted(inputs):
        values = np.ascontiguousarray(inputs[name])
        digest.update(f"{name} {values.dtype.str} {values.shape}\n".encode())
        digest.update(values.data)
    what = [
        CACHE_FORMAT, lab.name, _code(lab.home), np.__version__, platform.machine(),
        sorted(sized.sizes.items()), digest.hexdigest(),
    ]  # fmt: skip
    key = hashlib.sha256(json.dumps(what, default=str).encode()).hexdigest()[:40]
    return defaults.cache_dir() / KIND / f"{key}.npz"


@cache
def _code(home: Path) -> str:
    """The digest of the Python that computes a lab's Sums: its folder's files and the
    grader's (GRADER_CODE)."""
    files = sorted(home.glob("*.py"))
    for part in GRADER_CODE:
        found = PACKAGE / part
        files += sorted(found.glob("*.py")) if found.is_dir() else [found]
    digest = hashlib.sha256()
    for path in files:
        digest.update(f"{path.name}\n".encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()


def _arrays(found: Sums) -> dict[str, np.ndarray]:
    """The entry's arrays, each named PART.OUTPUT."""
    return {f"{part}.{name}": v for part in PARTS for name, v in getattr(found, part).items()}


def _bytes(found: Sums) -> int:
    return sum(v.nbytes for v in _arrays(found).values())


def _packed(found: Sums) -> bytes:
    arrays = _arrays(found)
    out = io.BytesIO()
    np.savez(out, **arrays)
    return out.getvalue()


def _cached(lab: Lab, sized: Case, entry: Path) -> Sums | None:
    """The entry's Sums where it holds numbers (never pickled objects) for every output
    of `lab` at its shape, in each part the lab needs (bound and terms only where an
    output is not exact)."""
    try:
        with AST_LOCK, np.load(entry, allow_pickle=False) as held:
            arrays = {name: held[name] for name in held.files}
    except (OSError, ValueError, EOFError, zipfile.BadZipFile):
        return None
    shapes = {out.name: out.shape(sized.sizes) for out in lab.outputs}
    needed = PARTS if not all(out.exact for out in lab.outputs) else PARTS[:1]
    parts: dict[str, dict[str, np.ndarray]] = {part: {} for part in PARTS}
    for key, values in arrays.items():
        part, _, name = key.partition(".")
        if part not in needed or values.dtype.kind not in "fiu":
            return None
        parts[part][name] = values
    if any({n: v.shape for n, v in parts[part].items()} != shapes for part in needed):
        return None
    build_cache.used(entry)
    return Sums(**parts)
