"""The records the CPU worker (the runner, runtime/runner.cpp) writes on its record pipe
for the grader; the codes they and its exit status carry are the contract's
(grader.backends.cpu.contract).

A record is one line, "name key=value ...", written by the Line of the sandbox's
record.cpp (grader/toolchain/sandbox/). Each kind the grader reads is a class here, its
fields typed: a number is decimal or 0x hex, a text is the bytes the worker chose,
hex-encoded, a triple is "x,y,z", a list is "a,b,...".
Records after the worker's "load" record may be the submission's own writing, so reading
one never fails: a field that is missing or malformed reads as its default, and a kind not
named here is an Other. tests/cpu/test_contract.py ties the kinds to the runtime's."""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import ClassVar

from grader.toolchain.sandbox import Layers, parse_fields, unhex

# The kinds of field, each named by the annotation its fields carry.
Text = str  # hex-encoded bytes on the wire, decoded
Dim = tuple[int, int, int]  # "x,y,z"
Sizes = tuple[int, ...]  # "16,16": every one positive, else none
Numbers = tuple[int, ...]  # "0x1a,0x2b": at most 16, each of 64 bits


def _number(value: str | None, default: int) -> int:
    try:
        number = int(value, 16) if value.startswith("0x") else int(value)
    except (AttributeError, ValueError):
        return default
    return number if -(1 << 63) <= number < 1 << 64 else default


def _word(value: str | None, default: str) -> str:
    return default if value is None else value


def _text(value: str | None, default: str) -> str:
    return unhex(value or "")


def _dim(value: str | None, default: None) -> Dim | None:
    try:
        x, y, z = (int(v) for v in value.split(","))
    except (AttributeError, ValueError):
        return None
    return (x, y, z)


def _sizes(value: str | None, default: Sizes) -> Sizes:
    try:
        values = tuple(int(v) for v in (value or "").split(","))
    except ValueError:
        return ()
    return values if all(v > 0 for v in values) else ()


def _numbers(value: str | None, default: Numbers) -> Numbers:
    out = []
    for word in (value or "").split(",")[:16]:
        try:
            number = int(word, 0)
        except ValueError:
            continue
        if 0 <= number < 1 << 64:
            out.append(number)
    return tuple(out)


_READERS = {
    "int": _number,
    "str": _word,
    "Text": _text,
    "Dim | None": _dim,
    "Sizes": _sizes,
    "Numbers": _numbers,
}
KINDS: dict[str, type[Record]] = {}


def _kind(name: str):
    """Register a record class under the name its line starts with."""

    def register(cls: type[Record]) -> type[Record]:
        if "read" not in cls.__dict__:
            unknown = [f.name for f in fields(cls) if f.type not in _READERS]
            if unknown:
                raise TypeError(f"{cls.__name__}: no reader for the fields {unknown}")
        cls.NAME = name
        KINDS[name] = cls
        return cls

    return register


@dataclass(frozen=True)
class Record:
    NAME: ClassVar[str] = ""

    @classmethod
    def read(cls, values: dict[str, str]) -> Record:
        """The record from its fields; a field named `pass_` is the line's "pass"."""
        return cls(
            **{
                f.name: _READERS[f.type](values.get(f.name.rstrip("_")), f.default)
                for f in fields(cls)
            }
        )


@dataclass(frozen=True)
class Other(Record):
    """A record of a kind the grader does not read."""

    name: str = ""


def parse(line: str) -> tuple[Record, bool]:
    """The record a line holds, and whether the line was its name alone."""
    name, values = parse_fields(line)
    kind = KINDS.get(name)
    return (kind.read(values) if kind else Other(name)), not values


@dataclass(frozen=True)
class Region(Record):
    """Where an address lies, added to a fault or a hazard (runtime/memory.cpp): a kernel
    buffer, the dynamic shared memory, a stack, or a static __shared__ array, which comes
    with its declaration."""

    kind: str = ""  # buffer | shared | stack | static_shared, or a fault's own kind
    index: int = 0  # the buffer's ordinal in the launch
    offset: int = 0  # bytes from the start
    bytes: int = 0  # the region's size
    name: Text = ""  # a static array's name
    element: int = 4  # bytes of its element
    decl_line: int = 0
    dims: Sizes = ()


@_kind("fault")
@dataclass(frozen=True)
class Fault(Region):
    """A signal in the kernel or in a global constructor (runtime/signals.cpp), or a check
    of the shim that stops it, an assert (runtime/output.cpp). Its kind is the region's
    where the address lies in one, else address, stack_overflow, divide, float, abort,
    instruction, assert, trap."""

    signal: int = 0
    code: int = 0
    pass_: int = 0
    line: int = 0  # the shim's own checks know the line
    thread: Dim | None = None  # None with where=init: a global constructor
    block: Dim | None = None
    where: str = ""
    pc: int = 0
    addr: int = 0
    access: str = ""  # read | write | unknown
    stack: int = 0  # a fiber stack's bytes
    text: Text = ""  # an assert's condition


@_kind("timeout")
@dataclass(frozen=True)
class Timeout(Record):
    """The worker's watchdog stopped the kernel, or the module's loading (runtime/signals.cpp):
    where it found the first running block, every place its probes found it at, and the
    barriers the block's threads kept meeting at."""

    phase: str = ""  # load | kernel
    pass_: int = 0
    ms: int = 0
    pcs: Numbers = ()
    barriers: Numbers = ()
    pc: int = 0
    thread: Dim | None = None
    block: Dim | None = None


@_kind("divergence")
@dataclass(frozen=True)
class Divergence(Record):
    """Threads of a block that did not meet at the same barrier or warp operation
    (runtime/scheduler.cpp). With what=shared_tail, `line` is the byte of the dynamic
    shared memory a block wrote past its end."""

    what: str = ""  # lines | returned | warp | shared_tail
    pass_: int = 0
    block: Dim | None = None
    thread: Dim | None = None
    line: int = 0
    other: Dim | None = None
    other_line: int = 0
    other_state: int = 0  # 0: the other thread had returned; 1: it waits at a barrier
    op: int = 0  # a Barrier or a WarpOp (grader.backends.cpu.contract)


@_kind("error")
@dataclass(frozen=True)
class Error(Record):
    """A step of the runner that failed (record.cpp's fail): before "load" the
    machine's, after it the module's interface (arity, kernel_missing, constant_*)."""

    what: str = ""
    detail: Text = ""
    params: int = 0  # arity: the kernel's parameters
    args: int = 0  # arity: the launch's arguments


@_kind("pass")
@dataclass(frozen=True)
class Pass(Record):
    """A pass over the grid that ended (runtime/runner.cpp), and what it counted."""

    n: int = 0
    ms: int = 0
    us: int = 0
    fibers: int = 0
    float_atomics: int = 0
    shared_loads: int = 0
    atomics: int = 0
    conflicts: int = 0  # elements stored by more than one block (runtime/stores.cpp)
    crossed: int = 0  # loads of an output element another block stored (stores_read)


@_kind("profile")
@dataclass(frozen=True)
class Profile(Record):
    """The first pass's accesses as warp-level requests (runtime/profile.cpp): for each
    kind with traffic, its requests, sectors (shared: wavefronts), bytes and lanes; the
    atomics' requests by space; the most global loads one thread made, and one block, and
    the blocks; and the token the job gave, which only the runner knows."""

    token: str = ""
    global_loads: Numbers = ()
    global_stores: Numbers = ()
    shared_loads: Numbers = ()
    shared_stores: Numbers = ()
    constant_loads: Numbers = ()
    global_atomics: int = 0
    shared_atomics: int = 0
    busiest: int = 0
    busiest_block: int = 0
    blocks: int = 0


@_kind("printf")
@dataclass(frozen=True)
class Printf(Record):
    """The kernel's printf output: bytes printed, and bytes kept."""

    total: int = 0
    kept: int = 0


@_kind("overlap")
@dataclass(frozen=True)
class Overlap(Record):
    """The first output element two blocks stored different values into, in the serial
    pass (runtime/memory.cpp): both blocks, the element's bits before and after the second
    store, the store's program counter, and how many elements that happened to."""

    index: int = 0
    element: int = 0
    first: Dim | None = None
    second: Dim | None = None
    before: int = 0
    after: int = 0
    pc: int = 0
    count: int = 0


@_kind("lost")
@dataclass(frozen=True)
class Lost(Record):
    """The first plain store by a second block into an output blocks add to, where an
    atomic was needed (runtime/stores.cpp)."""

    index: int = 0
    element: int = 0
    first: Dim | None = None
    second: Dim | None = None
    pc: int = 0


@_kind("twice")
@dataclass(frozen=True)
class Twice(Record):
    """After the passes, where a record that narrows a race saw elements stored twice
    (runtime/runner.cpp): how many elements the two thread orders left different that
    none of those records saw stored twice (by two threads of a block, by two blocks, or
    updated plainly by two blocks)."""

    outside: int = -1


@_kind("seal")
@dataclass(frozen=True)
class Seal(Record):
    """The end of a pass (runtime/runner.cpp): the job's token, which only the runner
    knows, and how many records that narrow a race to one case (an overlap, a lost update,
    a waw hazard, and the "twice" record after them) the runtime has written so far
    (runtime/output.cpp)."""

    token: str = ""
    count: int = 0


@_kind("hazard")
@dataclass(frozen=True)
class Hazard(Region):
    """An access that races with another thread's of its block (runtime/hazards.cpp), the
    first of its kind: in shared memory, a read after another thread's write (raw) or a
    write after its read (war); in an output, a store after another thread's (waw), or a
    read before any store (unset, with no other thread); and where it lies."""

    what: str = ""  # raw | war | waw | unset
    thread: Dim | None = None
    other: Dim | None = None
    block: Dim | None = None
    pc: int = 0
    other_pc: int = 0


@_kind("sandbox")
@dataclass(frozen=True)
class Sandbox(Record):
    """The layers of the sandbox the worker applied (grader/toolchain/sandbox/)."""

    layers: Layers = Layers()

    @classmethod
    def read(cls, values: dict[str, str]) -> Sandbox:
        return cls(Layers.from_record(values))
