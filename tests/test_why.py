"""The "why this speed" advice (grader/judge/why.py) on profiles built by hand
(profile_kit): each slow kernel of reference_kernels/*/slow/ gets the sentence its
EXPECTED.toml names, with the issue's numbers where it quotes them; a kernel as good as
the reference gets none; at most two sentences, costliest first."""

from __future__ import annotations

import math
import tomllib
from dataclasses import replace
from pathlib import Path

import profile_kit as kit
import pytest

from grader.judge import why
from grader.model.profile import KernelProfile, Profile, Traffic
from grader.model.result import Cause

ROOT = Path(__file__).resolve().parents[1]


def said(student: Profile, reference: Profile | None) -> str:
    return " ".join(a.message for a in why.advise(student, reference))


def causes(student: Profile, reference: Profile | None) -> list[Cause]:
    return [a.cause for a in why.advise(student, reference)]


# -- the issue's examples -------------------------------------------------------------------


def test_rows_from_thread_x_are_uncoalesced_in_the_issues_numbers():
    advice = why.advise(kit.rows_from_x(), kit.naive())
    assert [a.cause for a in advice] == [Cause.UNCOALESCED]
    assert "loads 8.5 sectors per request where 4 would do" in advice[0].message
    assert "stores 16 where 4 would do" in advice[0].message
    assert "threadIdx.x" in advice[0].message


def test_a_32_way_conflict_is_said_so():
    student = kit.tiled_rows_from_x()
    kernel = replace(student.kernels[0], shared_loads=kit.traffic(1000, 32.0))
    text = said(replace(student, kernels=[kernel]), kit.tiled_rows_from_x())
    assert "31 bank conflicts per request where the reference has 0" in text
    assert "every access is a 32-way bank conflict" in text
    assert "[32][33]" in text


def test_the_naive_kernel_against_tiles_of_16_reads_16_times_the_bytes():
    """Width 256: 2 * Width floats per output element, 2 KiB; tiles of 16 read 1/16."""
    outputs = 256 * 256
    naive = kit.profile(
        KernelProfile(
            "matmul",
            global_loads=kit.traffic(outputs * 512 // 32, 2.0),
            global_stores=kit.traffic(outputs // 32, 2.0),
            busiest_thread_loads=512,
        ),
        outputs=outputs,
    )
    tiled = kit.profile(
        KernelProfile(
            "matmul",
            global_loads=kit.traffic(outputs * 32 // 32, 4.0),
            global_stores=kit.traffic(outputs // 32, 4.0),
            shared_loads=kit.traffic(outputs * 512 // 32, 1.0),
            shared_stores=kit.traffic(outputs * 32 // 32, 1.0),
            busiest_thread_loads=32,
        ),
        outputs=outputs,
    )
    advice = why.advise(naive, tiled)
    assert [a.cause for a in advice] == [Cause.GLOBAL_TRAFFIC]
    assert advice[0].message.startswith(
        "Each output element reads 2.0 KiB from global memory where the reference's reads "
        "128 bytes, 1/16 of that: stage the tiles"
    )


def test_a_kernel_that_tiles_is_told_to_reuse_more_not_to_tile():
    """The course's 16 x 16 tiled kernel already stages its tiles: the advice is larger
    tiles and thread coarsening, with the outputs a thread computes in each."""
    advice = why.advise(kit.textbook_tiled(), kit.tiled_reference())
    assert [a.cause for a in advice] == [Cause.GLOBAL_TRAFFIC]
    text = advice[0].message
    assert text.startswith(
        "Each output element reads 32 bytes from global memory where the reference's "
        "reads 8 bytes, 1/4 of that: your kernel stages tiles in shared memory"
    )
    assert "Larger tiles read less, and so does thread coarsening" in text
    assert "the reference's threads compute 16 outputs each in this case, yours 1" in text
    assert "stage the tiles" not in text


def test_a_hidden_case_gets_no_counts_of_outputs_a_thread():
    """At a hidden case the counts would tell its size."""
    built = (kit.textbook_tiled(), kit.tiled_reference())
    hidden = [replace(p, case="a hidden case", sizes={}) for p in built]
    text = said(*hidden)
    assert "thread coarsening" in text
    assert "the reference's threads compute several outputs each)" in text
    assert "16 outputs" not in text


def test_a_decorative_shared_load_is_not_tiling():
    """A naive kernel with a shared load for show reads shared memory far less often than
    global memory: it is told to stage its tiles."""
    naive = kit.naive()
    kernel = replace(naive.kernels[0], shared_loads=kit.traffic(1, 1.0))
    text = said(replace(naive, kernels=[kernel]), kit.tiled_reference())
    assert "stage the tiles of input" in text
    assert "coarsening" not in text


# -- every slow kernel gets its words -----------------------------------------------------

SLOW = {
    ("matmul-naive", "rows_from_x.cu"): (kit.rows_from_x, kit.naive),
    ("matmul-tiled", "rows_from_x.cu"): (kit.tiled_rows_from_x, kit.tiled_reference),
    ("matmul-tiled", "tile_read_down_column.cu"): (kit.tile_read_down_column, kit.tiled_reference),
    ("matmul-tiled", "tiles_of_16.cu"): (kit.textbook_tiled, kit.tiled_reference),
    ("conv2d", "rows_from_x.cu"): (kit.conv2d_rows_from_x, kit.conv2d_reference),
    ("conv3d", "depth_from_x.cu"): (kit.conv3d_depth_from_x, kit.conv3d_reference),
    ("histogram", "global_atomics.cu"): (kit.global_atomics, kit.histogram_reference),
    ("histogram", "small_tiles.cu"): (kit.small_tiles, kit.histogram_reference),
    ("reduction", "divergent_warps.cu"): (kit.divergent_warps, kit.reduction_reference),
    ("reduction", "strided_index.cu"): (kit.strided_index, kit.reduction_reference),
    ("reduction", "oversized_shared.cu"): (kit.oversized_shared, kit.reduction_reference_at_scale),
    ("scan", "brent_kung_strided.cu"): (kit.brent_kung_strided, kit.scan_reference),
    ("spmv-jds", "rows_strided.cu"): (kit.jds_rows_strided, kit.jds_reference),
    ("spmv-jds", "long_rows_unshared.cu"): (
        kit.jds_long_rows_unshared,
        kit.jds_reference_power_law,
    ),
}


def _slow_entries() -> dict[tuple[str, str], dict]:
    found = {}
    for table in sorted(ROOT.glob("reference_kernels/*/slow/EXPECTED.toml")):
        for name, entry in tomllib.loads(table.read_text()).items():
            found[(table.parent.parent.name, name)] = entry
    return found


def test_every_slow_kernel_has_a_profile_here():
    assert set(_slow_entries()) == set(SLOW)


@pytest.mark.parametrize("key", sorted(SLOW), ids="/".join)
def test_a_slow_kernel_gets_its_why_words(key):
    student, reference = (build() for build in SLOW[key])
    text = said(student, reference).lower()
    for word in _slow_entries()[key]["why"]:
        assert word.lower() in text, f"{word!r} not in {text!r}"


@pytest.mark.parametrize(
    ("key", "cause"),
    [
        (("matmul-tiled", "tile_read_down_column.cu"), Cause.BANK_CONFLICTS),
        (("matmul-tiled", "tiles_of_16.cu"), Cause.GLOBAL_TRAFFIC),
        (("histogram", "global_atomics.cu"), Cause.GLOBAL_ATOMICS),
        (("histogram", "small_tiles.cu"), Cause.GLOBAL_ATOMICS),
        (("reduction", "divergent_warps.cu"), Cause.DIVERGENCE),
        (("reduction", "strided_index.cu"), Cause.BANK_CONFLICTS),
        (("reduction", "oversized_shared.cu"), Cause.OCCUPANCY),
        (("scan", "brent_kung_strided.cu"), Cause.BANK_CONFLICTS),
        (("spmv-jds", "rows_strided.cu"), Cause.UNCOALESCED),
        (("spmv-jds", "long_rows_unshared.cu"), Cause.BUSIEST_BLOCK),
    ],
    ids=lambda v: v if isinstance(v, str) else "/".join(v),
)
def test_a_slow_kernel_is_slow_first_for_its_own_cause(key, cause):
    student, reference = (build() for build in SLOW[key])
    assert causes(student, reference)[0] == cause


def test_the_naive_conv3d_turned_round_reads_too_much_first_then_is_uncoalesced():
    """depth_from_x.cu is the naive kernel turned round: against the tiled reference it
    reads each input from global memory once per use (about 230 times the reference's
    bytes here), which costs more than its uncoalesced requests. Its mask is read from
    constant memory, less often than the reference's register blocking reads it: no
    mask moved to global memory, so none of its bytes is taken off the traffic."""
    student, reference = kit.conv3d_depth_from_x(), kit.conv3d_reference()
    assert causes(student, reference) == [Cause.GLOBAL_TRAFFIC, Cause.UNCOALESCED]
    loads = student.total("global_loads").bytes / student.outputs
    assert f"reads {why.figure(loads)} bytes from global memory" in said(student, reference)


def test_the_tiled_kernel_read_by_rows_is_uncoalesced_and_reads_4_times_the_bytes():
    assert causes(kit.tiled_rows_from_x(), kit.tiled_reference()) == [
        Cause.UNCOALESCED,
        Cause.GLOBAL_TRAFFIC,
    ]
    assert "1/4 of that" in said(kit.tiled_rows_from_x(), kit.tiled_reference())


# -- saying nothing -------------------------------------------------------------------------


@pytest.mark.parametrize(
    "build",
    [
        kit.naive,
        kit.tiled_reference,
        kit.histogram_reference,
        kit.reduction_reference,
        kit.jds_reference,
    ],
)
def test_a_kernel_as_good_as_the_reference_gets_no_sentence(build):
    assert why.advise(build(), build()) == []


def test_a_kernel_better_than_the_reference_gets_no_sentence():
    assert why.advise(kit.naive(), kit.rows_from_x()) == []
    assert why.advise(kit.tiled_reference(), kit.tile_read_down_column()) == []


def test_no_reference_or_an_empty_one_gets_no_sentence():
    assert why.advise(kit.rows_from_x(), None) == []
    assert why.advise(kit.rows_from_x(), kit.profile(outputs=4096)) == []


def test_a_gap_that_costs_little_is_not_said():
    """Stores of 16 sectors where 4 would do cost 1.5% of the naive kernel's time."""
    student = kit.naive()
    kernel = replace(student.kernels[0], global_stores=kit.traffic(128, 16.0))
    assert why.advise(replace(student, kernels=[kernel]), kit.naive()) == []


@pytest.mark.parametrize(
    "kernel",
    [
        KernelProfile("matmul"),  # nothing counted
        KernelProfile("matmul", global_loads=Traffic(0, 0, 0, 0), threads=0),
        KernelProfile("matmul", global_loads=Traffic(5, 500, 0, 0)),  # no lanes, no bytes
    ],
)
def test_profiles_with_nothing_in_them_give_sentences_or_none_without_failing(kernel):
    for outputs in (0, 1):
        empty = kit.profile(kernel, outputs=outputs)
        assert isinstance(why.advise(empty, kit.naive()), list)
        assert isinstance(why.advise(kit.naive(), empty), list)


def test_a_fix_leaves_the_kernels_without_that_access_alone():
    """scan launches three kernels; one of them makes no global load or shared access."""

    def scan(loads: float) -> Profile:
        return kit.profile(
            KernelProfile("scan", global_loads=kit.traffic(64, loads), busiest_thread_loads=2),
            KernelProfile("scan_sums", shared_loads=kit.traffic(4, 1.0)),
            KernelProfile("add_sums"),
            outputs=2048,
        )

    assert causes(scan(16.0), scan(4.0)) == [Cause.UNCOALESCED]


# -- the other causes, and the ranking ------------------------------------------------------


def test_at_most_two_sentences_costliest_first():
    advice = why.advise(kit.serial_reduction(), kit.reduction_reference())
    assert [a.cause for a in advice] == [Cause.BUSIEST_THREAD, Cause.DIVERGENCE]
    assert advice[0].cost > advice[1].cost >= why.THRESHOLD
    assert "One thread makes 100% of all the global loads" in advice[0].message
    assert len(why.advise(kit.rows_from_x(), kit.tiled_reference())) <= why.MOST


def test_the_block_of_the_longest_rows_is_told_to_share_them_where_the_reference_spreads_them():
    """At spmv-jds's profile case the reference's busiest block makes 3.8 times its share
    of the loads, one thread a sorted row 10.9 times: on the H200 at the timed size, 2.1
    times the reference's time, the same bytes moved."""
    student, reference = kit.jds_long_rows_unshared(), kit.jds_reference_power_law()
    advice = why.advise(student, reference)
    assert [a.cause for a in advice] == [Cause.BUSIEST_BLOCK]
    assert advice[0].message.startswith(
        "One block makes 10.9 times an even share of the global loads, where the reference's "
        "busiest makes 3.8 times"
    )
    assert 1.0 < advice[0].cost < 2.0


def test_a_busy_block_is_not_said_under_four_times_its_share_nor_like_the_references():
    student, reference = kit.jds_long_rows_unshared(), kit.jds_reference_power_law()
    kernel = student.kernels[0]
    balanced = replace(kernel, busiest_block_loads=kernel.global_loads.lanes * 3 // 126)
    assert Cause.BUSIEST_BLOCK not in causes(replace(student, kernels=[balanced]), reference)
    busier = replace(
        reference.kernels[0], busiest_block_loads=reference.kernels[0].busiest_block_loads * 2
    )
    assert Cause.BUSIEST_BLOCK not in causes(student, replace(reference, kernels=[busier]))
    uncounted = replace(kernel, blocks=0)  # Nsight Compute's profile
    assert Cause.BUSIEST_BLOCK not in causes(replace(student, kernels=[uncounted]), reference)


def test_reading_less_leaves_each_blocks_share_of_the_loads_as_it_was():
    """Fixed, the traffic gap reads less in every block: the busiest block reads less too,
    so the fix makes no block busier than its share (a hidden case of the tiled matmul
    with 49 blocks, its busiest 1.2 times its share: told its traffic, as at 64)."""
    student = _with(kit.textbook_tiled(), blocks=49)
    lanes = student.kernels[0].global_loads.lanes
    student = _with(student, busiest_block_loads=math.ceil(1.2 * lanes / 49))
    assert causes(student, kit.tiled_reference()) == causes(
        kit.textbook_tiled(), kit.tiled_reference()
    )


def _with(profile: Profile, **changes) -> Profile:
    return replace(profile, kernels=[replace(profile.kernels[0], **changes)])


def test_low_occupancy_names_its_limiter_and_the_remedy():
    advice = why.advise(_with(kit.naive(), occupancy=kit.occupancy(8, "registers")), kit.naive())
    assert [a.cause for a in advice] == [Cause.OCCUPANCY]
    assert "Only 8 of 64 warps per SM can be resident in matmul (12.5%)" in advice[0].message
    assert "limited by registers" in advice[0].message and "fewer registers" in advice[0].message


def test_a_mask_read_from_global_memory():
    """A 5 x 5 mask: 25 loads per output element from constant memory for the reference,
    from global memory for the student."""
    outputs = 4096
    requests = outputs * 25 // 32
    image, mask = kit.traffic(requests, 2.0), kit.traffic(requests, 1.0)
    reference = kit.profile(
        KernelProfile("conv2d", global_loads=image, constant_loads=mask), outputs=outputs
    )
    both = Traffic(*(a + b for a, b in zip(vars(image).values(), vars(mask).values(), strict=True)))
    student = kit.profile(KernelProfile("conv2d", global_loads=both), outputs=outputs)
    advice = why.advise(student, reference)
    assert advice[0].cause == Cause.MASK_IN_GLOBAL
    assert "read from global memory: 25 loads per output element that the" in advice[0].message
    assert "__constant__" in advice[0].message


def test_a_mask_read_from_constant_memory_less_often_than_the_reference_is_not_global():
    """conv2d's baseline against the reference at a mask-7 hidden case (8777 outputs): it
    reads the mask from constant memory once per use, the reference once per row of
    outputs a value touches, 2.6 times as many requests; the baseline also reads the
    image 41 times as often, which is the traffic's gap, not the mask's."""
    reference = kit.profile(
        KernelProfile(
            "conv2d",
            global_loads=Traffic(requests=351, sectors=2341, bytes=41756, lanes=10439),
            constant_loads=Traffic(requests=37632, sectors=37632, bytes=4816896, lanes=1204224),
        ),
        outputs=8777,
    )
    reads = Traffic(requests=14384, sectors=77646, bytes=1654340, lanes=413585)
    baseline = kit.profile(
        KernelProfile("conv2d", global_loads=reads, constant_loads=replace(reads, sectors=20444)),
        outputs=8777,
    )
    assert Cause.MASK_IN_GLOBAL not in causes(baseline, reference)


def test_a_kernel_that_privatises_is_told_to_merge_less_often():
    """The course's histogram, few bytes a thread: it counts in shared memory as the
    reference does, but launches 8 times its threads, and each block adds its copy."""
    advice = why.advise(kit.small_tiles(), kit.histogram_reference())
    assert [a.cause for a in advice] == [Cause.GLOBAL_ATOMICS]
    text = advice[0].message
    assert "Your kernel counts in a private copy in shared memory" in text
    assert "it launches 8 times the reference's threads" in text
    assert "Privatise" not in text


def test_divergence_is_told_for_a_tree_and_for_a_tile_with_a_halo():
    """Idle lanes come from a reduction's tree (t % (2 * stride)) and as much from a block
    of one thread per input element of a tile with its halo, of which only the tile's
    compute (conv3d's 10 x 10 x 10 threads for 6 x 6 x 6 outputs: 60% idle lanes)."""
    text = said(kit.divergent_warps(), kit.reduction_reference())
    assert "in a tree, if (t < stride), not if (t % (2 * stride) == 0)" in text
    assert "a block of one thread per output that loads the halo in a loop" in text


def test_global_atomics_need_a_reference_that_privatises():
    shared_free = _with(kit.histogram_reference(), shared_atomics=0)
    assert Cause.GLOBAL_ATOMICS not in causes(kit.global_atomics(), shared_free)


def test_the_numbers_in_a_sentence():
    assert [why.figure(v) for v in (8.5, 4.0, 15.5, 0.0, 0.25, 2048.0)] == [
        "8.5", "4", "15.5", "0", "0.25", "2048",
    ]  # fmt: skip
    assert why.share(0.125) == "12.5%" and why.share(1.0) == "100%"
