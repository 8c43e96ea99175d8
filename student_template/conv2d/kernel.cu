// Lab conv2d: 2D convolution with the mask in constant memory, ghost cells are 0. Read README.md first.
//
// Rules the grader measures on its profile of your kernel (README.md):
//   - No thread may make more than 1/8 of the global loads of the profile case.
//
// Check your work:   grader check conv2d kernel.cu
//
// P has the size of N (Height rows of Width pixels, row-major: pixel (row, col) is
// N[row * Width + col]). Output pixel (row, col) is the sum over i, j in
// 0 .. MASK_WIDTH-1 of
//     N[row - MASK_RADIUS + i][col - MASK_RADIUS + j] * Mc[i * MASK_WIDTH + j]
// Ghost cells (positions outside the image) count as 0.
//
// The grader launches   conv2d<<<grid, block>>>(N, P, Width, Height);
//   block = BLOCK_X x BLOCK_Y threads: 16 x 16 unless you #define BLOCK_X / BLOCK_Y
//   grid  = ceil(Width / TILE_X) x ceil(Height / TILE_Y), with TILE = BLOCK unless you
//           #define TILE_X / TILE_Y yourself (README.md: tiles with halos, coarsening)
//
// As handed out, this kernel compiles and runs but stores nothing: the grader reports
// every element of P as never written. Work through the TODOs in order.

// The grader compiles with -DMASK_WIDTH=3, 5 or 7 (public cases use 5). Never #define
// it without this #ifndef, and never assume it is 5.
#ifndef MASK_WIDTH
#define MASK_WIDTH 5
#endif
#define MASK_RADIUS (MASK_WIDTH / 2)

// The grader copies the mask here before every launch. Keep this exact declaration.
__constant__ float Mc[MASK_WIDTH * MASK_WIDTH];

__global__ void conv2d(const float* N, float* P, int Width, int Height)
{
    // TODO 1: the output pixel of this thread.
    //   col comes from x: blockIdx.x * blockDim.x + threadIdx.x
    //   row comes from y: blockIdx.y * blockDim.y + threadIdx.y
    int col = 0;  // replace 0
    int row = 0;  // replace 0

    // TODO 2: images are rarely a multiple of the block size, and Width != Height in
    //   hidden cases. Spare threads past the edge must not read or write. This check
    //   is already right; keep it.
    if (row < Height && col < Width) {
        // TODO 3: float sum = 0.0f; then for i, j in 0 .. MASK_WIDTH-1:
        //     int r = row - MASK_RADIUS + i;
        //     int c = col - MASK_RADIUS + j;
        //   (r, c) may be a ghost cell outside the image: then skip it (it counts
        //   as 0). Check 0 <= r < Height and 0 <= c < Width; checking only the flat
        //   index r * Width + c is NOT enough (it wraps into the neighbouring row).
        //     sum += N[r * Width + c] * Mc[i * MASK_WIDTH + j];

        // TODO 4: store it:   P[row * Width + col] = sum;
    }
}
