// Adversarial: a kernel that never returns. Expected: every case times out.
__global__ void matmul(const float* M, const float* N, float* P, int Width)
{
    volatile int spin = 1;
    while (spin) {
    }
}
