// Known wrong: the layout read as if each sorted row's entries were stored together,
// entry j of row r at jds_col_start[r] + j: past the end of jds_col_start, which has one
// element per section, for every row past max_nnz.

__global__ void spmv_jds(const int* row_perm, const int* row_nnz, const int* jds_col_start,
                         const int* col_idx, const float* values, const float* x, float* y,
                         int num_rows) {
    int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r < num_rows) {
        float sum = 0.0f;
        for (int j = 0; j < row_nnz[r]; ++j) {
            int e = jds_col_start[r] + j;
            sum += values[e] * x[col_idx[e]];
        }
        y[row_perm[r]] = sum;
    }
}
