// Known wrong (spmv-csr): each product is added straight into y[row], which nothing set
// first: outputs arrive uninitialised (the grader fills them with NaN), so every row with
// an entry sums onto that NaN, and an empty row's y is never written at all.

__global__ void spmv_csr(const int* row_ptr, const int* col_idx, const float* values,
                         const float* x, float* y, int num_rows) {
    int row = blockIdx.x * blockDim.x + threadIdx.x;
    if (row >= num_rows) return;
    for (int j = row_ptr[row]; j < row_ptr[row + 1]; ++j) {
        y[row] += values[j] * x[col_idx[j]];
    }
}
