// Lab scan: the inclusive prefix sum output[i] = input[0] + ... + input[i], in three
// kernels the grader launches one after the other. Read README.md first.
//
// Rules the grader measures on its profile of your kernel (README.md):
//   - No thread may make more than 1/8 of the global loads of the profile case.
//
// Check your work:   grader check scan kernel.cu
//
// The grader launches, in this order, on the same buffers:
//   scan<<<ceil(n / TILE_X), BLOCK_X>>>(input, output, sums, n);
//   scan_sums<<<1, BLOCK_X>>>(sums, m);            // m = ceil(n / TILE_X)
//   add_sums<<<ceil(n / TILE_X), BLOCK_X>>>(output, sums, n);
// Each block scans TILE_X = 2 * BLOCK_X elements: two per thread. The lab needs
// BLOCK_X >= 512 (then one block of scan_sums covers the 1024 block totals of the
// largest case, n = 1024 * 1024).
//
// As handed out, these kernels compile and run but store nothing: the grader reports
// every element of output as never written. Work through the TODOs in order.

#define BLOCK_X 512
#define TILE_X (2 * BLOCK_X)

// The inclusive scan of XY[0 .. TILE_X - 1] in place, by the whole block (Brent-Kung).
// Every thread of the block must call it: it has __syncthreads() inside.
__device__ void block_scan(float* XY)
{
    const int t = threadIdx.x;
    // TODO 2: the up-sweep (reduction tree): for stride = 1, 2, 4, ..., TILE_X / 2:
    //     __syncthreads();
    //     int i = (t + 1) * 2 * stride - 1;
    //     if (i < TILE_X) XY[i] += XY[i - stride];
    // TODO 3: the down-sweep (distribution tree): for stride = TILE_X / 4, ..., 2, 1:
    //     __syncthreads();
    //     int i = (t + 1) * 2 * stride - 1;
    //     if (i + stride < TILE_X) XY[i + stride] += XY[i];
    // then one more __syncthreads() before anyone reads the result.
    (void)t;
    __syncthreads();
}

__global__ void scan(const float* input, float* output, float* sums, int n)
{
    __shared__ float XY[TILE_X];
    const int t = threadIdx.x;
    const int start = blockIdx.x * TILE_X;

    // TODO 1: load this block's two elements per thread: XY[t] = input[start + t] and
    //   XY[t + BLOCK_X] = input[start + t + BLOCK_X]. n is often NOT a multiple of TILE_X
    //   (hidden cases: 1, 517, primes): an index >= n loads 0.
    XY[t] = 0.0f;            // replace 0.0f
    XY[t + BLOCK_X] = 0.0f;  // replace 0.0f

    block_scan(XY);

    // TODO 4: store both elements back (only indices < n), and let thread 0 write the
    //   block's total, XY[TILE_X - 1], to sums[blockIdx.x].
    (void)start;
}

__global__ void scan_sums(float* sums, int m)
{
    // TODO 5: one block scans the m <= TILE_X block totals in place: load sums[t] and
    //   sums[t + BLOCK_X] into a __shared__ array (0 past m), block_scan it, store back.
}

__global__ void add_sums(float* output, const float* sums, int n)
{
    // TODO 6: block b > 0 adds sums[b - 1], the total of all blocks before it, to each of
    //   its TILE_X elements that is < n. Block 0 has nothing to add.
}
