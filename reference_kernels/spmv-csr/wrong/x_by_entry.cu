// Known wrong: x is indexed by the entry's place, x[j], instead of its column,
// x[col_idx[j]]: past the end of x wherever the matrix has more entries than columns.

__global__ void spmv_csr(const int* row_ptr, const int* col_idx, const float* values,
                         const float* x, float* y, int num_rows) {
    int row = blockIdx.x * blockDim.x + threadIdx.x;
    if (row < num_rows) {
        float sum = 0.0f;
        for (int j = row_ptr[row]; j < row_ptr[row + 1]; ++j) {
            sum += values[j] * x[j];
        }
        y[row] = sum;
    }
}
