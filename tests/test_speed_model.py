"""The time model that ranks the causes of "why this speed" (grader/judge/speed_model.py):
each term as its docstring states it."""

from __future__ import annotations

import profile_kit as kit
import pytest

from grader.judge import speed_model
from grader.model.profile import KernelProfile, Traffic


def test_sectors_and_wavefronts_are_one_transaction_each():
    kernel = KernelProfile(
        "k",
        global_loads=Traffic(10, 40, 1280, 320),
        global_stores=Traffic(2, 8, 256, 64),
        shared_loads=Traffic(10, 30, 1280, 320),
        shared_stores=Traffic(1, 1, 128, 32),
    )
    assert speed_model.transactions(kernel) == 40 + 8 + 30 + 1


def test_a_global_atomic_costs_more_than_a_shared_one():
    kernel = KernelProfile("k", global_atomics=10, shared_atomics=10)
    assert speed_model.transactions(kernel) == 10 * speed_model.ATOMIC_GLOBAL + 10


def test_a_constant_broadcast_is_free_and_each_further_address_costs_one():
    broadcast = KernelProfile("k", constant_loads=Traffic(100, 100, 12800, 3200))
    divergent = KernelProfile("k", constant_loads=Traffic(100, 400, 12800, 3200))
    assert speed_model.transactions(broadcast) == 0
    assert speed_model.transactions(divergent) == 300


@pytest.mark.parametrize(("warps", "share"), [(64, 1.0), (32, 1.0), (16, 0.5), (8, 0.25)])
def test_below_half_occupancy_throughput_falls_in_proportion(warps, share):
    kernel = KernelProfile("k", occupancy=kit.occupancy(warps, "registers"))
    assert speed_model.throughput(kernel) == share
    assert speed_model.throughput(KernelProfile("k")) == 1.0  # unknown: no penalty


def test_the_busiest_threads_loads_run_one_after_another():
    kernel = KernelProfile("k", global_loads=Traffic(1, 1, 4, 1), busiest_thread_loads=3)
    assert speed_model.kernel_time(kernel) == 1 + 3 * speed_model.PARALLEL


def test_the_memory_work_leaves_the_busiest_threads_term_out():
    kernel = KernelProfile("k", global_loads=Traffic(1, 1, 4, 1), busiest_thread_loads=3)
    slow = KernelProfile(
        "k", global_loads=Traffic(1, 1, 4, 1), occupancy=kit.occupancy(8, "blocks")
    )
    assert speed_model.work([kernel]) == 1 and speed_model.work([slow]) == 4


def test_kernels_run_one_after_another():
    a = KernelProfile("a", shared_loads=Traffic(5, 5, 640, 160))
    b = KernelProfile("b", global_atomics=1, occupancy=kit.occupancy(16, "blocks"))
    assert speed_model.time([a, b]) == 5 + 2 * speed_model.ATOMIC_GLOBAL


def test_the_slow_kernels_take_longer_than_their_references():
    pairs = [
        (kit.rows_from_x, kit.naive),
        (kit.tile_read_down_column, kit.tiled_reference),
        (kit.global_atomics, kit.histogram_reference),
        (kit.divergent_warps, kit.reduction_reference),
        (kit.serial_reduction, kit.reduction_reference),
    ]
    for slow, reference in pairs:
        assert speed_model.time(slow().kernels) > speed_model.time(reference().kernels)
