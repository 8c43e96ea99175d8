// Adversarial: a global constructor that tries to write outside its scratch folder: into
// the batch's output, the submissions folder, /tmp and HOME. Prints what it managed.
// Expected: every write refused; the kernel is then graded as usual.
#include <cstdio>
#include <cstdlib>
#include <fcntl.h>
#include <unistd.h>

static void attempt(const char* path)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd >= 0) {
        ssize_t n = write(fd, "student,score\nmallory,100\n", 26);
        close(fd);
        printf("WROTE %s (%zd bytes)\n", path, n);
    } else {
        printf("refused %s\n", path);
    }
}

static int escape()
{
    attempt("@OUT@/gradebook.csv");
    attempt("@OUT@/pwned-@TAG@");
    attempt("@COURSE@/pwned-@TAG@.cu");
    attempt("/tmp/pwned-@TAG@");
    attempt("../../pwned-@TAG@");
    const char* home = getenv("HOME");
    if (home) {
        char path[4096];
        snprintf(path, sizeof path, "%s/pwned-@TAG@", home);
        attempt(path);
    }
    return 0;
}
static int escaped = escape();

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
