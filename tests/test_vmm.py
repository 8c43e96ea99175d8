"""Where the GPU worker puts a buffer (grader.backends.cuda.vmm), the parts that need no
GPU: layouts flush against unmapped memory, and the driver's structures."""

from __future__ import annotations

import pytest

from grader.backends.cuda import vmm

GRANULE = 2 << 20


@pytest.mark.parametrize("nbytes", [4, 1_069_156, GRANULE, 3 * GRANULE + 4, 64 << 20])
def test_vmm_layouts_put_one_end_flush_against_unmapped_memory(nbytes):
    start = vmm.layout(nbytes, vmm.START, GRANULE)
    end = vmm.layout(nbytes, vmm.END, GRANULE)
    roomy = vmm.layout(nbytes, vmm.ROOMY, GRANULE)
    for lay in (start, end, roomy):
        assert lay.mapped % GRANULE == 0 and lay.guard >= lay.mapped
        assert lay.reserved == lay.mapped + 2 * lay.guard
        assert lay.offset % 4 == 0
    assert start.slack_before == 0 and start.slack_after(nbytes) >= GRANULE
    assert end.slack_after(nbytes) == 0 and end.slack_before >= GRANULE
    assert roomy.slack_before >= GRANULE and roomy.slack_after(nbytes) >= GRANULE


def test_an_end_flush_buffer_keeps_the_alignment_its_size_allows():
    """A float4 buffer (size a multiple of 16) starts 16-byte aligned."""
    for nbytes in (16 * 517, 4096 * 4096 * 4, 48):
        offset = vmm.layout(nbytes, vmm.END, GRANULE).offset
        assert offset % 16 == 0


def test_vmm_structures_have_the_driver_s_sizes():
    import ctypes

    assert ctypes.sizeof(vmm._Properties) == 32
    assert ctypes.sizeof(vmm._AccessDesc) == 12


def _mapping(nbytes: int, side: str, base: int = 1 << 40) -> vmm.Mapping:
    return vmm.Mapping(base, vmm.layout(nbytes, side, GRANULE), handle=7)


def test_a_freed_mapping_serves_the_next_buffer_of_its_size_on_either_side():
    """A mapping kept from a buffer flush against its start serves one flush against its
    end: the same reservation and memory, the buffer at the end's offset, marked reused
    (gpu.Gpu.place clears it). One of another mapped size gets none."""
    pool = vmm.Pool(limit=512 << 20)
    first = _mapping(1_000_000, vmm.START)
    assert pool.take(first.layout) is None
    assert pool.keep(first) and pool.kept_bytes == first.layout.mapped
    end = vmm.layout(999_996, vmm.END, GRANULE)
    assert pool.take(vmm.layout(5 * GRANULE, vmm.END, GRANULE)) is None
    assert pool.take(vmm.layout(999_996, vmm.ROOMY, GRANULE)) is None  # a granule more
    got = pool.take(end)
    assert got is not None and got.reused and (got.base, got.handle) == (first.base, 7)
    assert got.start == first.start and got.address == first.start + end.offset
    assert got.address + 999_996 == got.start + got.layout.mapped  # flush against the end
    assert pool.kept_bytes == 0 and pool.take(end) is None


def test_a_worker_keeps_no_mapping_unless_told_how_many_mib(monkeypatch):
    monkeypatch.delenv(vmm.POOL, raising=False)
    assert vmm.pool_bytes() == 0 and not vmm.Pool(vmm.pool_bytes()).keep(_mapping(4, vmm.END))
    for text, size in (("512", 512 << 20), ("-1", 0), ("lots", 0)):
        monkeypatch.setenv(vmm.POOL, text)
        assert vmm.pool_bytes() == size, text


def test_the_pool_keeps_no_more_than_its_limit():
    size = vmm.layout(GRANULE, vmm.START, GRANULE).mapped
    pool = vmm.Pool(limit=2 * size)
    kept = [pool.keep(_mapping(GRANULE, vmm.START, base=i << 32)) for i in range(3)]
    assert kept == [True, True, False] and pool.kept_bytes == 2 * size


class _Libcuda:
    """libcuda's VMM calls over `capacity` bytes of device memory, for Driver.map."""

    def __init__(self, capacity: int) -> None:
        self.free, self.handles = capacity, {}

    def cuMemAddressReserve(self, base, size, align, addr, flags):  # noqa: N802
        base._obj.value = (len(self.handles) + 1) << 40
        return 0

    def cuMemCreate(self, handle, size, properties, flags):  # noqa: N802
        if size > self.free:
            return 2  # CUDA_ERROR_OUT_OF_MEMORY
        self.free -= size
        handle._obj.value = len(self.handles) + 1
        self.handles[handle._obj.value] = size
        return 0

    def cuMemRelease(self, handle):  # noqa: N802
        self.free += self.handles.pop(handle)
        return 0

    def cuGetErrorString(self, code, text):  # noqa: N802
        text._obj.value = b"out of memory"
        return 0

    def cuMemMap(self, *args):  # noqa: N802
        return 0

    cuMemSetAccess = cuMemUnmap = cuMemAddressFree = cuMemMap


def _driver(capacity: int, pool: int) -> vmm.Driver:
    driver = object.__new__(vmm.Driver)  # without libcuda
    driver.lib, driver.properties = _Libcuda(capacity), vmm._Properties()
    driver.access = vmm._AccessDesc()
    driver.granularity, driver.pool = GRANULE, vmm.Pool(pool)
    return driver


def test_a_buffer_the_kept_mappings_leave_no_room_for_gets_their_memory():
    """A worker whose kept mappings hold the memory a new buffer needs unmaps them all and
    maps the buffer, so that keeping mappings never costs a case its memory."""
    small = vmm.layout(GRANULE, vmm.START, GRANULE).mapped
    large = vmm.layout(2 * GRANULE, vmm.END, GRANULE).mapped
    driver = _driver(capacity=small + large - GRANULE, pool=1 << 30)
    driver.release(driver.map(GRANULE, vmm.START))
    assert driver.pool.kept_bytes == small
    mapped = driver.map(2 * GRANULE, vmm.END)  # a granule more than the free memory
    assert not mapped.reused and driver.pool.kept_bytes == 0
    assert list(driver.lib.handles.values()) == [large]
    with pytest.raises(vmm.VmmError, match="cuMemCreate failed: out of memory"):
        driver.map(GRANULE, vmm.START)  # nothing kept to give up: the driver's own words
