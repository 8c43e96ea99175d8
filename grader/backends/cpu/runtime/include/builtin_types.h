/* Part of the grader's CUDA shim for the CPU backend: everything lives in grader_cuda.h. */
#pragma once
#include "grader_cuda.h"
