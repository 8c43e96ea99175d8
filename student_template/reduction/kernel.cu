// Lab reduction: block b sums its TILE_X = 2 * BLOCK_X inputs and writes the sum to
// output[b]; the grader adds the partial sums of all blocks. Read README.md first.
//
// Rules the grader measures on its profile of your kernel (README.md):
//   - No thread may make more than 1/8 of the global loads of the profile case.
//
// Check your work:   grader check reduction kernel.cu
//
// The grader launches   reduction<<<grid, block>>>(input, output, n);
//   block = BLOCK_X threads, grid = ceil(n / TILE_X) blocks (TILE_X = 2 * BLOCK_X unless
//   you #define it). TILE_X may be 64 to 65536, and BLOCK_X at least 32.
//
// As handed out, this kernel compiles and runs but stores nothing: the grader reports
// every element of output as never written. Work through the TODOs in order.

#define BLOCK_X 256

__global__ void reduction(const float* input, float* output, int n)
{
    __shared__ float partial[2 * BLOCK_X];
    unsigned int t = threadIdx.x;
    unsigned int start = 2 * blockIdx.x * BLOCK_X;

    // TODO 1: each thread loads two of the block's inputs into shared memory:
    //   partial[t] = input[start + t],  partial[BLOCK_X + t] = input[start + BLOCK_X + t].
    //   n is often NOT a multiple of 2 * BLOCK_X (hidden cases: 1, 517, primes): an index
    //   >= n must load 0 instead, or the last block reads past the end of input.
    partial[t] = 0.0f;            // replace 0.0f
    partial[BLOCK_X + t] = 0.0f;  // replace 0.0f

    // TODO 2: the tree. At each step half of the remaining threads add a second partial
    //   sum to their own, until partial[0] holds the block's sum:
    //     for (stride = BLOCK_X; stride >= 1; stride /= 2)
    //         __syncthreads(), then if (t < stride) partial[t] += partial[t + stride];
    //   Every thread must reach every __syncthreads(): keep it outside the if.

    // TODO 3: one thread stores the block's sum: if (t == 0) output[blockIdx.x] = partial[0];
}
