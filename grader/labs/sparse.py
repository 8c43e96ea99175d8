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

from grader.judge import hints
from grader.judge.compare import close
from grader.labs import common
from grader.model.lab import Array, Case, Lab, Sampler, Scoring

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
    if rows and not lengths.any():  # with no entry, y = 0 would pass a kernel that writes zeros
        lengths[rng.integers(rows)] = 1
    return lengths


def draw_csr(rng: np.random.Generator, sizes) -> tuple[dict, dict]:
    """A CSR structure: row_ptr (num_rows + 1) and col_idx (nnz)."""
    lengths = row_lengths(rng, sizes)
    row_ptr = np.concatenate([[0], np.cumsum(lengths)])
    col_idx = rng.integers(0, sizes["num_cols"], int(row_ptr[-1]))
    return {"row_ptr": row_ptr, "col_idx": col_idx}, {"nnz": int(row_ptr[-1])}


def draw_jds(rng: np.random.Generator, sizes) -> tuple[dict, dict]:
    """A matrix drawn as draw_csr draws one, from the same draws (the rng is left where
    draw_csr leaves it), in transposed JDS: rows sorted by length, longest first (ties in
    row order); row_perm[r] is sorted row r's row, row_nnz[r] its length; section j
    holds the j-th entry of every row longer than j, starting at jds_col_start[j]
    (max_nnz + 1 of them, the last nnz, as row_ptr ends). The columns are drawn in this
    order, section by section: as they are independent and uniform, that is draw_csr's
    matrix in law, without gathering its entries into sections (at the timed size, 10
    million scattered reads, half of what a grading spent drawing the structure)."""
    lengths = row_lengths(rng, sizes)
    perm = np.argsort(-lengths, kind="stable")
    row_nnz = lengths[perm]
    longest = int(row_nnz[0]) if row_nnz.size else 0
    # section j's length: the rows longer than j
    shorter = np.cumsum(np.bincount(row_nnz, minlength=longest + 1))[:longest]
    starts = np.concatenate([[0], np.cumsum(row_nnz.size - shorter)]).astype(np.int64)
    nnz = int(starts[-1])
    arrays = {
        "row_perm": perm,
        "row_nnz": row_nnz,
        "jds_col_start": starts,
        "col_idx": rng.integers(0, sizes["num_cols"], nnz),
    }
    return arrays, {"nnz": nnz, "max_nnz": longest}


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


def past_the_entries(cause: str) -> hints.Detector:
    """A fault past the end of col_idx or values, which `cause` explains, in the lab's
    own words (a row loop that runs one entry too far)."""

    def detect(fault: hints.Fault) -> str | None:
        gone = hints.strayed(fault)
        arrays = [n for n in ("col_idx", "values") if gone.get(n) == "past the end"]
        if not arrays:
            return None
        return (
            f"The kernel read past the end of {hints.listing(arrays)}, which hold the "
            f"matrix's {fault.sizes['nnz']} entries. {cause}"
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


# -- the labs' common part ----------------------------------------------------------------


def _case(name: str, rows: int, cols: int, visibility: str = "public", **knobs) -> Case:
    return Case(name, {"num_rows": rows, "num_cols": cols, **knobs}, visibility)


PUBLIC = (
    _case("uniform-517x517", 517, 517, per_row=4),
    _case("power-law-1000x800", 1000, 800, per_row=8, power_law=1),
    _case("long-row-300x2000", 300, 2000, per_row=3, long_row=1500, empty=10),
    # the profile case: rows as the timed size's, 126 blocks of 256
    _case("power-law-32003x24000", 32003, 24000, per_row=10, power_law=1),
)

# One row; empty rows; all empty but one short row (all empty, y = 0 would pass a kernel
# that writes zeros); wide and tall; a row longer than all the others together; rows of
# about one length at other counts; power-law rows at the largest sizes, of which a
# grading with the secret profiles one (like_timing), so that the profile case's size is
# not known beforehand.
HIDDEN = (
    _case("one-row-1x50", 1, 50, "hidden", per_row=10),
    _case("empty-rows-517x300", 517, 300, "hidden", per_row=5, empty=40),
    _case("uniform-389x1000", 389, 1000, "hidden", per_row=7),
    _case("uniform-1031x300", 1031, 300, "hidden", per_row=3, empty=20),
    _case("nearly-empty-517x517", 517, 517, "hidden", per_row=0, long_row=5),
    _case("wide-200x5000", 200, 5000, "hidden", per_row=30),
    _case("tall-4099x64", 4099, 64, "hidden", per_row=6),
    _case("long-row-517x4096", 517, 4096, "hidden", per_row=2, long_row=3000),
    _case("power-law-30011x20000", 30011, 20000, "hidden", per_row=10, power_law=1),
    _case("power-law-45007x30000", 45007, 30000, "hidden", per_row=10, power_law=1),
)

# About 10 million entries, power-law rows of 5 to 640.
TIMING = {"num_rows": 1 << 20, "num_cols": 1 << 20, "per_row": 10, "power_law": 1}


def random_sizes(rng: np.random.Generator) -> dict[str, int]:
    return {
        "num_rows": int(rng.integers(1, 20000)),
        "num_cols": int(rng.integers(1, 20000)),
        "per_row": int(rng.integers(1, 17)),  # empty rows come from `empty`
        "power_law": int(rng.integers(0, 2)),
        "long_row": int(rng.choice([0, 0, 2000])),
        "empty": int(rng.choice([0, 10, 50])),
    }


def like_timing(sizes) -> bool:
    """Whether a case's rows are drawn as the timed size's and the profile case's are: a
    power law, no long row of its own and no rows emptied. The block of the longest rows
    then shows what it costs at the timed size (grader.judge.speed_model), and one thread
    a row keeps the busiest-thread rule (0.2% of the loads at 30011 rows; in
    long-row-517x4096 its long row's thread makes 69%)."""
    plain = not sizes.get("long_row", 0) and not sizes.get("empty", 0)
    return bool(sizes.get("power_law", 0)) and plain


def spmv_lab(inputs: tuple[Array, ...], own_hints: tuple = (), **specific) -> Lab:
    """A sparse matrix-vector lab: y = A x from the format's `inputs` (x follows them), on
    the cases above, the grid over y's rows; `own_hints` follow the shared ones, and
    `specific` gives the rest (title, summary, kernel, draw, reference, work, sampler,
    fault_hints)."""
    return Lab(
        inputs=(*inputs, Array("x", lambda s: (s["num_cols"],))),
        outputs=(Array("y", lambda s: (s["num_rows"],)),),
        extent=lambda s: (s["num_rows"], 1, 1),
        public_cases=PUBLIC,
        hidden_cases=HIDDEN,
        random_sizes=random_sizes,
        random_cases=2,
        timing_sizes=TIMING,
        dims=1,
        forbidden=common.FORBIDDEN,
        hints=(hints.nothing_written, empty_rows_unwritten, hints.partly_unwritten, *own_hints),
        cross_case_hints=(),
        scoring=Scoring(target_speedup=0.6, zero_speedup=0.15),
        bound="memory",
        profile_case="power-law-32003x24000",
        profile_alike=like_timing,
        **specific,
    )
