"""Sparse matrix-vector multiply y = A x, for the labs whose matrix comes in CSR (row_ptr,
col_idx, values) or in the course's transposed JDS (rows sorted by length, longest
first; entry j of sorted row r at jds_col_start[j] + r). Both draw their matrices with
one generator, whose knobs are case sizes:

    num_rows, num_cols  the matrix's shape; x has num_cols elements, y num_rows
    per_row             entries per row on average: uniform in [0, 2 per_row], or
    power_law           1: a power law (Pareto, exponent 2) from per_row / 2 entries up
                        to CAP times per_row, most rows short and a few far longer
    long_row            entries of one row, at a random place (0: none)
    empty               percent of the rows left empty

Columns are uniform, in no order within a row, and one may repeat in a row (each entry
counts). The structure is what Lab.draw gives, so hidden matrices come from the secret,
and at the timed size the host draws it once per grading; values and x are drawn as
any float input. The sizes the structure defines (nnz, max_nnz) are not shown."""

from __future__ import annotations

import numpy as np

from grader import hints
from grader.compare import close
from grader.labs.model import Sampler

CAP = 64  # a power-law row has at most CAP * per_row entries
EXPONENT = 2.0  # of the power law: P(length > k) = (start / k)^EXPONENT


def row_lengths(rng: np.random.Generator, sizes) -> np.ndarray:
    """Entries of each row (int64), from the case's knobs."""
    rows, mean = sizes["num_rows"], sizes.get("per_row", 4)
    if sizes.get("power_law", 0):
        start = max(mean / 2.0, 1.0)
        drawn = start * (1.0 - rng.random(rows)) ** (-1.0 / EXPONENT)
        lengths = np.minimum(np.floor(drawn), CAP * max(mean, 1)).astype(np.int64)
    else:
        lengths = rng.integers(0, 2 * mean + 1, rows).astype(np.int64)
    empty = sizes.get("empty", 0)
    if empty:
        lengths[rng.random(rows) < empty / 100.0] = 0
    long_row = sizes.get("long_row", 0)
    if long_row and rows:
        lengths[rng.integers(rows)] = long_row
    if sizes["num_cols"] < 1:
        lengths[:] = 0  # no column to put an entry in
    return lengths


def draw_csr(rng: np.random.Generator, sizes) -> tuple[dict, dict]:
    """A CSR structure: row_ptr (num_rows + 1) and col_idx (nnz)."""
    lengths = row_lengths(rng, sizes)
    row_ptr = np.concatenate([[0], np.cumsum(lengths)])
    col_idx = rng.integers(0, max(sizes["num_cols"], 1), int(row_ptr[-1]))
    return {"row_ptr": row_ptr, "col_idx": col_idx}, {"nnz": int(row_ptr[-1])}


def draw_jds(rng: np.random.Generator, sizes) -> tuple[dict, dict]:
    """The same matrix as draw_csr in transposed JDS: rows sorted by length, longest
    first (ties in row order); row_perm[r] is sorted row r's row, row_nnz[r] its length;
    section j holds the j-th entry of every row longer than j, starting at
    jds_col_start[j] (max_nnz + 1 of them, the last nnz, as row_ptr ends)."""
    arrays, drawn = draw_csr(rng, sizes)
    row_ptr, col_idx = arrays["row_ptr"], arrays["col_idx"]
    lengths = np.diff(row_ptr)
    perm = np.argsort(-lengths, kind="stable")
    row_nnz = lengths[perm]
    longest = int(row_nnz[0]) if row_nnz.size else 0
    # section j's length: the rows longer than j
    shorter = np.cumsum(np.bincount(row_nnz, minlength=longest + 1))[:longest]
    starts = np.concatenate([[0], np.cumsum(row_nnz.size - shorter)])
    sorted_row, j = _ragged(row_nnz)
    source = row_ptr[perm][sorted_row] + j
    jds_cols = np.empty_like(col_idx)
    jds_cols[starts[j] + sorted_row] = col_idx[source]
    arrays = {
        "row_perm": perm,
        "row_nnz": row_nnz,
        "jds_col_start": starts,
        "col_idx": jds_cols,
    }
    return arrays, {**drawn, "max_nnz": longest}


def _ragged(lengths: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For rows of `lengths` entries laid end to end: each entry's row, and its place in
    the row."""
    lengths = np.asarray(lengths, np.int64)
    rows = np.repeat(np.arange(lengths.size), lengths)
    firsts = np.cumsum(lengths) - lengths
    return rows, np.arange(rows.size) - firsts[rows]


def row_sums(products: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """Sums of consecutive runs of `products`, `lengths` long each (0 for an empty run),
    one after the other; numbers or symbols alike."""
    lengths = np.asarray(lengths, np.int64).reshape(-1)
    out = np.zeros(lengths.size, object if products.dtype == object else np.float64)
    full = lengths > 0
    if full.any():
        firsts = np.cumsum(lengths) - lengths
        out[full] = np.add.reduceat(products, firsts[full])
    return out


def _added(rows: np.ndarray, products: np.ndarray, count: int) -> np.ndarray:
    """Each row's sum of its products, in float64 (0 for a row without any)."""
    return np.bincount(rows, products, minlength=count).astype(np.float64)


def csr_product(a, sizes) -> dict[str, np.ndarray]:
    """y = A x from CSR, in float64 (or whatever the values are)."""
    rows, _ = _ragged(np.diff(a["row_ptr"]))
    products = a["values"] * a["x"][a["col_idx"]]
    return {"y": _added(rows, products, sizes["num_rows"])}


def jds_product(a, sizes) -> dict[str, np.ndarray]:
    """y = A x from transposed JDS."""
    _, place = _ragged(np.diff(a["jds_col_start"]))  # each entry's sorted row
    products = a["values"] * a["x"][a["col_idx"]]
    rows = np.asarray(a["row_perm"], np.int64)[place]
    return {"y": _added(rows, products, sizes["num_rows"])}


# -- samplers: the rows sampled, each entry they hold -----------------------------------


def _csr_needs(sizes, axes, read):
    rows = axes[0]
    bounds = read("row_ptr", (rows[:, None] + np.arange(2)[None, :],))
    row, place = _ragged(bounds[:, 1] - bounds[:, 0])
    entries = bounds[row, 0] + place
    return {
        "row_ptr": (rows[:, None] + np.arange(2)[None, :],),
        "values": (entries,),
        "x": (read("col_idx", (entries,)),),
    }


def _csr_combine(sizes, v, axes):
    lengths = v["row_ptr"][:, 1] - v["row_ptr"][:, 0]
    return {"y": row_sums(v["values"] * v["x"], lengths)}


CSR_SAMPLER = Sampler(_csr_needs, _csr_combine)


def _jds_needs(sizes, axes, read):
    perm = np.asarray(read("row_perm", None), np.int64)
    where = np.empty_like(perm)
    where[perm] = np.arange(perm.size)
    sorted_rows = where[axes[0]]
    lengths = read("row_nnz", (sorted_rows,))
    row, j = _ragged(lengths)
    starts = np.asarray(read("jds_col_start", None), np.int64)
    entries = starts[j] + sorted_rows[row]
    return {
        "row_nnz": (sorted_rows,),
        "values": (entries,),
        "x": (read("col_idx", (entries,)),),
    }


JDS_SAMPLER = Sampler(
    _jds_needs, lambda s, v, axes: {"y": row_sums(v["values"] * v["x"], v["row_nnz"])}
)


def csr_work(sizes) -> tuple[float, float]:
    """2 flops an entry; each index, value, x and y moved once."""
    nnz, rows = sizes["nnz"], sizes["num_rows"]
    return 2.0 * nnz, 4.0 * (rows + 1 + 2 * nnz + sizes["num_cols"] + rows)


def jds_work(sizes) -> tuple[float, float]:
    nnz, rows = sizes["nnz"], sizes["num_rows"]
    return 2.0 * nnz, 4.0 * (3 * rows + sizes["max_nnz"] + 1 + 2 * nnz + sizes["num_cols"])


# -- hints ------------------------------------------------------------------------------


def empty_rows_unwritten(ctx: hints.Context) -> str | None:
    """y left unwritten exactly at the empty rows."""
    unwritten = ctx.cmp.unwritten
    lengths = _lengths(ctx)
    if not unwritten.any() or lengths is None or not np.array_equal(unwritten, lengths == 0):
        return None
    return (
        f"y is never written at the {int(unwritten.sum())} empty rows (rows with no entry, "
        f"the first y[{int(np.argmax(unwritten))}]), and right everywhere else. An empty "
        "row's sum is 0: write y[row] = 0 for it too, instead of skipping the row."
    )


def _lengths(ctx: hints.Context) -> np.ndarray | None:
    """Each row's entries, by the row y holds (CSR or JDS)."""
    inputs = ctx.inputs
    if "row_ptr" in inputs:
        return np.diff(np.asarray(inputs["row_ptr"], np.int64))
    if "row_perm" in inputs:
        out = np.zeros(ctx.sizes["num_rows"], np.int64)
        out[inputs["row_perm"]] = inputs["row_nnz"]
        return out
    return None


def past_the_entries(bound: str) -> hints.Detector:
    """A fault past the end of col_idx or values: the row loop runs one entry too far
    (`<=` where `<` belongs). `bound` is how the lab writes the row's end."""

    def detect(fault: hints.Fault) -> str | None:
        gone = hints.strayed(fault)
        arrays = [n for n in ("col_idx", "values") if gone.get(n) == "past the end"]
        if not arrays:
            return None
        return (
            f"The kernel read past the end of {hints.listing(arrays)}, which hold the "
            f"{fault.sizes['nnz']} entries of the matrix. A row's entries end before "
            f"{bound}: loop while j < {bound}, not j <= {bound} (the last row's loop then "
            "reads one entry past the last one)."
        )

    return detect


def x_past_the_end(fault: hints.Fault) -> str | None:
    """A fault past the end of x: x indexed by something other than a column."""
    if hints.strayed(fault).get("x") != "past the end":
        return None
    return (
        f"The kernel read past the end of x, which has num_cols = {fault.sizes['num_cols']} "
        "elements, one for each column. x is indexed by the entry's column, col_idx[j], "
        "not by the entry's place j in col_idx and values, nor by the row."
    )


def rows_unguarded(first: str) -> hints.Detector:
    """A fault past the end of `first` (the first array a thread reads by its row) or of
    y: threads past the last row were not stopped."""

    def detect(fault: hints.Fault) -> str | None:
        gone = hints.strayed(fault)
        if gone.get(first) != "past the end" and gone.get("y") != "past the end":
            return None
        return (
            f"Threads past the last row ran on: the matrix has num_rows = "
            f"{fault.sizes['num_rows']} rows, and the grid covers ceil(num_rows / TILE_X) "
            f"blocks, so the last block has threads with row >= num_rows. They read past "
            f"the end of {first} or wrote past the end of y: return at once when row >= "
            "num_rows."
        )

    return detect


def x_by_entry(ctx: hints.Context) -> str | None:
    """The sums of values[j] * x[j], where every j is a column of x."""
    inputs = ctx.inputs
    nnz = inputs["values"].size
    if not ctx.cmp.bad.any() or nnz > inputs["x"].size:
        return None
    by_entry = hints.reference_with(ctx, col_idx=np.arange(nnz))
    if not close(ctx.cmp.got, by_entry, ctx.tol):
        return None
    return (
        "Each sum multiplies values[j] by x[j], where it needs x[col_idx[j]]: x is indexed "
        "by the entry's column, not by its place j in col_idx and values."
    )
