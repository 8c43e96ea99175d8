// Lab spmv-csr: y = A x for a sparse matrix A stored in CSR (compressed sparse rows).
// Read README.md first.
//
// Rules the grader measures on its profile of your kernel (README.md):
//   - No thread may make more than 1/8 of the global loads of the profile case.
//
// Check your work:   grader check spmv-csr kernel.cu
//
// The grader launches   spmv_csr<<<grid, block>>>(row_ptr, col_idx, values, x, y, num_rows);
//   block = BLOCK_X threads, grid = ceil(num_rows / TILE_X) blocks.
// Row r's entries are j = row_ptr[r] ... row_ptr[r + 1] - 1: entry j lies in column
// col_idx[j] and holds values[j]. x has one element per column, y one per row.
//
// As handed out, this kernel compiles and runs but writes nothing to y: the grader
// reports every row as never written. Work through the TODOs in order.

#define BLOCK_X 256
#define TILE_X BLOCK_X  // rows per block: one thread per row

__global__ void spmv_csr(const int* row_ptr, const int* col_idx, const float* values,
                         const float* x, float* y, int num_rows)
{
    // TODO 1: this thread's row, from blockIdx.x, blockDim.x and threadIdx.x. The last
    //   block has threads past the last row (num_rows is often NOT a multiple of
    //   TILE_X): return at once when row >= num_rows.
    int row = 0;  // replace 0
    (void)row;

    // TODO 2: add values[j] * x[col_idx[j]] for every entry j of the row, from
    //   row_ptr[row] up to, but not including, row_ptr[row + 1]. A row may have no
    //   entry at all.

    // TODO 3: write the sum to y[row], for an empty row too (its sum is 0).
}
