// Slow but right (spmv-jds): the reference with its short rows dealt out down the
// block's warps: lane l of warp w takes the chunk's row l * WARPS + w, where the
// reference gives it row w * 32 + l. Every row is still summed by one thread and the
// long rows are shared as the reference shares them, but a warp's 32 lanes hold rows 8
// apart, so each load of a section's entries, of row_nnz and of row_perm touches a
// sector a lane where neighbouring rows share one among eight. Every case passes; the
// profile shows the loads uncoalesced.

#define BLOCK_X 256
#define TILE_X 256  // sorted rows per block
#define LONG 32     // longer rows are shared by a block's warps
#define WARPS (BLOCK_X / 32)

__global__ void spmv_jds(const int* __restrict__ row_perm, const int* __restrict__ row_nnz,
                         const int* __restrict__ jds_col_start,
                         const int* __restrict__ col_idx, const float* __restrict__ values,
                         const float* __restrict__ x, float* __restrict__ y, int num_rows) {
    __shared__ float partial[WARPS][32];
    const int lane = threadIdx.x % 32;
    const int warp = threadIdx.x / 32;

    // Rows longer than LONG are the first `longer` sorted rows: section LONG's length.
    const int longest = row_nnz[0];
    const int longer = longest > LONG ? jds_col_start[LONG + 1] - jds_col_start[LONG] : 0;

    const int groups = (longer + 31) / 32;
    for (int group = blockIdx.x; group < groups; group += gridDim.x) {
        const int r = group * 32 + lane;
        float sum = 0.0f;
        if (r < longer) {
            const int n = row_nnz[r];
#pragma unroll 4
            for (int j = warp; j < n; j += WARPS) {
                const int e = jds_col_start[j] + r;
                sum += values[e] * __ldg(&x[col_idx[e]]);
            }
        }
        partial[warp][lane] = sum;
        __syncthreads();
        if (warp == 0 && r < longer) {
            float total = 0.0f;
            for (int w = 0; w < WARPS; ++w) {
                total += partial[w][lane];
            }
            y[row_perm[r]] = total;
        }
        __syncthreads();
    }

    const int last = min(blockIdx.x * TILE_X + TILE_X, num_rows);
    for (int first = blockIdx.x * TILE_X; first < last; first += BLOCK_X) {
        const int r = first + lane * WARPS + warp;  // the warp's rows WARPS apart
        if (r >= last || r < longer) {
            continue;  // past the tile, or done above
        }
        const int n = row_nnz[r];
        float sum = 0.0f;
#pragma unroll 4
        for (int j = 0; j < n; ++j) {
            const int e = jds_col_start[j] + r;
            sum += values[e] * __ldg(&x[col_idx[e]]);
        }
        y[row_perm[r]] = sum;
    }
}
