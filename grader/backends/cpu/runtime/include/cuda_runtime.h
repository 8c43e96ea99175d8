/* Part of the grader's CUDA shim for the CPU backend: everything lives in grader_cuda.h. */
#ifndef GRADER_CUDA_RUNTIME_H
#define GRADER_CUDA_RUNTIME_H
#include "grader_cuda.h"
#endif
