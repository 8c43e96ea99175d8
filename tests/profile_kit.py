"""Memory profiles built by hand, as the CPU model would measure the lab kernels they are
named after on the lab's profile case (the census case), counted from the warps' address
patterns as grader/model/profile.py forms requests. The figures are worked out in each
builder's docstring; the issue's own (8.5 sectors per request for the naive matmul with
rows from threadIdx.x, 31 conflicts for a 32-way access) are among them."""

from __future__ import annotations

from dataclasses import replace

from grader.model.profile import (
    WARP,
    Counted,
    KernelProfile,
    Occupancy,
    Profile,
    Roofline,
    RooflinePoint,
    Source,
    Traffic,
)
from grader.model.result import ProfileReport

H200 = "sm_90 (H100, H200)"


def occupancy(warps: int, limiter: str) -> Occupancy:
    """Resident warps per SM of the H200's 64, and what limits them."""
    return Occupancy(
        blocks_per_sm=max(1, warps // 8),
        warps_per_sm=warps,
        max_warps_per_sm=64,
        limiter=limiter,
        gpu=H200,
    )


FULL = occupancy(64, "threads")


def traffic(requests: int, per_request: float, lanes: int | None = None, size: int = 4) -> Traffic:
    """`requests` warp requests touching `per_request` sectors (or wavefronts) each, of
    `lanes` lanes (all 32 by default) asking for `size` bytes each."""
    lanes = requests * WARP if lanes is None else lanes
    return Traffic(requests, round(requests * per_request), lanes * size, lanes)


def profile(*kernels: KernelProfile, outputs: int, case: str = "width-64", **sizes) -> Profile:
    return Profile(
        source=Source.CPU_MODEL,
        case=case,
        sizes=sizes or {"Width": 64},
        outputs=outputs,
        useful_flops=2.0 * 64**3,
        kernels=list(kernels),
    )


# -- matmul at Width 64: 4096 outputs, 256 blocks' worth of 16 x 16 threads -----------------


def naive() -> Profile:
    """The course's naive kernel: a warp is 2 rows of 16 threads; each k loads M (2
    addresses, 2 sectors) and N (16 floats, 2 sectors): 2 requests per warp per k, 64 k,
    128 warps: 16384 requests of 2 sectors; each thread's 128 loads in a row."""
    return profile(
        KernelProfile(
            "matmul",
            global_loads=traffic(16384, 2.0),
            global_stores=traffic(128, 2.0),
            threads=4096,
            busiest_thread_loads=128,
            occupancy=FULL,
        ),
        outputs=4096,
    )


def rows_from_x() -> Profile:
    """The naive kernel with the row from threadIdx.x: a warp's load of M touches 16
    rows (16 sectors), of N 2 adjacent floats (1 sector): 8.5 a request; its stores 16."""
    return profile(
        KernelProfile(
            "matmul",
            global_loads=traffic(16384, 8.5),
            global_stores=traffic(128, 16.0),
            threads=4096,
            busiest_thread_loads=128,
            occupancy=FULL,
        ),
        outputs=4096,
    )


def tiled_reference() -> Profile:
    """matmul-tiled's reference at Width 64: one block of 256 threads, float4 loads
    (16 sectors a request), each element of M and N read once (8 bytes per output), its
    shared reads mostly broadcasts (2 wavefronts a request)."""
    return profile(
        KernelProfile(
            "matmul",
            global_loads=traffic(64, 16.0, size=16),
            global_stores=traffic(64, 8.0, lanes=1024, size=16),
            shared_loads=traffic(2048, 2.0, size=16),
            shared_stores=traffic(128, 2.0),
            threads=256,
            busiest_thread_loads=16,
            occupancy=occupancy(16, "registers"),
        ),
        outputs=4096,
    )


def tile_read_down_column() -> Profile:
    """32 x 32 tiles, N's kept transposed and read Nt[tx][k]: per k a warp reads Ms
    (a broadcast, 1 wavefront) and Nt (32-way, 32 wavefronts): 16384 requests averaging
    16.5 wavefronts; the stores into Nt are 32-way too."""
    return profile(
        KernelProfile(
            "matmul",
            global_loads=traffic(256, 4.0),
            global_stores=traffic(128, 4.0),
            shared_loads=traffic(16384, 16.5),
            shared_stores=traffic(256, 16.5),
            threads=4096,
            busiest_thread_loads=4,
            occupancy=FULL,
        ),
        outputs=4096,
    )


def tiled_rows_from_x() -> Profile:
    """16 x 16 tiles loaded with the row from threadIdx.x: each tile load touches 16 rows
    (16 sectors where 4 would do), the stores too; each element read 4 times (32 bytes per
    output against the reference's 8); the padded tiles have no conflict."""
    return profile(
        KernelProfile(
            "matmul",
            global_loads=traffic(1024, 16.0),
            global_stores=traffic(128, 16.0),
            shared_loads=traffic(16384, 1.0),
            shared_stores=traffic(1024, 1.0),
            threads=4096,
            busiest_thread_loads=8,
            occupancy=FULL,
        ),
        outputs=4096,
    )


def textbook_tiled() -> Profile:
    """The course's tiled kernel: tiled_rows_from_x with its tiles loaded by rows
    (coalesced, 4 sectors a request), each element still read 4 times."""
    built = tiled_rows_from_x()
    kernel = replace(
        built.kernels[0], global_loads=traffic(1024, 4.0), global_stores=traffic(128, 4.0)
    )
    return replace(built, kernels=[kernel])


# -- conv2d at 128 x 96 with a 5 x 5 mask: 12288 outputs ------------------------------------


def conv2d_reference() -> Profile:
    """conv2d's reference: 64 x 64 tiles of 32 x 8 threads load each input once with its
    halo (about 4 bytes per output), the mask from constant memory, the window from
    shared memory without conflicts; registers limit it to 32 warps per SM."""
    return profile(
        KernelProfile(
            "conv2d",
            global_loads=Traffic(requests=408, sectors=3172, bytes=50960, lanes=12740),
            global_stores=traffic(384, 4.0),
            shared_loads=traffic(1920, 1.0),
            shared_stores=Traffic(requests=548, sectors=548, bytes=69696, lanes=17424),
            constant_loads=traffic(4608, 1.0),
            threads=1024,
            busiest_thread_loads=17,
            occupancy=occupancy(32, "registers"),
        ),
        outputs=12288,
        case="a hidden case",
        Width=128,
        Height=96,
    )


def conv2d_rows_from_x() -> Profile:
    """The naive kernel with each block's threads turned round: a warp's lanes hold 16
    rows, so a load of N touches 18 sectors where 8 would do (a window row spans two
    columns of sectors), each store 16 where 4 would do, and every use of an input is a
    read from global memory (23.1 bytes per output as the advice counts them, the mask's
    reads aside, against the reference's 4.1)."""
    return profile(
        KernelProfile(
            "conv2d",
            global_loads=Traffic(requests=3456, sectors=63080, bytes=437008, lanes=109252),
            global_stores=traffic(384, 16.0),
            constant_loads=Traffic(requests=3456, sectors=3904, bytes=437008, lanes=109252),
            threads=12288,
            busiest_thread_loads=9,
            occupancy=FULL,
        ),
        outputs=12288,
        case="a hidden case",
        Width=128,
        Height=96,
    )


# -- conv3d at a small hidden case: 3672 outputs ---------------------------------------------


def _conv3d(kernel: KernelProfile) -> Profile:
    return profile(kernel, outputs=3672, case="a hidden case")


def conv3d_reference() -> Profile:
    """conv3d's reference: the volume's tile with its halo through shared memory, each
    input read once (4 bytes per output), the mask from constant memory; registers
    limit it to 8 warps per SM."""
    return _conv3d(
        KernelProfile(
            "conv3d",
            global_loads=Traffic(requests=171, sectors=729, bytes=14688, lanes=3672),
            global_stores=Traffic(requests=153, sectors=459, bytes=14688, lanes=3672),
            shared_loads=traffic(5040, 1.0),
            shared_stores=Traffic(requests=414, sectors=414, bytes=51984, lanes=12996),
            constant_loads=traffic(98784, 1.0),
            threads=256,
            busiest_thread_loads=27,
            occupancy=occupancy(8, "registers"),
        )
    )


def conv3d_depth_from_x() -> Profile:
    """The naive kernel with the depth from threadIdx.x: a warp's lanes hold 8 planes and
    4 rows, 10.3 sectors a load request and 15.3 a store; half the lanes of its requests
    idle in the edge blocks of this small case."""
    return _conv3d(
        KernelProfile(
            "conv3d",
            global_loads=Traffic(requests=54912, sectors=563784, bytes=3405168, lanes=851292),
            global_stores=Traffic(requests=240, sectors=3672, bytes=14688, lanes=3672),
            constant_loads=Traffic(requests=54912, sectors=216996, bytes=3405168, lanes=851292),
            threads=9216,
            busiest_thread_loads=343,
            occupancy=FULL,
        )
    )


# -- scan at n = 517: one block -----------------------------------------------------------


def _scan(scan_shared: tuple[Traffic, Traffic], sums_shared: tuple[Traffic, Traffic]) -> Profile:
    """scan's three kernels at n = 517 (one tile, so add_sums adds nothing), the shared
    traffic of scan's and scan_sums' block scans given as (loads, stores)."""
    return profile(
        KernelProfile(
            "scan",
            global_loads=Traffic(requests=17, sectors=65, bytes=2068, lanes=517),
            global_stores=Traffic(requests=18, sectors=66, bytes=2072, lanes=518),
            shared_loads=scan_shared[0],
            shared_stores=scan_shared[1],
            threads=512,
            busiest_thread_loads=2,
            occupancy=FULL,
        ),
        KernelProfile(
            "scan_sums",
            global_loads=traffic(1, 1.0, lanes=1),
            global_stores=traffic(1, 1.0, lanes=1),
            shared_loads=sums_shared[0],
            shared_stores=sums_shared[1],
            threads=512,
            busiest_thread_loads=1,
            occupancy=FULL,
        ),
        KernelProfile("add_sums", threads=512, occupancy=FULL),
        outputs=517,
        case="a hidden case",
        n=517,
    )


def scan_reference() -> Profile:
    """Each thread scans 4 floats in registers and the warps' totals go through shared
    memory once: wide accesses, no conflicts (a request a wavefront)."""
    stores = Traffic(requests=97, sectors=97, bytes=16512, lanes=2592)
    return _scan(
        (Traffic(requests=65, sectors=65, bytes=14292, lanes=2037), stores),
        (Traffic(requests=33, sectors=33, bytes=10180, lanes=1009), stores),
    )


def brent_kung_strided() -> Profile:
    """The Brent-Kung trees in place: a warp's lanes 2 * stride words apart, from 2-way to
    32-way conflicts (4.8 wavefronts a load request in scan, 5.3 in scan_sums; 4 a store)."""
    stores = Traffic(requests=103, sectors=408, bytes=12240, lanes=3060)
    return _scan(
        (Traffic(requests=160, sectors=770, bytes=18360, lanes=4590), stores),
        (Traffic(requests=143, sectors=753, bytes=16292, lanes=4073), stores),
    )


# -- histogram at n = 1000: 256 bins ----------------------------------------------------------


def histogram_reference() -> Profile:
    """One block of 512 threads: 62 uint4 loads and 8 single bytes, 1000 shared atomics,
    the 16 private copies zeroed and summed in shared memory, about 250 global atomics."""
    return profile(
        KernelProfile(
            "histogram",
            global_loads=Traffic(requests=3, sectors=32, bytes=1000, lanes=70),
            shared_loads=traffic(128, 1.0),
            shared_stores=traffic(128, 1.0),
            global_atomics=250,
            shared_atomics=1000,
            threads=512,
            busiest_thread_loads=2,
        ),
        outputs=256,
        case="uniform-1000",
        n=1000,
    )


def small_tiles() -> Profile:
    """The template's histogram: privatised as the reference is, but blocks of few bytes,
    8 times the reference's threads, each block adding its copy to the global bins."""
    built = histogram_reference()
    theirs = built.kernels[0]
    kernel = replace(theirs, threads=8 * theirs.threads, global_atomics=8 * theirs.global_atomics)
    return replace(built, kernels=[kernel])


def global_atomics() -> Profile:
    """Every byte an atomicAdd on the global bins: 32 coalesced byte loads a warp."""
    return profile(
        KernelProfile(
            "histogram",
            global_loads=traffic(32, 1.0, lanes=1000, size=1),
            global_atomics=1000,
            threads=256,
            busiest_thread_loads=4,
        ),
        outputs=256,
        case="uniform-1000",
        n=1000,
    )


# -- reduction at n = 1000 --------------------------------------------------------------------


def reduction_reference() -> Profile:
    """One block: 8 float4 requests (250 lanes), then each warp's sum into shared memory
    by its lane 0, and 8 lanes of one warp reading them back: half its lanes idle."""
    return profile(
        KernelProfile(
            "reduction",
            global_loads=traffic(8, 15.6, lanes=250, size=16),
            global_stores=traffic(1, 1.0, lanes=1),
            shared_loads=traffic(1, 1.0, lanes=8),
            shared_stores=traffic(8, 1.0, lanes=8),
            threads=256,
            busiest_thread_loads=1,
        ),
        outputs=1,
        case="n-1000",
        n=1000,
    )


def divergent_warps() -> Profile:
    """2 blocks of 256 threads, each adding its two inputs as it loads them, then
    t % (2 * s) == 0: per block 16 loads and 8 stores of full warps, then 141 tree
    requests serving 765 lanes (s = 1: 16 lanes a warp; s = 16: 1)."""
    return profile(
        KernelProfile(
            "reduction",
            global_loads=traffic(32, 4.0, lanes=1000),
            global_stores=traffic(2, 1.0, lanes=2),
            shared_loads=traffic(2 * 95, 1.0, lanes=2 * 511),
            shared_stores=traffic(2 * 55, 1.0, lanes=2 * 511),
            threads=512,
            busiest_thread_loads=2,
        ),
        outputs=2,
        case="n-1000",
        n=1000,
    )


def strided_index() -> Profile:
    """The same, partial[2 * s * t]: the working threads together (few idle lanes), their
    words 2 * s apart: 150 wavefronts for 45 requests a block."""
    return profile(
        KernelProfile(
            "reduction",
            global_loads=traffic(32, 4.0, lanes=1000),
            global_stores=traffic(2, 1.0, lanes=2),
            shared_loads=traffic(2 * 25, 3.8, lanes=2 * 511),
            shared_stores=traffic(2 * 20, 2.75, lanes=2 * 511),
            threads=512,
            busiest_thread_loads=2,
        ),
        outputs=2,
        case="n-1000",
        n=1000,
    )


def oversized_shared() -> Profile:
    """Sequential addressing in blocks of 128 threads over a hidden case of about 205,000
    floats (804 blocks): the same sectors as the reference's loads in 4 times the
    requests, each shared access a wavefront; but a 48 KB shared array leaves room on an
    SM for 4 blocks, 16 warps of its 64."""
    return profile(
        KernelProfile(
            "reduction",
            global_loads=Traffic(requests=6425, sectors=25698, bytes=822336, lanes=205584),
            global_stores=traffic(804, 1.0, lanes=804),
            shared_loads=Traffic(requests=13668, sectors=13668, bytes=820080, lanes=205020),
            shared_stores=Traffic(requests=9648, sectors=9648, bytes=820080, lanes=205020),
            threads=102912,
            busiest_thread_loads=2,
            occupancy=occupancy(16, "shared memory"),
        ),
        outputs=804,
        case="a hidden case",
        n=205584,
    )


def reduction_reference_at_scale() -> Profile:
    """The reference on the same case: 16 floats a thread in float4 loads (51 blocks of
    256 threads), the warps' sums through shared memory, every warp of an SM resident."""
    return profile(
        KernelProfile(
            "reduction",
            global_loads=Traffic(requests=1607, sectors=25698, bytes=822336, lanes=51396),
            global_stores=traffic(51, 1.0, lanes=51),
            shared_loads=Traffic(requests=51, sectors=51, bytes=1632, lanes=408),
            shared_stores=Traffic(requests=408, sectors=408, bytes=1632, lanes=408),
            threads=13056,
            busiest_thread_loads=4,
            occupancy=FULL,
        ),
        outputs=51,
        case="a hidden case",
        n=205584,
    )


def serial_reduction() -> Profile:
    """One thread of one block adds all 1000 inputs."""
    return profile(
        KernelProfile(
            "reduction",
            global_loads=traffic(1000, 1.0, lanes=1000),
            global_stores=traffic(1, 1.0, lanes=1),
            threads=1024,
            busiest_thread_loads=1000,
        ),
        outputs=1,
        case="n-1000",
        n=1000,
    )


# -- spmv-jds at uniform-517x517: 517 rows of 0 to 8 entries, 3 blocks of 256 threads ------


def _spmv_jds(loads: Traffic, stores: Traffic) -> Profile:
    """The reference's kernel and its slow variant read the same 10066 lane loads (row_nnz,
    jds_col_start, col_idx, values and x's gathers: 40264 bytes) and store y by row_perm;
    only how a warp's lanes share sectors differs."""
    return profile(
        KernelProfile(
            "spmv_jds",
            global_loads=loads,
            global_stores=stores,
            threads=768,
            busiest_thread_loads=35,
            occupancy=occupancy(48, "registers"),
        ),
        outputs=517,
        case="uniform-517x517",
        num_rows=517,
        num_cols=517,
        per_row=4,
    )


def jds_reference() -> Profile:
    """A warp's 32 neighbouring sorted rows read each section's entries side by side: 7.6
    sectors a load request, most of them x's gathers; y stored through row_perm."""
    return _spmv_jds(
        Traffic(requests=330, sectors=2518, bytes=40264, lanes=10066),
        Traffic(requests=17, sectors=367, bytes=2068, lanes=517),
    )


def jds_rows_strided() -> Profile:
    """The warp's rows 8 apart: a lane's entry of a section, its row_nnz and its row_perm
    each a sector of its own, 15.5 sectors a load request; more requests, as the lanes'
    rows end at more different lengths."""
    return _spmv_jds(
        Traffic(requests=450, sectors=6983, bytes=40264, lanes=10066),
        Traffic(requests=21, sectors=441, bytes=2068, lanes=517),
    )


def _jds_power_law(kernel: KernelProfile) -> Profile:
    return profile(
        kernel,
        outputs=32003,
        case="power-law-32003x24000",
        num_rows=32003,
        num_cols=24000,
        per_row=10,
        power_law=1,
    )


def jds_reference_power_law() -> Profile:
    """The reference at the lab's profile case, as the CPU model counts it: rows longer
    than 32 entries shared by a block's warps, the groups of them dealt over the blocks;
    its busiest block (a group of the longest rows beside its own short ones) makes 42376
    of the 1392838 loads, 3.8 times an SM's share of them over 126 blocks."""
    return _jds_power_law(
        KernelProfile(
            "spmv_jds",
            global_loads=Traffic(45491, 420534, 5571352, 1392838),
            global_stores=Traffic(1002, 20943, 128012, 32003),
            shared_loads=Traffic(200, 200, 24832, 6208),
            shared_stores=Traffic(200, 200, 25600, 6400),
            threads=32256,
            busiest_thread_loads=325,
            busiest_block_loads=42376,
            blocks=126,
            occupancy=occupancy(48, "registers"),
        )
    )


def jds_long_rows_unshared() -> Profile:
    """One thread a sorted row, none shared: the first block, the 256 longest rows, makes
    111832 of the 1290638 loads, 10.9 times its share; the sectors a load request the
    reference's (9.9 and 9.2)."""
    return _jds_power_law(
        KernelProfile(
            "spmv_jds",
            global_loads=Traffic(42162, 416743, 5162552, 1290638),
            global_stores=Traffic(1001, 20943, 128012, 32003),
            threads=32256,
            busiest_thread_loads=2562,
            busiest_block_loads=111832,
            blocks=126,
            occupancy=FULL,
        )
    )


def roofline(flops: bool = True) -> Roofline:
    """An H200's ceilings, the student's point well under the reference's: 1 ms launches
    of 0.8 and 5.2 GFLOP (or none), 1.6 and 3 GB."""
    gflop = (0.8, 5.2) if flops else (0.0, 0.0)
    requested = Counted.REQUESTED
    return Roofline(
        peak_flops=60e12,
        peak_bytes=4e12,
        student=RooflinePoint(1.0, gflop[0] * 1e9, 1.6e9, requested),
        reference=RooflinePoint(1.0, gflop[1] * 1e9, 3e9, requested),
    )


def report(student: Profile, reference: Profile | None, line: Roofline | None = None):
    """The ProfileReport a grading would hold: the two profiles and their advice."""
    from grader.judge.why import advise

    return ProfileReport(
        student=student, reference=reference, advice=advise(student, reference), roofline=line
    )
