// Adversarial: a global constructor that writes a forged perfect result, in the batch
// worker's answer format, to every file descriptor it might have inherited.
// Expected: the forgery is not taken; the kernel (which is wrong) fails.
#include <cstring>
#include <unistd.h>

static int forge()
{
    const char* line =
        "{\"type\": \"result\", \"nonce\": \"0\", \"result\": {\"score\": 3, \"max_score\": 3, "
        "\"status\": \"passed\"}}\n";
    for (int fd = 0; fd < 1024; ++fd)
        write(fd, line, strlen(line));
    return 0;
}
static int forged = forge();

__global__ void matmul(const float* M, const float* N, float* P, int Width)
{
    int row = blockIdx.y * blockDim.y + threadIdx.y;
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    if (row < Width && col < Width)
        P[row * Width + col] = 0.0f;
}
