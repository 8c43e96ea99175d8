"""On a GPU: the persisting L2 is emptied for timing (grader.backends.cuda.l2), and what a
reset costs. Run with -s: the figures are printed for the lead's note (timing a kernel
against itself, resets and all, is test_cuda_backend.py's, whose note says what each
reset cost there)."""

from __future__ import annotations

import time

import pytest

from grader.backends.cuda.l2 import PersistingL2

RESETS = 2000


@pytest.fixture
def context():
    import pycuda.driver as cuda

    cuda.init()
    made = cuda.Device(0).make_context()
    try:
        yield made
    finally:
        made.pop()
        made.detach()


def test_a_reset_of_the_persisting_l2_costs_the_host_microseconds(context):
    cache = PersistingL2()
    cache.clear()
    started = time.perf_counter()
    for _ in range(RESETS):
        cache.reset()
    each = (time.perf_counter() - started) / RESETS * 1e6
    major, _ = context.get_device().compute_capability()
    print(f"\npersisting L2: present {cache.present}, window {cache.window}, {each:.1f} µs a reset")
    assert cache.present == (major >= 8)
