"""What a backend is given and gives back: a compiled submission (Build), one launch and
its buffers, what the launch did (RunOutcome), and a timing; and the fill patterns both
backends put around and into buffers. Plain data: grading builds it, a backend runs it."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from grader.model.interface import Executed, Interface
from grader.model.result import CompileInfo, Diagnostic, Dim3
from grader.model.source import Submission

# Canary elements checked on each side of a device buffer, where it has room for them.
CANARY_ELEMENTS = 1024
# The canary value: a NaN with a payload no float arithmetic produces (the CPU runtime's
# CANARY, written from this by grader.backends.cpu.contract).
CANARY_BITS = 0x7FC0DEAD
# Outputs are poisoned with this NaN before every run, so unwritten elements show.
POISON_BITS = 0x7FC0FFEE
# What shared memory holds before a thread writes it, on both backends (also a NaN).
# The CPU runtime's SHARED_FILL (grader.backends.cpu.contract).
SHARED_FILL_BITS = 0x7FF87FF8  # a NaN too as each 16-bit half (__half, bf16) and a double


def bits_as_float(bits: int) -> np.float32:
    return filled(bits, np.float32)


def filled(bits: int, dtype: np.dtype | str) -> np.generic:
    """A 32-bit fill pattern as one element of `dtype`: the word itself for a 4-byte
    type, its low byte for a 1-byte one."""
    dtype = np.dtype(dtype)
    word = np.array([bits], np.uint32)
    if dtype.itemsize == 4:
        return word.view(dtype)[0]
    return word.view(np.uint8)[:1].view(dtype)[0]


def as_bits(values: np.ndarray) -> np.ndarray:
    """The elements as unsigned integers of their own width (NaNs compare by payload)."""
    values = np.ascontiguousarray(values)
    return values.view(f"u{values.dtype.itemsize}")


@dataclass
class Build:
    """A compiled submission. `interface` is None when compilation failed."""

    submission: Submission
    macros: dict[str, int]
    compile: CompileInfo
    interface: Interface | None
    diagnostics: list[Diagnostic] = field(default_factory=list)
    artifact: object = None  # whatever the backend needs to run it (a path, a source)

    @property
    def ok(self) -> bool:
        return self.compile.ok and self.interface is not None

    @property
    def refused(self) -> bool:
        """The backend refused the text on purpose, not for a feature it lacks: it would
        hide the kernel's accesses from the checks (Diagnostic.refused: the CPU backend's
        poisoned attributes and unhooked copies)."""
        return any(d.refused for d in self.diagnostics)


@dataclass(frozen=True)
class Repeated:
    """Contents given as `pattern` repeated to `size` elements. Timing buffers take this
    form: a kernel's speed does not depend on the values, so a few megabytes stand for
    hundreds, and the backend fills the device buffer itself."""

    pattern: np.ndarray  # 1-D, of the buffer's element type
    size: int

    @property
    def dtype(self) -> np.dtype:
        return self.pattern.dtype


@dataclass(frozen=True)
class Drawn:
    """`size` elements that the GPU draws itself before every timed launch of the
    student's kernel (grader.backends.timing): timing inputs."""

    size: int
    dtype: np.dtype = np.dtype(np.float32)


@dataclass
class Buffer:
    """A device buffer: `data` is the whole 1-D layout (pitched rows included), of any
    element type the labs use (float32, int32, uint32, uint8). Outputs are poisoned or
    zeroed by the caller; the backend adds canaries or guard pages. Only timing launches
    carry `Repeated` or `Drawn` data."""

    name: str
    data: np.ndarray | Repeated | Drawn  # 1-D
    output: bool  # the kernels may write it (an output, or the lab's scratch)
    accumulates: bool = False  # an output that starts at zero and many blocks add to

    @property
    def nbytes(self) -> int:
        return self.data.size * np.dtype(self.data.dtype).itemsize


@dataclass
class Scalar:
    name: str
    ctype: str  # "int" | "size_t"
    value: int


@dataclass
class Launch:
    """One kernel launch, and the launches that follow it (`then`, in order, on the same
    device buffers: a buffer is one per name, and the first launch to name it gives its
    contents). Every buffer is read back after the last launch."""

    kernel: str  # the name the lab uses; the backend maps it to its module symbol
    grid: Dim3
    block: Dim3
    shared_bytes: int
    args: list[Buffer | Scalar]
    constants: dict[str, np.ndarray]  # symbol -> float32 values of the symbol's full size
    then: list[Launch] = field(default_factory=list)

    @property
    def steps(self) -> list[Launch]:
        """This launch and those that follow it, in order."""
        return [self, *self.then]

    def own_buffers(self) -> list[Buffer]:
        return [a for a in self.args if isinstance(a, Buffer)]

    def sizes(self) -> list[str]:
        """The scalar parameters of every step, once (what an index is checked against)."""
        names = [a.name for step in self.steps for a in step.args if isinstance(a, Scalar)]
        return list(dict.fromkeys(names))

    def buffers(self) -> list[Buffer]:
        """Every buffer of every step, once, in the order they are first named."""
        seen: dict[str, Buffer] = {}
        for step in self.steps:
            for buffer in step.own_buffers():
                seen.setdefault(buffer.name, buffer)
        return list(seen.values())


@dataclass
class BufferState:
    """A buffer after the run, and what happened around it."""

    data: np.ndarray  # same element type and layout as the Buffer sent
    written_before: int = 0  # canary elements overwritten before the start
    written_after: int = 0  # canary elements overwritten past the end
    first_after: int | None = None  # offset (elements) of the first write past the end


@dataclass
class RunOutcome:
    """What one launch did. `buffers` is empty when the run crashed or timed out.
    `diagnostics` holds what the backend saw itself: a crash, a timeout, an access
    outside a buffer, a race, a barrier problem, a flood of output."""

    buffers: dict[str, BufferState] = field(default_factory=dict)
    diagnostics: list[Diagnostic] = field(default_factory=list)
    crashed: bool = False
    timed_out: bool = False
    output: str = ""  # the kernel's printf output, capped
    seconds: float = 0.0
    # The buffers of a second run of the same launch, where the backend makes one (the
    # GPU runs every case twice, once with each end of every buffer against unmapped
    # memory): results that differ between the runs point to a race.
    again: dict[str, np.ndarray] = field(default_factory=dict)
    # What each kernel of the launch executed, by kernel name, where the backend counted
    # it (Backend.build's `census`); empty where it did not.
    executed: dict[str, Executed] = field(default_factory=dict)
    # The backend ran blocks at once, each on a thread of its own, where it could have run
    # them one after another in grid order (Backend.run_in_grid_order): blocks that read
    # what others write may then have left outputs that another run would not.
    blocks_at_once: bool = False
    # Whether a block loaded an output element another block had stored in this run,
    # where the backend watched the loads of more than one block (the CPU backend's census
    # case, or its run that locates a race); None where it did not. Where one did, what
    # every case leaves may depend on which block ran first.
    blocks_read_each_other: bool | None = None
    # The GPU worker's seconds by phase of its run requests (grader.backends.window's
    # CASE_PHASES), only for bench/batch.py; empty where no worker sent them.
    window: dict[str, float] = field(default_factory=dict)

    @property
    def completed(self) -> bool:
        return not (self.crashed or self.timed_out)


def read_in_either(first: bool | None, second: bool | None) -> bool | None:
    """Two runs' blocks_read_each_other as one: True where either saw a block read
    another's store, False where either watched two blocks and neither did, else None."""
    if first is None or second is None:
        return second if first is None else first
    return first or second


@dataclass
class Timing:
    """Interleaved timing of a student and a reference launch (GPU only). With a
    TimingCheck, `checked` student launches were checked: `samples` holds, for each
    sampled output, the values read back after each of them (launches x elements), and
    `ceilings` the machine's measured fp32 peak ("flops", per second) and copy bandwidth
    ("bytes" read plus written, per second). `check_seconds` is the time the checks took
    on the GPU's side, outside the timed intervals. `window`: the worker's seconds by
    phase (grader.backends.window), only for bench/batch.py."""

    student_ms: list[float]
    reference_ms: list[float]
    note: str = ""
    checked: int = 0
    samples: dict[str, np.ndarray] = field(default_factory=dict)
    ceilings: dict[str, float] = field(default_factory=dict)
    check_seconds: float = 0.0
    window: dict[str, float] = field(default_factory=dict)
