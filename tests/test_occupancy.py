"""Occupancy on sm_90 by the CUDA Occupancy Calculator's rules (grader.model.occupancy),
against figures worked out by hand from the limits: 2048 threads, 32 blocks, 64K registers
(in units of 256 a warp) and 228 KiB of shared memory an SM (in units of 128 bytes, with
1 KiB reserved a block)."""

from __future__ import annotations

import pytest

from grader.model.occupancy import SM_90, occupancy
from grader.model.result import KernelResources


def held(threads: int, registers: int, shared: int = 0, dynamic: int = 0):
    found = occupancy(KernelResources(registers=registers, shared_bytes=shared), threads, dynamic)
    return found.blocks_per_sm, found.warps_per_sm, found.limiter


@pytest.mark.parametrize(
    ("threads", "registers", "shared", "expected"),
    [
        # 8 blocks of 8 warps fill the SM's 64 warps; 32 registers a thread need 64K
        (256, 32, 0, (8, 64, "threads")),
        # a warp of 64-register threads holds 2048 registers: 32 warps, 4 blocks
        (256, 64, 0, (4, 32, "registers")),
        # 40 registers: 1280 a warp, 51 warps, 6 blocks of 8
        (256, 40, 0, (6, 48, "registers")),
        # 33 registers a thread are 1056 a warp, rounded up to 1280 as 40 are
        (256, 33, 0, (6, 48, "registers")),
        # 48 KiB + 1 KiB reserved a block: 228 // 49 = 4 blocks
        (256, 32, 48 * 1024, (4, 32, "shared memory")),
        # 2 KiB of tiles + 1 KiB: 76 blocks' worth, so threads still decide
        (256, 32, 2048, (8, 64, "threads")),
        # one warp a block: 32 blocks an SM at most, half the warps
        (32, 16, 0, (32, 32, "blocks")),
        # 1024 threads of 64 registers: exactly the register file
        (1024, 64, 0, (1, 32, "registers")),
        # 65 registers leave no room for a block of 1024
        (1024, 65, 0, (0, 0, "registers")),
        # a partial warp takes a whole warp's room: 100 threads are 4 warps
        (100, 32, 0, (16, 64, "threads")),
    ],
)
def test_occupancy_by_hand(threads, registers, shared, expected):
    assert held(threads, registers, shared) == expected


def test_dynamic_shared_memory_counts_with_the_static():
    assert held(256, 32, shared=16 * 1024, dynamic=32 * 1024) == (4, 32, "shared memory")


def test_a_block_past_the_limits_is_held_zero_times():
    assert held(256, 32, shared=SM_90.shared_per_block + 1) == (0, 0, "shared memory")
    assert held(2048, 16) == (0, 0, "threads")
    assert held(256, 256) == (0, 0, "registers")


def test_without_ptxas_figures_the_registers_are_not_counted():
    """No nvcc: the block size and the CPU build's shared memory give the most it can be."""
    alone = occupancy(KernelResources(shared_bytes=48 * 1024), 128)
    assert (alone.blocks_per_sm, alone.warps_per_sm, alone.limiter) == (4, 16, "shared memory")
    assert not alone.registers_counted
    small = occupancy(KernelResources(), 32)
    assert (small.warps_per_sm, small.limiter, small.registers_counted) == (32, "blocks", False)
    assert occupancy(KernelResources(registers=32), 256).registers_counted


def test_the_fraction_and_the_gpu_are_the_limits():
    found = occupancy(KernelResources(registers=64), 256)
    assert found.fraction == 0.5 and found.max_warps_per_sm == 64 and found.gpu == SM_90.gpu
