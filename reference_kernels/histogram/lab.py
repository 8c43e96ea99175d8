"""Histogram of bytes: `histogram(const unsigned char* input, unsigned int* bins, int n)`
counts each byte value of `input` into NUM_BINS = 256 bins, which arrive zeroed. The
grid is ceil(n / TILE_X) blocks; the counts are compared exactly. The lab is about
atomics and privatization: bins in shared memory, merged into `bins` at the end."""

from __future__ import annotations

import numpy as np

from grader.judge import hints
from grader.labs import common
from grader.model.lab import Array, Case, Kernel, Lab, Param, Requirement, Role, Sampler, Scoring

NUM_BINS = 256

KERNEL = Kernel(
    "histogram",
    (
        Param("input", "const unsigned char*", Role.INPUT),
        Param("bins", "unsigned int*", Role.OUTPUT),
        Param("n", "int", Role.SCALAR),
    ),
)


def _draw(rng: np.random.Generator, shape, sizes) -> np.ndarray:
    """Bytes from the first `values` byte values (256: all of them, 26: the letters a-z),
    except that `hot` percent of them, at random places, hold one value."""
    values = sizes.get("values", NUM_BINS)
    first = ord("a") if values == 26 else 0
    data = (first + rng.integers(0, values, shape)).astype(np.uint8)
    hot = rng.random(shape) < sizes.get("hot", 0) / 100
    data[hot] = rng.integers(first, first + values)
    return data


def _case(name: str, n: int, visibility: str = "public", **spread) -> Case:
    return Case(name, {"n": n, **spread}, visibility)


PUBLIC = (
    _case("uniform-1000", 1000),
    _case("letters-4099", 4099, values=26),
    _case("uniform-65536", 65536),
)

# 1 and 517; primes; sizes that are no multiple of any block; nearly all bytes equal
# (almost every atomic on one bin; all of them equal would pass a kernel that reads a few
# bytes and writes n into their bin); skewed; several million.
HIDDEN = (
    _case("uniform-1", 1, "hidden"),
    _case("uniform-517", 517, "hidden"),
    _case("uniform-7919", 7919, "hidden"),
    _case("one-bin-65537", 65537, "hidden", hot=99),
    _case("skewed-100003", 100003, "hidden", hot=90),
    _case("letters-262147", 262147, "hidden", values=26),
    _case("one-bin-1000003", 1000003, "hidden", hot=99),
    _case("uniform-4000037", 4000037, "hidden"),
)


PAIRS = 1 << 20  # byte pairs counted at a time: bincount widens each to 8 bytes


def _reference(arrays, sizes):
    """Counted two bytes at a time, as 65536 pair values whose rows and columns then add
    up to the byte counts: half the elements for bincount to widen, a slice at a time."""
    data = np.ascontiguousarray(arrays["input"], np.uint8).reshape(-1)
    even = data.size - data.size % 2
    pairs = np.zeros(1 << 16, np.int64)
    for start in range(0, even, 2 * PAIRS):
        pairs += np.bincount(
            data[start : min(even, start + 2 * PAIRS)].view(np.uint16), minlength=1 << 16
        )
    square = pairs.reshape(NUM_BINS, NUM_BINS)
    counts = square.sum(axis=0) + square.sum(axis=1)
    return {"bins": counts + np.bincount(data[even:], minlength=NUM_BINS)}


def _random_sizes(rng: np.random.Generator) -> dict[str, int]:
    return {"n": int(rng.integers(1, 300_000)), "hot": int(rng.choice([0, 50, 99]))}


# Every bin depends on every byte: the sample recomputes the whole histogram.
SAMPLER = Sampler(
    lambda sizes, axes, read: {"input": None},
    lambda sizes, v, axes: {"bins": _reference(v, sizes)["bins"][axes[0]]},
)


def _uses_atomics(interface, kernel: str) -> str | None:
    """The compiled kernel (or a function it calls) has an atomic instruction; without
    nvcc the runs decide."""
    sig = interface.kernels.get(kernel)
    if sig is None or sig.atomics is not False:
        return None
    return f"{kernel} increments no bin with an atomic operation. {_ATOMICS_WHY}"


_ATOMICS_WHY = (
    "Threads of many blocks add to the same bin at once, and a plain bins[v]++ loses most "
    "of their updates on a GPU (a race): use atomicAdd(&bins[v], 1), or count into "
    "__shared__ bins with atomicAdd and add each one to bins with atomicAdd at the end."
)


def _executed_no_atomic(kernel: str, case: str) -> str:
    return (
        f"{kernel} executed no atomic operation in case {case} (if your code has one, it "
        f"sits in a branch no thread takes). {_ATOMICS_WHY}"
    )


ATOMICS = Requirement(
    "atomics",
    _uses_atomics,
    says="the kernel increments the bins with atomic operations",
    executes="atomics",
    not_executed=_executed_no_atomic,
    known=common.module_shows("atomics"),
)


def _counted(ctx: hints.Context) -> tuple[int, int]:
    return int(np.asarray(ctx.cmp.got, np.int64).sum()), int(ctx.sizes["n"])


def nothing_counted(ctx: hints.Context) -> str | None:
    got, n = _counted(ctx)
    if got or not n:
        return None
    return (
        "Every bin is still 0, as the grader zeroed it: nothing reached bins. If you count "
        "into __shared__ bins, add each of them to bins (atomicAdd) after a __syncthreads() "
        "at the end of the block."
    )


def lost_counts(ctx: hints.Context) -> str | None:
    got, n = _counted(ctx)
    if not 0 < got < n:
        return None
    return (
        f"The bins add up to {got}, but the input has {n} bytes: counts were lost. Either "
        "increments collided (a plain ++ where two threads add to one bin: use atomicAdd), "
        "or some threads merged their block's shared bins before the others had counted "
        "(a __syncthreads() is missing before the merge), or some bytes were never read "
        "(the grid or a loop stops short of n)."
    )


def extra_counts(ctx: hints.Context) -> str | None:
    got, n = _counted(ctx)
    if got <= n:
        return None
    return (
        f"The bins add up to {got}, more than the {n} bytes of the input: some bytes were "
        "counted twice, or bytes past the end (i >= n) were read and counted. Check the "
        "index each thread computes and guard it with i < n."
    )


LAB = Lab(
    title="Histogram with atomics and privatization",
    summary="Count the bytes of the input into 256 bins that arrive zeroed; exact counts.",
    kernel=KERNEL,
    inputs=(Array("input", lambda s: (s["n"],), "uint8", draw=_draw),),
    outputs=(Array("bins", lambda s: (NUM_BINS,), "uint32", initial="zero"),),
    macros=("NUM_BINS",),
    derive=lambda sizes: {"NUM_BINS": NUM_BINS},
    reference=_reference,
    extent=lambda s: (s["n"], 1, 1),
    public_cases=PUBLIC,
    hidden_cases=HIDDEN,
    random_sizes=_random_sizes,
    random_cases=2,
    timing_sizes={"n": 1 << 25},
    work=lambda s: (0.0, float(s["n"] + 4 * NUM_BINS)),
    dims=1,
    requirements=(common.no_library(), ATOMICS),
    # enough bytes a block that privatised bins save global atomics (at uniform-1000,
    # 4 blocks, the reference's merge is a quarter of its atomics)
    profile_case="uniform-65536",
    forbidden=common.FORBIDDEN,
    hints=(nothing_counted, lost_counts, extra_counts),
    scoring=Scoring(target_speedup=0.6, zero_speedup=0.15),
    bound="memory",
    sampler=SAMPLER,
)
