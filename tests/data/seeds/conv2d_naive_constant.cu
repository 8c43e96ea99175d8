// From the course notes 000 (conv2d_naive_constant.cu); the #defines and __constant__ declarations are the program's own.
#include <cuda_runtime.h>

#define MASK_WIDTH 5
#define MASK_RADIUS (MASK_WIDTH / 2)

static __constant__ float Mc[MASK_WIDTH * MASK_WIDTH];

// ---- begin conv2d_naive_kernel: 000_39a4adad21e6a932.txt lines 80-101, verbatim ----
__global__ void conv2d_naive_kernel(const float * __restrict__ N,
                                    float * __restrict__ P,
                                    int Width, int Height)
{
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    int row = blockIdx.y * blockDim.y + threadIdx.y;
    if (row >= Height || col >= Width) return;      /* 输出越界线程直接退出 */

    float Pvalue = 0.0f;
    #pragma unroll
    for (int i = 0; i < MASK_WIDTH; ++i) {
        int nrow = row - MASK_RADIUS + i;
        if (nrow < 0 || nrow >= Height) continue;   /* ghost 行 -> 视作 0 */
        #pragma unroll
        for (int j = 0; j < MASK_WIDTH; ++j) {
            int ncol = col - MASK_RADIUS + j;
            if (ncol < 0 || ncol >= Width) continue;/* ghost 列 -> 视作 0 */
            Pvalue += N[nrow * Width + ncol] * Mc[i * MASK_WIDTH + j];
        }
    }
    P[row * Width + col] = Pvalue;
}
// ---- end conv2d_naive_kernel ----
