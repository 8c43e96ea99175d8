// spmv-jds, a warp per sorted row: lane l adds entries l, l + 32, ... of the row, and the
// warp adds its lanes' sums with shuffles. A block of BLOCK_X threads covers BLOCK_X / 32
// rows. (Each lane reads a different section: the reads are scattered, unlike one thread
// per row, but no thread is left alone with a long row.)

#define BLOCK_X 128
#define TILE_X (BLOCK_X / 32)

__global__ void spmv_jds(const int* row_perm, const int* row_nnz, const int* jds_col_start,
                         const int* col_idx, const float* values, const float* x, float* y,
                         int num_rows) {
    const int lane = threadIdx.x % 32;
    const int r = blockIdx.x * TILE_X + threadIdx.x / 32;
    if (r >= num_rows) {
        return;  // the whole warp
    }
    float sum = 0.0f;
    for (int j = lane; j < row_nnz[r]; j += 32) {
        const int e = jds_col_start[j] + r;
        sum += values[e] * x[col_idx[e]];
    }
    for (int offset = 16; offset > 0; offset /= 2) {
        sum += __shfl_down_sync(0xffffffffu, sum, offset);
    }
    if (lane == 0) {
        y[row_perm[r]] = sum;
    }
}
