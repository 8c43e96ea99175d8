// spmv-csr reference: merge-based SpMV within each block. Block b owns rows
// [b * TILE_X, b * TILE_X + TILE_X) and shares the work of those rows, one unit per row
// end and one per entry, evenly among its threads, wherever the entries fall: a row of
// thousands of entries is split among all the block's threads instead of one, and a
// run of empty rows costs no more than one entry each. Each thread finds where its
// share starts by a binary search along the merge path of the row ends and the
// entries (Merrill and Garland, "Merge-based parallel sparse matrix-vector
// multiplication", SC16); rows it finishes go to shared memory, and the partial sum of
// the row it stops inside is added to that row after a barrier, in thread order, so
// the result does not depend on timing.

#define BLOCK_X 256
#define TILE_X 256  // rows per block

struct Coord {
    int row;    // rows finished before this point of the path
    int entry;  // entries consumed before it
};

// The point of the merge path at `diagonal`: ends[i] is where row i's entries end,
// counted from the block's first entry.
__device__ Coord merge_path(int diagonal, const int* ends, int rows, int entries) {
    int lo = max(diagonal - entries, 0);
    int hi = min(diagonal, rows);
    while (lo < hi) {
        int mid = (lo + hi) >> 1;
        if (ends[mid] <= diagonal - mid - 1) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    return Coord{lo, diagonal - lo};
}

__global__ void spmv_csr(const int* __restrict__ row_ptr, const int* __restrict__ col_idx,
                         const float* __restrict__ values, const float* __restrict__ x,
                         float* __restrict__ y, int num_rows) {
    __shared__ int ends[TILE_X];
    __shared__ float sums[TILE_X];
    __shared__ int carry_row[BLOCK_X];
    __shared__ float carry[BLOCK_X];

    const int first_row = blockIdx.x * TILE_X;
    const int rows = min(TILE_X, num_rows - first_row);
    const int base = row_ptr[first_row];
    for (int i = threadIdx.x; i < rows; i += BLOCK_X) {
        ends[i] = row_ptr[first_row + i + 1] - base;
    }
    __syncthreads();

    const int entries = ends[rows - 1];
    const int work = rows + entries;
    const int share = (work + BLOCK_X - 1) / BLOCK_X;
    const int start = min((int)threadIdx.x * share, work);
    const Coord from = merge_path(start, ends, rows, entries);
    const Coord to = merge_path(min(start + share, work), ends, rows, entries);

    const int* cols = col_idx + base;
    const float* vals = values + base;
    float sum = 0.0f;
    int k = from.entry;
    for (int i = from.row; i < to.row; ++i) {  // rows this thread finishes
        const int end = ends[i];
#pragma unroll 4
        for (; k < end; ++k) {
            sum += vals[k] * __ldg(&x[cols[k]]);
        }
        sums[i] = sum;
        sum = 0.0f;
    }
#pragma unroll 4
    for (; k < to.entry; ++k) {  // the start of the row it stops inside
        sum += vals[k] * __ldg(&x[cols[k]]);
    }
    carry_row[threadIdx.x] = to.row;
    carry[threadIdx.x] = sum;
    __syncthreads();

    // The first thread of each run that stops inside the same row adds the run's sums.
    const int row = carry_row[threadIdx.x];
    if (row < rows && (threadIdx.x == 0 || carry_row[threadIdx.x - 1] != row)) {
        float total = 0.0f;
        for (int t = threadIdx.x; t < BLOCK_X && carry_row[t] == row; ++t) {
            total += carry[t];
        }
        sums[row] += total;
    }
    __syncthreads();

    for (int i = threadIdx.x; i < rows; i += BLOCK_X) {
        y[first_row + i] = sums[i];
    }
}
