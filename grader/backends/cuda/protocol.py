"""The messages between the grader and its GPU worker.

A message is a JSON header plus raw numpy arrays, framed as

    u32 header length | u64 payload length | header (UTF-8 JSON) | payload

The header's "arrays" entry gives each array's dtype and shape; the payload is their
bytes, one after another. Nothing is pickled, so a worker that misbehaves can send
only data. Launches travel as plain dictionaries that name arrays by position, a launch
of several kernels as its steps in order. An array that two launches share crosses once,
a Repeated buffer sends only its pattern, and a Drawn one only its size and type.

A request that names a batch's GPU gate may get one message before its reply: the
worker's word that it holds the gate (GATE_TAKEN), from which the request's deadline
starts again (receive_reply)."""

from __future__ import annotations

import json
import os
import select
import struct
import time
from dataclasses import dataclass, field

import numpy as np

from grader import defaults
from grader.model.launch import Buffer, Drawn, Launch, Repeated, Scalar

_FRAME = struct.Struct("<IQ")
_CHUNK = 1 << 20
MAX_HEADER = 64 << 20
GATE_TAKEN = "gate taken"  # a header's only key, mid-request: the worker holds the gate
# the longest a gated request waits for the gate: a batch's 16 workers queued, each holding
# it for at most a timing's budget and grace
GATE_WAIT_LIMIT = 16 * (defaults.TIMING_BUDGET + defaults.TIMING_GRACE) + 60.0

# Scalar C types the labs pass, and the numpy type that has their size.
SCALAR_TYPES = {"int": np.int32, "unsigned": np.uint32, "size_t": np.uint64}


class ChannelClosed(Exception):
    """The other end closed the pipe or did not answer in time."""


class ChannelTimeout(ChannelClosed):
    """No complete message arrived before the deadline."""


@dataclass
class Message:
    header: dict
    arrays: list[np.ndarray] = field(default_factory=list)


def encode(message: Message) -> bytes:
    start, views = _framed(message)
    return start + b"".join(views)


def _framed(message: Message) -> tuple[bytes, list[memoryview]]:
    """The frame and header, and each array's bytes in place: `send` writes them as they
    are (a sparse matrix's structure is 44 MB a timing), with no copy made here."""
    arrays = [np.ascontiguousarray(a) for a in message.arrays]
    header = dict(message.header)
    header["arrays"] = [{"dtype": a.dtype.str, "shape": list(a.shape)} for a in arrays]
    head = json.dumps(header).encode()
    views = [memoryview(a.reshape(-1).view(np.uint8)) for a in arrays]
    return _FRAME.pack(len(head), sum(v.nbytes for v in views)) + head, views


def decode(head: bytes, payload: bytes | bytearray) -> Message:
    """Raises ChannelClosed, and nothing else, for bytes that are not a message of ours."""
    try:
        header = json.loads(head)
        arrays, offset = [], 0
        for spec in header.pop("arrays", []):
            array = _array(spec, payload, offset)
            arrays.append(array)
            offset += array.nbytes
    except (ValueError, TypeError, KeyError, AttributeError, OverflowError) as err:
        raise ChannelClosed(f"a message that is not one of ours ({err})") from None
    return Message(header, arrays)


def _array(spec: dict, payload: bytes | bytearray, offset: int) -> np.ndarray:
    """One array of a message: plain numbers only (no objects, no structures), with a
    shape that fits what is left of the payload. It shares a received payload's memory
    (receive's own, written nowhere else); a copy where that is read-only bytes or the
    array's place in it is not aligned to its type."""
    dtype = np.dtype(spec["dtype"])
    shape = [int(n) for n in spec["shape"]]
    if dtype.kind not in "biuf" or any(n < 0 for n in shape):
        raise ValueError(f"an array of {dtype} in shape {shape}")
    count = 1
    for n in shape:  # exact: numpy's product would wrap around
        count *= n
    end = offset + count * dtype.itemsize
    if end > len(payload):
        raise ValueError("arrays longer than the payload")
    array = np.frombuffer(memoryview(payload)[offset:end], dtype).reshape(shape)
    return array if array.flags.writeable and array.flags.aligned else array.copy()


def send(fd: int, message: Message) -> None:
    start, views = _framed(message)
    try:
        for data in (memoryview(start), *views):
            while data:
                written = os.write(fd, data[:_CHUNK])
                data = data[written:]
    except (BrokenPipeError, OSError) as err:
        raise ChannelClosed(f"the pipe closed while sending: {err}") from err


def receive(fd: int, deadline: float | None = None) -> Message:
    """Read one message; `deadline` is a time.monotonic() value, None waits forever."""
    head_len, payload_len = _FRAME.unpack(_read_exact(fd, _FRAME.size, deadline))
    if head_len > MAX_HEADER:
        raise ChannelClosed(f"a message header of {head_len} bytes is not one of ours")
    head = _read_exact(fd, head_len, deadline)
    return decode(head, _read_exact(fd, payload_len, deadline))


def receive_reply(fd: int, timeout: float | None, gated: bool = False) -> Message:
    """A request's reply, within `timeout` seconds (None: forever) of the request, or,
    for a request that names a batch's GPU gate (`gated`), of the worker's word that it
    took the gate: the wait there is for other processes' kernels (a hung one holds it
    until its own deadline), none of this request's, so it never makes a kernel look
    hung. Before that word only GATE_WAIT_LIMIT bounds the wait (no student code runs
    before the gate: the worker places the buffers)."""
    limit = GATE_WAIT_LIMIT if gated else timeout
    while True:
        deadline = None if limit is None else time.monotonic() + max(limit, 0.0)
        message = receive(fd, deadline)
        if message.header != {GATE_TAKEN: True}:
            return message
        limit = timeout


def _read_exact(fd: int, size: int, deadline: float | None) -> bytearray:
    """`size` bytes, read straight into the buffer returned (the arrays decoded from it
    are views of it)."""
    buf = bytearray(size)
    view = memoryview(buf)
    got = 0
    while got < size:
        _wait_readable(fd, deadline)
        read = os.readv(fd, [view[got : got + min(size - got, _CHUNK)]])
        if not read:
            raise ChannelClosed("the other end closed the pipe")
        got += read
    return buf


def _wait_readable(fd: int, deadline: float | None) -> None:
    if deadline is None:
        return
    remaining = deadline - time.monotonic()
    if remaining <= 0 or not select.select([fd], [], [], remaining)[0]:
        raise ChannelTimeout("no answer before the deadline")


# -- launches -----------------------------------------------------------------------------


class ArrayTable:
    """Arrays to send, flattened, each once however many launches use it (the same
    array object is the same array), in their own element type."""

    def __init__(self) -> None:
        self.arrays: list[np.ndarray] = []
        self._index: dict[int, int] = {}

    def add(self, array: np.ndarray) -> int:
        key = id(array)
        if key not in self._index:
            self._index[key] = len(self.arrays)
            self.arrays.append(np.ascontiguousarray(array).reshape(-1))
        return self._index[key]


def encode_launch(launch: Launch, symbols: list[str], table: ArrayTable) -> dict:
    """`symbols` are the kernels' names in the module (mangled unless extern "C"), one
    per step of the launch. A buffer's contents cross with the first step that names it."""
    sent: set[str] = set()
    steps = []
    for step, symbol in zip(launch.steps, symbols, strict=True):
        args = []
        for arg in step.args:
            if isinstance(arg, Buffer):
                args.append(_encode_buffer(arg, table, first=arg.name not in sent))
                sent.add(arg.name)
            else:
                if arg.ctype not in SCALAR_TYPES:
                    raise ValueError(
                        f"scalar {arg.name} has C type {arg.ctype!r}, not one of "
                        f"{', '.join(SCALAR_TYPES)}"
                    )
                args.append({"scalar": arg.name, "ctype": arg.ctype, "value": int(arg.value)})
        constants = [
            {"name": name, "array": table.add(values)} for name, values in step.constants.items()
        ]
        steps.append(
            {
                "kernel": step.kernel,
                "symbol": symbol,
                "grid": [int(v) for v in step.grid],
                "block": [int(v) for v in step.block],
                "shared": int(step.shared_bytes),
                "args": args,
                "constants": constants,
            }
        )
    return {"steps": steps}


def _encode_buffer(arg: Buffer, table: ArrayTable, first: bool) -> dict:
    entry: dict = {"buffer": arg.name, "output": arg.output}
    if not first:
        return entry
    data = arg.data
    if isinstance(data, Drawn):
        return {**entry, "drawn": data.size, "dtype": np.dtype(data.dtype).str}
    if isinstance(data, Repeated):
        entry["repeat"], data = data.size, data.pattern
    return {**entry, "array": table.add(data)}


def decode_launch(spec: dict, arrays: list[np.ndarray]) -> tuple[Launch, list[str]]:
    """The Launch and its steps' module symbols, from encode_launch's dictionary."""
    buffers: dict[str, Buffer] = {}
    steps, symbols = [], []
    for step in spec["steps"]:
        args: list[Buffer | Scalar] = []
        for arg in step["args"]:
            if "buffer" not in arg:
                args.append(Scalar(arg["scalar"], arg["ctype"], arg["value"]))
                continue
            if arg["buffer"] not in buffers:
                buffers[arg["buffer"]] = Buffer(
                    arg["buffer"], _contents(arg, arrays), arg["output"]
                )
            args.append(buffers[arg["buffer"]])
        constants = {c["name"]: arrays[c["array"]] for c in step["constants"]}
        grid, block = tuple(step["grid"]), tuple(step["block"])
        steps.append(Launch(step["kernel"], grid, block, step["shared"], args, constants))
        symbols.append(step["symbol"])
    launch = steps[0]
    launch.then = steps[1:]
    return launch, symbols


def _contents(arg: dict, arrays: list[np.ndarray]) -> np.ndarray | Repeated | Drawn:
    if "drawn" in arg:
        return Drawn(int(arg["drawn"]), np.dtype(arg.get("dtype", "<f4")))
    if "array" not in arg:
        raise ValueError(f"buffer {arg['buffer']} has no contents where it is first named")
    data = arrays[arg["array"]]
    return Repeated(data, int(arg["repeat"])) if "repeat" in arg else data


def scalar_value(arg: Scalar) -> np.generic:
    return SCALAR_TYPES[arg.ctype](arg.value)
