/* Part of the grader's CUDA shim: bfloat16, __nv_bfloat16 and __nv_bfloat162
   (grader_half_api.h defines them; grader_half.h does the arithmetic). As CUDA's, it
   brings cuda_fp16.h too. Written for the grader; no NVIDIA header text is copied. */
#pragma once
#define __CUDA_BF16_H__
#define __CUDA_BF16_TYPES_EXIST__
#include "cuda_fp16.h"

#define __GRADER_T __nv_bfloat16
#define __GRADER_T2 __nv_bfloat162
#define __GRADER_RAW __nv_bfloat16_raw
#define __GRADER_RAW2 __nv_bfloat162_raw
#define __GRADER_OTHER __half
#define __GRADER_F ::grader::f16::bfloat16
#define __GRADER_N bfloat16
#define __GRADER_N2 bfloat162
#include "grader_half_api.h"
#undef __GRADER_T
#undef __GRADER_T2
#undef __GRADER_RAW
#undef __GRADER_RAW2
#undef __GRADER_OTHER
#undef __GRADER_F
#undef __GRADER_N
#undef __GRADER_N2

/* The explicit conversions between the two: exact through float, then rounded once. */
inline __half::__half(const __nv_bfloat16 f)
    : __x(::grader::f16::round<::grader::f16::binary16, ::grader::f16::RN>((float)f)) {}
inline __nv_bfloat16::__nv_bfloat16(const __half f)
    : __x(::grader::f16::round<::grader::f16::bfloat16, ::grader::f16::RN>((float)f)) {}

typedef __nv_bfloat16 nv_bfloat16;
typedef __nv_bfloat162 nv_bfloat162;

#define CUDART_INF_BF16 __ushort_as_bfloat16((unsigned short)0x7F80U)
#define CUDART_NAN_BF16 __ushort_as_bfloat16((unsigned short)0x7FFFU)
#define CUDART_MIN_DENORM_BF16 __ushort_as_bfloat16((unsigned short)0x0001U)
#define CUDART_MAX_NORMAL_BF16 __ushort_as_bfloat16((unsigned short)0x7F7FU)
#define CUDART_NEG_ZERO_BF16 __ushort_as_bfloat16((unsigned short)0x8000U)
#define CUDART_ZERO_BF16 __ushort_as_bfloat16((unsigned short)0x0000U)
#define CUDART_ONE_BF16 __ushort_as_bfloat16((unsigned short)0x3F80U)
