"""Sparse matrix-vector multiply in CSR: `spmv_csr(const int* row_ptr, const int* col_idx,
const float* values, const float* x, float* y, int num_rows)` computes y[r], the sum of
values[j] * x[col_idx[j]] for j in [row_ptr[r], row_ptr[r + 1]). x has num_cols
elements, which may differ from num_rows. The grid is ceil(num_rows / TILE_X) blocks.
The matrices come from grader.labs.sparse, whose knobs are the cases' sizes: empty rows,
a single row far longer than the rest, power-law rows, a matrix empty but for one short
row. Each y[r] is held to float32 over its own row's entries (grader.judge.compare)."""

from __future__ import annotations

from grader.labs import sparse
from grader.model.lab import Array, Kernel, Param, Role

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

LAB = sparse.spmv_lab(
    title="Sparse matrix-vector multiply in CSR",
    summary="y = A x for a sparse A in compressed rows: row_ptr, col_idx and values.",
    kernel=KERNEL,
    inputs=(
        Array("row_ptr", lambda s: (s["num_rows"] + 1,), "int32"),
        Array("col_idx", lambda s: (s["nnz"],), "int32"),
        Array("values", lambda s: (s["nnz"],)),
    ),
    draw=sparse.draw_csr,
    reference=sparse.csr_product,
    work=sparse.csr_work,
    own_hints=(sparse.x_by_entry,),
    fault_hints=(
        sparse.past_the_entries(
            "A row's entries end before row_ptr[row + 1], where the next row's begin: loop "
            "while j < row_ptr[row + 1], not j <= row_ptr[row + 1] (the last row then reads "
            "one entry past the last one)."
        ),
        sparse.x_past_the_end,
        sparse.rows_unguarded("row_ptr"),
    ),
    sampler=sparse.CSR_SAMPLER,
)
