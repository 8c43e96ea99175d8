"""Occupancy: how many blocks of a kernel one SM of the target GPU holds at once, and how
many warps that is of the most it could hold, from the block's threads, the registers per
thread and static shared memory ptxas reports, and the launch's dynamic shared memory. The
rules are the CUDA Occupancy Calculator's (the spreadsheet of the CUDA toolkit, now Nsight
Compute's Occupancy Calculator; cudaOccupancyMaxActiveBlocksPerMultiprocessor computes the
same on a device): each resource allows a number of blocks, and the fewest wins.

The limits of the GPU the grader targets (grader.defaults.ARCH) are stated once, here."""

from __future__ import annotations

import math
from dataclasses import dataclass

from grader.model.profile import WARP, Occupancy
from grader.model.result import KernelResources


@dataclass(frozen=True)
class Limits:
    """What one SM of a GPU holds. The CUDA C++ Programming Guide's table "Technical
    Specifications per Compute Capability" gives the threads, blocks, registers and shared
    memory per SM, per block and per thread; the Occupancy Calculator's GPU data gives the
    allocation units, and the shared memory the system reserves for each block (1 KiB from
    compute capability 8.0: the Programming Guide's "Shared Memory" of 8.x and 9.0)."""

    gpu: str
    threads_per_sm: int
    blocks_per_sm: int
    registers_per_sm: int
    registers_per_thread: int  # the most a thread may have
    register_unit: int  # registers go to a warp in units of this many
    shared_per_sm: int  # bytes, with the largest carveout
    shared_per_block: int  # bytes a block may have at most
    shared_unit: int  # bytes: a block's shared memory is allocated in units of this
    shared_reserved: int  # bytes the system takes from every block's
    threads_per_block: int

    @property
    def warps_per_sm(self) -> int:
        return self.threads_per_sm // WARP


SM_90 = Limits(
    gpu="sm_90 (H100, H200)",
    threads_per_sm=2048,
    blocks_per_sm=32,
    registers_per_sm=64 * 1024,
    registers_per_thread=255,
    register_unit=256,
    shared_per_sm=228 * 1024,
    shared_per_block=227 * 1024,
    shared_unit=128,
    shared_reserved=1024,
    threads_per_block=1024,
)


def occupancy(
    resources: KernelResources, threads: int, dynamic_shared: int = 0, limits: Limits = SM_90
) -> Occupancy | None:
    """A kernel's occupancy with blocks of `threads` threads and `dynamic_shared` bytes of
    extern __shared__ memory each. Without ptxas's figures (no nvcc) the registers are
    left out, and the block size and shared memory (the CPU build's own count) give the
    most it can be. A block that does not fit an SM at all holds 0 blocks, limited by
    what it lacks."""
    if threads < 1:
        return None
    warps = math.ceil(threads / WARP)
    allowed = {
        "threads": limits.warps_per_sm // warps if threads <= limits.threads_per_block else 0,
        "blocks": limits.blocks_per_sm,
    }
    if resources.registers is not None:
        allowed["registers"] = _by_registers(resources.registers, warps, limits)
    allowed["shared memory"] = _by_shared(resources.shared_bytes + dynamic_shared, limits)
    limiter = min(allowed, key=allowed.__getitem__)  # on a tie, the first named
    blocks = allowed[limiter]
    counted = resources.registers is not None
    return Occupancy(blocks, blocks * warps, limits.warps_per_sm, limiter, limits.gpu, counted)


def _by_registers(registers: int, warps: int, limits: Limits) -> int:
    """Blocks of `warps` warps the register file holds: each warp's registers rounded up
    to the allocation unit."""
    if registers > limits.registers_per_thread:
        return 0
    per_warp = _rounded(registers * WARP, limits.register_unit)
    return limits.registers_per_sm // per_warp // warps if per_warp else limits.blocks_per_sm


def _by_shared(shared: int, limits: Limits) -> int:
    """Blocks of `shared` bytes of shared memory an SM holds: each block's, with what the
    system reserves, rounded up to the allocation unit."""
    if shared > limits.shared_per_block:
        return 0
    per_block = _rounded(shared + limits.shared_reserved, limits.shared_unit)
    return limits.shared_per_sm // per_block if per_block else limits.blocks_per_sm


def _rounded(value: int, unit: int) -> int:
    return math.ceil(value / unit) * unit
