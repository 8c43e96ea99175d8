"""The sparse labs' generator (grader.labs.sparse): one matrix law for CSR and JDS."""

from __future__ import annotations

import numpy as np

from grader.labs import sparse

SIZES = {"num_rows": 3000, "num_cols": 700, "per_row": 8, "power_law": 1, "empty": 10}


def test_jds_draws_csrs_rows_and_columns_from_the_same_draws_and_leaves_the_rng_alike():
    """The same row lengths and the same columns (in section order), and the draws after
    it (values, x) unchanged: only which entry holds which column differs."""
    one, other = np.random.default_rng(7), np.random.default_rng(7)
    csr, csr_sizes = sparse.draw_csr(one, SIZES)
    jds, jds_sizes = sparse.draw_jds(other, SIZES)
    assert one.random() == other.random()
    assert jds_sizes == {**csr_sizes, "max_nnz": int(np.diff(csr["row_ptr"]).max())}
    lengths = np.zeros(SIZES["num_rows"], np.int64)
    lengths[jds["row_perm"]] = jds["row_nnz"]
    assert np.array_equal(lengths, np.diff(csr["row_ptr"]))
    assert np.array_equal(np.sort(jds["col_idx"]), np.sort(csr["col_idx"]))


def test_jds_sections_hold_the_rows_longer_than_their_number_longest_first():
    jds, drawn = sparse.draw_jds(np.random.default_rng(3), SIZES)
    row_nnz, starts = jds["row_nnz"], jds["jds_col_start"]
    assert np.all(np.diff(row_nnz) <= 0)
    assert starts.size == drawn["max_nnz"] + 1 and starts[-1] == drawn["nnz"]
    for j in (0, 1, drawn["max_nnz"] - 1):
        assert starts[j + 1] - starts[j] == np.count_nonzero(row_nnz > j)
