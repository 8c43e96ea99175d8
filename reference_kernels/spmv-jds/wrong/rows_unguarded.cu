// Known wrong: no check that the sorted row exists: the last block's threads past the
// last row read past the end of row_nnz.

__global__ void spmv_jds(const int* row_perm, const int* row_nnz, const int* jds_col_start,
                         const int* col_idx, const float* values, const float* x, float* y,
                         int num_rows) {
    int r = blockIdx.x * blockDim.x + threadIdx.x;
    float sum = 0.0f;
    for (int j = 0; j < row_nnz[r]; ++j) {
        int e = jds_col_start[j] + r;
        sum += values[e] * x[col_idx[e]];
    }
    y[row_perm[r]] = sum;
}
