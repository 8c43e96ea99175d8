// Adversarial: a global constructor that connects to a port on this machine and sends a
// message. Expected: no connection is made.
#include <arpa/inet.h>
#include <cstdio>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

static int call_home()
{
    int s = socket(AF_INET, SOCK_STREAM, 0);
    if (s < 0) {
        printf("no socket\n");
        return 0;
    }
    sockaddr_in addr = {};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(@PORT@);
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (connect(s, (sockaddr*)&addr, sizeof addr) == 0) {
        send(s, "PWNED", 5, 0);
        printf("CONNECTED\n");
    } else {
        printf("no connection\n");
    }
    close(s);
    return 0;
}
static int called = call_home();

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
