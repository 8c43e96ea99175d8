// Lab spmv-jds: y = A x for a sparse matrix A stored in transposed JDS (jagged diagonal
// storage). Read README.md first.
//
// Rules the grader measures on its profile of your kernel (README.md):
//   - No thread may make more than 1/8 of the global loads of the profile case.
//
// Check your work:   grader check spmv-jds kernel.cu
//
// The grader launches
//   spmv_jds<<<grid, block>>>(row_perm, row_nnz, jds_col_start, col_idx, values, x, y, num_rows);
//   block = BLOCK_X threads, grid = ceil(num_rows / TILE_X) blocks.
// The rows are sorted by their count of entries, longest first. Sorted row r is row
// row_perm[r] of the matrix and has row_nnz[r] entries; its j-th entry sits at index
// jds_col_start[j] + r of col_idx and values.
//
// As handed out, this kernel compiles and runs but writes nothing to y: the grader
// reports every row as never written. Work through the TODOs in order.

#define BLOCK_X 256
#define TILE_X BLOCK_X  // sorted rows per block: one thread per row

__global__ void spmv_jds(const int* row_perm, const int* row_nnz, const int* jds_col_start,
                         const int* col_idx, const float* values, const float* x, float* y,
                         int num_rows)
{
    // TODO 1: this thread's sorted row r, from blockIdx.x, blockDim.x and threadIdx.x.
    //   Return at once when r >= num_rows: the last block has threads past the last row.
    int r = 0;  // replace 0
    (void)r;

    // TODO 2: for each j < row_nnz[r], the entry at e = jds_col_start[j] + r adds
    //   values[e] * x[col_idx[e]]. (Section j first, then the row within it: threads r
    //   and r + 1 read neighbouring entries.) A row may have no entry at all.

    // TODO 3: write the sum to the matrix's own row: y[row_perm[r]], not y[r]. An empty
    //   row's sum is 0, and it must be written too.
}
