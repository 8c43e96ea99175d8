// Known wrong: the row loop includes its end, j <= row_ptr[row + 1], so each row also
// adds the next row's first entry, and the last row reads one entry past the end.

__global__ void spmv_csr(const int* row_ptr, const int* col_idx, const float* values,
                         const float* x, float* y, int num_rows) {
    int row = blockIdx.x * blockDim.x + threadIdx.x;
    if (row < num_rows) {
        float sum = 0.0f;
        for (int j = row_ptr[row]; j <= row_ptr[row + 1]; ++j) {
            sum += values[j] * x[col_idx[j]];
        }
        y[row] = sum;
    }
}
