"""__device__ variables on the CPU backend, where each kernel of a launch runs in a worker
of its own: the next kernel starts from what the last one left, every pass of a kernel
from the same values, and every launch from the module's load-time values, as on a GPU
(tests/gpu/test_cuda_backend.py checks the same module there)."""

from __future__ import annotations

import numpy as np
import pytest
import state_kit
from cpu_kit import kinds, only

from grader.model.result import Kind


def test_a_kernel_reads_what_the_kernel_before_it_stored(kit):
    outcome = kit.backend.run(kit.built(state_kit.SOURCE), state_kit.launch("store", "fetch"), 10)
    assert outcome.completed and outcome.diagnostics == [], outcome.diagnostics
    np.testing.assert_array_equal(outcome.buffers["out"].data, state_kit.HANDED)


@pytest.mark.parametrize("space", sorted(state_kit.SOURCES))
def test_every_launch_counts_from_the_initialiser_and_both_passes_agree(kit, space):
    """The passes of each kernel start from the same count, or they would write
    different elements (a race); the second launch counts from 5 again."""
    build = kit.built(state_kit.SOURCES[space])
    for _ in range(2):
        outcome = kit.backend.run(build, state_kit.launch("count", "count", "count"), 10)
        assert outcome.completed and outcome.diagnostics == [], outcome.diagnostics
        np.testing.assert_array_equal(outcome.buffers["out"].data, state_kit.COUNTED)


SPOILER = """\
#include <cstdio>
__device__ int flag;
__global__ void spoil(float* out) {
    // the worker writes flag back after its first pass; this appends to it in the second
    FILE* f = fopen("carry_flag.bin", "ab");
    if (f) { fputs("more bytes than an int has", f); fclose(f); }
    out[0] = 1.0f;
}
__global__ void after(float* out) { out[1] = (float)flag; }
"""


def test_variables_written_back_wrong_are_the_kernels_failure(kit, no_nvcc):
    build = kit.built(SPOILER)
    launch = state_kit.launch("spoil", "after")
    outcome = kit.backend.run(build, launch, 10)
    assert outcome.crashed and kinds(outcome) == [Kind.CRASH], outcome.diagnostics
    assert "carry_flag.bin was missing, unreadable or resized" in only(outcome, Kind.CRASH).message
