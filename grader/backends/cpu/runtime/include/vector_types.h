/* Part of the grader's CUDA shim for the CPU backend: everything lives in grader_cuda.h. */
#ifndef GRADER_VECTOR_TYPES_H
#define GRADER_VECTOR_TYPES_H
#include "grader_cuda.h"
#endif
