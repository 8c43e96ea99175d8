"""What a lab is: data, plus a float64 numpy reference.

A lab names its kernels (launched in order) and their parameters, the arrays they read
and write (each with its element type), the `__constant__` symbols the grader fills, the
macros it sets, its launch defaults and the largest launch macros it accepts, its cases,
its tolerance model and its scoring.
Nothing outside a lab's own folder knows which lab it is grading.

Sizes. A case's sizes are its own (and those `derive` adds); once a module is built,
the launch macros it was compiled with (BLOCK_X .. TILE_Z) join them, so that shapes,
grids, references and tolerances may depend on the submission's tile."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from functools import cached_property
from pathlib import Path

import numpy as np

from grader.interface import LaunchDefaults
from grader.paths import LAB_FOLDERS

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
    """A kernel the grader launches with the module's BLOCK_X x BLOCK_Y x BLOCK_Z threads
    per block, over `grid(sizes)` blocks, or, without one, ceil(extent / TILE) on each
    axis."""

    name: str
    params: tuple[Param, ...]
    grid: Callable[[Sizes], tuple[int, int, int]] | None = None

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


# Element types a buffer may hold: numpy's names, and the C type a pointer to one has.
DTYPES = {
    "float32": "float",
    "int32": "int",
    "uint32": "unsigned int",
    "uint8": "unsigned char",
}


@dataclass(frozen=True)
class Array:
    """An input, output or scratch array, in logical (row-major, x fastest) shape.
    `dtype` is one of DTYPES; integer outputs are compared exactly. An output or scratch
    array starts `initial`: "poison" (a value no kernel computes, so unwritten elements
    show) or "zero" (an accumulator). `draw(rng, shape, sizes)` gives an input's values;
    without it, floats in +-[0.5, 1.0) (grader.cases.random_signed)."""

    name: str
    shape: Callable[[Sizes], tuple[int, ...]]
    dtype: str = "float32"
    initial: str = "poison"
    draw: Callable[[np.random.Generator, tuple[int, ...], Sizes], np.ndarray] | None = None

    def __post_init__(self) -> None:
        if self.dtype not in DTYPES:
            raise ValueError(f"array {self.name}: dtype {self.dtype!r} is not one of {DTYPES}")
        if self.initial not in ("poison", "zero"):
            raise ValueError(f"array {self.name}: initial must be 'poison' or 'zero'")

    @property
    def exact(self) -> bool:
        """Integer arrays are compared exactly."""
        return np.dtype(self.dtype).kind in "iu"


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
    text: a string that spells `__shared__` is not shared memory.

    A rule that asks the kernel to do something is decided by what it executed, where the
    backend counts it: `executes` names the count (grader.interface.Executed) that must
    be above 0 in every case, and `not_executed(kernel, case)` is the sentence when it is
    0. `known(interface, kernel)` says whether the module alone decides `check` (without
    nvcc the CPU build shows no instructions); a rule decided neither way is reported as
    not checked (`says`: what it asks, as a clause), never as met. A rule that `blocks`
    stops every case of a module that breaks it: what it would compute is not the
    student's work (a library's)."""

    name: str
    check: Callable[..., str | None]
    says: str = ""
    executes: str | None = None
    not_executed: Callable[[str, str], str] | None = None
    known: Callable[..., bool] | None = None  # None: the module always decides
    blocks: bool = False


@dataclass(frozen=True)
class Sampler:
    """A few output elements computed without the whole output, to check timed launches.
    `needs(sizes, axes)` gets the sampled coordinates along each axis of the output
    (1-D arrays, slowest axis first; the elements are their grid) and gives, for each
    input, the coordinates those elements read: one integer array per axis of the input,
    broadcast together, or None for the whole input; a coordinate outside the input
    reads 0. `combine(sizes, values, axes)` turns those inputs' values (float64, or the
    input's own integer type; shaped as their coordinates) into each output on the
    grid."""

    needs: Callable[[Sizes, tuple[np.ndarray, ...]], dict[str, tuple[np.ndarray, ...] | None]]
    combine: Callable[[Sizes, dict[str, np.ndarray], tuple[np.ndarray, ...]], dict]


@dataclass(frozen=True)
class Lab:
    """A lab. Its definition (reference_kernels/LAB/lab.py) leaves `name` and `home` to
    the registry (grader.labs), which sets them from the folder it loads it from."""

    title: str
    summary: str
    kernel: Kernel  # the first kernel launched; `then` follow it, in order
    inputs: tuple[Array, ...]
    outputs: tuple[Array, ...]
    # Each float output element is a sum of products of inputs (grader.compare counts
    # the terms and sums their magnitudes by running it on other inputs)
    reference: Callable[[Arrays, Sizes], dict[str, np.ndarray]]
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
    then: tuple[Kernel, ...] = ()  # kernels launched after `kernel`, on the same buffers
    scratch: tuple[Array, ...] = ()  # device buffers the kernels share, never compared
    block: tuple[int, int, int] | None = None  # default BLOCK_*; None: by `dims`
    tile: tuple[str, str, str] = ("BLOCK_X", "BLOCK_Y", "BLOCK_Z")  # default TILE_*, in C
    # tolerance(sizes, bound): the error allowed for elements whose sums of |terms| are
    # `bound`; None: what float32 summation can be off by (grader.compare)
    tolerance: Callable[[Sizes, np.ndarray], np.ndarray] | None = None
    # The largest launch macros the lab accepts ({"TILE_X": 65536}): a file that defines
    # a larger one is not run (grader.interface.check_limits)
    limits: Mapping[str, int] = field(default_factory=dict)
    name: str = field(default="", kw_only=True)
    home: Path | None = field(default=None, kw_only=True)  # reference_kernels/NAME

    @property
    def template_home(self) -> Path | None:
        """student_template/NAME, beside the lab's own reference_kernels/NAME."""
        return None if self.home is None else self.home.parents[1] / LAB_FOLDERS[1] / self.name

    @property
    def kernels(self) -> tuple[Kernel, ...]:
        return (self.kernel, *self.then)

    @cached_property
    def buffers(self) -> Mapping[str, Param]:
        """Each kernel buffer, by array name, and the first parameter that passes it."""
        out: dict[str, Param] = {}
        for kernel in self.kernels:
            for param in kernel.params:
                if param.is_pointer:
                    out.setdefault(param.array_name, param)
        return out

    @property
    def default_block(self) -> tuple[int, int, int]:
        if self.block is not None:
            return self.block
        return {1: (256, 1, 1), 2: (16, 16, 1)}.get(self.dims, (8, 8, 8))

    @property
    def launch_defaults(self) -> LaunchDefaults:
        return LaunchDefaults(self.default_block, self.tile)

    def full_sizes(self, sizes: Sizes) -> dict[str, int]:
        """The case's sizes with the derived ones (output extents, pitches) added."""
        out = dict(sizes)
        out.update(self.derive(out))
        return out

    def macro_values(self, sizes: Sizes) -> dict[str, int]:
        return {name: int(sizes[name]) for name in self.macros}

    def array(self, name: str) -> Array:
        for arr in (*self.inputs, *self.outputs, *self.scratch):
            if arr.name == name:
                return arr
        raise KeyError(name)

    def is_input(self, name: str) -> bool:
        return any(arr.name == name for arr in self.inputs)

    def array_shape(self, name: str, sizes: Sizes) -> tuple[int, ...]:
        return self.array(name).shape(sizes)
