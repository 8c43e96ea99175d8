// Lab conv3d-pitched: 3D convolution over pitched rows. Read README.md first.
//
// Rules the grader measures on its profile of your kernel (README.md):
//   - No thread may make more than 1/8 of the global loads of the profile case.
//
// Check your work:   grader check conv3d-pitched kernel.cu
//
// N and P are W x H x D volumes (x fastest). Every row of x values is padded to a
// pitch, given in BYTES: row y of plane z of N starts at byte (z * H + y) * pitchN of
// N, and of P at byte (z * H + y) * pitchP of P. The two pitches differ, and both are
// more than W * sizeof(float): the padding is not part of the volume.
// Output (x, y, z) is the sum over i, j, k in 0 .. MASK_WIDTH-1 of
//     N(x - R + k, y - R + j, z - R + i) * Mc[(i * MASK_WIDTH + j) * MASK_WIDTH + k]
// with R = MASK_RADIUS: the mask is indexed [z][y][x]. Ghost cells (outside the
// volume) count as 0.
//
// The grader launches   conv3d_pitched<<<grid, block>>>(N, P, pitchN, pitchP, W, H, D);
//   block = BLOCK_X x BLOCK_Y x BLOCK_Z threads: 8 x 8 x 8 unless you #define them
//   grid  = ceil(W / TILE_X) x ceil(H / TILE_Y) x ceil(D / TILE_Z), with TILE = BLOCK
//           unless you #define TILE_X / TILE_Y / TILE_Z (README.md: tiling, coarsening)
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
__constant__ float Mc[MASK_WIDTH * MASK_WIDTH * MASK_WIDTH];

__global__ void conv3d_pitched(const float* N, float* P, size_t pitchN, size_t pitchP, int W,
                               int H, int D)
{
    // TODO 0: row strides in floats (the pitches are in bytes). Use sN for N and sP
    //   for P; using W, or one pitch for both arrays, reads and writes the wrong rows.
    //     int sN = (int)(pitchN / sizeof(float));
    //     int sP = (int)(pitchP / sizeof(float));

    // TODO 1: the output element of this thread:
    //   x = blockIdx.x * blockDim.x + threadIdx.x, and the same for y and z
    int x = 0;  // replace 0
    int y = 0;  // replace 0
    int z = 0;  // replace 0

    // TODO 2: volumes are rarely a multiple of the block (hidden cases: 37 x 23 x 11,
    //   70 x 5 x 3, 1 x 1 x 1). Spare threads must not read or write. This check is
    //   already right; keep it.
    if (x < W && y < H && z < D) {
        // TODO 3: float sum = 0.0f; then for i, j, k in 0 .. MASK_WIDTH-1:
        //     int zz = z - MASK_RADIUS + i, yy = y - MASK_RADIUS + j, xx = x - MASK_RADIUS + k;
        //     skip (zz, yy, xx) if it is outside the volume (0 <= xx < W, and so on);
        //     otherwise sum += N[(zz * H + yy) * sN + xx] * Mc[(i * MASK_WIDTH + j) * MASK_WIDTH + k];

        // TODO 4: store it:   P[(z * H + y) * sP + x] = sum;
    }
}
