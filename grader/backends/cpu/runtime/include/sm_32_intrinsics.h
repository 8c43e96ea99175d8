/* Part of the grader's CUDA shim for the CPU backend: everything lives in grader_cuda.h. */
#ifndef GRADER_SM_32_INTRINSICS_H
#define GRADER_SM_32_INTRINSICS_H
#include "grader_cuda.h"
#endif
