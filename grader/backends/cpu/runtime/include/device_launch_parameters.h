/* Part of the grader's CUDA shim for the CPU backend: everything lives in grader_cuda.h. */
#ifndef GRADER_DEVICE_LAUNCH_PARAMETERS_H
#define GRADER_DEVICE_LAUNCH_PARAMETERS_H
#include "grader_cuda.h"
#endif
