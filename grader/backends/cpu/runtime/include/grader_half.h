/* Part of the grader's CUDA shim: the arithmetic behind cuda_fp16.h and cuda_bf16.h.

   A 16-bit float is its bits here, and every operation is done in double and rounded
   once to the 16-bit format, in the mode the intrinsic names. A double holds the exact
   sum, product and quotient sign of two such values only in part, so an inexact double
   result is first rounded to odd (odd()): its last bit then records that the exact value
   lies beyond it, and rounding that double to a format two or more bits narrower gives
   the exact value's rounding (round to odd, Boldo and Melquiond). So each result is the
   exact one rounded as IEEE 754 says, bit for bit (tests/cpu/test_half.py checks it
   against exact rational arithmetic).

   Only cuda_fp16.h and cuda_bf16.h include this, so a module that uses neither never
   parses it. Written for the grader; no NVIDIA header text is copied. */
#pragma once

namespace grader {
namespace f16 {
using ieee::RN;
using ieee::RZ;
using ieee::RU;
using ieee::RD;

/* A format: M fraction bits, EMIN the least normal exponent. */
struct binary16 { enum { M = 10, EMIN = -14 }; };
struct bfloat16 { enum { M = 7, EMIN = -126 }; };
enum : unsigned short { SIGN = 0x8000, NAN_BITS = 0x7fff /* CUDA's canonical NaN */ };
template <class F> constexpr unsigned short inf() { return (unsigned short)(0x8000u - (1u << F::M)); }
template <class F> constexpr unsigned short one() { return (unsigned short)((1 - F::EMIN) << F::M); }

template <class T> static __inline__ unsigned short bits(T v) {
    static_assert(sizeof(T) == 2, "a 16-bit float");
    unsigned short b;
    __builtin_memcpy(&b, &v, 2);
    return b;
}
template <class T> static __inline__ T make(unsigned short b) {
    T v;
    __builtin_memcpy(&v, &b, 2);
    return v;
}
template <class F> static __inline__ bool is_nan(unsigned short b) { return (b & 0x7fffu) > inf<F>(); }

/* The exact value as a float: a 16-bit format's values are all floats. NaN keeps its
   payload, as a widening of IEEE formats does. */
template <class F> static __inline__ float to_float(unsigned short h) {
    unsigned int sign = (unsigned int)(h & SIGN) << 16, e = (h & 0x7fffu) >> F::M,
                 m = h & ((1u << F::M) - 1);
    unsigned int out;
    if (e == (0x7fffu >> F::M))
        out = sign | 0x7f800000u | m << (23 - F::M);
    else if (e)
        out = sign | (e - (1 - F::EMIN) + 127) << 23 | m << (23 - F::M);
    else {
        float f = (float)m * std::ldexp(1.0f, F::EMIN - F::M);
        return sign ? -f : f;
    }
    float f;
    __builtin_memcpy(&f, &out, 4);
    return f;
}
template <class F> static __inline__ double to_double(unsigned short h) { return to_float<F>(h); }

/* r, the double nearest an exact value that lies on the side `err` gives of it, moved to
   its odd neighbour there where it is even: rounded to odd. */
static __inline__ double odd(double r, double err) {
    if (err == 0 || !std::isfinite(r) || (to_bits(r) & 1)) return r;
    return std::nextafter(r, err > 0 ? (double)INFINITY : -(double)INFINITY);
}
/* a + b rounded to odd (TwoSum gives the error exactly) */
static __inline__ double sum(double a, double b) {
    double r = a + b, bb = r - a;
    return odd(r, (a - (r - bb)) + (b - bb));
}
/* a / b rounded to odd: the remainder a - q*b is exact, and a/b - q has its sign times b's */
static __inline__ double quotient(double a, double b) {
    double q = a / b;
    if (!std::isfinite(q) || q == 0) return q;
    double rem = std::fma(-q, b, a);
    return odd(q, b < 0 ? -rem : rem);
}
/* sqrt(x) rounded to odd: x - s*s is exact */
static __inline__ double root(double x) {
    double s = std::sqrt(x);
    if (!std::isfinite(s) || s == 0) return s;
    return odd(s, std::fma(-s, s, x));
}
/* an integer rounded to odd: the 128-bit difference to its nearest double */
template <class I> static __inline__ double from_int(I i) {
    double r = (double)i;
    return odd(r, (double)((__int128)i - (__int128)r));
}

/* x rounded to F in mode R, as bits: x's exact value rounded once. Overflow gives
   infinity, or the largest finite value where the mode rounds toward zero there; a
   nonzero x that rounds to zero keeps its sign; any NaN gives the canonical NaN. */
template <class F, int R> static __inline__ unsigned short round(double x) {
    const unsigned long long u = to_bits(x), mag = u & 0x7fffffffffffffffull;
    const unsigned short sign = (u >> 63) ? SIGN : 0;
    if (mag >= 0x7ff0000000000000ull) return mag == 0x7ff0000000000000ull ? sign | inf<F>() : NAN_BITS;
    if (mag == 0) return sign;
    int e = (int)(mag >> 52);
    unsigned long long m = mag & ((1ull << 52) - 1);
    if (e) m |= 1ull << 52;
    else e = 1;
    const int low = e - 1075;                                /* x = m * 2^low */
    const int lead = low + 63 - __builtin_clzll(m);          /* x's leading bit: 2^lead */
    const int q = (lead > F::EMIN ? lead : F::EMIN) - F::M;  /* the result's last bit: 2^q */
    const int shift = q - low;                               /* at least 52 - M */
    const unsigned long long kept = shift < 64 ? m >> shift : 0;
    const unsigned long long rest = shift < 64 ? m & ((1ull << shift) - 1) : m;
    bool up;
    if (R == RN)
        up = shift < 64 && (rest > 1ull << (shift - 1) || (rest == 1ull << (shift - 1) && (kept & 1)));
    else if (R == RZ)
        up = false;
    else
        up = rest != 0 && (R == RU) == !sign;
    /* a carry out of the fraction steps the exponent, and past the largest to infinity */
    const unsigned long long out = ((unsigned long long)(q - (F::EMIN - F::M)) << F::M) + kept + up;
    if (out >= inf<F>()) {
        const bool to_inf = R == RN || (R == RU && !sign) || (R == RD && sign);
        return sign | (to_inf ? inf<F>() : inf<F>() - 1);
    }
    return sign | (unsigned short)out;
}

/* v's value rounded to an integer in mode R, as I: saturated (as PTX's cvt); NaN gives 0,
   or for a 64-bit integer the bits 0x8000000000000000, as CUDA documents */
template <class I, int R, class F> static __inline__ I to_int(unsigned short v) {
    if (sizeof(I) == 8 && is_nan<F>(v)) return (I)0x8000000000000000ull;
    const double d = to_double<F>(v);
    return ieee::to_int<I>(R == RN ? std::nearbyint(d) : R == RZ ? std::trunc(d)
                           : R == RU ? std::ceil(d) : std::floor(d));
}

/* _sat: clamped to [+0, 1], NaN to +0; _relu: negatives to +0, NaN to the canonical NaN */
template <class F> static __inline__ unsigned short sat(unsigned short v) {
    if (is_nan<F>(v) || (v & SIGN)) return 0;
    return v > one<F>() ? one<F>() : v;
}
template <class F> static __inline__ unsigned short relu(unsigned short v) {
    return is_nan<F>(v) ? (unsigned short)NAN_BITS : (v & SIGN) ? 0 : v;
}
/* __hmax and __hmin: a NaN loses to a number, two NaNs give the canonical NaN, and +0
   is above -0 */
template <class F> static __inline__ unsigned short max(unsigned short a, unsigned short b) {
    if (is_nan<F>(a) || is_nan<F>(b)) return is_nan<F>(a) ? (is_nan<F>(b) ? (unsigned short)NAN_BITS : b) : a;
    const float fa = to_float<F>(a), fb = to_float<F>(b);
    return fa > fb ? a : fb > fa ? b : (a & SIGN) ? b : a;
}
template <class F> static __inline__ unsigned short min(unsigned short a, unsigned short b) {
    if (is_nan<F>(a) || is_nan<F>(b)) return is_nan<F>(a) ? (is_nan<F>(b) ? (unsigned short)NAN_BITS : b) : a;
    const float fa = to_float<F>(a), fb = to_float<F>(b);
    return fa < fb ? a : fb < fa ? b : (a & SIGN) ? a : b;
}
}  // namespace f16
}  // namespace grader
