// Known wrong: no check that the row exists, so the threads past the last row of the
// last block read past the end of row_ptr and write past the end of y.

__global__ void spmv_csr(const int* row_ptr, const int* col_idx, const float* values,
                         const float* x, float* y, int num_rows) {
    int row = blockIdx.x * blockDim.x + threadIdx.x;
    float sum = 0.0f;
    for (int j = row_ptr[row]; j < row_ptr[row + 1]; ++j) {
        sum += values[j] * x[col_idx[j]];
    }
    y[row] = sum;
}
