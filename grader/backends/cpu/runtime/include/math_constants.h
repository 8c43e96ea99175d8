/* Part of the grader's CUDA shim: CUDA's named floating-point constants. */
#pragma once
#include "grader_cuda.h"
#define CUDART_INF_F __builtin_inff()
#define CUDART_NAN_F __builtin_nanf("")
#define CUDART_INF __builtin_inf()
#define CUDART_NAN __builtin_nan("")
#define CUDART_PI_F 3.14159265358979323846f
#define CUDART_PI 3.14159265358979323846
#define CUDART_PIO2_F 1.57079632679489661923f
#define CUDART_2_OVER_PI_F 0.63661977236758134308f
#define CUDART_SQRT_HALF_F 0.70710678118654752440f
#define CUDART_SQRT_2_F 1.41421356237309504880f
#define CUDART_L2E_F 1.44269504088896340736f
#define CUDART_LN2_F 0.69314718055994530942f
#define CUDART_MAX_NORMAL_F 3.40282347e+38f
#define CUDART_MIN_DENORM_F 1.40129846e-45f
#define CUDART_ONE_F 1.0f
#define CUDART_ZERO_F 0.0f
