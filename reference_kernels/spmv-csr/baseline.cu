// spmv-csr baseline: one thread per row, the textbook's first CSR kernel. A warp's
// threads walk rows of different lengths, so the warp waits for its longest row, and
// neighbouring threads read entries far apart.

__global__ void spmv_csr(const int* row_ptr, const int* col_idx, const float* values,
                         const float* x, float* y, int num_rows) {
    int row = blockIdx.x * blockDim.x + threadIdx.x;
    if (row < num_rows) {
        float sum = 0.0f;
        for (int j = row_ptr[row]; j < row_ptr[row + 1]; ++j) {
            sum += values[j] * x[col_idx[j]];
        }
        y[row] = sum;
    }
}
