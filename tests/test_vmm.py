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
