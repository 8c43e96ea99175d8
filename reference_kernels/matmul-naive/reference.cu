// matmul-naive reference: still one thread per element of P and global memory only
// (no shared memory), but arranged so the memory system works less per product:
//  - blocks of 32 x 8: a warp is one row segment of 32 columns, so its reads of N are
//    one 128-byte line and its read of M is a single broadcast address;
//  - when Width % 4 == 0 and M is 16-byte aligned, a thread reads its row of M four
//    floats at a time (one load instead of four), a scalar loop otherwise;
//  - the k loop is unrolled by 4 so loads of N are issued back to back.
// Correct for every Width >= 1: threads outside the matrix return before any load.

#ifndef BLOCK_X
#define BLOCK_X 32
#endif
#ifndef BLOCK_Y
#define BLOCK_Y 8
#endif

__global__ void __launch_bounds__(BLOCK_X * BLOCK_Y)
matmul(const float* __restrict__ M, const float* __restrict__ N, float* __restrict__ P,
       int Width)
{
    const int row = blockIdx.y * BLOCK_Y + threadIdx.y;
    const int col = blockIdx.x * BLOCK_X + threadIdx.x;
    if (row >= Width || col >= Width) return;

    const float* m = M + (size_t)row * Width;  // this thread's row of M
    const float* n = N + col;                  // walks down column col of N
    const size_t step = (size_t)Width;
    float sum = 0.0f;
    int k = 0;

    if ((Width & 3) == 0 && ((size_t)M & 15) == 0) {
        for (; k < Width; k += 4) {
            const float4 a = __ldg(reinterpret_cast<const float4*>(m + k));
            const float b0 = __ldg(n);
            const float b1 = __ldg(n + step);
            const float b2 = __ldg(n + 2 * step);
            const float b3 = __ldg(n + 3 * step);
            sum += a.x * b0;
            sum += a.y * b1;
            sum += a.z * b2;
            sum += a.w * b3;
            n += 4 * step;
        }
    } else {
        for (; k + 4 <= Width; k += 4) {
            const float b0 = __ldg(n);
            const float b1 = __ldg(n + step);
            const float b2 = __ldg(n + 2 * step);
            const float b3 = __ldg(n + 3 * step);
            sum += __ldg(m + k) * b0;
            sum += __ldg(m + k + 1) * b1;
            sum += __ldg(m + k + 2) * b2;
            sum += __ldg(m + k + 3) * b3;
            n += 4 * step;
        }
        for (; k < Width; ++k) {
            sum += __ldg(m + k) * __ldg(n);
            n += step;
        }
    }
    P[(size_t)row * Width + col] = sum;
}
