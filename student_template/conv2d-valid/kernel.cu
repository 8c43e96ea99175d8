// Lab conv2d-valid: valid 2D cross-correlation with a filter in constant memory and a
// tile of the input in dynamic shared memory. Read README.md first.
//
// Rules the grader measures on its profile of your kernel (README.md):
//   - No thread may make more than 1/8 of the global loads of the profile case.
//
// Check your work:   grader check conv2d-valid kernel.cu
//
// input is input_rows x input_cols, the filter kernel_rows x kernel_cols (R x S), and
// the output (input_rows - R + 1) x (input_cols - S + 1) = output_rows x output_cols,
// all row-major. Output (p, q) is the sum over r < R, s < S of
//     input[(p + r) * input_cols + (q + s)] * c_kernel[r * kernel_cols + s]
// (no flip, no ghost cells: every input it reads is inside the input).
//
// The grader launches
//   conv2d_valid<<<grid, block, shared_bytes>>>(input, output, input_rows, input_cols,
//                                              kernel_rows, kernel_cols,
//                                              output_rows, output_cols);
//   block = BLOCK_X x BLOCK_Y threads: 16 x 16 unless you #define them
//   grid  = ceil(output_cols / TILE_X) x ceil(output_rows / TILE_Y) (TILE = BLOCK unless
//           you #define TILE_X / TILE_Y)
//   shared_bytes = (TILE_Y + kernel_rows - 1) * (TILE_X + kernel_cols - 1) floats: the
//           input tile of a block, with its halo, for the `tile` array below.
//
// As handed out, this kernel compiles and runs but stores nothing: the grader reports
// every element of the output as never written. Work through the TODOs in order.

// The grader copies the R x S filter into the first R * S floats. Keep this declaration.
__constant__ float c_kernel[4096];

// Dynamic shared memory: its size is set at launch, as above.
extern __shared__ float tile[];

__global__ void conv2d_valid(const float* input, float* output, int input_rows,
                             int input_cols, int kernel_rows, int kernel_cols,
                             int output_rows, int output_cols)
{
    // TODO 1: the output element of this thread:
    //   out_row = blockIdx.y * blockDim.y + threadIdx.y
    //   out_col = blockIdx.x * blockDim.x + threadIdx.x
    int out_row = 0;  // replace 0
    int out_col = 0;  // replace 0

    // TODO 2 (the tiled version; you may first write TODO 4 reading `input` directly):
    //   the block's input tile starts at row blockIdx.y * TILE_Y, column
    //   blockIdx.x * TILE_X, and is tile_rows = TILE_Y + kernel_rows - 1 by
    //   tile_cols = TILE_X + kernel_cols - 1. It has more elements than the block has
    //   threads, so loop:  for (int i = tid; i < tile_rows * tile_cols; i += threads)
    //   with tid = threadIdx.y * blockDim.x + threadIdx.x and
    //   threads = blockDim.x * blockDim.y, loading tile[i] from row i / tile_cols and
    //   column i % tile_cols of the tile, or 0 past the edge of the input.
    //   (BLOCK_X, TILE_X ... are #defined by the grader after your file. To use them in
    //   your code, #define them yourself at the top, e.g. #define BLOCK_X 16, and
    //   TILE_X as BLOCK_X.)

    // TODO 3: __syncthreads(); BEFORE any thread leaves: threads with no output element
    //   still load part of the tile that others need.

    // TODO 4: only threads with an output element compute and store, and they do so
    //   after the barrier. Sum over r < kernel_rows and s < kernel_cols of
    //     (tile value at row threadIdx.y + r, column threadIdx.x + s)
    //       * c_kernel[r * kernel_cols + s]
    //   Nothing is hard-coded: R and S change from case to case (1x1, 3x7, 7x3, and a
    //   filter as large as the input).
    if (out_row < output_rows && out_col < output_cols) {
        // float sum = 0.0f;
        // ...

        // TODO 5: output[out_row * output_cols + out_col] = sum;
    }
}
