// Lab matmul-naive: P = M N for square Width x Width matrices, one thread per element
// of P, reading M and N straight from global memory. Read README.md first.
//
// Rules the grader measures on its profile of your kernel (README.md):
//   - No thread may make more than 1/8 of the global loads of the profile case.
//
// Check your work:   grader check matmul-naive kernel.cu
//
// The grader launches   matmul<<<grid, block>>>(M, N, P, Width);
//   block = BLOCK_X x BLOCK_Y threads: 16 x 16 unless you #define BLOCK_X / BLOCK_Y
//   grid  = ceil(Width / BLOCK_X) x ceil(Width / BLOCK_Y) blocks
// so there is one thread for every element of P, plus some spare ones in the last
// row and column of blocks when Width is not a multiple of the block size.
//
// As handed out, this kernel compiles and runs but stores nothing: the grader reports
// every element of P as never written. Work through the TODOs in order.

__global__ void matmul(const float* M, const float* N, float* P, int Width)
{
    // TODO 1: the element of P this thread computes.
    //   row comes from the y index: blockIdx.y * blockDim.y + threadIdx.y
    //   col comes from the x index: blockIdx.x * blockDim.x + threadIdx.x
    int row = 0;  // replace 0
    int col = 0;  // replace 0

    // TODO 2: Width is often not a multiple of the block size (hidden cases use
    //   Width = 1, 7, 17, 517, ...). Spare threads past the edge must not read or
    //   write anything. This check is already right; keep it.
    if (row < Width && col < Width) {
        // TODO 3: the dot product of row `row` of M and column `col` of N.
        //   Matrices are row-major: element (r, c) of M is M[r * Width + c].
        //     float sum = 0.0f;
        //     for (int k = 0; k < Width; ++k)
        //         sum += M[row * Width + k] * N[... your index of N(k, col) ...];

        // TODO 4: store it:   P[row * Width + col] = sum;
    }
}
