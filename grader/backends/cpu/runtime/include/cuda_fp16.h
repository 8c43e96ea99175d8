/* Part of the grader's CUDA shim: half precision, __half and __half2 (grader_half_api.h
   defines them; grader_half.h does the arithmetic). Written for the grader; no NVIDIA
   header text is copied. */
#pragma once
#define __CUDA_FP16_H__
#define __CUDA_FP16_TYPES_EXIST__
#include "grader_half.h"

#define __GRADER_T __half
#define __GRADER_T2 __half2
#define __GRADER_RAW __half_raw
#define __GRADER_RAW2 __half2_raw
#define __GRADER_OTHER __nv_bfloat16
#define __GRADER_F ::grader::f16::binary16
#define __GRADER_N half
#define __GRADER_N2 half2
#include "grader_half_api.h"
#undef __GRADER_T
#undef __GRADER_T2
#undef __GRADER_RAW
#undef __GRADER_RAW2
#undef __GRADER_OTHER
#undef __GRADER_F
#undef __GRADER_N
#undef __GRADER_N2

typedef __half half;
typedef __half2 half2;
typedef __half __nv_half;
typedef __half2 __nv_half2;
typedef __half_raw __nv_half_raw;
typedef __half2_raw __nv_half2_raw;
typedef __half nv_half;
typedef __half2 nv_half2;

#define CUDART_INF_FP16 __ushort_as_half((unsigned short)0x7C00U)
#define CUDART_NAN_FP16 __ushort_as_half((unsigned short)0x7FFFU)
#define CUDART_MIN_DENORM_FP16 __ushort_as_half((unsigned short)0x0001U)
#define CUDART_MAX_NORMAL_FP16 __ushort_as_half((unsigned short)0x7BFFU)
#define CUDART_NEG_ZERO_FP16 __ushort_as_half((unsigned short)0x8000U)
#define CUDART_ZERO_FP16 __ushort_as_half((unsigned short)0x0000U)
#define CUDART_ONE_FP16 __ushort_as_half((unsigned short)0x3C00U)
