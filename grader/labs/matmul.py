"""Square matrix multiply P = M N, row-major, one kernel `matmul`. The naive and tiled labs
share it and differ in what they require and in the reference they are timed against."""

from __future__ import annotations

import numpy as np

from grader.judge import hints
from grader.labs import common, numerics
from grader.model.lab import Array, Case, Kernel, Lab, Param, Role, Sampler, Scoring

KERNEL = Kernel(
    "matmul",
    (
        Param("M", "const float*", Role.INPUT),
        Param("N", "const float*", Role.INPUT),
        Param("P", "float*", Role.OUTPUT),
        Param("Width", "int", Role.SCALAR),
    ),
)

PUBLIC = (
    Case("width-64", {"Width": 64}),
    Case("width-100", {"Width": 100}),
    Case("width-256", {"Width": 256}),
)

# 517 and 1; one either side of the tiles 8, 16 and 32; primes.
HIDDEN_WIDTHS = (517, 1, 7, 9, 15, 17, 31, 33, 97, 131, 257)
HIDDEN = tuple(Case(f"width-{w}", {"Width": w}, "hidden") for w in HIDDEN_WIDTHS)


def square(sizes):
    return (sizes["Width"], sizes["Width"])


def _needs(sizes, axes, read):
    rows, cols = axes
    k = np.arange(sizes["Width"])
    return {"M": (rows[:, None], k[None, :]), "N": (k[:, None], cols[None, :])}


# P at rows x cols needs those rows of M and those columns of N
SAMPLER = Sampler(_needs, lambda sizes, v, axes: {"P": numerics.matmul(v["M"], v["N"])})


def matmul_lab(title: str, summary: str, scoring: Scoring, **extra) -> Lab:
    return Lab(
        title=title,
        summary=summary,
        kernel=KERNEL,
        inputs=(Array("M", square), Array("N", square)),
        outputs=(Array("P", square),),
        reference=lambda a, s: {"P": numerics.matmul(a["M"], a["N"])},
        extent=lambda s: (s["Width"], s["Width"], 1),
        public_cases=PUBLIC,
        hidden_cases=HIDDEN,
        random_sizes=lambda rng: {"Width": int(rng.integers(2, 400))},
        random_cases=2,
        timing_sizes={"Width": 4096},
        work=lambda s: (2.0 * s["Width"] ** 3, 3.0 * 4 * s["Width"] ** 2),
        forbidden=common.FORBIDDEN,
        requirements=(common.no_library(), *extra.pop("requirements", ())),
        hints=(
            hints.nothing_written,
            hints.same_block_index,
            hints.last_partial_tile,
            hints.partly_unwritten,
            hints.truncated_sum("M", "N"),
            hints.transposed,
            hints.swapped("M", "N"),
            hints.index_rearranged("M", "N"),
        ),
        scoring=scoring,
        bound="compute",
        sampler=SAMPLER,
        **extra,
    )
