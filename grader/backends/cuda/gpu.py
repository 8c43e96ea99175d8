"""The GPU side of the worker: the only module that imports PyCUDA, and only inside the
worker process. It compiles and caches modules, lays out buffers (flush against unmapped
memory with canaries in the slack for correctness runs and timing, exact sizes apart
under the sanitizer), and launches; timing a pair of runs is backends.cuda.timing's, and
checking the timed launches backends.cuda.checked's, each over a Gpu.

Every PyCUDA error becomes a `CudaFailure` that says where it happened and whether the
context survived it."""

from __future__ import annotations

import hashlib
import json
import os
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from grader.backends.cuda import errors, vmm
from grader.backends.cuda.protocol import scalar_value
from grader.files import write_atomically
from grader.model.launch import (
    CANARY_BITS,
    CANARY_ELEMENTS,
    POISON_BITS,
    SHARED_FILL_BITS,
    Buffer,
    Drawn,
    Launch,
    Repeated,
)
from grader.toolchain.nvcc import compile_folder

SHARED_OPT_IN = 48 * 1024  # dynamic shared memory above this needs the kernel's opt-in
GAP_BYTES = (64 << 10, 64 << 20)  # least and most unallocated space around a sanitized buffer


class CudaFailure(Exception):
    """A CUDA call failed. `phase` is where ("load", "launch", "sync", ...)."""

    def __init__(self, phase: str, message: str) -> None:
        super().__init__(message)
        self.phase = phase
        self.message = message
        self.sticky = phase != "load" and errors.is_sticky(message)
        self.extra: dict = {}

    def to_json(self) -> dict:
        return {"phase": self.phase, "message": self.message, "sticky": self.sticky}


@dataclass
class DeviceBuffer:
    name: str
    address: int  # where the kernel's data starts
    elements: int
    release: Callable[[], None]
    before: int = 0  # canary elements just before the data
    after: int = 0  # canary elements just after it
    dtype: np.dtype = np.dtype(np.float32)

    @property
    def itemsize(self) -> int:
        return self.dtype.itemsize

    @property
    def nbytes(self) -> int:
        return self.itemsize * self.elements


def canary_bytes(count: int) -> np.ndarray:
    """`count` bytes of the canary word repeated, from its first byte."""
    words = np.full(-(-count // 4), CANARY_BITS, "<u4")
    return words.view(np.uint8)[:count].copy()


@dataclass
class Gpu:
    cuda: object  # the pycuda.driver module
    context: object
    hangup: Callable[[], bool]  # true once the grader has gone away
    cache_dir: str
    vmm: vmm.Driver | None = None  # None: the driver offers no virtual memory management
    modules: dict[str, object] = field(default_factory=dict)
    # key -> (address, load-time bytes) of each of the module's __device__ variables
    initial: dict[str, list[tuple[int, np.ndarray]]] = field(default_factory=dict)
    helper: object = None  # the module of helpers.SOURCE, once compiled
    measured: dict | None = None  # the ceilings, measured once per worker

    @classmethod
    def open(cls, hangup: Callable[[], bool], cache_dir: str) -> Gpu:
        import pycuda.driver as cuda

        with failures("init"):
            cuda.init()
            context = cuda.Device(0).make_context()
        try:
            driver = vmm.Driver(0) if vmm.wanted() else None
        except (vmm.VmmError, AttributeError):  # AttributeError: a libcuda without VMM
            driver = None
        return cls(cuda, context, hangup, cache_dir, driver)

    def info(self) -> dict:
        device = self.context.get_device()
        major, minor = device.compute_capability()
        version = self.cuda.get_driver_version()
        return {
            "name": device.name(),
            "arch": f"sm_{major}{minor}",
            "cuda": f"{version // 1000}.{version % 1000 // 10}",
            "memory": device.total_memory(),
            "guarded": self.vmm is not None,
        }

    # -- modules --------------------------------------------------------------------------

    def load(self, key: str, cubin: bytes) -> None:
        """Module `key`, from the cubin nvcc.inspect made (backend.ModuleSpec)."""
        if key not in self.modules:
            with failures("load"):
                self.modules[key] = self.cuda.module_from_buffer(cubin)

    def compiled(self, source: str, options: list[str], arch: str, nvcc: str, phase: str = "load"):
        """The grader's own module (checked.helper_module) compiled by PyCUDA from
        `source`, or from the cubin an earlier compile of the same source, options, arch
        and `nvcc` cached (the wrapper's name tells nvcc's version:
        nvcc.sandboxed_nvcc). The file is named by a hash of those. The cache is the
        grader's, written whole or not at all: PyCUDA's own writes its
        file in place, and a worker that read one while another wrote it loaded a torn
        cubin ("device kernel image is invalid": the GPU pipeline test, six gradings at
        once on a cold cache). What fails is a CudaFailure of `phase`."""
        blob = json.dumps([source, options, arch, nvcc]).encode()
        cached = Path(self.cache_dir, f"{hashlib.sha256(blob).hexdigest()}.cubin")
        try:
            image = cached.read_bytes()
        except OSError:
            image = self._compile(source, options, arch, nvcc, phase)
            write_atomically(cached, image)
        with failures(phase):
            return self.cuda.module_from_buffer(image)

    def _compile(self, source: str, options: list[str], arch: str, nvcc: str, phase: str) -> bytes:
        from pycuda.compiler import compile as pycuda_compile  # what SourceModule runs

        os.makedirs(self.cache_dir, exist_ok=True)
        with failures(phase), compile_folder():  # `nvcc` is sandboxed to that folder
            try:
                return pycuda_compile(
                    _writable(source),
                    nvcc=nvcc,
                    options=options,
                    no_extern_c=True,
                    arch=arch,
                    cache_dir=False,
                )
            except self.cuda.CompileError as err:
                raise CudaFailure(phase, f"PyCUDA could not compile the module: {err}") from err

    def load_ptx(self, key: str, text: str) -> None:
        """A module from PTX the grader made (the census's), compiled by the driver."""
        if key in self.modules:
            return
        with failures("load"):
            self.modules[key] = self.cuda.module_from_buffer(text.encode())

    def counters(self, key: str, name: str) -> int:
        """The address of the census's counters in module `key` (census.py)."""
        with failures("load"):
            return int(self.modules[key].get_global(name)[0])

    def take_counters(self, address: int) -> list[int]:
        """The census's two counters, which start again from 0."""
        counts = np.zeros(2, np.uint64)
        with failures("copy"):
            self.cuda.memcpy_dtoh(counts, address)
            self.cuda.memset_d8(address, 0, counts.nbytes)
        return [int(c) for c in counts]

    def snapshot(self, key: str, names: list[str]) -> None:
        """The named variables' bytes, once, as the module loaded them."""
        if key in self.initial:
            return
        saved = []
        for name in names:
            with failures("load"):
                pointer, size = self.modules[key].get_global(name)
                data = np.empty(size, np.uint8)
                self.cuda.memcpy_dtoh(data, pointer)
            saved.append((int(pointer), data))
        self.initial[key] = saved

    def restore(self, key: str) -> None:
        """Every snapshotted variable back to its load-time bytes."""
        for pointer, data in self.initial.get(key, []):
            with failures("copy"):
                self.cuda.memcpy_htod(pointer, data)

    def function(self, key: str, symbol: str):
        with failures("load"):
            return self.modules[key].get_function(symbol)

    def set_constants(self, key: str, constants: dict[str, np.ndarray]) -> None:
        module = self.modules[key]
        for name, values in constants.items():
            with failures("constant"):
                pointer, size = module.get_global(name)
            data = np.ascontiguousarray(values, np.float32)
            if size != data.nbytes:
                raise ValueError(
                    f"__constant__ {name} has {size} bytes in the module, but the grader sends "
                    f"{data.nbytes}: the interface check should have stopped this launch"
                )
            with failures("constant"):
                self.cuda.memcpy_htod(pointer, data)

    # -- buffers --------------------------------------------------------------------------

    def place(self, buffer: Buffer, side: str) -> DeviceBuffer:
        """`buffer` flush against unmapped memory on `side` (vmm.START, END or ROOMY),
        with canaries in the slack next to it. Without VMM: a plain allocation with
        canaries on both sides."""
        size = buffer.data.size
        if self.vmm is None:
            return self.allocate(buffer, CANARY_ELEMENTS)
        dtype = np.dtype(buffer.data.dtype)
        with failures("alloc"):
            mapping = self.vmm.map(dtype.itemsize * size, side)
        shape = mapping.layout
        placed = DeviceBuffer(
            buffer.name,
            mapping.address,
            size,
            release=lambda: self.vmm.release(mapping),
            before=min(CANARY_ELEMENTS, shape.slack_before // dtype.itemsize),
            after=min(CANARY_ELEMENTS, shape.slack_after(dtype.itemsize * size) // dtype.itemsize),
            dtype=dtype,
        )
        try:
            if mapping.reused:  # nothing of an earlier case left beside the buffer
                with failures("copy"):
                    self.cuda.memset_d8(mapping.start, 0, shape.mapped)
            self._contents(placed, buffer)
        except CudaFailure as failure:
            if not failure.sticky:
                self.free([placed])
            raise
        return placed

    def allocate(self, buffer: Buffer, canaries: int) -> DeviceBuffer:
        size = buffer.data.size
        dtype = np.dtype(buffer.data.dtype)
        with failures("alloc"):
            allocation = self.cuda.mem_alloc(max(dtype.itemsize * (size + 2 * canaries), 4))
        address = int(allocation) + dtype.itemsize * canaries
        placed = DeviceBuffer(
            buffer.name, address, size, allocation.free, canaries, canaries, dtype
        )
        self._contents(placed, buffer)
        return placed

    def _contents(self, placed: DeviceBuffer, buffer: Buffer) -> None:
        self._guard(placed)
        if isinstance(buffer.data, Repeated):
            self.fill(placed, buffer.data)
        elif not isinstance(buffer.data, Drawn):  # drawn buffers are written before each launch
            self.upload(placed, np.ascontiguousarray(buffer.data, placed.dtype).reshape(-1))

    def allocate_apart(self, buffers: list[Buffer]) -> dict[str, DeviceBuffer]:
        """Exact-size buffers with freed gaps between them. The driver packs small
        allocations back to back, so without the gaps a read just past one buffer would
        land in the next, which the sanitizer counts as a valid access."""
        spacers, placed = [], {}
        with failures("alloc"):
            for buffer in buffers:
                spacers.append(self.cuda.mem_alloc(_gap_bytes(buffer.nbytes)))
                placed[buffer.name] = self.allocate(buffer, 0)
            spacers.append(self.cuda.mem_alloc(_gap_bytes(buffers[-1].nbytes if buffers else 0)))
            for spacer in spacers:
                spacer.free()
        return placed

    def fill(self, placed: DeviceBuffer, data: Repeated) -> None:
        """Upload the pattern once, then double the filled prefix by device copies."""
        done = min(data.pattern.size, data.size)
        if not done:
            return
        first = np.ascontiguousarray(data.pattern[:done], placed.dtype)
        width = placed.itemsize
        with failures("copy"):
            self.cuda.memcpy_htod(placed.address, first)
            while done < data.size:
                step = min(done, data.size - done)
                self.cuda.memcpy_dtod(placed.address + width * done, placed.address, width * step)
                done += step

    def upload(self, placed: DeviceBuffer, data: np.ndarray) -> None:
        if data.size:
            with failures("copy"):
                self.cuda.memcpy_htod(placed.address, data)

    def prepare(self, placed: DeviceBuffer, zero: bool = False) -> None:
        """Poison the buffer's elements (or zero them, for an accumulator)."""
        with failures("copy"):
            if zero:
                self.cuda.memset_d8(placed.address, 0, placed.nbytes)
            elif placed.itemsize == 4:
                self.cuda.memset_d32(placed.address, POISON_BITS, placed.elements)
            else:
                self.cuda.memset_d8(placed.address, POISON_BITS & 0xFF, placed.nbytes)

    def _guard(self, placed: DeviceBuffer) -> None:
        """Canaries in the slack: the canary word's bytes, repeated from each end."""
        width = placed.itemsize
        with failures("copy"):
            if placed.before:
                start = placed.address - width * placed.before
                self.cuda.memcpy_htod(start, canary_bytes(width * placed.before))
            if placed.after:
                self.cuda.memcpy_htod(
                    placed.address + placed.nbytes, canary_bytes(width * placed.after)
                )

    def download(self, placed: DeviceBuffer) -> dict:
        """The buffer's data and what happened to its canaries."""
        before, after, width = placed.before, placed.after, placed.itemsize
        whole = np.empty(width * (before + placed.elements + after), np.uint8)
        if whole.size:
            with failures("copy"):
                self.cuda.memcpy_dtoh(whole, placed.address - width * before)
        data = whole[width * before : width * (before + placed.elements)].view(placed.dtype)
        written_before = _changed(whole[: width * before], width)
        written_after = _changed(whole[width * (before + placed.elements) :], width)
        return {
            "name": placed.name,
            "written_before": int(written_before.size),
            "written_after": int(written_after.size),
            "first_after": int(written_after[0]) if written_after.size else None,
            "data": data,
        }

    def free(self, buffers: list[DeviceBuffer]) -> None:
        """Release the buffers once nothing queued can touch them: unmapping is not said
        to wait for copies still in flight to them (as after a launch refused right after
        its uploads), and a copy into unmapped memory faults the context."""
        self.settle()
        for placed in buffers:
            placed.release()

    # -- launching ------------------------------------------------------------------------

    def arguments(self, launch: Launch, placed: dict[str, DeviceBuffer]) -> list:
        out = []
        for arg in launch.args:
            if isinstance(arg, Buffer):
                out.append(np.uintp(placed[arg.name].address))
            else:
                out.append(scalar_value(arg))
        return out

    def fill_shared(self) -> None:
        """Every SM's shared memory set to SHARED_FILL_BITS (helpers' fill_shared): one
        block of the largest shared memory a block may have on each SM."""
        function = self.helper.get_function("fill_shared")
        device = self.context.get_device()
        nbytes = device.get_attribute(self.cuda.device_attribute.MAX_SHARED_MEMORY_PER_BLOCK_OPTIN)
        with failures("launch"):
            function.set_attribute(
                self.cuda.function_attribute.MAX_DYNAMIC_SHARED_SIZE_BYTES, nbytes
            )
            function(
                np.uint32(SHARED_FILL_BITS),
                np.int32(nbytes // 4),
                grid=(self.multiprocessors(), 1, 1),
                block=(1024, 1, 1),
                shared=nbytes,
            )

    def multiprocessors(self) -> int:
        device = self.context.get_device()
        return device.get_attribute(self.cuda.device_attribute.MULTIPROCESSOR_COUNT)

    def launch(self, function, launch: Launch, args: list, stream=None) -> None:
        with failures("launch"):
            if launch.shared_bytes > SHARED_OPT_IN:
                attribute = self.cuda.function_attribute.MAX_DYNAMIC_SHARED_SIZE_BYTES
                function.set_attribute(attribute, launch.shared_bytes)
            function(
                *args,
                grid=tuple(launch.grid),
                block=tuple(launch.block),
                shared=launch.shared_bytes,
                stream=stream,
            )

    def wait(self, event, longest: float = 1e-3) -> None:
        """Wait for `event` without blocking in the driver, so that the worker notices
        when the grader has gone away even while a kernel never ends; between looks, a
        sleep that doubles up to `longest` seconds."""
        delay = 1e-5
        while True:
            with failures("sync"):
                if event.query():
                    break
            if self.hangup():
                os._exit(3)
            time.sleep(delay)
            delay = min(delay * 2, longest)
        with failures("sync"):
            self.context.synchronize()

    def finish(self) -> None:
        event = self.cuda.Event()
        with failures("sync"):
            event.record()
        self.wait(event)

    def settle(self) -> None:
        """Wait for everything queued before memory it may touch is freed; a failure
        here is the one the caller is already reporting."""
        with suppress(CudaFailure):
            self.finish()


def _gap_bytes(nbytes: int) -> int:
    """As large as the buffer, so that the allocator puts the gap in the same pool."""
    low, high = GAP_BYTES
    return min(max(nbytes, low), high)


def _changed(canaries: np.ndarray, width: int) -> np.ndarray:
    """Which canary elements (of `width` bytes) no longer hold the canary bytes."""
    if not canaries.size:
        return np.zeros(0, np.int64)
    rows = canaries.reshape(-1, width) != canary_bytes(canaries.size).reshape(-1, width)
    return np.flatnonzero(rows.any(axis=1))


@contextmanager
def failures(phase: str) -> Iterator[None]:
    """Turn PyCUDA's errors into CudaFailure(phase, driver text)."""
    import pycuda.driver as cuda

    try:
        yield
    except (cuda.Error, vmm.VmmError) as err:
        raise CudaFailure(phase, str(err)) from err


def _writable(source: str) -> str:
    """`source` as PyCUDA can write it (UTF-8 only): a byte of the student's file that is
    not UTF-8 (a Latin-1 comment) reads U+FFFD here. nvcc's inspection compiled the bytes
    as they are, and a comment or string's bytes change no grade."""
    return source.encode("utf-8", "surrogateescape").decode("utf-8", "replace")
