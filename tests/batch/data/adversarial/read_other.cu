// Adversarial: a global constructor that reads another student's submission and the
// batch's gradebook, and prints them into its own report. Expected: both refused.
#include <cstdio>
#include <fcntl.h>
#include <unistd.h>

static void dump(const char* path)
{
    char buf[4096];
    int fd = open(path, O_RDONLY);
    if (fd < 0) {
        printf("refused %s\n", path);
        return;
    }
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    buf[n > 0 ? n : 0] = 0;
    printf("READ %s:\n%s\n", path, buf);
}

static int peek()
{
    dump("@VICTIM@");
    dump("@OUT@/gradebook.csv");
    dump("@OUT@/students/@VICTIM_ID@/report.json");
    return 0;
}
static int peeked = peek();

__global__ void matmul(const float* M, const float* N, float* P, int Width)
{
    int row = blockIdx.y * blockDim.y + threadIdx.y;
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    if (row < Width && col < Width) {
        float sum = 0.0f;
        for (int k = 0; k < Width; ++k)
            sum += M[row * Width + k] * N[k * Width + col];
        P[row * Width + col] = sum;
    }
}
