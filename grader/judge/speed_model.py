"""How long a kernel takes by the simple model that "why this speed" ranks its causes
with (grader.judge.why): time is memory transactions, counted from a profile.

- A 32-byte global sector and a shared-memory wavefront are one transaction each: both
  go through the SM's load/store pipe, 128 bytes a cycle.
- An atomic on global memory is ATOMIC_GLOBAL transactions (a round trip to L2); one on
  shared memory stays in the SM and is one.
- A constant-memory request whose lanes read one address is free (the constant cache
  broadcasts it); each further address it reads is one transaction (it serialises).
- Below half of the SM's warps (OCCUPIED), too few requests are in flight to keep memory
  busy: the kernel's transactions take longer in proportion.
- The busiest thread's global loads run one after another, and each costs PARALLEL
  transactions: what the whole GPU (132 SMs, 4 sectors a cycle each, on the H200) serves
  in the time one load is issued.
- A block runs on one SM. Where the busiest block makes more than IMBALANCED times its
  share of the global loads (the mean block's, or with more blocks than SMs, an SM's),
  the kernel's transactions take longer in proportion: at the timed size its SM is still
  at work when the others have run out of blocks. (spmv-jds's textbook kernel, the block
  of the longest rows 11 times its share at the profile case, takes 2.2 to 2.7 times the
  reference's time on the H200, by CUDA events and by Nsight Compute, its transactions
  the same; Nsight shows one SM busy 2.86 times as long as the mean.)

The kernels of a profile run one after another, so their times add up. The unit is one
transaction, and only ratios mean anything: a cause's cost is stated over the reference's
memory work, its time without the busiest thread's term, which on a small profile case
(one block of a reduction) would dwarf everything a fix can change."""

from __future__ import annotations

from collections.abc import Iterable

from grader.model.profile import KernelProfile

ATOMIC_GLOBAL = 4
OCCUPIED = 0.5
SMS = 132  # the H200's
PARALLEL = SMS * 4
IMBALANCED = 4
MEMORY = ("global_loads", "global_stores", "shared_loads", "shared_stores")  # requests with lanes


def transactions(kernel: KernelProfile) -> float:
    """The kernel's memory transactions, by the model's counts."""
    moved = sum(getattr(kernel, kind).sectors for kind in MEMORY)
    constant = kernel.constant_loads
    serialised = max(0, constant.sectors - constant.requests)
    return moved + ATOMIC_GLOBAL * kernel.global_atomics + kernel.shared_atomics + serialised


def throughput(kernel: KernelProfile) -> float:
    """The share of full memory throughput its occupancy allows (1 where unknown)."""
    if kernel.occupancy is None:
        return 1.0
    return min(1.0, max(kernel.occupancy.fraction, 1 / 64) / OCCUPIED)


def waiting(kernel: KernelProfile) -> float:
    """How many times longer its transactions take for its busiest block (1 where none
    makes IMBALANCED times its share)."""
    return max(1.0, (kernel.block_imbalance(SMS) or 1.0) / IMBALANCED)


def kernel_time(kernel: KernelProfile) -> float:
    memory = transactions(kernel) / throughput(kernel) * waiting(kernel)
    return memory + PARALLEL * kernel.busiest_thread_loads


def time(kernels: Iterable[KernelProfile]) -> float:
    """The estimated time of kernels run one after another, in transactions."""
    return sum(kernel_time(k) for k in kernels)


def work(kernels: Iterable[KernelProfile]) -> float:
    """Their memory work: the time without the busiest thread's or block's terms."""
    return sum(transactions(k) / throughput(k) for k in kernels)
