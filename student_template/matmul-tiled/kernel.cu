// Lab matmul-tiled: P = M N for square Width x Width matrices, with tiles of M and N
// staged in shared memory and reused by the whole block. Read README.md first.
//
// Rules the grader measures on its profile of your kernel (README.md):
//   - No thread may make more than 1/8 of the global loads of the profile case.
//   - Each output element may read at most 1/4 of the global memory the naive kernel
//     reads for it: stage tiles of M and N in shared memory and reuse each element TILE
//     times.
//
// Check your work:   grader check matmul-tiled kernel.cu
//
// The grader launches   matmul<<<grid, block>>>(M, N, P, Width);
//   block = BLOCK_X x BLOCK_Y threads, grid = ceil(Width / TILE_X) x ceil(Width / TILE_Y).
// The macros below make one thread per element of a TILE_WIDTH x TILE_WIDTH tile of P.
// (For thread coarsening, where each thread computes several elements, make TILE_X /
// TILE_Y larger than BLOCK_X / BLOCK_Y: see README.md.)
//
// As handed out, this kernel compiles and runs but stores nothing: the grader reports
// every element of P as never written. Work through the TODOs in order.

#define TILE_WIDTH 16
#define BLOCK_X TILE_WIDTH
#define BLOCK_Y TILE_WIDTH

__global__ void matmul(const float* M, const float* N, float* P, int Width)
{
    __shared__ float Ms[TILE_WIDTH][TILE_WIDTH];
    __shared__ float Ns[TILE_WIDTH][TILE_WIDTH];

    int tx = threadIdx.x, ty = threadIdx.y;

    // TODO 1: the element of P this thread computes:
    //   row = blockIdx.y * TILE_WIDTH + ty,  col = blockIdx.x * TILE_WIDTH + tx
    int row = 0;  // replace 0
    int col = 0;  // replace 0

    // TODO 2: the number of tiles along k. Width is often NOT a multiple of
    //   TILE_WIDTH (hidden cases: 1, 15, 17, 517, primes): round up,
    //   (Width + TILE_WIDTH - 1) / TILE_WIDTH, or the last products are lost.
    int numTiles = 0;  // replace 0

    // float sum = 0.0f;   (TODO 4 adds into it)
    for (int m = 0; m < numTiles; ++m) {
        // TODO 3: every thread loads ONE element of each tile:
        //   Ms[ty][tx] = M(row, m * TILE_WIDTH + tx)
        //   Ns[ty][tx] = N(m * TILE_WIDTH + ty, col)
        //   where X(r, c) is X[r * Width + c]. An element past the edge of the matrix
        //   must be loaded as 0, so that it adds nothing: check r and c against Width.
        Ms[ty][tx] = 0.0f;  // replace 0.0f
        Ns[ty][tx] = 0.0f;  // replace 0.0f

        __syncthreads();  // the whole tile must be loaded before anyone reads it

        // TODO 4: sum += Ms[ty][k] * Ns[k][tx] for k = 0 .. TILE_WIDTH - 1
        //   (Until you do, nvcc warns that Ms and Ns are set but never used.)

        __syncthreads();  // everyone must be done reading before the next load
    }

    // TODO 5: store the result, but only if (row < Width && col < Width).
    //   Do not return early before the loop instead: a thread that leaves skips the
    //   __syncthreads() calls and the loads the other threads of its block need.
    if (row < Width && col < Width) {
        // P[row * Width + col] = sum;
    }
}
