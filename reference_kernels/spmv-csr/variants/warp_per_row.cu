// spmv-csr, a warp per row (the "vector" CSR kernel): the warp's 32 lanes read
// consecutive entries of one row together, then add their sums with shuffles. A block
// of BLOCK_X threads covers BLOCK_X / 32 rows.

#define BLOCK_X 256
#define TILE_X (BLOCK_X / 32)

__global__ void spmv_csr(const int* row_ptr, const int* col_idx, const float* values,
                         const float* x, float* y, int num_rows) {
    const int lane = threadIdx.x % 32;
    const int row = blockIdx.x * TILE_X + threadIdx.x / 32;
    if (row >= num_rows) {
        return;  // the whole warp: its row does not exist
    }
    float sum = 0.0f;
    for (int j = row_ptr[row] + lane; j < row_ptr[row + 1]; j += 32) {
        sum += values[j] * x[col_idx[j]];
    }
    for (int offset = 16; offset > 0; offset /= 2) {
        sum += __shfl_down_sync(0xffffffffu, sum, offset);
    }
    if (lane == 0) {
        y[row] = sum;
    }
}
