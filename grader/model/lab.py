"""What a lab is: data, plus a float64 numpy reference.

A lab names its kernels (launched in order) and their parameters, the arrays they read
and write (each with its element type), the `__constant__` symbols the grader fills, the
macros it sets, its launch defaults and the largest launch macros it accepts, its cases,
its tolerance model and its scoring.
Nothing outside a lab's own folder knows which lab it is grading.

Sizes. A case's sizes are its own, those its inputs define (`Lab.draw`: a sparse
matrix's count of entries) and those `derive` adds; once a module is built, the launch
macros it was compiled with (BLOCK_X .. TILE_Z) join them, so that shapes, grids,
references and tolerances may depend on the submission's tile.

docs/lab-model.md is generated from this module (docs/build_reference.py): each field's
documentation is the string that follows it."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from functools import cached_property
from pathlib import Path

import numpy as np

from grader.model.interface import LaunchDefaults
from grader.model.result import Visibility
from grader.paths import LAB_FOLDERS

Sizes = Mapping[str, int]
Arrays = Mapping[str, np.ndarray]
# read(name, coords): input `name` at coordinates `coords`, as Sampler.needs gets it
Read = Callable[[str, tuple[np.ndarray, ...] | None], np.ndarray]


class Role(StrEnum):
    """What a kernel parameter is to the grader."""

    INPUT = "input"
    OUTPUT = "output"
    SCALAR = "scalar"


@dataclass(frozen=True)
class Param:
    """One kernel parameter. A pointer carries the array of the same name unless `array`
    says otherwise; a scalar takes the size of the same name unless `value` says otherwise.
    `pitch` names the size that holds this buffer's row pitch in bytes."""

    name: str
    """The parameter's name, as the lab's README writes the signature."""
    ctype: str
    """Its C type: "const float*", "float*", "const int*", "int", "size_t"."""
    role: Role
    """Role.INPUT, Role.OUTPUT (a buffer the kernel writes) or Role.SCALAR."""
    array: str | None = None
    """The array a pointer carries; None: the array named as the parameter."""
    value: str | None = None
    """The size a scalar takes; None: the size named as the parameter."""
    pitch: str | None = None
    """The size that holds this buffer's row pitch in bytes; None: rows are packed."""

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
    """The kernel's name in the submission."""
    params: tuple[Param, ...]
    """Its parameters, in order."""
    grid: Callable[[Sizes], tuple[int, int, int]] | None = None
    """grid(sizes): blocks on x, y, z; None: ceil(Lab.extent / TILE) on each axis."""

    def signature(self) -> str:
        return f"__global__ void {self.name}({', '.join(p.signature() for p in self.params)})"


@dataclass(frozen=True)
class Constant:
    """A `__constant__` float array the grader fills by name (`module.get_global`).
    `elements(sizes)` is the declared length the lab expects; the first values come from
    input array `array` and the rest, if any, are NaN so that reading them shows."""

    name: str
    """The symbol's name in the submission."""
    array: str
    """The input array whose values fill it."""
    elements: Callable[[Sizes], int]
    """elements(sizes): the declared length the lab expects."""
    declaration: str
    """How the lab's README writes it, e.g. "Mc[MASK_WIDTH*MASK_WIDTH]"."""


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
    without it, floats in +-[0.5, 1.0) (grader.judge.cases.random_signed)."""

    name: str
    """The array's name; kernel parameters carry it by this name."""
    shape: Callable[[Sizes], tuple[int, ...]]
    """shape(sizes): its logical shape, slowest axis first."""
    dtype: str = "float32"
    """One of DTYPES: "float32", "int32", "uint32", "uint8"."""
    initial: str = "poison"
    """An output's or scratch array's contents before the run: "poison" or "zero"."""
    draw: Callable[[np.random.Generator, tuple[int, ...], Sizes], np.ndarray] | None = None
    """draw(rng, shape, sizes): an input's values; None: floats in +-[0.5, 1.0). An
    input drawn by Lab.draw takes its values from there instead."""

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
    """The case's name, unique in the lab, shown to students (hidden ones to staff)."""
    sizes: dict[str, int]
    """Its sizes: the kernel's scalars, macros, and what the lab's draws read."""
    visibility: Visibility = Visibility.PUBLIC
    """PUBLIC or HIDDEN (grader.model.result.Visibility, equal to "public" and "hidden")."""
    seed: int = 0
    """Set by the grader: from the lab and case name, and the secret for hidden cases."""
    drawn: tuple[str, ...] = ()
    """Set by the grader: the sizes Lab.draw defined (among `sizes`), bookkeeping that
    reports do not show as the case's sizes."""

    @property
    def shown_sizes(self) -> dict[str, int]:
        """The sizes a report shows: all but those the lab's draw defined."""
        return {k: v for k, v in self.sizes.items() if k not in self.drawn}


@dataclass(frozen=True)
class Scoring:
    """Points for public cases, hidden cases and speed. Speed earns nothing when any
    case fails; otherwise it rises linearly in log(speedup) from `zero_speedup` (0
    points) to `target_speedup` (full points)."""

    public: float = 3.0
    """Points shared equally by the public cases."""
    hidden: float = 4.0
    """Points shared equally by the hidden cases."""
    performance: float = 3.0
    """Points for speed, on a GPU only."""
    target_speedup: float = 1.0
    """The speedup over the reference that earns all the speed points."""
    zero_speedup: float = 0.25
    """The speedup at or below which speed earns nothing."""

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
    backend counts it: `executes` names the count (grader.model.interface.Executed) that must
    be above 0 in every case, and `not_executed(kernel, case)` is the sentence when it is
    0. `known(interface, kernel)` says whether the module alone decides `check` (without
    nvcc the CPU build shows no instructions); a rule decided neither way is reported as
    not checked (`says`: what it asks, as a clause), never as met. A rule that `blocks`
    stops every case of a module that breaks it: what it would compute is not the
    student's work (a library's)."""

    name: str
    """The rule's name (shared_memory, constant_mask, atomics)."""
    check: Callable[..., str | None]
    """check(interface, kernel): the sentence for the student, or None when it holds."""
    says: str = ""
    """What the rule asks, as a clause, for a report that could not check it."""
    executes: str | None = None
    """The executed count (grader.model.interface.Executed) that must be above 0 in every case."""
    not_executed: Callable[[str, str], str] | None = None
    """not_executed(kernel, case): the sentence when that count is 0."""
    known: Callable[..., bool] | None = None
    """known(interface, kernel): whether the module alone decides `check`; None: always."""
    blocks: bool = False
    """Whether a module that breaks the rule runs no case (what it computes is not the
    student's work: a library's)."""


@dataclass(frozen=True)
class TrafficLimit:
    """A rule about reuse (tiling): each output element may read at most `fraction` of
    the global-memory bytes that the lab's baseline.cu reads for one, both measured by
    the CPU model at the lab's profile case (grader.judge.rules.measured). Bytes the
    loads ask for are counted, not DRAM's (a cache does not make a load reuse), and a
    warp's global atomic as reading 4 bytes a lane (atomicAdd(&M[i], 0) reads M[i])."""

    fraction: float
    """The most bytes read per output element, as a fraction of the baseline's (1/4)."""
    fix: str
    """What to do, in the course's words: "stage tiles of M and N in shared memory and
    reuse each element TILE times"."""


@dataclass(frozen=True)
class Sampler:
    """A few output elements computed without the whole output, to check timed launches.
    `needs(sizes, axes, read)` gets the sampled coordinates along each axis of the
    output (1-D arrays, slowest axis first; the elements are their grid) and gives, for
    each input, the coordinates those elements read: one integer array per axis of the
    input, broadcast together, or None for the whole input; a coordinate outside the
    input reads 0. A gather finds what it reads from its indices: `read(name, coords)`
    gives input `name` at `coords` (None: all of it), as `combine` will get it.
    `combine(sizes, values, axes)` turns those inputs' values (float64, or the input's
    own integer type; shaped as their coordinates) into each output on the grid. Both
    must work on numpy arrays of objects too: a test lists each element's terms by
    running them on symbols (tests/terms_kit.py)."""

    needs: Callable[[Sizes, tuple[np.ndarray, ...], Read], dict[str, tuple[np.ndarray, ...] | None]]
    """needs(sizes, axes, read): for each input, the coordinates the sampled elements
    read."""
    combine: Callable[[Sizes, dict[str, np.ndarray], tuple[np.ndarray, ...]], dict]
    """combine(sizes, values, axes): each sampled output, {name: values on the grid}."""
    reads: Callable[[Sizes, tuple[int, ...]], dict[str, int]] | None = None
    """reads(sizes, counts): for each input, the elements a grid of `counts` sampled
    elements reads, where that is known without their coordinates (4096 block sums'
    coordinates fill 128 MB, which cost a timing 0.3 s to count); None: count `needs`'."""


@dataclass(frozen=True)
class Lab:
    """A lab. Its definition (reference_kernels/LAB/lab.py) leaves `name` and `home` to
    the registry (grader.labs), which sets them from the folder it loads it from."""

    title: str
    """The lab's title ("Tiled matrix multiply"), in `grader labs` and reports."""
    summary: str
    """One sentence: what the kernel computes."""
    kernel: Kernel
    """The first kernel launched; `then` follow it, in order."""
    inputs: tuple[Array, ...]
    """The arrays the grader fills before the run (buffers and constants' arrays)."""
    outputs: tuple[Array, ...]
    """The arrays compared after the run; the first is the one hints look at."""
    reference: Callable[[Arrays, Sizes], dict[str, np.ndarray]]
    """reference(inputs, sizes): each output, computed in float64 numpy (int64 for
    integer outputs). Each float output element must be a sum of products of inputs:
    grader.judge.compare counts each element's own terms, and sums their magnitudes, by
    running it on the inputs made 1 and made positive (integers stay as they are), so
    every element's tolerance follows from what it really sums (a sparse row's own
    entries)."""
    extent: Callable[[Sizes], tuple[int, int, int]]
    """extent(sizes): the output extent, x fastest; grid = ceil(extent / TILE)."""
    public_cases: tuple[Case, ...]
    """Cases students run themselves."""
    hidden_cases: tuple[Case, ...]
    """Fixed hidden sizes; their seeds, so their inputs, come from the secret."""
    random_sizes: Callable[[np.random.Generator], dict[str, int]]
    """random_sizes(rng): the sizes of one random hidden case, from the secret."""
    random_cases: int
    """How many random hidden cases."""
    timing_sizes: dict[str, int]
    """The sizes speed is measured at (on a GPU)."""
    work: Callable[[Sizes], tuple[float, float]]
    """work(sizes): (flops, bytes moved) of one launch, for rates and the check that a
    time is possible at all."""
    constants: tuple[Constant, ...] = ()
    """__constant__ symbols the grader fills by name."""
    macros: tuple[str, ...] = ()
    """Sizes passed to the compiler as -DNAME=value."""
    derive: Callable[[Sizes], dict[str, int]] = lambda sizes: {}
    """derive(sizes): sizes computed from the others (output extents, pitches, counts
    of blocks once the launch macros are known)."""
    draw: Callable[[np.random.Generator, Sizes], tuple[Arrays, Sizes]] | None = None
    """draw(rng, sizes) -> (arrays, sizes): inputs drawn together, from the case's rng
    (so from the secret for hidden cases), where one array's values depend on
    another's (a sparse matrix's row_ptr, col_idx), and the sizes they define (nnz),
    which shapes may use and reports do not show. The other inputs are drawn one by one
    after them (Array.draw). At the timed size the grader draws these arrays on the
    host, once per grading from its timing seed, uploads them and restores them before
    every timed launch; the GPU draws the others afresh before each launch."""
    dynamic_shared: Callable[[Sizes, Mapping[str, int]], int] | None = None
    """dynamic_shared(sizes, launch macros): bytes of extern __shared__ per block."""
    dims: int = 2
    """1, 2 or 3: the output's axes, which set the default BLOCK_*."""
    requirements: tuple[Requirement, ...] = ()
    """Rules correct output alone does not show (grader.labs.common)."""
    profile_case: str | None = None
    """The public case whose run is profiled (a kernel's memory profile, "why this
    speed", and the rules below that measure the work); None: the smallest public case,
    the census case. A case large enough that every thread has work of its own. Graded
    with the secret, a hidden case of about its size is profiled instead, where the lab
    has one (grader.judge.rules.profile_case)."""
    profile_alike: Callable[[Sizes], bool] | None = None
    """Whether a hidden case's sizes make it like the profile case, so that it may be
    profiled in its place (grader.judge.rules.profile_candidates); None: every hidden case
    of about its size. A lab whose cases differ in kind, not in size alone, says which
    keep the verdicts its own kernels get at the public one (spmv: power-law rows and no
    long row)."""
    traffic: TrafficLimit | None = None
    """A rule about reuse: the most global bytes each output element may read, as a
    fraction of the baseline's (matmul-tiled: 1/4); None: no such rule."""
    busiest_thread: float = 1 / 8
    """The largest share of the global loads and atomics (over every kernel of the lab)
    that one thread may make in the profile case, of the lab reference's loads there where
    the kernel makes more (so that other threads' loads for nothing do not dilute it): a
    kernel whose one thread does the work breaks it."""
    baseline_breaks: tuple[str, ...] = ()
    """The measured rules ("traffic", "busiest_thread") that the lab's baseline.cu breaks
    on purpose: the naive kernel a traffic rule compares with breaks it."""
    forbidden: tuple[tuple[str, str], ...] = ()
    """(regex, sentence) pairs the source must not match, read as the compiler reads it:
    no comments, `%:` as `#`, a token that a line splice cuts whole, lines where they were
    (grader.model.lexer.uncommented)."""
    hints: tuple[Callable, ...] = ()
    """Detectors for a case whose output has wrong elements, most specific first: each
    gets a grader.judge.hints.Context and gives a sentence or None; the first sentence is the
    case's hint."""
    fault_hints: tuple[Callable, ...] | None = None
    """Detectors for a case a fault stopped (an access outside a buffer, a crash): each
    gets a grader.judge.hints.Fault. None: grader.judge.hints.FAULT_HINTS, which blame a partial
    last tile of the output; a lab whose threads gather through indices gives its own,
    or ()."""
    precision_hints: tuple[Callable, ...] | None = None
    """Detectors run after `hints`, and alone for an output whose elements are all
    within tolerance but that fails the precision test. None:
    grader.judge.hints.PRECISION_HINTS (arithmetic in lower precision than float32)."""
    cross_case_hints: tuple[Callable, ...] | None = None
    """Detectors that look at which cases failed: each gets (lab, case results) and gives
    a sentence added to every failing case's hint, or None. None:
    grader.judge.hints.CROSS_CASE_HINTS (right only for some values of a macro, or only where
    two sizes are equal)."""
    scoring: Scoring = field(default_factory=Scoring)
    """Points for public cases, hidden cases and speed."""
    bound: str = "compute"
    """"compute" (rates in TFLOP/s) or "memory" (GB/s)."""
    sampler: Sampler | None = None
    """How to compute a few output elements of a timed launch; None: timed outputs go
    unchecked."""
    then: tuple[Kernel, ...] = ()
    """Kernels launched after `kernel`, on the same buffers."""
    scratch: tuple[Array, ...] = ()
    """Device buffers the kernels share, never compared."""
    block: tuple[int, int, int] | None = None
    """The default BLOCK_X, BLOCK_Y, BLOCK_Z; None: by `dims` (256; 16x16; 8x8x8)."""
    tile: tuple[str, str, str] = ("BLOCK_X", "BLOCK_Y", "BLOCK_Z")
    """The default TILE_X, TILE_Y, TILE_Z, as C expressions."""
    tolerance: Callable[[Sizes, np.ndarray, np.ndarray], np.ndarray] | None = None
    """tolerance(sizes, bound, terms): the error allowed for each element, from its own
    sum of |terms| (`bound`) and count of terms (`terms`), both computed from the case's
    inputs (a sparse row's own entries); None: what float32 summation of those terms can
    be off by (grader.judge.compare), with a precision test over the output."""
    limits: Mapping[str, int] = field(default_factory=dict)
    """The largest launch macros the lab accepts ({"TILE_X": 65536}): a file that
    defines a larger one is not run (grader.model.interface.check_limits)."""
    minimums: Mapping[str, int] = field(default_factory=dict)
    """The smallest launch macros the lab accepts, where a smaller one would leave the
    lab's work to the grader (a reduction whose blocks sum one input each is a copy, and
    the grader adds the copies): a file that defines a smaller one is not run
    (grader.model.interface.check_limits)."""
    name: str = field(default="", kw_only=True)
    """Set by the registry: the lab's folder name."""
    home: Path | None = field(default=None, kw_only=True)
    """Set by the registry: reference_kernels/NAME."""

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

    def output_elements(self, sizes: Sizes) -> int:
        """The elements of the lab's outputs in a case of `sizes` (its full sizes, launch
        macros included): what a profile's traffic per output element divides by."""
        return sum(math.prod(arr.shape(sizes)) for arr in self.outputs)

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
