/* Part of the grader's CUDA shim for the CPU backend: everything lives in grader_cuda.h. */
#ifndef GRADER_SM_20_ATOMIC_FUNCTIONS_H
#define GRADER_SM_20_ATOMIC_FUNCTIONS_H
#include "grader_cuda.h"
#endif
