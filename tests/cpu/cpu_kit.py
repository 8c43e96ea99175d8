"""Helpers for the CPU backend's tests: builds from source text, launches from numpy
arrays, and short ways to look at diagnostics."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import numpy as np

from grader.model.launch import Buffer, Build, Launch, RunOutcome, Scalar
from grader.model.result import Diagnostic, Kind
from grader.model.source import Submission


class Kit:
    """Builds and runs kernels written by a test, on one CpuBackend."""

    def __init__(self, backend):
        self.backend = backend

    def build(
        self,
        source: str,
        name: str = "kernel.cu",
        macros: dict[str, int] | None = None,
        block: tuple[int, int, int] = (16, 16, 1),
    ) -> Build:
        return self.backend.build(Submission(Path(name), source), macros or {}, block)

    @contextmanager
    def pool_threads(self, jobs: int) -> Iterator[int]:
        """The backend runs blocks on `jobs` pool threads until the block ends."""
        kept, self.backend.jobs = self.backend.jobs, jobs
        try:
            yield jobs
        finally:
            self.backend.jobs = kept

    def built(self, source: str, **kw) -> Build:
        """A build that must succeed."""
        build = self.build(source, **kw)
        assert build.ok, f"build failed: {build.diagnostics} {build.compile.log}"
        return build

    def run(
        self,
        build: Build,
        kernel: str,
        grid,
        block,
        args: list,
        constants: dict[str, np.ndarray] | None = None,
        shared: int = 0,
        timeout: float = 10.0,
    ) -> RunOutcome:
        launch = Launch(kernel, _dim(grid), _dim(block), shared, list(args), constants or {})
        return self.backend.run(build, launch, timeout)

    def profile(self, build: Build, kernel: str, grid, block, args: list, shared: int = 0):
        """The run's outcome, which must have gone to its end, and the kernel's profile."""
        launch = Launch(kernel, _dim(grid), _dim(block), shared, list(args), {})
        outcome, profiles = self.backend.profile(build, launch, 10.0)
        assert outcome.completed, outcome.diagnostics
        assert [p.kernel for p in profiles] == [kernel]
        return outcome, profiles[0]


def _dim(v) -> tuple[int, int, int]:
    v = (v,) if isinstance(v, int) else tuple(v)
    return (*v, *(1,) * (3 - len(v)))


def inp(name: str, data) -> Buffer:
    return Buffer(name, np.ascontiguousarray(data, dtype=np.float32).reshape(-1), False)


def out(name: str, size: int, fill: float = np.nan) -> Buffer:
    return Buffer(name, np.full(size, fill, np.float32), True)


def integer(name: str, value: int) -> Scalar:
    return Scalar(name, "int", int(value))


def size_t(name: str, value: int) -> Scalar:
    return Scalar(name, "size_t", int(value))


def kinds(outcome_or_list) -> list[Kind]:
    diags = getattr(outcome_or_list, "diagnostics", outcome_or_list)
    return [d.kind for d in diags]


def only(outcome, kind: Kind) -> Diagnostic:
    found = [d for d in outcome.diagnostics if d.kind == kind]
    assert found, f"no {kind} diagnostic in {outcome.diagnostics}"
    return found[0]
