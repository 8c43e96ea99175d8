"""Device buffers against unmapped memory, through the CUDA driver's virtual memory
management (cuMemAddressReserve, cuMemCreate, cuMemMap, cuMemSetAccess). PyCUDA does not
expose these calls, so they go through ctypes to libcuda, on the context PyCUDA made
current.

A buffer gets a physical allocation of its own, mapped into the middle of a reserved
address range whose ends stay unmapped. The buffer sits flush against one end of its
mapping (`START` or `END`), so the first access beyond that end faults at once, at full
speed. Mappings come in multiples of the driver's granularity (2 MiB on current GPUs), so
the other side keeps at least one granule of mapped slack: a kernel that strays on that
side reads memory of its own buffer's mapping, and a second run with the other alignment
catches it. `ROOMY` leaves a granule of slack on both sides (to find which buffer a fault
belongs to).

Alignment. Flush against the end, a buffer starts at (mapping end - its size), so its
start is aligned to the largest power of two that divides its size in bytes (4 at worst,
for a float buffer of odd length). Vector loads of w bytes (float2, float4) are aligned
wherever the buffer's size is a multiple of w, which is the only case in which such
loads can cover a buffer exactly; the grader does not pad buffers to 256 bytes, since
padding would leave accesses past the end unseen.

Reuse. Reserving, creating, mapping and unmapping took 41 of the 62 ms a batch's
submission held the GPU for its case runs (bench/batch.py, H100), and several workers
doing them at once each waited for the others in the driver. So a worker may keep a
freed mapping (Pool) and give it to the next buffer of the same mapped size, whichever
side it sits against: only its offset into the mapping differs. The caller clears a
reused mapping before the buffer's contents go in (gpu.Gpu.place), so that nothing of an
earlier case is left in the slack beside the new buffer. Where a new mapping cannot be
made, every kept one is given up first, so that the pool never costs a case its memory.
It keeps none unless GRADER_VMM_POOL says how many MiB. On an H200, 512 MiB halved a
case run's placing and freeing and passed the GPU tests, but moved no batch's rate past
the noise (docs/performance.md, "the pool measured"), so it stays off by default."""

from __future__ import annotations

import ctypes
import os
from dataclasses import dataclass

START, END, ROOMY = "start", "end", "roomy"
SIDES = (START, END, ROOMY)
SWITCH = "GRADER_VMM"  # "0": plain allocations with canaries, for a driver whose VMM fails
POOL = "GRADER_VMM_POOL"  # MiB of freed mappings a worker keeps for reuse; none by default

_ALLOCATION_PINNED = 1
_LOCATION_DEVICE = 1
_ACCESS_READ_WRITE = 3
_GRANULARITY_MINIMUM = 0


class _Location(ctypes.Structure):
    _fields_ = [("type", ctypes.c_int), ("id", ctypes.c_int)]


class _AllocFlags(ctypes.Structure):
    _fields_ = [
        ("compressionType", ctypes.c_ubyte),
        ("gpuDirectRDMACapable", ctypes.c_ubyte),
        ("usage", ctypes.c_ushort),
        ("reserved", ctypes.c_ubyte * 4),
    ]


class _Properties(ctypes.Structure):
    _fields_ = [
        ("type", ctypes.c_int),
        ("requestedHandleTypes", ctypes.c_int),
        ("location", _Location),
        ("win32HandleMetaData", ctypes.c_void_p),
        ("allocFlags", _AllocFlags),
    ]


class _AccessDesc(ctypes.Structure):
    _fields_ = [("location", _Location), ("flags", ctypes.c_int)]


_u64 = ctypes.c_uint64
_size = ctypes.c_size_t
_SIGNATURES = {
    "cuMemGetAllocationGranularity": (
        ctypes.POINTER(_size),
        ctypes.POINTER(_Properties),
        ctypes.c_int,
    ),
    "cuMemAddressReserve": (ctypes.POINTER(_u64), _size, _size, _u64, ctypes.c_ulonglong),
    "cuMemAddressFree": (_u64, _size),
    "cuMemCreate": (ctypes.POINTER(_u64), _size, ctypes.POINTER(_Properties), ctypes.c_ulonglong),
    "cuMemRelease": (_u64,),
    "cuMemMap": (_u64, _size, _size, _u64, ctypes.c_ulonglong),
    "cuMemUnmap": (_u64, _size),
    "cuMemSetAccess": (_u64, _size, ctypes.POINTER(_AccessDesc), _size),
}
_ERROR_STRING = {"cuGetErrorString": (ctypes.c_int, ctypes.POINTER(ctypes.c_char_p))}


class VmmError(Exception):
    """A driver call failed (a VMM call, or another made through `call`); the message reads
    like PyCUDA's ('cuMemCreate failed: ...')."""


def wanted() -> bool:
    return os.environ.get(SWITCH, "1") != "0"


def round_up(value: int, step: int) -> int:
    return -(-value // step) * step


@dataclass(frozen=True)
class Layout:
    """Where a buffer of `nbytes` goes: `mapped` bytes mapped at `guard` bytes into a
    reservation of `reserved` bytes, the data at `offset` bytes into the mapping."""

    reserved: int
    guard: int
    mapped: int
    offset: int

    @property
    def slack_before(self) -> int:
        return self.offset

    def slack_after(self, nbytes: int) -> int:
        return self.mapped - self.offset - nbytes


def layout(nbytes: int, side: str, granularity: int) -> Layout:
    """The placement of a buffer flush against `side` of its mapping, or roomy. The
    unmapped guard on each side is as large as the mapping, so that a stray access up to
    a buffer's own size away cannot land in a neighbour's mapping."""
    if side not in SIDES:
        raise ValueError(f"unknown side {side!r}")
    nbytes = max(nbytes, 1)
    whole = round_up(nbytes, granularity)
    extra = 2 * granularity if side == ROOMY else granularity
    mapped = whole + extra
    offset = {START: 0, END: mapped - nbytes, ROOMY: granularity}[side]
    return Layout(reserved=3 * mapped, guard=mapped, mapped=mapped, offset=offset)


@dataclass
class Mapping:
    """One reserved range with one physical allocation mapped into it; `reused` where it
    came from the Pool, and holds what an earlier buffer left."""

    base: int  # start of the reservation
    layout: Layout
    handle: int
    reused: bool = False

    @property
    def start(self) -> int:
        return self.base + self.layout.guard

    @property
    def address(self) -> int:
        return self.start + self.layout.offset


def pool_bytes() -> int:
    """The mapped bytes a worker keeps for reuse (POOL, in MiB; 0 where unset or not a
    whole number)."""
    text = os.environ.get(POOL, "0")
    return int(text) << 20 if text.isdigit() else 0


class Pool:
    """Freed mappings kept for later buffers, by the size of their mapping and of their
    reservation, up to `limit` mapped bytes in all."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.kept_bytes = 0
        self._idle: dict[tuple[int, int], list[Mapping]] = {}

    def take(self, place: Layout) -> Mapping | None:
        """A kept mapping that fits `place`, laid out for it; None where none is kept."""
        idle = self._idle.get((place.mapped, place.reserved))
        if not idle:
            return None
        kept = idle.pop()
        self.kept_bytes -= place.mapped
        return Mapping(kept.base, place, kept.handle, reused=True)

    def keep(self, mapping: Mapping) -> bool:
        """Keep `mapping` for a later buffer; False where the pool is full (unmap it)."""
        size = mapping.layout.mapped
        if self.kept_bytes + size > self.limit:
            return False
        self._idle.setdefault((size, mapping.layout.reserved), []).append(mapping)
        self.kept_bytes += size
        return True

    def drain(self) -> list[Mapping]:
        """Every kept mapping, given up (to be unmapped)."""
        kept = [mapping for idle in self._idle.values() for mapping in idle]
        self._idle.clear()
        self.kept_bytes = 0
        return kept


def libcuda(signatures: dict[str, tuple]) -> ctypes.CDLL:
    """libcuda.so.1 with the functions of `signatures` (name: argument types) typed, and
    cuGetErrorString. An AttributeError: a libcuda without one of them."""
    try:
        lib = ctypes.CDLL("libcuda.so.1")
    except OSError as err:
        raise VmmError(f"libcuda.so.1 could not be loaded: {err}") from err
    for name, args in {**signatures, **_ERROR_STRING}.items():
        function = getattr(lib, name)
        function.argtypes = args
        function.restype = ctypes.c_int
    return lib


def call(lib: ctypes.CDLL, name: str, *args) -> None:
    """lib.name(*args), a VmmError with the driver's words where it fails."""
    code = getattr(lib, name)(*args)
    if code != 0:
        text = ctypes.c_char_p()
        lib.cuGetErrorString(code, ctypes.byref(text))
        reason = text.value.decode() if text.value else f"error {code}"
        raise VmmError(f"{name} failed: {reason}")


class Driver:
    """The VMM calls of libcuda for device `ordinal`, on the current context."""

    def __init__(self, ordinal: int = 0) -> None:
        self.lib = libcuda(_SIGNATURES)
        location = _Location(_LOCATION_DEVICE, ordinal)
        self.properties = _Properties(type=_ALLOCATION_PINNED, location=location)
        self.access = _AccessDesc(location=location, flags=_ACCESS_READ_WRITE)
        size = _size()
        self._call(
            "cuMemGetAllocationGranularity",
            ctypes.byref(size),
            ctypes.byref(self.properties),
            _GRANULARITY_MINIMUM,
        )
        self.granularity = int(size.value)
        self.pool = Pool(pool_bytes())

    def map(self, nbytes: int, side: str) -> Mapping:
        place = layout(nbytes, side, self.granularity)
        kept = self.pool.take(place)
        if kept is not None:
            return kept
        try:
            return self._new(place)
        except VmmError:
            if not self.pool.kept_bytes:
                raise
            for idle in self.pool.drain():  # the kept memory may be what this one lacks
                self.unmap(idle)
            return self._new(place)

    def _new(self, place: Layout) -> Mapping:
        base, handle = _u64(), _u64()
        reserve = (ctypes.byref(base), place.reserved, self.granularity, 0, 0)
        self._call("cuMemAddressReserve", *reserve)
        try:
            self._call(
                "cuMemCreate", ctypes.byref(handle), place.mapped, ctypes.byref(self.properties), 0
            )
        except VmmError:
            self.lib.cuMemAddressFree(base.value, place.reserved)
            raise
        mapping = Mapping(int(base.value), place, int(handle.value))
        try:
            self._call("cuMemMap", mapping.start, place.mapped, 0, mapping.handle, 0)
            self._call("cuMemSetAccess", mapping.start, place.mapped, ctypes.byref(self.access), 1)
        except VmmError:
            self.unmap(mapping)
            raise
        return mapping

    def release(self, mapping: Mapping) -> None:
        """A buffer's mapping, freed: kept for a later buffer, or unmapped."""
        if not self.pool.keep(mapping):
            self.unmap(mapping)

    def unmap(self, mapping: Mapping) -> None:
        """Best effort: after a failed map some steps were never done."""
        self.lib.cuMemUnmap(mapping.start, mapping.layout.mapped)
        self.lib.cuMemRelease(mapping.handle)
        self.lib.cuMemAddressFree(mapping.base, mapping.layout.reserved)

    def _call(self, name: str, *args) -> None:
        call(self.lib, name, *args)
