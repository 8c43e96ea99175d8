// Adversarial: a kernel that never returns (a store in the loop, so no compiler drops it).
// Expected: every case times out.
__global__ void matmul(const float* M, const float* N, float* P, int Width)
{
    volatile float* out = P;
    while (true)
        out[0] = out[0] + 1.0f;
}
