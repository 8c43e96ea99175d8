"""Sparse matrix-vector multiply in the course's transposed JDS (jagged diagonal
storage): `spmv_jds(const int* row_perm, const int* row_nnz, const int* jds_col_start,
const int* col_idx, const float* values, const float* x, float* y, int num_rows)`. The
rows are sorted by their count of entries, longest first: sorted row r is row
row_perm[r] of the matrix and has row_nnz[r] entries, and its j-th entry sits at
jds_col_start[j] + r of col_idx and values (section j holds the j-th entry of every row
longer than j, so neighbouring threads read neighbouring entries). The kernel writes
y[row_perm[r]]. jds_col_start has max_nnz + 1 elements, the last nnz. The matrices are
spmv-csr's (grader.labs.sparse); the grid is ceil(num_rows / TILE_X) blocks."""

from __future__ import annotations

import numpy as np

from grader.judge import hints
from grader.judge.compare import close
from grader.labs import sparse
from grader.model.lab import Array, Kernel, Param, Role

KERNEL = Kernel(
    "spmv_jds",
    (
        Param("row_perm", "const int*", Role.INPUT),
        Param("row_nnz", "const int*", Role.INPUT),
        Param("jds_col_start", "const int*", Role.INPUT),
        Param("col_idx", "const int*", Role.INPUT),
        Param("values", "const float*", Role.INPUT),
        Param("x", "const float*", Role.INPUT),
        Param("y", "float*", Role.OUTPUT),
        Param("num_rows", "int", Role.SCALAR),
    ),
)


def written_to_sorted_rows(ctx: hints.Context) -> str | None:
    """y[r] holds sorted row r's sum, where y[row_perm[r]] should."""
    perm = np.asarray(ctx.inputs["row_perm"], np.int64)
    if perm.size < 2 or np.array_equal(perm, np.arange(perm.size)):
        return None
    want = ctx.cmp.expected[perm]
    if not ctx.cmp.bad.any() or not close(ctx.cmp.got, want, ctx.tol[perm]):
        return None
    return (
        "Each sum went to y[r], r the row's place in the sorted order; it belongs to "
        "y[row_perm[r]]. Sorted row r is row row_perm[r] of the matrix, and y is in the "
        "matrix's own row order."
    )


def not_transposed(fault: hints.Fault) -> str | None:
    """A fault past the end of jds_col_start: it was indexed by the row."""
    if hints.strayed(fault).get("jds_col_start") != "past the end":
        return None
    return (
        f"The kernel read past the end of jds_col_start, which has one element per section "
        f"(max_nnz + 1 = {fault.sizes['max_nnz'] + 1}), not one per row: the layout is "
        "transposed. Entry j of sorted row r sits at jds_col_start[j] + r, section j first "
        "and the row within it; jds_col_start[r] + j reads as if each row's entries were "
        "stored together."
    )


def row_major(ctx: hints.Context) -> str | None:
    """The sums with entry j of sorted row r read at jds_col_start[r] + j."""
    inputs = ctx.inputs
    starts = np.asarray(inputs["jds_col_start"], np.int64)
    lengths = np.asarray(inputs["row_nnz"], np.int64)
    if not ctx.cmp.bad.any() or lengths.size > starts.size:
        return None
    entries = np.repeat(starts[: lengths.size], lengths)
    entries += np.arange(entries.size) - np.repeat(np.cumsum(lengths) - lengths, lengths)
    if entries.size and entries.max() >= inputs["values"].size:
        return None
    cols = np.asarray(inputs["col_idx"], np.int64)[entries]
    products = np.asarray(inputs["values"], np.float64)[entries] * inputs["x"][cols]
    got = np.zeros(lengths.size)
    got[np.asarray(inputs["row_perm"], np.int64)] = sparse.row_sums(products, lengths)
    if not close(ctx.cmp.got, got, ctx.tol):
        return None
    return (
        "Each sum reads entry j of sorted row r at jds_col_start[r] + j, as if each row's "
        "entries were stored together; the layout is transposed: it is at "
        "jds_col_start[j] + r, section j first and the row within it."
    )


LAB = sparse.spmv_lab(
    title="Sparse matrix-vector multiply in transposed JDS",
    summary="y = A x for a sparse A with rows sorted by length, stored section by section.",
    kernel=KERNEL,
    inputs=(
        Array("row_perm", lambda s: (s["num_rows"],), "int32"),
        Array("row_nnz", lambda s: (s["num_rows"],), "int32"),
        Array("jds_col_start", lambda s: (s["max_nnz"] + 1,), "int32"),
        Array("col_idx", lambda s: (s["nnz"],), "int32"),
        Array("values", lambda s: (s["nnz"],)),
    ),
    draw=sparse.draw_jds,
    reference=sparse.jds_product,
    work=sparse.jds_work,
    own_hints=(written_to_sorted_rows, row_major),
    fault_hints=(
        sparse.past_the_entries(
            "Either a row's loop runs one entry too far, j <= row_nnz[r] where j < row_nnz[r] "
            "belongs (the longest row then reads one entry past the last one), or the entries "
            "are read as if each row's were stored together, at jds_col_start[r] + j, where "
            "the transposed layout puts entry j of sorted row r at jds_col_start[j] + r."
        ),
        not_transposed,
        sparse.x_past_the_end,
        sparse.rows_unguarded("row_nnz"),
    ),
    sampler=sparse.JDS_SAMPLER,
)
