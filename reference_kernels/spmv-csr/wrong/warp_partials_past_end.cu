// Known wrong (spmv-csr): a warp per row, whose lanes add their partial sums in shared
// memory; the tree starts at offset 32 where a warp's lanes are 0..31, so every lane
// adds the partial of a lane of the next warp, and the last warp's lanes read past the
// end of the array.

#define BLOCK_X 256
#define TILE_X (BLOCK_X / 32)

__global__ void spmv_csr(const int* row_ptr, const int* col_idx, const float* values,
                         const float* x, float* y, int num_rows) {
    __shared__ float partial[BLOCK_X];
    const int t = threadIdx.x, lane = t % 32;
    const int row = blockIdx.x * TILE_X + t / 32;
    float sum = 0.0f;
    if (row < num_rows) {
        for (int j = row_ptr[row] + lane; j < row_ptr[row + 1]; j += 32) {
            sum += values[j] * x[col_idx[j]];
        }
    }
    partial[t] = sum;
    __syncwarp();
    for (int offset = 32; offset > 0; offset /= 2) {
        if (lane < offset) partial[t] += partial[t + offset];
        __syncwarp();
    }
    if (lane == 0 && row < num_rows) y[row] = partial[t];
}
