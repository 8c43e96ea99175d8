"""A lab's case profiled (grader.judge.profiling): the kernels' profiles with the case's
output elements and the lab's useful arithmetic, at the sizes the case was launched with."""

from __future__ import annotations

from grader import labs
from grader.judge.profiling import case_profile
from grader.model.interface import Interface
from grader.model.lab import Case
from grader.model.profile import KernelProfile, Source, Traffic

TILES = {"BLOCK_X": 256, "BLOCK_Y": 1, "BLOCK_Z": 1, "TILE_X": 512, "TILE_Y": 1, "TILE_Z": 1}


def test_a_matmul_case_has_width_squared_outputs_and_two_width_cubed_flops():
    lab = labs.get("matmul-tiled")
    loads = KernelProfile("matmul", global_loads=Traffic(2, 8, 256, 64))
    launch = {**TILES, "BLOCK_X": 16, "BLOCK_Y": 16, "TILE_X": 16, "TILE_Y": 16}
    case = Case("width-64", {"Width": 64})
    found = case_profile(lab, case, Interface(launch=launch), [loads], Source.CPU_MODEL)
    assert (found.case, found.sizes, found.source) == ("width-64", {"Width": 64}, "cpu-model")
    assert (found.outputs, found.useful_flops) == (64 * 64, 2 * 64**3)
    assert found.global_bytes_read_per_output == 256 / 4096
    assert found.kernels == [loads]


def test_outputs_that_depend_on_the_tile_are_counted_at_the_launch_macros():
    """A reduction writes one partial sum a block of TILE_X inputs: 1000 inputs in tiles
    of 512 are 2 outputs."""
    lab = labs.get("reduction")
    case = Case("n-1000", {"n": 1000})
    found = case_profile(
        lab, case, Interface(launch=TILES), [], Source.NSIGHT_COMPUTE, "measured elsewhere"
    )
    assert (found.outputs, found.useful_flops, found.note) == (2, 1000.0, "measured elsewhere")
    assert found.sizes == {"n": 1000}
