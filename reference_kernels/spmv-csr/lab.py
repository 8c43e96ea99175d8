"""Sparse matrix-vector multiply in CSR: `spmv_csr(const int* row_ptr, const int* col_idx,
const float* values, const float* x, float* y, int num_rows)` computes y[r], the sum of
values[j] * x[col_idx[j]] for j in [row_ptr[r], row_ptr[r + 1]). x has num_cols
elements, which may differ from num_rows. The grid is ceil(num_rows / TILE_X) blocks.
The matrices come from grader.labs.sparse, whose knobs are the cases' sizes: empty rows,
a single row far longer than the rest, power-law rows, an all-empty matrix. Each y[r] is
held to float32 over its own row's entries (grader.compare)."""

from __future__ import annotations

from grader import hints
from grader.labs import common, sparse
from grader.labs.model import Array, Case, Kernel, Lab, Param, Role, Scoring

KERNEL = Kernel(
    "spmv_csr",
    (
        Param("row_ptr", "const int*", Role.INPUT),
        Param("col_idx", "const int*", Role.INPUT),
        Param("values", "const float*", Role.INPUT),
        Param("x", "const float*", Role.INPUT),
        Param("y", "float*", Role.OUTPUT),
        Param("num_rows", "int", Role.SCALAR),
    ),
)


def _case(name: str, rows: int, cols: int, visibility: str = "public", **knobs) -> Case:
    return Case(name, {"num_rows": rows, "num_cols": cols, **knobs}, visibility)


# The same matrices as spmv-jds's.
PUBLIC = (
    _case("uniform-517x517", 517, 517, per_row=4),
    _case("power-law-1000x800", 1000, 800, per_row=8, power_law=1),
    _case("long-row-300x2000", 300, 2000, per_row=3, long_row=1500, empty=10),
)

# One row; empty rows; all empty; wide and tall; a row longer than all the others
# together; power-law rows at the largest size.
HIDDEN = (
    _case("one-row-1x50", 1, 50, "hidden", per_row=10),
    _case("empty-rows-517x300", 517, 300, "hidden", per_row=5, empty=40),
    _case("all-empty-517x517", 517, 517, "hidden", per_row=0),
    _case("wide-200x5000", 200, 5000, "hidden", per_row=30),
    _case("tall-4099x64", 4099, 64, "hidden", per_row=6),
    _case("long-row-517x4096", 517, 4096, "hidden", per_row=2, long_row=3000),
    _case("power-law-30011x20000", 30011, 20000, "hidden", per_row=10, power_law=1),
)


def _random_sizes(rng) -> dict[str, int]:
    return {
        "num_rows": int(rng.integers(1, 20000)),
        "num_cols": int(rng.integers(1, 20000)),
        "per_row": int(rng.integers(0, 17)),
        "power_law": int(rng.integers(0, 2)),
        "long_row": int(rng.choice([0, 0, 2000])),
        "empty": int(rng.choice([0, 10, 50])),
    }


LAB = Lab(
    title="Sparse matrix-vector multiply in CSR",
    summary="y = A x for a sparse A in compressed rows: row_ptr, col_idx and values.",
    kernel=KERNEL,
    inputs=(
        Array("row_ptr", lambda s: (s["num_rows"] + 1,), "int32"),
        Array("col_idx", lambda s: (s["nnz"],), "int32"),
        Array("values", lambda s: (s["nnz"],)),
        Array("x", lambda s: (s["num_cols"],)),
    ),
    outputs=(Array("y", lambda s: (s["num_rows"],)),),
    draw=sparse.draw_csr,
    reference=sparse.csr_product,
    extent=lambda s: (s["num_rows"], 1, 1),
    public_cases=PUBLIC,
    hidden_cases=HIDDEN,
    random_sizes=_random_sizes,
    random_cases=2,
    timing_sizes={"num_rows": 1 << 20, "num_cols": 1 << 20, "per_row": 10, "power_law": 1},
    work=sparse.csr_work,
    dims=1,
    forbidden=common.FORBIDDEN,
    hints=(
        hints.nothing_written,
        sparse.empty_rows_unwritten,
        hints.partly_unwritten,
        sparse.x_by_entry,
    ),
    fault_hints=(
        sparse.past_the_entries("row_ptr[row + 1]"),
        sparse.x_past_the_end,
        sparse.rows_unguarded("row_ptr"),
    ),
    cross_case_hints=(),
    scoring=Scoring(target_speedup=0.6, zero_speedup=0.15),
    bound="memory",
    sampler=sparse.CSR_SAMPLER,
)
