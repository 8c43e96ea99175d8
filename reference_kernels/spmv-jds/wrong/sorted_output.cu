// Known wrong: sorted row r's sum written to y[r], not to y[row_perm[r]].

__global__ void spmv_jds(const int* row_perm, const int* row_nnz, const int* jds_col_start,
                         const int* col_idx, const float* values, const float* x, float* y,
                         int num_rows) {
    int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r < num_rows) {
        float sum = 0.0f;
        for (int j = 0; j < row_nnz[r]; ++j) {
            int e = jds_col_start[j] + r;
            sum += values[e] * x[col_idx[e]];
        }
        y[r] = sum;
    }
}
