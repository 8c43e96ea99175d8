// Known wrong: an empty row is skipped, so its y is never written (it must be 0).

__global__ void spmv_csr(const int* row_ptr, const int* col_idx, const float* values,
                         const float* x, float* y, int num_rows) {
    int row = blockIdx.x * blockDim.x + threadIdx.x;
    if (row >= num_rows || row_ptr[row] == row_ptr[row + 1]) {
        return;
    }
    float sum = 0.0f;
    for (int j = row_ptr[row]; j < row_ptr[row + 1]; ++j) {
        sum += values[j] * x[col_idx[j]];
    }
    y[row] = sum;
}
