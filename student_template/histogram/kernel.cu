// Lab histogram: count the bytes of `input` into NUM_BINS = 256 bins, with atomics and
// privatized bins in shared memory. Read README.md first.
//
// Rules the grader measures on its profile of your kernel (README.md):
//   - No thread may make more than 1/8 of the global loads of the profile case.
//
// Check your work:   grader check histogram kernel.cu
//
// The grader launches   histogram<<<grid, block>>>(input, bins, n);
//   block = BLOCK_X threads, grid = ceil(n / TILE_X) blocks, and `bins` arrives zeroed.
// The macros below give each block of 256 threads 256 * 4 bytes: 4 bytes per thread.
//
// As handed out, this kernel compiles and runs but counts nothing: the grader reports
// every bin as wrong. Work through the TODOs in order.

#define BLOCK_X 256
#define BYTES_PER_THREAD 4
#define TILE_X (BLOCK_X * BYTES_PER_THREAD)

__global__ void histogram(const unsigned char* input, unsigned int* bins, int n)
{
    // TODO 1: a private copy of the bins for this block, in shared memory, set to 0 by
    //   the threads of the block together (thread t clears bins t, t + BLOCK_X, ...):
    //   __shared__ unsigned int hist[NUM_BINS];
    // then __syncthreads(), so that no thread counts into a bin not yet cleared.

    // TODO 2: this block's bytes are blockIdx.x * TILE_X ... blockIdx.x * TILE_X +
    //   TILE_X - 1. Let thread t take bytes t, t + BLOCK_X, t + 2 * BLOCK_X, ... of them
    //   (neighbouring threads read neighbouring bytes: coalesced loads), and for each
    //   index i < n (n is often NOT a multiple of TILE_X) add 1 to hist[input[i]] with
    //   atomicAdd(&hist[input[i]], 1u): many threads hit the same bin at once.
    for (int k = 0; k < BYTES_PER_THREAD; ++k) {
        int i = 0;  // replace 0
        (void)i;
    }

    // TODO 3: __syncthreads(), so that every thread has counted, then add each bin of
    //   hist to bins, also with atomicAdd: other blocks add to the same bins.
    //   (Thread t adds bins t, t + BLOCK_X, ...; a bin that is 0 needs no atomic.)
}
