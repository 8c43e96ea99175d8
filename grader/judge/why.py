"""Why this speed: from the student's profile and the reference's on the same case, the
largest gaps, each a sentence in the course's words that names the measure, its numbers
and the fix.

Each cause looks at one measure (grader.model.profile) and, where the student's is worse
than the reference's by more than noise, says so and how to fix it, with the kernels as
they would be fixed. Its cost is the time the fix saves by grader.judge.speed_model, as a
share of the reference's memory work; the causes are ranked by cost, and at most MOST of
those costing THRESHOLD or more are said. A kernel as good as the reference on every
measure gets no sentence.

The profile counts every access of a kind together: a cause names "global loads", not
which array (M, N, the mask) they read, and a shared-memory average mixes a conflicting
access with a broadcast one."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, replace
from functools import partial

from grader.judge import speed_model
from grader.judge.rules import HIDDEN_CASE
from grader.model.profile import SECTOR_BYTES, WARP, KernelProfile, Profile, Traffic
from grader.model.result import Advice, Cause

THRESHOLD = 0.2  # the least cost, as a share of the reference's work, worth a sentence
MOST = 2  # sentences at most: the largest gaps
SLACK = 1.25  # a measure this much worse than its target, and MARGIN more, is a gap
MARGIN = 0.5

Fix = Callable[[KernelProfile], KernelProfile]


@dataclass(frozen=True)
class Gap:
    """A measure on which the student's kernel is worse than the reference's: what to
    say, and the student's kernels as the fix would leave them."""

    cause: Cause
    message: str
    fix: Fix


Find = Callable[[Profile, Profile], Gap | None]  # a cause: the gap where there is one


def advise(student: Profile, reference: Profile | None) -> list[Advice]:
    """The largest gaps of `student` to `reference`, costliest first; none without a
    reference, or where no gap costs THRESHOLD of the reference's memory work."""
    if reference is None:
        return []
    base = speed_model.work(reference.kernels)
    if base <= 0:
        return []
    now = speed_model.time(student.kernels)
    found = [gap for find in CAUSES if (gap := find(student, reference))]
    priced = [
        Advice(
            cause=gap.cause,
            message=gap.message,
            cost=(now - speed_model.time(gap.fix(k) for k in student.kernels)) / base,
        )
        for gap in found
    ]
    worth = [a for a in priced if a.cost >= THRESHOLD]
    return sorted(worth, key=lambda a: -a.cost)[:MOST]


# -- the numbers in a sentence ----------------------------------------------------------


def figure(value: float) -> str:
    """A measure as a sentence gives it: 8.5, 4, 15.5, 0.25."""
    text = f"{value:.1f}" if abs(value) >= 1 or value == 0 else f"{value:.2g}"
    return text.removesuffix(".0")


def share(value: float) -> str:
    """A fraction as a percentage: 42%, 0.4%."""
    return f"{figure(100 * value)}%"


def _bytes(value: float) -> str:
    return f"{value / 1024:.1f} KiB" if value >= 1024 else f"{figure(value)} bytes"


# -- coalescing -------------------------------------------------------------------------


def ideal_sectors(traffic: Traffic) -> float:
    """The sectors a request would touch were its lanes' bytes consecutive: the bytes a
    request asks for over 32, at least 1."""
    return max(1.0, traffic.bytes / traffic.requests / SECTOR_BYTES) if traffic.requests else 1.0


def _excess(traffic: Traffic) -> float:
    """How many times the sectors a request touches exceed the ideal, at least 1: a
    broadcast touches fewer."""
    return max(1.0, traffic.per_request / ideal_sectors(traffic)) if traffic.requests else 1.0


@dataclass(frozen=True)
class Worse:
    """One kind of access worse than its target: its figure per request, the target, and
    `best`, the sectors (or wavefronts) that would do for one kernel's traffic of it."""

    kind: str
    noun: str  # "loads", "stores"
    mine: float
    target: float
    best: Callable[[Traffic], int]


def _lowered(worse: list[Worse]) -> Fix:
    """The fix that brings each kind down to what would do."""

    def fix(kernel: KernelProfile) -> KernelProfile:
        lowered = {}
        for w in worse:
            traffic = getattr(kernel, w.kind)
            lowered[w.kind] = replace(traffic, sectors=min(traffic.sectors, w.best(traffic)))
        return replace(kernel, **lowered)

    return fix


def _each(worse: list[Worse], unit: str, than: str) -> str:
    """Each kind's figure against its target: "8.5 sectors per request where 4 would do",
    or with two kinds "loads 8.5 sectors per request where 4 would do, stores 16 where 4
    would do"."""
    said = [
        f"{figure(w.mine)}{unit if i == 0 else ''} {than.format(figure(w.target))}"
        for i, w in enumerate(worse)
    ]
    if len(worse) == 1:
        return said[0]
    return ", ".join(f"{w.noun} {text}" for w, text in zip(worse, said, strict=True))


def _coalesced(traffic: Traffic, slack: float) -> int:
    """The sectors `traffic` would touch coalesced, allowing the reference's `slack`."""
    return math.ceil(traffic.requests * ideal_sectors(traffic) * slack)


def _uncoalesced(student: Profile, reference: Profile) -> Gap | None:
    worse = []
    for kind, noun in (("global_loads", "loads"), ("global_stores", "stores")):
        mine = student.total(kind)
        if not mine.requests:
            continue
        slack = _excess(reference.total(kind))  # what the reference's accesses allow
        target = ideal_sectors(mine) * slack
        if mine.per_request >= target * SLACK and mine.per_request - target >= MARGIN:
            best = partial(_coalesced, slack=slack)
            worse.append(Worse(kind, noun, mine.per_request, target, best))
    if not worse:
        return None
    nouns = " and ".join(w.noun for w in worse)
    verbs = " and ".join({"loads": "read", "stores": "write"}[w.noun] for w in worse)
    message = (
        f"Global {nouns} are uncoalesced: "
        f"{_each(worse, ' sectors per request', 'where {} would do')}. Consecutive threads "
        f"(threadIdx.x) should {verbs} consecutive addresses: index the fastest-varying "
        "dimension of each array with threadIdx.x."
    )
    return Gap(Cause.UNCOALESCED, message, _lowered(worse))


# -- global traffic per output ------------------------------------------------------------


def _traffic(student: Profile, reference: Profile) -> Gap | None:
    # what the reference reads from constant memory and the student from global (a mask)
    # is the mask's gap, not this one; a kernel that reads its mask from constant memory
    # too moved none, and its bytes are the measures' own
    moved = 0
    if _mask_elsewhere(student, reference):
        moved = reference.total("constant_loads").bytes - student.total("constant_loads").bytes
    mine = student.total("global_loads").bytes - max(0, moved)
    theirs = reference.total("global_loads").bytes
    if not theirs or mine < 1.5 * theirs:
        return None
    ratio = theirs / mine
    if student.outputs and student.outputs == reference.outputs:
        said = (
            f"Each output element reads {_bytes(mine / student.outputs)} from global memory "
            f"where the reference's reads {_bytes(theirs / reference.outputs)}, "
            f"1/{figure(1 / ratio)} of that"
        )
    else:
        said = (
            f"The kernel reads {_bytes(mine)} from global memory in all, "
            f"{figure(1 / ratio)} times the reference's {_bytes(theirs)}"
        )
    if reference.total("shared_loads").requests and _stages(student):
        how = (
            "your kernel stages tiles in shared memory, but each element it loads from "
            "global memory serves fewer outputs than in the reference. Larger tiles read "
            "less, and so does thread coarsening: each thread computing several outputs "
            f"from values it keeps in registers{_coarsening(student, reference)}"
        )
    elif reference.total("shared_loads").requests:
        how = (
            "stage the tiles of input that a block's threads share in shared memory (or "
            "registers), so that each element is read from global memory once per block, "
            "not once per use; larger tiles read less"
        )
    else:
        how = (
            "read each input element from global memory fewer times: keep a value that a "
            "thread uses again in a register"
        )

    def fix(kernel: KernelProfile) -> KernelProfile:
        loads = kernel.global_loads
        counts = (loads.requests, loads.sectors, loads.bytes, loads.lanes)
        fewer = Traffic(*(math.ceil(n * ratio) for n in counts))
        # every block reads less alike: its busiest as much less as the rest
        busiest = math.ceil(kernel.busiest_block_loads * ratio)
        return replace(kernel, global_loads=fewer, busiest_block_loads=busiest)

    return Gap(Cause.GLOBAL_TRAFFIC, f"{said}: {how}.", fix)


def _stages(profile: Profile) -> bool:
    """Whether a kernel reads from shared memory at least as often as from global memory:
    it reuses tiles it staged there (a decorative shared load does not)."""
    shared = profile.total("shared_loads").lanes
    return shared > 0 and shared >= profile.total("global_loads").lanes


def _outputs_per_thread(profile: Profile) -> float | None:
    """Output elements per thread launched, for a lab of one kernel."""
    if len(profile.kernels) != 1 or not profile.kernels[0].threads or not profile.outputs:
        return None
    return profile.outputs / profile.kernels[0].threads


def _coarsening(student: Profile, reference: Profile) -> str:
    """How many outputs each thread computes in both, where the reference's do more: at a
    public case only, since the counts would tell a hidden case's size."""
    mine, theirs = _outputs_per_thread(student), _outputs_per_thread(reference)
    if mine is None or theirs is None or theirs < 2 * max(mine, 1.0):
        return ""
    if student.case == HIDDEN_CASE:
        return " (the reference's threads compute several outputs each)"
    return (
        f" (the reference's threads compute {figure(round(theirs))} outputs each in this "
        f"case, yours {figure(max(1, round(mine)))})"
    )


# -- shared-memory bank conflicts -----------------------------------------------------------


def _spread(traffic: Traffic, conflicts: float) -> int:
    """The wavefronts of `traffic` with `conflicts` per request, the reference's."""
    return math.ceil(traffic.requests * (1 + conflicts))


def _conflicts(student: Profile, reference: Profile) -> Gap | None:
    worse = []
    for kind, noun in (("shared_loads", "loads"), ("shared_stores", "stores")):
        conflicts = student.total(kind).conflicts_per_request
        theirs = reference.total(kind).conflicts_per_request or 0.0
        if conflicts is not None and conflicts >= max(1.0, theirs * SLACK + MARGIN):
            worse.append(Worse(kind, noun, conflicts, theirs, partial(_spread, conflicts=theirs)))
    if not worse:
        return None
    ways = max(w.mine for w in worse) + 1
    how_bad = (
        "every access is a 32-way bank conflict"
        if ways >= WARP - MARGIN
        else f"{figure(ways)}-way on average (a tile read down a column is 32-way)"
    )
    message = (
        f"Shared-memory {' and '.join(w.noun for w in worse)} have "
        f"{'' if len(worse) == 1 else 'bank conflicts: '}"
        f"{_each(worse, ' bank conflicts per request', 'where the reference has {}')}. "
        "The lanes of a warp "
        f"reach different words of one bank, {how_bad}. Have consecutive threads use "
        "consecutive words, or pad each row of a 2D tile by one element (a [32][33] tile "
        "for 32 x 32)."
    )
    return Gap(Cause.BANK_CONFLICTS, message, _lowered(worse))


# -- atomics on global memory -------------------------------------------------------------


def _atomics(student: Profile, reference: Profile) -> Gap | None:
    mine = sum(k.global_atomics for k in student.kernels)
    theirs = sum(k.global_atomics for k in reference.kernels)
    private = sum(k.shared_atomics for k in reference.kernels)
    if not private or mine < 2 * theirs + WARP:
        return None
    kept = theirs / mine
    said = f"{mine} atomic updates go to global memory where the reference makes {theirs}"
    if 2 * sum(k.shared_atomics for k in student.kernels) >= private:
        return Gap(Cause.GLOBAL_ATOMICS, f"{said}. {_merges(student, reference)}", _fewer(kept))
    message = (
        f"{said}: it counts in a private copy in shared memory ({private} shared atomics) "
        "and adds the copy to global memory once per block. Privatise: atomicAdd into "
        "__shared__ bins, then, after a __syncthreads(), add each bin to global memory once."
    )

    def fix(kernel: KernelProfile) -> KernelProfile:
        moved = kernel.global_atomics - math.ceil(kernel.global_atomics * kept)
        return replace(
            kernel,
            global_atomics=kernel.global_atomics - moved,
            shared_atomics=kernel.shared_atomics + moved,
        )

    return Gap(Cause.GLOBAL_ATOMICS, message, fix)


def _merges(student: Profile, reference: Profile) -> str:
    """Why a kernel that privatises, as the reference does, still adds more to global
    memory: more blocks, each adding its copy."""
    mine = sum(k.threads for k in student.kernels)
    theirs = sum(k.threads for k in reference.kernels)
    more = (
        f", and it launches {figure(mine / theirs)} times the reference's threads"
        if theirs and mine >= 2 * theirs
        else ""
    )
    return (
        "Your kernel counts in a private copy in shared memory, but every block adds its "
        f"copy to global memory{more}. Give each block more of the input (a larger "
        "TILE_X, or a loop over several tiles), so that fewer blocks add their copies."
    )


def _fewer(kept: float) -> Fix:
    """The fix that leaves `kept` of a kernel's global atomics, the rest never made."""

    def fix(kernel: KernelProfile) -> KernelProfile:
        return replace(kernel, global_atomics=math.ceil(kernel.global_atomics * kept))

    return fix


# -- divergence: idle lanes -----------------------------------------------------------------


def _divergence(student: Profile, reference: Profile) -> Gap | None:
    idle = student.idle_lane_share
    theirs = reference.idle_lane_share or 0.0
    if idle is None or idle < 0.25 or idle < theirs + 0.15:
        return None
    message = (
        f"{share(idle)} of the lanes are idle in the kernel's memory requests where the "
        f"reference leaves {share(theirs)} idle: in a warp some threads work while the "
        "others wait (divergence), so each request serves few lanes. Keep the working "
        "threads together, so that whole warps work or fall idle: in a tree, if (t < "
        "stride), not if (t % (2 * stride) == 0); for a tile with a halo, a block of one "
        "thread per output that loads the halo in a loop, not one thread per input "
        "element of which only the tile's compute."
    )
    busy = max(1 - theirs, 1 / WARP)

    def pack(traffic: Traffic) -> Traffic:
        fewer = min(traffic.requests, math.ceil(traffic.lanes / (WARP * busy)))
        saved = traffic.requests - fewer
        return replace(traffic, requests=fewer, sectors=max(fewer, traffic.sectors - saved))

    def fix(kernel: KernelProfile) -> KernelProfile:
        kinds = speed_model.MEMORY
        return replace(kernel, **{kind: pack(getattr(kernel, kind)) for kind in kinds})

    return Gap(Cause.DIVERGENCE, message, fix)


# -- occupancy ------------------------------------------------------------------------------

REMEDIES = {
    "registers": "use fewer registers per thread (fewer values live at once; "
    "__launch_bounds__ tells nvcc the block size it must fit)",
    "shared memory": "use less shared memory per block (smaller tiles), so that more "
    "blocks fit on an SM",
    "blocks": "use larger blocks: an SM holds at most 32 blocks, so blocks of fewer than "
    "64 threads leave warps unused",
    "threads": "use a block size that divides the SM's 2048 threads",
}


def _occupancy(student: Profile, reference: Profile) -> Gap | None:
    theirs = {k.kernel: k.occupancy for k in reference.kernels if k.occupancy}
    low = [
        (k, theirs[k.kernel])
        for k in student.kernels
        if k.occupancy and k.kernel in theirs
        and k.occupancy.fraction < min(speed_model.OCCUPIED, 0.75 * theirs[k.kernel].fraction)
    ]  # fmt: skip
    if not low:
        return None
    kernel, best = low[0]
    mine = kernel.occupancy
    remedy = REMEDIES.get(mine.limiter, "raise it")
    # without nvcc the registers are not counted: the occupancy is the most it can be
    most = "Only" if mine.registers_counted else "At most"
    message = (
        f"{most} {mine.warps_per_sm} of {mine.max_warps_per_sm} warps per SM can be resident "
        f"in {kernel.kernel} ({share(mine.fraction)}), limited by {mine.limiter}, where the "
        f"reference's reach {best.warps_per_sm}: too few loads are in flight to hide "
        f"memory's latency. To raise it, {remedy}."
    )

    def fix(k: KernelProfile) -> KernelProfile:
        best = theirs.get(k.kernel)
        lifted = k.occupancy and best and k.occupancy.fraction < best.fraction
        return replace(k, occupancy=best) if lifted else k

    return Gap(Cause.OCCUPANCY, message, fix)


# -- the work on too few threads ------------------------------------------------------------


def _busiest(student: Profile, reference: Profile) -> Gap | None:
    mine = student.busiest_thread_share
    theirs = reference.busiest_thread_share or 0.0
    if mine is None or mine < 2 * theirs or mine < 1 / WARP:
        return None
    message = (
        f"One thread makes {share(mine)} of all the global loads where the reference's "
        f"busiest makes {share(theirs)}: the work runs on too few threads, one load after "
        "another. Give every thread a share: a tree over the block, or a loop that steps "
        "by the number of threads in the grid."
    )

    def fix(kernel: KernelProfile) -> KernelProfile:
        spread = math.ceil(kernel.global_loads.lanes * theirs)
        return replace(kernel, busiest_thread_loads=min(kernel.busiest_thread_loads, spread))

    return Gap(Cause.BUSIEST_THREAD, message, fix)


# -- the work of one block far past the others' ---------------------------------------------


def _busiest_block(student: Profile, reference: Profile) -> Gap | None:
    mine = student.block_imbalance(speed_model.SMS)
    theirs = reference.block_imbalance(speed_model.SMS) or 1.0
    if mine is None or mine < speed_model.IMBALANCED or mine < 2 * theirs:
        return None
    message = (
        f"One block makes {figure(mine)} times an even share of the global loads, where the "
        f"reference's busiest makes {figure(theirs)} times: a block runs on one SM, and the "
        "kernel ends only when its busiest block does, long after the other SMs have run out "
        "of work. Spread the work evenly over the blocks: where some rows are far longer "
        "than others (sorted, the longest all fall to the first block), share a long row "
        "among the threads of a warp or a block."
    )

    def fix(kernel: KernelProfile) -> KernelProfile:
        even = kernel.even_block_share(speed_model.SMS)
        if even is None:
            return kernel
        busiest = min(kernel.busiest_block_loads, math.ceil(even))
        return replace(kernel, busiest_block_loads=busiest)

    return Gap(Cause.BUSIEST_BLOCK, message, fix)


# -- a mask in global memory ----------------------------------------------------------------

MASK_ELSEWHERE = 8  # a kernel with over 1/8 of the reference's constant reads has its mask there


def _mask_elsewhere(student: Profile, reference: Profile) -> bool:
    """Whether the student's kernel reads its mask from elsewhere than constant memory,
    where the reference reads one there. A kernel that reads its mask from constant
    memory at all may still read it less often than the reference, whose register
    blocking reads a mask value per row it touches (conv2d's baseline at a mask-7 case:
    38% of the reference's requests)."""
    theirs = reference.total("constant_loads").requests
    return bool(theirs) and MASK_ELSEWHERE * student.total("constant_loads").requests <= theirs


def _mask(student: Profile, reference: Profile) -> Gap | None:
    moved = reference.total("constant_loads").requests - student.total("constant_loads").requests
    more = student.total("global_loads").requests - reference.total("global_loads").requests
    if not _mask_elsewhere(student, reference) or more < moved / 2:
        return None
    lanes = reference.total("constant_loads").lanes - student.total("constant_loads").lanes
    per = " per output element" if student.outputs else ""
    count = lanes / student.outputs if student.outputs else lanes
    message = (
        f"The mask is read from global memory: {figure(count)} loads{per} that the "
        "reference reads from constant memory, where one broadcast serves a whole warp. "
        "Declare the mask __constant__ and read it from there."
    )
    loads = student.total("global_loads").requests

    def fix(kernel: KernelProfile) -> KernelProfile:
        traffic = kernel.global_loads
        back = math.floor(moved * traffic.requests / loads) if loads else 0
        return replace(
            kernel,
            global_loads=replace(
                traffic, requests=traffic.requests - back, sectors=max(0, traffic.sectors - back)
            ),
            constant_loads=replace(
                kernel.constant_loads,
                requests=kernel.constant_loads.requests + back,
                sectors=kernel.constant_loads.sectors + back,
            ),
        )

    return Gap(Cause.MASK_IN_GLOBAL, message, fix)


CAUSES: tuple[Find, ...] = (
    _uncoalesced,
    _traffic,
    _conflicts,
    _atomics,
    _divergence,
    _occupancy,
    _busiest,
    _busiest_block,
    _mask,
)
