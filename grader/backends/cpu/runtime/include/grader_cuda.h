/* The CUDA shim of the grader's CPU backend.

   Student .cu files are compiled by the system C++ compiler with this header forced in
   first (-include grader_cuda.h), so that `#include <cuda_runtime.h>` and friends resolve
   to the small headers next to it, which include this one. It maps the CUDA language onto
   C++ running in the runner process (runtime/*.cpp):

   - qualifiers become nothing, or C++ attributes; a __shared__ declaration becomes a
     reference to a guarded slot of the block's OS thread (scan.py rewrites it), and one
     the rewrite could not read becomes thread_local, since a block never leaves the OS
     thread that runs it;
   - threadIdx, blockIdx, blockDim and gridDim are variables the runner sets;
   - barriers and warp intrinsics call the fiber scheduler, passing __LINE__ so that
     diagnostics name the student's line;
   - the end of this file holds the templates the grader's registration footer uses to
     describe and launch each kernel (its macros are in grader_register.h, which only the
     footer includes).

   Written for the grader; no NVIDIA header text is copied. */
#pragma once

/* Device printf goes to the runner (runtime/output.cpp), which keeps a capped copy: the
   module's printf is the runner's grader_device_printf, by assembler name, so that printf
   stays a function as in CUDA, not a macro a file could test for (the module is built
   with -fno-builtin-printf, so no call becomes puts). Declared before the C library's
   headers, whose declarations keep this name. */
extern "C" int printf(const char* __restrict, ...) __asm__("grader_device_printf")
    __attribute__((format(printf, 1, 2)));

#include <assert.h>
#include <float.h>
#include <limits.h>
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmath>
#include <limits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <tuple>
#include <type_traits>
#include <utility>

/* -- what this compiler is: CUDA's own macros, as nvcc's device pass defines them; the
   build sets __CUDA_ARCH__ to the architecture nvcc targets (grader.defaults.ARCH). No
   macro of the grader's own is left defined for the submission to test: the header's
   helpers are #undef'd after use, and the footer's have reserved names. */
#ifndef __CUDACC__
#define __CUDACC__ 1
#endif
#define CUDART_VERSION 12000

/* -- qualifiers ------------------------------------------------------------------------- */
#define __global__
#define __device__
#define __host__
#define __constant__
#define __managed__
#define __grid_constant__
#define __shared__ thread_local
#define __forceinline__ __inline__ __attribute__((always_inline))
#define __noinline__ __attribute__((noinline))
#define __align__(n) __attribute__((aligned(n)))
#define __launch_bounds__(...)
#define __cudart_builtin__
#define CUDART_CB

/* -- built-in vector types ----------------------------------------------------------------
   CUDA aligns float4 and friends to their size. Here they keep their element's alignment:
   a buffer's first element sits wherever its last one must touch a guard page, so a
   student's reinterpret_cast<float4*> must not become an aligned SSE load. */
#define __GRADER_VEC1(T, N)                                                                    \
    struct N##1 { T x; };                                                                    \
    static __inline__ N##1 make_##N##1(T x) { N##1 v; v.x = x; return v; }
#define __GRADER_VEC2(T, N)                                                                    \
    struct N##2 { T x, y; };                                                                 \
    static __inline__ N##2 make_##N##2(T x, T y) { N##2 v; v.x = x; v.y = y; return v; }
#define __GRADER_VEC3(T, N)                                                                    \
    struct N##3 { T x, y, z; };                                                              \
    static __inline__ N##3 make_##N##3(T x, T y, T z) {                                      \
        N##3 v; v.x = x; v.y = y; v.z = z; return v;                                         \
    }
#define __GRADER_VEC4(T, N)                                                                    \
    struct N##4 { T x, y, z, w; };                                                           \
    static __inline__ N##4 make_##N##4(T x, T y, T z, T w) {                                 \
        N##4 v; v.x = x; v.y = y; v.z = z; v.w = w; return v;                                \
    }
#define __GRADER_VEC(T, N) __GRADER_VEC1(T, N) __GRADER_VEC2(T, N) __GRADER_VEC3(T, N) __GRADER_VEC4(T, N)

__GRADER_VEC(signed char, char)
__GRADER_VEC(unsigned char, uchar)
__GRADER_VEC(short, short)
__GRADER_VEC(unsigned short, ushort)
__GRADER_VEC(int, int)
__GRADER_VEC(unsigned int, uint)
__GRADER_VEC(long, long)
__GRADER_VEC(unsigned long, ulong)
__GRADER_VEC(long long, longlong)
__GRADER_VEC(unsigned long long, ulonglong)
__GRADER_VEC(float, float)
__GRADER_VEC(double, double)
#undef __GRADER_VEC
#undef __GRADER_VEC1
#undef __GRADER_VEC2
#undef __GRADER_VEC3
#undef __GRADER_VEC4

struct dim3 {
    unsigned int x, y, z;
    constexpr dim3(unsigned int vx = 1, unsigned int vy = 1, unsigned int vz = 1)
        : x(vx), y(vy), z(vz) {}
    constexpr dim3(uint3 v) : x(v.x), y(v.y), z(v.z) {}
    constexpr operator uint3() const { return uint3{x, y, z}; }
};

/* -- the runner's side: built-in variables and entry points ------------------------------ */
#define __GRADER_TLS __attribute__((tls_model("initial-exec")))
extern "C" {
extern __thread uint3 threadIdx __GRADER_TLS;
extern __thread uint3 blockIdx __GRADER_TLS;
extern dim3 blockDim;
extern dim3 gridDim;
extern __thread int grader_rt_loop_stop __GRADER_TLS; /* set when a loop must hand over */
#undef __GRADER_TLS
extern int grader_rt_float_atomics;                 /* float atomics make sums order-dependent */

struct grader_loop_ctl {
    unsigned int bx, by, bz;
    int reverse;
};

int grader_rt_barrier(int kind, int pred, int line);
unsigned long long grader_rt_warp(int op, unsigned int mask, unsigned long long value, int arg,
                                  int width, int line);
void grader_rt_loop_exit(void) __attribute__((noreturn));
void* grader_rt_dynamic_shared(void);
/* One static __shared__ declaration; keep in step with rt::SharedDecl (runtime/rt.h). */
struct grader_shared_decl {
    int magic;
    int slot;
    long long bytes;
    int element;   /* bytes of one element */
    int rank;
    int extent[4]; /* [extent 0][extent 1]... as declared */
    int line;      /* of the declaration */
    int reserved;
    const char* name;
};
void* grader_rt_static_shared(const struct grader_shared_decl* decl);
unsigned int grader_rt_active_mask(void);
void grader_rt_trap(int line) __attribute__((noreturn));
unsigned long long grader_rt_clock64(void);
void __grader_rt_atomic(const void* target);
}
enum { warpSize = 32 };

/* -- barriers ---------------------------------------------------------------------------- */
#include "grader_codes.h"
#define __syncthreads() ((void)grader_rt_barrier(GRADER_BAR_SYNC, 0, __LINE__))
#define __syncthreads_count(p) grader_rt_barrier(GRADER_BAR_COUNT, (p) ? 1 : 0, __LINE__)
#define __syncthreads_and(p) grader_rt_barrier(GRADER_BAR_AND, (p) ? 1 : 0, __LINE__)
#define __syncthreads_or(p) grader_rt_barrier(GRADER_BAR_OR, (p) ? 1 : 0, __LINE__)

static __inline__ void __threadfence(void) { __atomic_thread_fence(__ATOMIC_SEQ_CST); }
static __inline__ void __threadfence_block(void) { __atomic_signal_fence(__ATOMIC_SEQ_CST); }
static __inline__ void __threadfence_system(void) { __atomic_thread_fence(__ATOMIC_SEQ_CST); }

/* -- warp intrinsics ------------------------------------------------------------------------
   Every lane of the mask must reach the call; the scheduler suspends each lane's fiber
   until they have, then hands out the results (the codes: grader_codes.h). */

namespace grader {
template <class T>
static __inline__ unsigned long long to_bits(T v) {
    static_assert(sizeof(T) <= 8, "warp shuffles move at most 8 bytes");
    unsigned long long bits = 0;
    __builtin_memcpy(&bits, &v, sizeof(T));
    return bits;
}
template <class T>
static __inline__ T from_bits(unsigned long long bits) {
    T v;
    __builtin_memcpy(&v, &bits, sizeof(T));
    return v;
}
template <class T>
static __inline__ T shfl(int op, int line, unsigned mask, T var, int arg, int width = warpSize) {
    return from_bits<T>(grader_rt_warp(op, mask, to_bits(var), arg, width, line));
}
static __inline__ void syncwarp(int line, unsigned mask = 0xffffffffu) {
    grader_rt_warp(GRADER_WARP_SYNC, mask, 0, 0, warpSize, line);
}
}  // namespace grader

#define __shfl_sync(mask, var, ...) \
    ::grader::shfl(GRADER_WARP_SHFL, __LINE__, (mask), (var), __VA_ARGS__)
#define __shfl_up_sync(mask, var, ...) \
    ::grader::shfl(GRADER_WARP_SHFL_UP, __LINE__, (mask), (var), __VA_ARGS__)
#define __shfl_down_sync(mask, var, ...) \
    ::grader::shfl(GRADER_WARP_SHFL_DOWN, __LINE__, (mask), (var), __VA_ARGS__)
#define __shfl_xor_sync(mask, var, ...) \
    ::grader::shfl(GRADER_WARP_SHFL_XOR, __LINE__, (mask), (var), __VA_ARGS__)
#define __syncwarp(...) ::grader::syncwarp(__LINE__, ##__VA_ARGS__)
#define __ballot_sync(mask, p) \
    ((unsigned)grader_rt_warp(GRADER_WARP_BALLOT, (mask), (p) ? 1 : 0, 0, warpSize, __LINE__))
#define __any_sync(mask, p) \
    ((int)grader_rt_warp(GRADER_WARP_ANY, (mask), (p) ? 1 : 0, 0, warpSize, __LINE__))
#define __all_sync(mask, p) \
    ((int)grader_rt_warp(GRADER_WARP_ALL, (mask), (p) ? 1 : 0, 0, warpSize, __LINE__))
#define __match_any_sync(mask, v)                                                            \
    ((unsigned)grader_rt_warp(GRADER_WARP_MATCH_ANY, (mask), ::grader::to_bits(v), 0,        \
                              warpSize, __LINE__))
#define __reduce_add_sync(mask, v) \
    ((unsigned)grader_rt_warp(GRADER_WARP_REDUCE_ADD, (mask), (v), 0, warpSize, __LINE__))
#define __reduce_min_sync(mask, v) \
    ((unsigned)grader_rt_warp(GRADER_WARP_REDUCE_MIN, (mask), (v), 0, warpSize, __LINE__))
#define __reduce_max_sync(mask, v) \
    ((unsigned)grader_rt_warp(GRADER_WARP_REDUCE_MAX, (mask), (v), 0, warpSize, __LINE__))
#define __reduce_and_sync(mask, v) \
    ((unsigned)grader_rt_warp(GRADER_WARP_REDUCE_AND, (mask), (v), 0, warpSize, __LINE__))
#define __reduce_or_sync(mask, v) \
    ((unsigned)grader_rt_warp(GRADER_WARP_REDUCE_OR, (mask), (v), 0, warpSize, __LINE__))
#define __reduce_xor_sync(mask, v) \
    ((unsigned)grader_rt_warp(GRADER_WARP_REDUCE_XOR, (mask), (v), 0, warpSize, __LINE__))
static __inline__ unsigned int __activemask(void) { return grader_rt_active_mask(); }

/* -- atomics ------------------------------------------------------------------------------
   Blocks run at the same time on several cores, so these are real atomic instructions.
   Each counts itself (__grader_rt_atomic, runtime/counts.cpp) for the labs whose rules
   ask for atomics. Each reads its target with a read-modify-write, never a plain load:
   what the store hook sees next is the atomic's own, and a load of the target that a
   profile sees is a load (runtime/profile.cpp). */
#define __GRADER_ATOMIC_INT(T)                                                               \
    static __inline__ T atomicAdd(T* a, T v) {                                               \
        __grader_rt_atomic(a);                                                                \
        return __atomic_fetch_add(a, v, __ATOMIC_SEQ_CST);                                   \
    }                                                                                        \
    static __inline__ T atomicSub(T* a, T v) {                                               \
        __grader_rt_atomic(a);                                                                \
        return __atomic_fetch_sub(a, v, __ATOMIC_SEQ_CST);                                   \
    }                                                                                        \
    static __inline__ T atomicExch(T* a, T v) {                                              \
        __grader_rt_atomic(a);                                                                \
        return __atomic_exchange_n(a, v, __ATOMIC_SEQ_CST);                                  \
    }                                                                                        \
    static __inline__ T atomicAnd(T* a, T v) {                                               \
        __grader_rt_atomic(a);                                                                \
        return __atomic_fetch_and(a, v, __ATOMIC_SEQ_CST);                                   \
    }                                                                                        \
    static __inline__ T atomicOr(T* a, T v) {                                                \
        __grader_rt_atomic(a);                                                                \
        return __atomic_fetch_or(a, v, __ATOMIC_SEQ_CST);                                    \
    }                                                                                        \
    static __inline__ T atomicXor(T* a, T v) {                                               \
        __grader_rt_atomic(a);                                                                \
        return __atomic_fetch_xor(a, v, __ATOMIC_SEQ_CST);                                   \
    }                                                                                        \
    static __inline__ T atomicCAS(T* a, T expected, T desired) {                             \
        __grader_rt_atomic(a);                                                                \
        __atomic_compare_exchange_n(a, &expected, desired, false, __ATOMIC_SEQ_CST,          \
                                    __ATOMIC_SEQ_CST);                                       \
        return expected;                                                                     \
    }                                                                                        \
    static __inline__ T atomicMin(T* a, T v) {                                               \
        __grader_rt_atomic(a);                                                                \
        T old = __atomic_fetch_or(a, (T)0, __ATOMIC_SEQ_CST);                                \
        while (v < old && !__atomic_compare_exchange_n(a, &old, v, true, __ATOMIC_SEQ_CST,  \
                                                       __ATOMIC_SEQ_CST)) {                  \
        }                                                                                    \
        return old;                                                                          \
    }                                                                                        \
    static __inline__ T atomicMax(T* a, T v) {                                               \
        __grader_rt_atomic(a);                                                                \
        T old = __atomic_fetch_or(a, (T)0, __ATOMIC_SEQ_CST);                                \
        while (v > old && !__atomic_compare_exchange_n(a, &old, v, true, __ATOMIC_SEQ_CST,  \
                                                       __ATOMIC_SEQ_CST)) {                  \
        }                                                                                    \
        return old;                                                                          \
    }

__GRADER_ATOMIC_INT(int)
__GRADER_ATOMIC_INT(unsigned int)
__GRADER_ATOMIC_INT(unsigned long long)
__GRADER_ATOMIC_INT(long long)
#undef __GRADER_ATOMIC_INT

static __inline__ unsigned short atomicCAS(unsigned short* a, unsigned short e, unsigned short d) {
    __grader_rt_atomic(a);
    __atomic_compare_exchange_n(a, &e, d, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
    return e;
}

namespace grader {
/* Floating-point atomics: a compare-and-swap loop on the bits. Pool threads share the
   flag and, often, the targets, so neither is written where it would not change: a store
   takes the cache line from every other core (atomicAdd(p, 0) reads of an input on two
   pool threads ran 1.7x slower than on one). An update that leaves the bits as they were
   is the read it amounts to. The census build reads the target with an update, the
   atomic's own store to its hooks, not a load. */
template <class F, class I, class Op>
static __inline__ F atomic_float(F* a, F v, Op op) {
    __grader_rt_atomic(a);
    if (!__atomic_load_n(&grader_rt_float_atomics, __ATOMIC_RELAXED)) {
        __atomic_store_n(&grader_rt_float_atomics, 1, __ATOMIC_RELAXED);
    }
    I* bits = reinterpret_cast<I*>(a);
#ifdef __SANITIZE_THREAD__
    I old = __atomic_fetch_or(bits, (I)0, __ATOMIC_SEQ_CST);
#else
    I old = __atomic_load_n(bits, __ATOMIC_SEQ_CST);
#endif
    for (;;) {
        F current;
        __builtin_memcpy(&current, &old, sizeof(F));
        F next = op(current, v);
        I next_bits;
        __builtin_memcpy(&next_bits, &next, sizeof(F));
        if (next_bits == old || __atomic_compare_exchange_n(bits, &old, next_bits, true,
                                                            __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST)) {
            return current;
        }
    }
}
struct add_op {
    template <class F> F operator()(F a, F b) const { return a + b; }
};
struct min_op {
    template <class F> F operator()(F a, F b) const { return b < a ? b : a; }
};
struct max_op {
    template <class F> F operator()(F a, F b) const { return b > a ? b : a; }
};
}  // namespace grader

static __inline__ float atomicAdd(float* a, float v) {
    return grader::atomic_float<float, unsigned int>(a, v, grader::add_op());
}
static __inline__ double atomicAdd(double* a, double v) {
    return grader::atomic_float<double, unsigned long long>(a, v, grader::add_op());
}
static __inline__ float atomicSub(float* a, float v) { return atomicAdd(a, -v); }
static __inline__ float atomicMin(float* a, float v) {
    return grader::atomic_float<float, unsigned int>(a, v, grader::min_op());
}
static __inline__ float atomicMax(float* a, float v) {
    return grader::atomic_float<float, unsigned int>(a, v, grader::max_op());
}
static __inline__ float atomicExch(float* a, float v) {
    __grader_rt_atomic(a);
    unsigned int bits;
    __builtin_memcpy(&bits, &v, 4);
    bits = __atomic_exchange_n(reinterpret_cast<unsigned int*>(a), bits, __ATOMIC_SEQ_CST);
    __builtin_memcpy(&v, &bits, 4);
    return v;
}
static __inline__ unsigned int atomicInc(unsigned int* a, unsigned int limit) {
    __grader_rt_atomic(a);
    unsigned int old = __atomic_fetch_or(a, 0u, __ATOMIC_SEQ_CST);
    while (!__atomic_compare_exchange_n(a, &old, old >= limit ? 0u : old + 1u, true,
                                        __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST)) {
    }
    return old;
}
static __inline__ unsigned int atomicDec(unsigned int* a, unsigned int limit) {
    __grader_rt_atomic(a);
    unsigned int old = __atomic_fetch_or(a, 0u, __ATOMIC_SEQ_CST);
    while (!__atomic_compare_exchange_n(a, &old, (old == 0u || old > limit) ? limit : old - 1u,
                                        true, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST)) {
    }
    return old;
}
/* The _block and _system scopes are the same operation on a CPU; functions, as in CUDA,
   not macros a file could test for. */
#define __GRADER_SCOPES(OP)                                                                  \
    template <class... A>                                                                    \
    static __inline__ auto OP##_block(A... a) -> decltype(OP(a...)) { return OP(a...); }     \
    template <class... A>                                                                    \
    static __inline__ auto OP##_system(A... a) -> decltype(OP(a...)) { return OP(a...); }
__GRADER_SCOPES(atomicAdd)
__GRADER_SCOPES(atomicSub)
__GRADER_SCOPES(atomicExch)
__GRADER_SCOPES(atomicMin)
__GRADER_SCOPES(atomicMax)
__GRADER_SCOPES(atomicInc)
__GRADER_SCOPES(atomicDec)
__GRADER_SCOPES(atomicCAS)
__GRADER_SCOPES(atomicAnd)
__GRADER_SCOPES(atomicOr)
__GRADER_SCOPES(atomicXor)
#undef __GRADER_SCOPES

/* -- min / max, as CUDA's overloads: mixed arguments take the common type ---------------- */
template <class A, class B,
          class = typename std::enable_if<std::is_arithmetic<A>::value &&
                                          std::is_arithmetic<B>::value>::type>
static __inline__ typename std::common_type<A, B>::type min(A a, B b) {
    typedef typename std::common_type<A, B>::type T;
    return (T)b < (T)a ? (T)b : (T)a;
}
template <class A, class B,
          class = typename std::enable_if<std::is_arithmetic<A>::value &&
                                          std::is_arithmetic<B>::value>::type>
static __inline__ typename std::common_type<A, B>::type max(A a, B b) {
    typedef typename std::common_type<A, B>::type T;
    return (T)b > (T)a ? (T)b : (T)a;
}
static __inline__ unsigned int umin(unsigned int a, unsigned int b) { return a < b ? a : b; }
static __inline__ unsigned int umax(unsigned int a, unsigned int b) { return a > b ? a : b; }
static __inline__ long long llmin(long long a, long long b) { return a < b ? a : b; }
static __inline__ long long llmax(long long a, long long b) { return a > b ? a : b; }
static __inline__ unsigned long long ullmin(unsigned long long a, unsigned long long b) {
    return a < b ? a : b;
}
static __inline__ unsigned long long ullmax(unsigned long long a, unsigned long long b) {
    return a > b ? a : b;
}

/* -- maths: CUDA's names for the C library, and its fast intrinsics ---------------------- */
static __inline__ float rsqrtf(float x) { return 1.0f / sqrtf(x); }
static __inline__ double rsqrt(double x) { return 1.0 / sqrt(x); }
static __inline__ float rcbrtf(float x) { return 1.0f / cbrtf(x); }
static __inline__ double rcbrt(double x) { return 1.0 / cbrt(x); }
/* The C library already declares (without exporting) __expf and friends, so CUDA's fast
   intrinsics of those names are macros for functions of our own. */
static __inline__ float grader_expf(float x) { return expf(x); }
static __inline__ float grader_exp10f(float x) { return powf(10.0f, x); }
static __inline__ float grader_logf(float x) { return logf(x); }
static __inline__ float grader_log2f(float x) { return log2f(x); }
static __inline__ float grader_log10f(float x) { return log10f(x); }
static __inline__ float grader_powf(float x, float y) { return powf(x, y); }
static __inline__ float grader_sinf(float x) { return sinf(x); }
static __inline__ float grader_cosf(float x) { return cosf(x); }
static __inline__ float grader_tanf(float x) { return tanf(x); }
static __inline__ void grader_sincosf(float x, float* s, float* c) {
    *s = sinf(x);
    *c = cosf(x);
}
#define __expf grader_expf
#define __exp10f grader_exp10f
#define __logf grader_logf
#define __log2f grader_log2f
#define __log10f grader_log10f
#define __powf grader_powf
#define __sinf grader_sinf
#define __cosf grader_cosf
#define __tanf grader_tanf
#define __sincosf grader_sincosf
static __inline__ float __fdividef(float x, float y) { return x / y; }
static __inline__ float fdividef(float x, float y) { return x / y; }
static __inline__ float __saturatef(float x) { return x < 0.0f ? 0.0f : (x > 1.0f ? 1.0f : x); }
static __inline__ float sinpif(float x) { return sinf((float)M_PI * x); }
static __inline__ float cospif(float x) { return cosf((float)M_PI * x); }
static __inline__ double sinpi(double x) { return sin(M_PI * x); }
static __inline__ double cospi(double x) { return cos(M_PI * x); }
static __inline__ void sincospif(float x, float* s, float* c) { *s = sinpif(x); *c = cospif(x); }
static __inline__ float normcdff(float x) { return 0.5f * erfcf(-x * (float)M_SQRT1_2); }
static __inline__ double normcdf(double x) { return 0.5 * erfc(-x * M_SQRT1_2); }
static __inline__ float norm3df(float a, float b, float c) { return sqrtf(a * a + b * b + c * c); }
static __inline__ float rnorm3df(float a, float b, float c) { return rsqrtf(a * a + b * b + c * c); }
static __inline__ float norm4df(float a, float b, float c, float d) {
    return sqrtf(a * a + b * b + c * c + d * d);
}
static __inline__ float rhypotf(float a, float b) { return 1.0f / hypotf(a, b); }
/* -- directed rounding: CUDA's _rn/_rz/_ru/_rd arithmetic and conversions, each correctly
   rounded in its mode. Not through fesetround, across which the compiler may fold or move
   operations: each takes the round-to-nearest result r, finds exactly on which side of r
   the exact value lies, and steps r one ulp there where the mode says so. A float's exact
   products and remainders fit a double; a double's, binary128 (slow, software), used where
   the double's own error-free transformation could underflow and for fma. */
#if LDBL_MANT_DIG == 113
typedef long double grader_quad;
#else
typedef __float128 grader_quad;
#endif
namespace grader {
namespace ieee {  /* apart, so that its sqrt, fma and div hide no C function in grader:: */
enum { RN, RZ, RU, RD };
/* W: a type that holds any product of two T exactly, over T's whole range */
template <class T> struct wide { typedef double type; };
template <> struct wide<double> { typedef grader_quad type; };
template <class X> static __inline__ int cmp(X x, X y) { return (x > y) - (x < y); }  // NaN: 0
/* Where a double's fma-based error is exact in sign: no underflow, so nonzero stays nonzero. */
template <class T> static __inline__ bool eft(T v) {
    return sizeof(T) == 8 && fabs(v) >= 0x1p-960 && fabs(v) <= DBL_MAX;
}
/* An exact zero sum x + y in round-down: -0 unless both terms are +0 (IEEE 754 6.3). */
template <class T> static __inline__ T zero_down(T x, T y) {
    return x == 0 && y == 0 && !std::signbit(x) && !std::signbit(y) ? (T)0 : -(T)0;
}
/* r moved one ulp toward the exact value where mode M says so; dir: the sign of exact - r.
   An overflow (r infinite, dir against it) steps back to the largest finite value. */
template <int M, class T> static __inline__ T step(T r, int dir) {
    int want = M == RU ? 1 : M == RD ? -1 : M == RZ ? (r > 0 ? -1 : r < 0 ? 1 : 0) : 0;
    if (want == 0 || dir != want) return r;
    return std::nextafter(r, want > 0 ? (T)INFINITY : -(T)INFINITY);
}
template <int M, class T> static __inline__ T add(T a, T b) {
    T r = a + b;
    if (M == RN) return r;
    if (!std::isfinite(r))  // an overflow of finite operands lies below infinity
        return step<M>(r, std::isfinite(a) && std::isfinite(b) ? -cmp(r, (T)0) : 0);
    T bb = r - a, e = (a - (r - bb)) + (b - bb);  // TwoSum: a + b == r + e exactly
    if (r == 0 && M == RD) return zero_down(a, b);
    return step<M>(r, cmp(e, (T)0));
}
template <int M, class T> static __inline__ T mul(T a, T b) {
    typedef typename wide<T>::type W;
    T r = a * b;
    if (M == RN) return r;
    return step<M>(r, eft(r) ? cmp(std::fma(a, b, -r), (T)0) : cmp((W)a * (W)b, (W)r));
}
template <int M, class T> static __inline__ T div(T a, T b) {
    typedef typename wide<T>::type W;
    T q = a / b;
    if (M == RN) return q;
    int dir = eft(q) && eft(a) ? cmp(std::fma(-q, b, a), (T)0) : cmp((W)a, (W)q * (W)b);
    return step<M>(q, b < 0 ? -dir : dir);  // a/b - q has the sign of (a - q*b) / b
}
template <int M, class T> static __inline__ T sqrt(T x) {
    typedef typename wide<T>::type W;
    T s = std::sqrt(x);
    if (M == RN) return s;
    return step<M>(s, eft(x) ? cmp(std::fma(-s, s, x), (T)0) : cmp((W)x, (W)s * (W)s));
}
/* a*b is exact in W, so TwoSum there gives a*b + c exactly as t + e: no double rounding */
template <int M, class T> static __inline__ T fma(T a, T b, T c) {
    typedef typename wide<T>::type W;
    T r = std::fma(a, b, c);
    if (M == RN) return r;
    if (!std::isfinite(r)) {
        bool finite = std::isfinite(a) && std::isfinite(b) && std::isfinite(c);
        return step<M>(r, finite ? -cmp(r, (T)0) : 0);
    }
    W p = (W)a * (W)b, t = p + (W)c, bb = t - p, e = (p - (t - bb)) + ((W)c - bb);
    int dir = cmp(t, (W)r);
    if (!dir) dir = cmp(e, (W)0);
    if (r == 0 && dir == 0 && M == RD) return zero_down(a * b, c);  // a*b: 0 only if exact
    return step<M>(r, dir);
}
template <int M> static __inline__ float narrow(double x) {
    float r = (float)x;
    return M == RN ? r : step<M>(r, cmp(x, (double)r));
}
/* an integer's exact value against its nearest float, in 128 bits (2^64 fits) */
template <int M, class F, class I> static __inline__ F from_int(I i) {
    F r = (F)i;
    return M == RN ? r : step<M>(r, cmp((__int128)i, (__int128)r));
}
template <int M, class I> static __inline__ float to_float(I i) {
    return from_int<M, float>(i);
}
template <int M, class I> static __inline__ double to_double(I i) {
    return from_int<M, double>(i);
}
/* v, already an integer, as I: CUDA leaves a value out of I's range undefined; as PTX's cvt
   does, it saturates (NaN: 0) rather than be C's undefined cast. */
template <class I, class T> static __inline__ I to_int(T v) {
    if (v != v) return 0;
    if (v <= (T)std::numeric_limits<I>::min()) return std::numeric_limits<I>::min();
    if (v >= (T)std::numeric_limits<I>::max()) return std::numeric_limits<I>::max();
    return (I)v;
}
}  // namespace ieee
}  // namespace grader
#define __GRADER_MODES(name, T, fn, params, args)                                             \
    static __inline__ T name##_rn params { return grader::ieee::fn<grader::ieee::RN> args; }  \
    static __inline__ T name##_rz params { return grader::ieee::fn<grader::ieee::RZ> args; }  \
    static __inline__ T name##_ru params { return grader::ieee::fn<grader::ieee::RU> args; }  \
    static __inline__ T name##_rd params { return grader::ieee::fn<grader::ieee::RD> args; }
__GRADER_MODES(__fadd, float, add, (float x, float y), (x, y))
__GRADER_MODES(__fsub, float, add, (float x, float y), (x, -y))
__GRADER_MODES(__fmul, float, mul, (float x, float y), (x, y))
__GRADER_MODES(__fdiv, float, div, (float x, float y), (x, y))
__GRADER_MODES(__frcp, float, div, (float x), (1.0f, x))
__GRADER_MODES(__fsqrt, float, sqrt, (float x), (x))
__GRADER_MODES(__fmaf, float, fma, (float x, float y, float z), (x, y, z))
/* CUDA's _ieee forms differ only under -ftz=true, which this backend does not model */
__GRADER_MODES(__fmaf_ieee, float, fma, (float x, float y, float z), (x, y, z))
__GRADER_MODES(__dadd, double, add, (double x, double y), (x, y))
__GRADER_MODES(__dsub, double, add, (double x, double y), (x, -y))
__GRADER_MODES(__dmul, double, mul, (double x, double y), (x, y))
__GRADER_MODES(__ddiv, double, div, (double x, double y), (x, y))
__GRADER_MODES(__drcp, double, div, (double x), (1.0, x))
__GRADER_MODES(__dsqrt, double, sqrt, (double x), (x))
__GRADER_MODES(__fma, double, fma, (double x, double y, double z), (x, y, z))
__GRADER_MODES(__double2float, float, narrow, (double x), (x))
__GRADER_MODES(__int2float, float, to_float, (int x), (x))
__GRADER_MODES(__uint2float, float, to_float, (unsigned int x), (x))
__GRADER_MODES(__ll2float, float, to_float, (long long x), (x))
__GRADER_MODES(__ull2float, float, to_float, (unsigned long long x), (x))
__GRADER_MODES(__ll2double, double, to_double, (long long x), (x))
__GRADER_MODES(__ull2double, double, to_double, (unsigned long long x), (x))
#undef __GRADER_MODES
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 1000 /* CUDA's float2 forms: sm_100 on */
#define __GRADER_PAIRS(m)                                                                     \
    static __inline__ float2 __fadd2_##m(float2 x, float2 y) {                                \
        return make_float2(__fadd_##m(x.x, y.x), __fadd_##m(x.y, y.y));                       \
    }                                                                                         \
    static __inline__ float2 __fmul2_##m(float2 x, float2 y) {                                \
        return make_float2(__fmul_##m(x.x, y.x), __fmul_##m(x.y, y.y));                       \
    }                                                                                         \
    static __inline__ float2 __ffma2_##m(float2 x, float2 y, float2 z) {                      \
        return make_float2(__fmaf_##m(x.x, y.x, z.x), __fmaf_##m(x.y, y.y, z.y));             \
    }
__GRADER_PAIRS(rn)
__GRADER_PAIRS(rz)
__GRADER_PAIRS(ru)
__GRADER_PAIRS(rd)
#undef __GRADER_PAIRS
#endif
#define __GRADER_TO_INT(name, T, I)                                                           \
    static __inline__ I name##_rn(T x) { return grader::ieee::to_int<I>(std::nearbyint(x)); } \
    static __inline__ I name##_rz(T x) { return grader::ieee::to_int<I>(std::trunc(x)); }     \
    static __inline__ I name##_ru(T x) { return grader::ieee::to_int<I>(std::ceil(x)); }      \
    static __inline__ I name##_rd(T x) { return grader::ieee::to_int<I>(std::floor(x)); }
__GRADER_TO_INT(__float2int, float, int)
__GRADER_TO_INT(__float2uint, float, unsigned int)
__GRADER_TO_INT(__float2ll, float, long long)
__GRADER_TO_INT(__float2ull, float, unsigned long long)
__GRADER_TO_INT(__double2int, double, int)
__GRADER_TO_INT(__double2uint, double, unsigned int)
__GRADER_TO_INT(__double2ll, double, long long)
__GRADER_TO_INT(__double2ull, double, unsigned long long)
#undef __GRADER_TO_INT
static __inline__ double __int2double_rn(int x) { return (double)x; }
static __inline__ double __uint2double_rn(unsigned int x) { return (double)x; }
/* Correctly rounded, as CUDA's: checked against exact integer arithmetic for every float in
   [1, 4), which scaling by 4 (exact in each step here) maps onto every positive float. */
static __inline__ float __frsqrt_rn(float x) { return (float)(1.0 / sqrt((double)x)); }

/* -- bit casts and conversions ------------------------------------------------------------ */
static __inline__ int __float_as_int(float x) { return grader::from_bits<int>(grader::to_bits(x)); }
static __inline__ unsigned int __float_as_uint(float x) {
    return grader::from_bits<unsigned int>(grader::to_bits(x));
}
static __inline__ float __int_as_float(int x) { return grader::from_bits<float>(grader::to_bits(x)); }
static __inline__ float __uint_as_float(unsigned int x) {
    return grader::from_bits<float>(grader::to_bits(x));
}
static __inline__ long long __double_as_longlong(double x) {
    return grader::from_bits<long long>(grader::to_bits(x));
}
static __inline__ double __longlong_as_double(long long x) {
    return grader::from_bits<double>(grader::to_bits(x));
}

/* -- integer intrinsics ---------------------------------------------------------------------- */
static __inline__ int __popc(unsigned int x) { return __builtin_popcount(x); }
static __inline__ int __popcll(unsigned long long x) { return __builtin_popcountll(x); }
static __inline__ int __clz(int x) { return x == 0 ? 32 : __builtin_clz((unsigned int)x); }
static __inline__ int __clzll(long long x) {
    return x == 0 ? 64 : __builtin_clzll((unsigned long long)x);
}
static __inline__ int __ffs(int x) { return __builtin_ffs(x); }
static __inline__ int __ffsll(long long x) { return __builtin_ffsll(x); }
static __inline__ unsigned int __brev(unsigned int x) {
    unsigned int r = 0;
    for (int i = 0; i < 32; ++i) r |= ((x >> i) & 1u) << (31 - i);
    return r;
}
static __inline__ unsigned long long __brevll(unsigned long long x) {
    return ((unsigned long long)__brev((unsigned int)x) << 32) | __brev((unsigned int)(x >> 32));
}
static __inline__ unsigned int __byte_perm(unsigned int x, unsigned int y, unsigned int s) {
    unsigned long long both = ((unsigned long long)y << 32) | x;
    unsigned int r = 0;
    for (int i = 0; i < 4; ++i) {
        unsigned int sel = (s >> (4 * i)) & 7u;
        r |= (unsigned int)((both >> (8 * sel)) & 0xffu) << (8 * i);
    }
    return r;
}
static __inline__ int __mul24(int a, int b) {
    return (int)((long long)((a << 8) >> 8) * ((b << 8) >> 8));
}
static __inline__ unsigned int __umul24(unsigned int a, unsigned int b) {
    return (a & 0xffffffu) * (b & 0xffffffu);
}
static __inline__ int __mulhi(int a, int b) { return (int)(((long long)a * b) >> 32); }
static __inline__ unsigned int __umulhi(unsigned int a, unsigned int b) {
    return (unsigned int)(((unsigned long long)a * b) >> 32);
}
static __inline__ long long __mul64hi(long long a, long long b) {
    return (long long)(((__int128)a * b) >> 64);
}
static __inline__ unsigned long long __umul64hi(unsigned long long a, unsigned long long b) {
    return (unsigned long long)(((unsigned __int128)a * b) >> 64);
}
static __inline__ int __hadd(int a, int b) { return (int)(((long long)a + b) >> 1); }
static __inline__ int __rhadd(int a, int b) { return (int)(((long long)a + b + 1) >> 1); }
static __inline__ unsigned int __uhadd(unsigned int a, unsigned int b) {
    return (unsigned int)(((unsigned long long)a + b) >> 1);
}
static __inline__ unsigned int __urhadd(unsigned int a, unsigned int b) {
    return (unsigned int)(((unsigned long long)a + b + 1) >> 1);
}
static __inline__ unsigned int __sad(int a, int b, unsigned int c) {
    return c + (unsigned int)(a > b ? a - b : b - a);
}
static __inline__ unsigned int __usad(unsigned int a, unsigned int b, unsigned int c) {
    return c + (a > b ? a - b : b - a);
}
static __inline__ unsigned int __funnelshift_l(unsigned int lo, unsigned int hi, unsigned int s) {
    unsigned long long both = ((unsigned long long)hi << 32) | lo;
    return (unsigned int)((both << (s & 31u)) >> 32);
}
static __inline__ unsigned int __funnelshift_r(unsigned int lo, unsigned int hi, unsigned int s) {
    unsigned long long both = ((unsigned long long)hi << 32) | lo;
    return (unsigned int)(both >> (s & 31u));
}
static __inline__ unsigned int __funnelshift_lc(unsigned int lo, unsigned int hi, unsigned int s) {
    return __funnelshift_l(lo, hi, s > 32u ? 32u : s);
}
static __inline__ unsigned int __funnelshift_rc(unsigned int lo, unsigned int hi, unsigned int s) {
    unsigned long long both = ((unsigned long long)hi << 32) | lo;
    return (unsigned int)(both >> (s > 32u ? 32u : s));
}

/* -- loads and stores with cache hints: plain accesses here -------------------------------- */
template <class T> static __inline__ T __ldg(const T* p) { return *p; }
template <class T> static __inline__ T __ldca(const T* p) { return *p; }
template <class T> static __inline__ T __ldcg(const T* p) { return *p; }
template <class T> static __inline__ T __ldcs(const T* p) { return *p; }
template <class T> static __inline__ T __ldlu(const T* p) { return *p; }
template <class T> static __inline__ T __ldcv(const T* p) { return *p; }
template <class T> static __inline__ void __stwb(T* p, T v) { *p = v; }
template <class T> static __inline__ void __stcg(T* p, T v) { *p = v; }
template <class T> static __inline__ void __stcs(T* p, T v) { *p = v; }
template <class T> static __inline__ void __stwt(T* p, T v) { *p = v; }

/* -- timing, traps, printf ----------------------------------------------------------------- */
static __inline__ long long clock64(void) { return (long long)grader_rt_clock64(); }
static __inline__ unsigned long long __globaltimer(void) { return grader_rt_clock64(); }
static __inline__ void __nanosleep(unsigned int) {}
#define __trap() grader_rt_trap(__LINE__)
#define __brkpt() grader_rt_trap(__LINE__)


/* -- host-side names a kernel file may mention in helper signatures ------------------------ */
typedef enum cudaError { cudaSuccess = 0, cudaErrorInvalidValue = 1 } cudaError_t;
typedef struct grader_stream* cudaStream_t;
typedef struct grader_event* cudaEvent_t;
struct cudaPitchedPtr {
    void* ptr;
    size_t pitch;
    size_t xsize;
    size_t ysize;
};
struct cudaExtent {
    size_t width;
    size_t height;
    size_t depth;
};
static __inline__ cudaPitchedPtr make_cudaPitchedPtr(void* d, size_t p, size_t xsz, size_t ysz) {
    cudaPitchedPtr r;
    r.ptr = d;
    r.pitch = p;
    r.xsize = xsz;
    r.ysize = ysz;
    return r;
}
static __inline__ cudaExtent make_cudaExtent(size_t w, size_t h, size_t d) {
    cudaExtent r;
    r.width = w;
    r.height = h;
    r.depth = d;
    return r;
}

/* -- what the registration footer uses -------------------------------------------------------
   The templates behind the footer's macros (grader_register.h, which says what they
   define). */
namespace grader {
/* SIG_MAGIC, VAR_MAGIC, SHARED_MAGIC and the bases T_*: grader_codes.h */
template <class T> struct base_of { enum { value = T_OTHER }; };
#define __GRADER_BASE(T, V) template <> struct base_of<T> { enum { value = V }; };
__GRADER_BASE(void, T_VOID)
__GRADER_BASE(bool, T_BOOL)
__GRADER_BASE(char, T_CHAR)
__GRADER_BASE(signed char, T_SCHAR)
__GRADER_BASE(unsigned char, T_UCHAR)
__GRADER_BASE(short, T_SHORT)
__GRADER_BASE(unsigned short, T_USHORT)
__GRADER_BASE(int, T_INT)
__GRADER_BASE(unsigned int, T_UINT)
__GRADER_BASE(long, T_LONG)
__GRADER_BASE(unsigned long, T_ULONG)
__GRADER_BASE(long long, T_LLONG)
__GRADER_BASE(unsigned long long, T_ULLONG)
__GRADER_BASE(float, T_FLOAT)
__GRADER_BASE(double, T_DOUBLE)
__GRADER_BASE(long double, T_LDOUBLE)
__GRADER_BASE(float2, T_FLOAT2)
__GRADER_BASE(float3, T_FLOAT3)
__GRADER_BASE(float4, T_FLOAT4)
__GRADER_BASE(int2, T_INT2)
__GRADER_BASE(int3, T_INT3)
__GRADER_BASE(int4, T_INT4)
__GRADER_BASE(uint2, T_UINT2)
__GRADER_BASE(uint3, T_UINT3)
__GRADER_BASE(uint4, T_UINT4)
__GRADER_BASE(double2, T_DOUBLE2)
__GRADER_BASE(char4, T_CHAR4)
__GRADER_BASE(uchar4, T_UCHAR4)
#undef __GRADER_BASE

/* code = base | pointer depth << 8 | (pointee const) << 12 */
template <class T> struct type_code {
    enum { value = base_of<typename std::remove_cv<T>::type>::value };
};
template <class T> struct type_code<T*> {
    enum {
        inner = type_code<T>::value,
        value = (inner & 0xff) | ((((inner >> 8) & 0xf) + 1) << 8) |
                ((std::is_const<T>::value ? 1 : 0) << 12),
    };
};
template <class T> struct type_code<T* const> : type_code<T*> {};
template <class T> struct type_code<T* volatile> : type_code<T*> {};
template <class T> struct type_code<T* const volatile> : type_code<T*> {};

template <class F> struct kernel_sig;
template <class... A> struct kernel_sig<void (*)(A...)> {
    int magic;
    int nparams;
    int max_threads;
    int reserved;
    int codes[sizeof...(A) + 1];
    int sizes[sizeof...(A) + 1];
};
template <class... A>
constexpr kernel_sig<void (*)(A...)> make_sig(void (*)(A...), int max_threads) {
    return kernel_sig<void (*)(A...)>{SIG_MAGIC, (int)sizeof...(A), max_threads, 0,
                                      {type_code<A>::value..., 0},
                                      {(int)sizeof(A)..., 0}};
}

struct var_info {
    int magic;
    int space; /* 1: __constant__, 2: __device__ */
    int writable;
    int reserved;
    long long size;
};
template <class T>
constexpr var_info make_var(int space) {
    return var_info{VAR_MAGIC, space,
                    std::is_const<typename std::remove_all_extents<T>::type>::value ? 0 : 1, 0,
                    (long long)sizeof(T)};
}

template <class F, F f> struct kernel;
template <class... A, void (*f)(A...)> struct kernel<void (*)(A...), f> {
    template <size_t... I>
    static __inline__ void call_with(void** a, std::index_sequence<I...>) {
        f(*static_cast<typename std::remove_cv<A>::type*>(a[I])...);
    }
    static void call(void** a) { call_with(a, std::index_sequence_for<A...>{}); }

    /* One block's threads, one after another. The kernel's body is inlined here, so a
       kernel without barriers runs nearly as fast as the same loop written in C++. The
       arguments are copied into locals first: nothing the kernel stores can change them.
       After each thread, a set loop_stop means a barrier handed the block to the fiber
       scheduler: this thread is then finished and the loop must not go on. threadIdx
       names the running thread to the runner's hooks (rt::running_linear): its stores are
       volatile, or g++ sinks them out of the loop, past hooks it takes to read no memory;
       and loop_stop is read anew, since a hook may set it too (a thread that spins on a
       flag hands the block over: runtime/scheduler.h), where g++ would read it once. */
    static __inline__ void named(unsigned int& axis, unsigned int value) {
        *static_cast<volatile unsigned int*>(&axis) = value;
    }
    static __inline__ bool stopped() {
        return __builtin_expect(*static_cast<volatile int*>(&grader_rt_loop_stop), 0);
    }
    template <class Args, size_t... I>
    static __inline__ void loop_with(const Args& args, const grader_loop_ctl* c,
                                     std::index_sequence<I...>) {
        const unsigned int bx = c->bx, by = c->by, bz = c->bz;
        if (!c->reverse) {
            for (unsigned int z = 0; z < bz; ++z) {
                named(threadIdx.z, z);
                for (unsigned int y = 0; y < by; ++y) {
                    named(threadIdx.y, y);
                    for (unsigned int x = 0; x < bx; ++x) {
                        named(threadIdx.x, x);
                        f(std::get<I>(args)...);
                        if (stopped()) grader_rt_loop_exit();
                    }
                }
            }
        } else {
            for (unsigned int z = bz; z-- > 0;) {
                named(threadIdx.z, z);
                for (unsigned int y = by; y-- > 0;) {
                    named(threadIdx.y, y);
                    for (unsigned int x = bx; x-- > 0;) {
                        named(threadIdx.x, x);
                        f(std::get<I>(args)...);
                        if (stopped()) grader_rt_loop_exit();
                    }
                }
            }
        }
    }
    template <size_t... I>
    static __inline__ void unpack_and_loop(void** a, const grader_loop_ctl* c,
                                           std::index_sequence<I...> seq) {
        const std::tuple<typename std::remove_cv<A>::type...> args(
            *static_cast<typename std::remove_cv<A>::type*>(a[I])...);
        loop_with(args, c, seq);
    }
    static void loop(void** a, const grader_loop_ctl* c) {
        unpack_and_loop(a, c, std::index_sequence_for<A...>{});
    }
};

/* extern __shared__ arrays become pointers to the block's dynamic shared memory. */
template <class P> static __inline__ P dynamic_shared() {
    return reinterpret_cast<P>(grader_rt_dynamic_shared());
}

/* Every other __shared__ declaration becomes a reference to a slot the runner places
   against guard pages, like the buffers (scan.py's rewrite): `decl` says which slot, and
   what to call the array when an index runs past it. */
template <class T, unsigned I> constexpr int extent_of() { return (int)std::extent<T, I>::value; }
template <class T>
constexpr grader_shared_decl shared_decl(int slot, int line, const char* name) {
    return grader_shared_decl{SHARED_MAGIC,
                              slot,
                              (long long)sizeof(T),
                              (int)sizeof(typename std::remove_all_extents<T>::type),
                              (int)std::rank<T>::value,
                              {extent_of<T, 0>(), extent_of<T, 1>(), extent_of<T, 2>(),
                               extent_of<T, 3>()},
                              line,
                              0,
                              name};
}
template <class T> static __inline__ T& static_shared(const grader_shared_decl* decl) {
    return *static_cast<T*>(grader_rt_static_shared(decl));
}
}  // namespace grader

/* -- what would take a kernel out of the hooks ------------------------------------------------
   A sanitizer's pass hooks the module's stores, and a census module's loads (shim.py): an
   attribute that turns it off for a function would leave that kernel's races, lost updates
   and global loads unseen. Their names are poisoned, so that a file naming one, directly,
   through a macro or pasted from pieces, does not compile. */
#pragma GCC poison no_sanitize_address __no_sanitize_address__ no_sanitize_thread
#pragma GCC poison __no_sanitize_thread__ no_sanitize __no_sanitize__
#pragma GCC poison no_address_safety_analysis __no_address_safety_analysis__
#pragma GCC poison disable_sanitizer_instrumentation __disable_sanitizer_instrumentation__
