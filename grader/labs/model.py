"""What a lab is: data, plus a float64 numpy reference.

A lab names its kernel and parameters, the `__constant__` symbols the grader fills, the
macros it sets, its cases, its tolerance model and its scoring. Nothing outside a lab's
own module knows which lab it is grading."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum

import numpy as np

Sizes = Mapping[str, int]
Arrays = Mapping[str, np.ndarray]


class Role(StrEnum):
    INPUT = "input"
    OUTPUT = "output"
    SCALAR = "scalar"


@dataclass(frozen=True)
class Param:
    """One kernel parameter. A pointer carries the array of the same name unless `array`
    says otherwise; a scalar takes the size of the same name unless `value` says otherwise.
    `pitch` names the size that holds this buffer's row pitch in bytes."""

    name: str
    ctype: str  # "const float*", "float*", "int", "size_t"
    role: Role
    array: str | None = None
    value: str | None = None
    pitch: str | None = None

    @property
    def is_pointer(self) -> bool:
        return self.ctype.endswith("*")

    @property
    def array_name(self) -> str:
        return self.array or self.name

    @property
    def value_name(self) -> str:
        return self.value or self.name

    def signature(self) -> str:
        return f"{self.ctype} {self.name}"


@dataclass(frozen=True)
class Kernel:
    name: str
    params: tuple[Param, ...]

    def signature(self) -> str:
        return f"__global__ void {self.name}({', '.join(p.signature() for p in self.params)})"


@dataclass(frozen=True)
class Constant:
    """A `__constant__` float array the grader fills by name (`module.get_global`).
    `elements(sizes)` is the declared length the lab expects; the first values come from
    input array `array` and the rest, if any, are NaN so that reading them shows."""

    name: str
    array: str
    elements: Callable[[Sizes], int]
    declaration: str  # how the lab's README writes it, e.g. "Mc[MASK_WIDTH*MASK_WIDTH]"


@dataclass(frozen=True)
class Array:
    """An input or output array, in logical (row-major, x fastest) shape."""

    name: str
    shape: Callable[[Sizes], tuple[int, ...]]


@dataclass(frozen=True)
class Case:
    """One test case: a name, its sizes (macros and scalars included) and its seed."""

    name: str
    sizes: dict[str, int]
    visibility: str = "public"
    seed: int = 0


@dataclass(frozen=True)
class Scoring:
    """Points for public cases, hidden cases and speed. Speed earns nothing when any
    case fails; otherwise it rises linearly in log(speedup) from `zero_speedup` (0
    points) to `target_speedup` (full points)."""

    public: float = 3.0
    hidden: float = 4.0
    performance: float = 3.0
    target_speedup: float = 1.0
    zero_speedup: float = 0.25

    def performance_points(self, speedup: float) -> float:
        if speedup <= self.zero_speedup:
            return 0.0
        if speedup >= self.target_speedup:
            return self.performance
        span = math.log(self.target_speedup / self.zero_speedup)
        return self.performance * math.log(speedup / self.zero_speedup) / span


@dataclass(frozen=True)
class Requirement:
    """A rule of the lab that correct output alone does not show.
    `check` gets the compiled module's interface and the lab's kernel name, and returns
    the sentence for the student when the rule is broken. It reads the module, never the
    text: a string that spells `__shared__` is not shared memory."""

    name: str
    check: Callable[..., str | None]


@dataclass(frozen=True)
class Sampler:
    """A few output elements computed without the whole output, to check timed launches.
    `needs(sizes, axes)` gets the sampled coordinates along each axis of the output
    (1-D arrays, slowest axis first; the elements are their grid) and gives, for each
    input, the coordinates those elements read: one integer array per axis of the input,
    broadcast together; a coordinate outside the input reads 0. `combine(sizes, values)`
    turns those inputs' values (float64, shaped as their coordinates) into each output
    on the grid."""

    needs: Callable[[Sizes, tuple[np.ndarray, ...]], dict[str, tuple[np.ndarray, ...]]]
    combine: Callable[[Sizes, dict[str, np.ndarray]], dict[str, np.ndarray]]


@dataclass(frozen=True)
class Lab:
    name: str
    title: str
    summary: str
    kernel: Kernel
    inputs: tuple[Array, ...]
    outputs: tuple[Array, ...]
    reference: Callable[[Arrays, Sizes], dict[str, np.ndarray]]
    terms: Callable[[Sizes], int]  # products summed into one output element
    extent: Callable[[Sizes], tuple[int, int, int]]  # output extent, x fastest
    public_cases: tuple[Case, ...]
    hidden_cases: tuple[Case, ...]  # fixed hidden sizes; seeds come from the secret
    random_sizes: Callable[[np.random.Generator], dict[str, int]]
    random_cases: int
    timing_sizes: dict[str, int]
    work: Callable[[Sizes], tuple[float, float]]  # (flops, bytes moved) for one launch
    constants: tuple[Constant, ...] = ()
    macros: tuple[str, ...] = ()  # sizes passed to the compiler as -DNAME=value
    derive: Callable[[Sizes], dict[str, int]] = lambda sizes: {}
    dynamic_shared: Callable[[Sizes, Mapping[str, int]], int] | None = None
    dims: int = 2
    requirements: tuple[Requirement, ...] = ()
    forbidden: tuple[tuple[str, str], ...] = ()  # (regex, sentence) on comment-free source
    hints: tuple[Callable, ...] = ()  # detectors from grader.hints, most specific first
    scoring: Scoring = field(default_factory=Scoring)
    bound: str = "compute"  # "compute" (report TFLOP/s) or "memory" (report GB/s)
    sampler: Sampler | None = None  # without one, timed outputs go unchecked

    @property
    def default_block(self) -> tuple[int, int, int]:
        return (16, 16, 1) if self.dims == 2 else (8, 8, 8)

    def full_sizes(self, sizes: Sizes) -> dict[str, int]:
        """The case's sizes with the derived ones (output extents, pitches) added."""
        out = dict(sizes)
        out.update(self.derive(out))
        return out

    def macro_values(self, sizes: Sizes) -> dict[str, int]:
        return {name: int(sizes[name]) for name in self.macros}

    def array_shape(self, name: str, sizes: Sizes) -> tuple[int, ...]:
        for arr in (*self.inputs, *self.outputs):
            if arr.name == name:
                return arr.shape(sizes)
        raise KeyError(name)
