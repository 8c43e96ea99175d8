// From the course notes 003 (static and dynamic shared memory, BlockTranspose); the #defines and __constant__ declarations are the program's own.
#include <cuda_runtime.h>

#define BLOCK_SIZE 16        // 课程考题中 BLOCK_SIZE 是编译期常量，可取值 1 到 20

// ---- begin StaticKernel: 003_135c59181b1e653f.txt lines 4-10, verbatim ----
__global__ void StaticKernel(const float* M, int Width)
{
    __shared__ float subTileM[32][32];        // 32*32*4 = 4 KB，每个 block 一份
    __shared__ float subTileN[32][32];
    subTileM[threadIdx.y][threadIdx.x] = M[0];
    __syncthreads();
}
// ---- end StaticKernel ----

// ---- begin DynamicKernel: 003_135c59181b1e653f.txt lines 13-20, verbatim ----
__global__ void DynamicKernel(const float* M, int Width)
{
    extern __shared__ float dynShared[];      // 只声明，不指定大小
    float (*subTileM)[33] = reinterpret_cast<float (*)[33]>(dynShared);
    float (*subTileN)[33] = reinterpret_cast<float (*)[33]>(dynShared + 32 * 33);
    subTileM[threadIdx.y][threadIdx.x] = M[0];
    __syncthreads();
}
// ---- end DynamicKernel ----

// ---- begin BlockTranspose: 003_135c59181b1e653f.txt lines 35-42, verbatim ----
__global__ void BlockTranspose(float* A_elements, int A_width, int A_height)
{
    __shared__ float blockA[BLOCK_SIZE][BLOCK_SIZE];
    int baseIdx = blockIdx.x * BLOCK_SIZE + threadIdx.x;
    baseIdx += (blockIdx.y * BLOCK_SIZE + threadIdx.y) * A_width;
    blockA[threadIdx.y][threadIdx.x] = A_elements[baseIdx];
    A_elements[baseIdx] = blockA[threadIdx.x][threadIdx.y];   // 跨列读取 -> bank conflict
}
// ---- end BlockTranspose ----
