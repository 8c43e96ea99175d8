/* Part of the grader's CUDA shim: one 16-bit float type, its pair, and what CUDA defines
   for them, for cuda_fp16.h (__half, __half2) and cuda_bf16.h (__nv_bfloat16,
   __nv_bfloat162). Each of those sets the names below and includes this file, so it has
   no include guard; its own macros are gone at its end.

     __GRADER_T, __GRADER_T2        the type and its pair
     __GRADER_RAW, __GRADER_RAW2    their raw forms (the bits)
     __GRADER_OTHER                 the other 16-bit type (an explicit conversion)
     __GRADER_F                     its format (grader_half.h)
     __GRADER_N, __GRADER_N2        the type's word in CUDA's names: __float2half_rn,
                                    __half22float2; __float2bfloat16_rn, __bfloat1622float2

   The arithmetic intrinsics and operators round once, to nearest even (grader_half.h),
   as CUDA documents each of them. Where the GPU computes one through a float
   approximation (__hdiv, h2div and the / operator; hrcp, hsqrt, hrsqrt, hexp and the
   other maths functions), its result can differ from this one in the last bit when the
   exact value lies within about a float's rounding error of a tie: CUDA's documentation
   names the rounding, not those bits. Sine, cosine and tanh stay GPU-only.

   Written for the grader; no NVIDIA header text is copied. */

#define __GRADER_PASTE_(a, b) a##b
#define __GRADER_PASTE(a, b) __GRADER_PASTE_(a, b)
#define __GRADER_NAME(a, b, c) __GRADER_PASTE(__GRADER_PASTE(a, b), c)
#define __GRADER_BITS(v) ::grader::f16::bits(v)
#define __GRADER_MAKE(b) ::grader::f16::make<__GRADER_T>(b)
#define __GRADER_VALUE(v) ::grader::f16::to_double<__GRADER_F>(__GRADER_BITS(v))
#define __GRADER_ROUND(mode, x) ::grader::f16::round<__GRADER_F, ::grader::f16::mode>(x)
#define __GRADER_RN(x) __GRADER_MAKE(__GRADER_ROUND(RN, x))

struct __GRADER_OTHER;
struct __align__(2) __GRADER_RAW { unsigned short x; };
struct __align__(4) __GRADER_RAW2 { unsigned short x, y; };

/* -- the type: CUDA's constructors, conversions and assignments, each rounding as its
   intrinsic does (to a 16-bit float: to nearest; to an integer: toward zero) ------------ */
#define __GRADER_FROM(I) \
    __GRADER_T(const I v) : __x(__GRADER_ROUND(RN, ::grader::f16::from_int(v))) {}
#define __GRADER_TO(I) \
    operator I() const { return ::grader::f16::to_int<I, ::grader::f16::RZ, __GRADER_F>(__x); }
#define __GRADER_ASSIGN(I) \
    __GRADER_T& operator=(const I v) { return *this = __GRADER_T(v); }
struct __align__(2) __GRADER_T {
  protected:
    unsigned short __x;

  public:
    __GRADER_T() = default;
    constexpr __GRADER_T(const __GRADER_RAW& r) : __x(r.x) {}
    __GRADER_T& operator=(const __GRADER_RAW& r) { __x = r.x; return *this; }
    volatile __GRADER_T& operator=(const __GRADER_RAW& r) volatile { __x = r.x; return *this; }
    volatile __GRADER_T& operator=(const volatile __GRADER_RAW& r) volatile {
        __x = r.x;
        return *this;
    }
    operator __GRADER_RAW() const { return __GRADER_RAW{__x}; }
    operator __GRADER_RAW() const volatile { return __GRADER_RAW{__x}; }
    explicit __GRADER_T(const __GRADER_OTHER f);  /* defined in cuda_bf16.h */
    __GRADER_T(const float f) : __x(__GRADER_ROUND(RN, f)) {}
    __GRADER_T(const double f) : __x(__GRADER_ROUND(RN, f)) {}
    operator float() const { return ::grader::f16::to_float<__GRADER_F>(__x); }
    __GRADER_ASSIGN(float)
    __GRADER_ASSIGN(double)
    __GRADER_FROM(short)
    __GRADER_FROM(unsigned short)
    __GRADER_FROM(int)
    __GRADER_FROM(unsigned int)
    __GRADER_FROM(long)
    __GRADER_FROM(unsigned long)
    __GRADER_FROM(long long)
    __GRADER_FROM(unsigned long long)
    __GRADER_TO(signed char)
    __GRADER_TO(unsigned char)
    __GRADER_TO(char)
    __GRADER_TO(short)
    __GRADER_TO(unsigned short)
    __GRADER_TO(int)
    __GRADER_TO(unsigned int)
    __GRADER_TO(long)
    __GRADER_TO(unsigned long)
    __GRADER_TO(long long)
    __GRADER_TO(unsigned long long)
    __GRADER_ASSIGN(short)
    __GRADER_ASSIGN(unsigned short)
    __GRADER_ASSIGN(int)
    __GRADER_ASSIGN(unsigned int)
    __GRADER_ASSIGN(long long)
    __GRADER_ASSIGN(unsigned long long)
    constexpr operator bool() const { return (__x & 0x7fffu) != 0; }
};
#undef __GRADER_FROM
#undef __GRADER_TO
#undef __GRADER_ASSIGN

struct __align__(4) __GRADER_T2 {
    __GRADER_T x, y;
    __GRADER_T2() = default;
    constexpr __GRADER_T2(const __GRADER_T& a, const __GRADER_T& b) : x(a), y(b) {}
    __GRADER_T2(const __GRADER_RAW2& r) : x(__GRADER_RAW{r.x}), y(__GRADER_RAW{r.y}) {}
    __GRADER_T2& operator=(const __GRADER_RAW2& r) { return *this = __GRADER_T2(r); }
    operator __GRADER_RAW2() const { return __GRADER_RAW2{__GRADER_BITS(x), __GRADER_BITS(y)}; }
};

/* -- conversions --------------------------------------------------------------------------- */
static __inline__ float __GRADER_NAME(__, __GRADER_N, 2float)(const __GRADER_T a) {
    return ::grader::f16::to_float<__GRADER_F>(__GRADER_BITS(a));
}
static __inline__ __GRADER_T __GRADER_PASTE(__float2, __GRADER_N)(const float a) {
    return __GRADER_RN(a);
}
static __inline__ __GRADER_T __GRADER_PASTE(__double2, __GRADER_N)(const double a) {
    return __GRADER_RN(a);
}
#define __GRADER_INTEGERS(X, m, M) \
    X(short, short, m, M) X(ushort, unsigned short, m, M) X(int, int, m, M) \
    X(uint, unsigned int, m, M) X(ll, long long, m, M) X(ull, unsigned long long, m, M)
#define __GRADER_TO_INTEGER(s, I, m, M) \
    static __inline__ I __GRADER_NAME(__, __GRADER_N, 2##s##_##m)(const __GRADER_T h) { \
        return ::grader::f16::to_int<I, ::grader::f16::M, __GRADER_F>(__GRADER_BITS(h)); \
    }
#define __GRADER_FROM_INTEGER(s, I, m, M) \
    static __inline__ __GRADER_T __GRADER_NAME(__##s##2, __GRADER_N, _##m)(const I i) { \
        return __GRADER_MAKE(__GRADER_ROUND(M, ::grader::f16::from_int(i))); \
    }
#define __GRADER_MODE(m, M) \
    static __inline__ __GRADER_T __GRADER_NAME(__float2, __GRADER_N, _##m)(const float a) { \
        return __GRADER_MAKE(__GRADER_ROUND(M, a)); \
    } \
    __GRADER_INTEGERS(__GRADER_TO_INTEGER, m, M) \
    __GRADER_INTEGERS(__GRADER_FROM_INTEGER, m, M)
__GRADER_MODE(rn, RN)
__GRADER_MODE(rz, RZ)
__GRADER_MODE(ru, RU)
__GRADER_MODE(rd, RD)
__GRADER_TO_INTEGER(char, signed char, rz, RZ)
__GRADER_TO_INTEGER(uchar, unsigned char, rz, RZ)
#undef __GRADER_MODE
#undef __GRADER_FROM_INTEGER
#undef __GRADER_TO_INTEGER
#undef __GRADER_INTEGERS

static __inline__ short __GRADER_NAME(__, __GRADER_N, _as_short)(const __GRADER_T h) {
    return (short)__GRADER_BITS(h);
}
static __inline__ unsigned short __GRADER_NAME(__, __GRADER_N, _as_ushort)(const __GRADER_T h) {
    return __GRADER_BITS(h);
}
static __inline__ __GRADER_T __GRADER_PASTE(__short_as_, __GRADER_N)(const short i) {
    return __GRADER_MAKE((unsigned short)i);
}
static __inline__ __GRADER_T __GRADER_PASTE(__ushort_as_, __GRADER_N)(const unsigned short i) {
    return __GRADER_MAKE(i);
}

/* -- pairs: x is the low half, y the high ---------------------------------------------------- */
static __inline__ __GRADER_T2 __GRADER_PASTE(make_, __GRADER_N2)(const __GRADER_T x,
                                                                 const __GRADER_T y) {
    return __GRADER_T2(x, y);
}
static __inline__ __GRADER_T2 __GRADER_PASTE(__halves2, __GRADER_N2)(const __GRADER_T a,
                                                                     const __GRADER_T b) {
    return __GRADER_T2(a, b);
}
static __inline__ __GRADER_T2 __GRADER_NAME(__, __GRADER_N, __GRADER_PASTE(2, __GRADER_N2))(
    const __GRADER_T a) {
    return __GRADER_T2(a, a);
}
static __inline__ __GRADER_T __GRADER_PASTE(__low2, __GRADER_N)(const __GRADER_T2 a) { return a.x; }
static __inline__ __GRADER_T __GRADER_PASTE(__high2, __GRADER_N)(const __GRADER_T2 a) { return a.y; }
static __inline__ __GRADER_T2 __GRADER_PASTE(__low2, __GRADER_N2)(const __GRADER_T2 a) {
    return __GRADER_T2(a.x, a.x);
}
static __inline__ __GRADER_T2 __GRADER_PASTE(__high2, __GRADER_N2)(const __GRADER_T2 a) {
    return __GRADER_T2(a.y, a.y);
}
static __inline__ __GRADER_T2 __GRADER_PASTE(__lows2, __GRADER_N2)(const __GRADER_T2 a,
                                                                   const __GRADER_T2 b) {
    return __GRADER_T2(a.x, b.x);
}
static __inline__ __GRADER_T2 __GRADER_PASTE(__highs2, __GRADER_N2)(const __GRADER_T2 a,
                                                                    const __GRADER_T2 b) {
    return __GRADER_T2(a.y, b.y);
}
static __inline__ __GRADER_T2 __lowhigh2highlow(const __GRADER_T2 a) { return __GRADER_T2(a.y, a.x); }
static __inline__ float __low2float(const __GRADER_T2 a) { return (float)a.x; }
static __inline__ float __high2float(const __GRADER_T2 a) { return (float)a.y; }
static __inline__ __GRADER_T2 __GRADER_NAME(__float2, __GRADER_N2, _rn)(const float a) {
    return __GRADER_T2(__GRADER_RN(a), __GRADER_RN(a));
}
static __inline__ __GRADER_T2 __GRADER_NAME(__floats2, __GRADER_N2, _rn)(const float a,
                                                                         const float b) {
    return __GRADER_T2(__GRADER_RN(a), __GRADER_RN(b));
}
static __inline__ __GRADER_T2 __GRADER_NAME(__float22, __GRADER_N2, _rn)(const float2 a) {
    return __GRADER_T2(__GRADER_RN(a.x), __GRADER_RN(a.y));
}
static __inline__ float2 __GRADER_NAME(__, __GRADER_N2, 2float2)(const __GRADER_T2 a) {
    return make_float2((float)a.x, (float)a.y);
}

/* -- arithmetic: the exact result rounded once (grader_half.h) ------------------------------- */
#define __GRADER_LANES(name, name2) \
    static __inline__ __GRADER_T2 name2(const __GRADER_T2 a) { \
        return __GRADER_T2(name(a.x), name(a.y)); \
    }
#define __GRADER_LANES_2(name, name2) \
    static __inline__ __GRADER_T2 name2(const __GRADER_T2 a, const __GRADER_T2 b) { \
        return __GRADER_T2(name(a.x, b.x), name(a.y, b.y)); \
    }
#define __GRADER_LANES_3(name, name2) \
    static __inline__ __GRADER_T2 name2(const __GRADER_T2 a, const __GRADER_T2 b, \
                                        const __GRADER_T2 c) { \
        return __GRADER_T2(name(a.x, b.x, c.x), name(a.y, b.y, c.y)); \
    }
/* op: its scalar and pair intrinsics, and their _rn and _sat forms */
#define __GRADER_ARITH(op, op2, exact) \
    static __inline__ __GRADER_T op(const __GRADER_T a, const __GRADER_T b) { \
        const double x = __GRADER_VALUE(a), y = __GRADER_VALUE(b); \
        return __GRADER_RN(exact); \
    } \
    static __inline__ __GRADER_T op##_sat(const __GRADER_T a, const __GRADER_T b) { \
        return __GRADER_MAKE(::grader::f16::sat<__GRADER_F>(__GRADER_BITS(op(a, b)))); \
    } \
    __GRADER_LANES_2(op, op2) \
    __GRADER_LANES_2(op##_sat, op2##_sat)
#define __GRADER_RN_FORM(op, op2) \
    static __inline__ __GRADER_T op##_rn(const __GRADER_T a, const __GRADER_T b) { return op(a, b); } \
    __GRADER_LANES_2(op##_rn, op2##_rn)
__GRADER_ARITH(__hadd, __hadd2, ::grader::f16::sum(x, y))
__GRADER_ARITH(__hsub, __hsub2, ::grader::f16::sum(x, -y))
__GRADER_ARITH(__hmul, __hmul2, x * y)  /* exact in a double */
__GRADER_RN_FORM(__hadd, __hadd2)
__GRADER_RN_FORM(__hsub, __hsub2)
__GRADER_RN_FORM(__hmul, __hmul2)
static __inline__ __GRADER_T __hdiv(const __GRADER_T a, const __GRADER_T b) {
    return __GRADER_RN(::grader::f16::quotient(__GRADER_VALUE(a), __GRADER_VALUE(b)));
}
__GRADER_LANES_2(__hdiv, __h2div)
static __inline__ __GRADER_T __hfma(const __GRADER_T a, const __GRADER_T b, const __GRADER_T c) {
    return __GRADER_RN(::grader::f16::sum(__GRADER_VALUE(a) * __GRADER_VALUE(b), __GRADER_VALUE(c)));
}
static __inline__ __GRADER_T __hfma_sat(const __GRADER_T a, const __GRADER_T b, const __GRADER_T c) {
    return __GRADER_MAKE(::grader::f16::sat<__GRADER_F>(__GRADER_BITS(__hfma(a, b, c))));
}
static __inline__ __GRADER_T __hfma_relu(const __GRADER_T a, const __GRADER_T b, const __GRADER_T c) {
    return __GRADER_MAKE(::grader::f16::relu<__GRADER_F>(__GRADER_BITS(__hfma(a, b, c))));
}
__GRADER_LANES_3(__hfma, __hfma2)
__GRADER_LANES_3(__hfma_sat, __hfma2_sat)
__GRADER_LANES_3(__hfma_relu, __hfma2_relu)
/* a*b + c of complex numbers (x real, y imaginary), in four fmas as CUDA's */
static __inline__ __GRADER_T2 __hcmadd(const __GRADER_T2 a, const __GRADER_T2 b, const __GRADER_T2 c) {
    const __GRADER_T re = __hfma(a.x, b.x, c.x), im = __hfma(a.x, b.y, c.y);
    const __GRADER_T minus = __GRADER_MAKE(__GRADER_BITS(a.y) ^ ::grader::f16::SIGN);
    return __GRADER_T2(__hfma(minus, b.y, re), __hfma(a.y, b.x, im));
}
static __inline__ __GRADER_T __hneg(const __GRADER_T a) {
    return __GRADER_MAKE(__GRADER_BITS(a) ^ ::grader::f16::SIGN);
}
static __inline__ __GRADER_T __habs(const __GRADER_T a) {
    return __GRADER_MAKE(__GRADER_BITS(a) & 0x7fffu);
}
__GRADER_LANES(__hneg, __hneg2)
__GRADER_LANES(__habs, __habs2)
#undef __GRADER_RN_FORM
#undef __GRADER_ARITH

/* -- comparisons: ordered (a NaN makes them false) and unordered (true) ----------------------
   Each has a pair form giving 1.0 or 0.0 in each lane, a _mask form giving 0xFFFF in each
   true lane, and a b form true when both lanes are. */
#define __GRADER_COMPARE(op, holds) \
    static __inline__ bool __h##op(const __GRADER_T a, const __GRADER_T b) { \
        const float x = (float)a, y = (float)b; \
        return holds; \
    } \
    static __inline__ __GRADER_T2 __h##op##2(const __GRADER_T2 a, const __GRADER_T2 b) { \
        const unsigned short one = ::grader::f16::one<__GRADER_F>(); \
        return __GRADER_T2(__GRADER_MAKE(__h##op(a.x, b.x) ? one : 0), \
                           __GRADER_MAKE(__h##op(a.y, b.y) ? one : 0)); \
    } \
    static __inline__ unsigned __h##op##2_mask(const __GRADER_T2 a, const __GRADER_T2 b) { \
        return (__h##op(a.x, b.x) ? 0xffffu : 0u) | (__h##op(a.y, b.y) ? 0xffff0000u : 0u); \
    } \
    static __inline__ bool __hb##op##2(const __GRADER_T2 a, const __GRADER_T2 b) { \
        return __h##op(a.x, b.x) && __h##op(a.y, b.y); \
    }
__GRADER_COMPARE(eq, x == y)
__GRADER_COMPARE(ne, x < y || x > y)
__GRADER_COMPARE(le, x <= y)
__GRADER_COMPARE(ge, x >= y)
__GRADER_COMPARE(lt, x < y)
__GRADER_COMPARE(gt, x > y)
__GRADER_COMPARE(equ, !(x < y || x > y))
__GRADER_COMPARE(neu, !(x == y))
__GRADER_COMPARE(leu, !(x > y))
__GRADER_COMPARE(geu, !(x < y))
__GRADER_COMPARE(ltu, !(x >= y))
__GRADER_COMPARE(gtu, !(x <= y))
#undef __GRADER_COMPARE
static __inline__ bool __hisnan(const __GRADER_T a) {
    return ::grader::f16::is_nan<__GRADER_F>(__GRADER_BITS(a));
}
static __inline__ __GRADER_T2 __hisnan2(const __GRADER_T2 a) {
    const unsigned short one = ::grader::f16::one<__GRADER_F>();
    return __GRADER_T2(__GRADER_MAKE(__hisnan(a.x) ? one : 0), __GRADER_MAKE(__hisnan(a.y) ? one : 0));
}
/* 1 for +infinity, -1 for -infinity, else 0 */
static __inline__ int __hisinf(const __GRADER_T a) {
    const unsigned short b = __GRADER_BITS(a), inf = ::grader::f16::inf<__GRADER_F>();
    return b == inf ? 1 : b == (inf | ::grader::f16::SIGN) ? -1 : 0;
}
static __inline__ __GRADER_T __hmax(const __GRADER_T a, const __GRADER_T b) {
    return __GRADER_MAKE(::grader::f16::max<__GRADER_F>(__GRADER_BITS(a), __GRADER_BITS(b)));
}
static __inline__ __GRADER_T __hmin(const __GRADER_T a, const __GRADER_T b) {
    return __GRADER_MAKE(::grader::f16::min<__GRADER_F>(__GRADER_BITS(a), __GRADER_BITS(b)));
}
/* the _nan forms: a NaN on either side gives the canonical NaN */
static __inline__ __GRADER_T __hmax_nan(const __GRADER_T a, const __GRADER_T b) {
    return __hisnan(a) || __hisnan(b) ? __GRADER_MAKE(::grader::f16::NAN_BITS) : __hmax(a, b);
}
static __inline__ __GRADER_T __hmin_nan(const __GRADER_T a, const __GRADER_T b) {
    return __hisnan(a) || __hisnan(b) ? __GRADER_MAKE(::grader::f16::NAN_BITS) : __hmin(a, b);
}
__GRADER_LANES_2(__hmax, __hmax2)
__GRADER_LANES_2(__hmin, __hmin2)
__GRADER_LANES_2(__hmax_nan, __hmax2_nan)
__GRADER_LANES_2(__hmin_nan, __hmin2_nan)

/* -- maths: the exact value rounded to nearest even (checked for every input, against exact
   or 60-digit values, in tests/cpu/test_half.py) --------------------------------------------- */
#define __GRADER_MATHS(stem, value) \
    static __inline__ __GRADER_T h##stem(const __GRADER_T a) { \
        const double x = __GRADER_VALUE(a); \
        return __GRADER_RN(value); \
    } \
    __GRADER_LANES(h##stem, h2##stem)
__GRADER_MATHS(sqrt, ::grader::f16::root(x))
__GRADER_MATHS(rsqrt, 1.0 / std::sqrt(x))
__GRADER_MATHS(rcp, ::grader::f16::quotient(1.0, x))
__GRADER_MATHS(exp, std::exp(x))
__GRADER_MATHS(exp2, std::exp2(x))
__GRADER_MATHS(exp10, std::pow(10.0, x))
__GRADER_MATHS(log, std::log(x))
__GRADER_MATHS(log2, std::log2(x))
__GRADER_MATHS(log10, std::log10(x))
__GRADER_MATHS(ceil, std::ceil(x))
__GRADER_MATHS(floor, std::floor(x))
__GRADER_MATHS(trunc, std::trunc(x))
__GRADER_MATHS(rint, std::nearbyint(x))
#undef __GRADER_MATHS
/* Sine, cosine and tanh: a call that is compiled stops the compile with this sentence. */
#define __GRADER_GPU_ONLY(stem, what) \
    static __GRADER_T h##stem(const __GRADER_T) __attribute__((error( \
        "the CPU backend cannot run h" #stem " (half-precision " what "): remove it, or grade " \
        "on a GPU with --backend cuda"))); \
    static __GRADER_T2 h2##stem(const __GRADER_T2) __attribute__((error( \
        "the CPU backend cannot run h2" #stem " (half-precision " what "): remove it, or " \
        "grade on a GPU with --backend cuda")));
__GRADER_GPU_ONLY(sin, "sine")
__GRADER_GPU_ONLY(cos, "cosine")
__GRADER_GPU_ONLY(tanh, "tanh")
__GRADER_GPU_ONLY(tanh_approx, "tanh")
#undef __GRADER_GPU_ONLY

/* -- operators, as CUDA defines them for device code ----------------------------------------- */
#define __GRADER_OPERATORS(T, add, sub, mul, div, neg, eq, ne, gt, lt, ge, le) \
    static __inline__ T operator+(const T& a, const T& b) { return add(a, b); } \
    static __inline__ T operator-(const T& a, const T& b) { return sub(a, b); } \
    static __inline__ T operator*(const T& a, const T& b) { return mul(a, b); } \
    static __inline__ T operator/(const T& a, const T& b) { return div(a, b); } \
    static __inline__ T& operator+=(T& a, const T& b) { return a = add(a, b); } \
    static __inline__ T& operator-=(T& a, const T& b) { return a = sub(a, b); } \
    static __inline__ T& operator*=(T& a, const T& b) { return a = mul(a, b); } \
    static __inline__ T& operator/=(T& a, const T& b) { return a = div(a, b); } \
    static __inline__ T operator+(const T& a) { return a; } \
    static __inline__ T operator-(const T& a) { return neg(a); } \
    static __inline__ bool operator==(const T& a, const T& b) { return eq(a, b); } \
    static __inline__ bool operator!=(const T& a, const T& b) { return ne(a, b); } \
    static __inline__ bool operator>(const T& a, const T& b) { return gt(a, b); } \
    static __inline__ bool operator<(const T& a, const T& b) { return lt(a, b); } \
    static __inline__ bool operator>=(const T& a, const T& b) { return ge(a, b); } \
    static __inline__ bool operator<=(const T& a, const T& b) { return le(a, b); }
__GRADER_OPERATORS(__GRADER_T, __hadd, __hsub, __hmul, __hdiv, __hneg, __heq, __hneu, __hgt, __hlt,
                   __hge, __hle)
__GRADER_OPERATORS(__GRADER_T2, __hadd2, __hsub2, __hmul2, __h2div, __hneg2, __hbeq2, __hbneu2,
                   __hbgt2, __hblt2, __hbge2, __hble2)
#undef __GRADER_OPERATORS
#define __GRADER_STEPS(T, ONE) \
    static __inline__ T& operator++(T& h) { return h += ONE; } \
    static __inline__ T& operator--(T& h) { return h -= ONE; } \
    static __inline__ T operator++(T& h, int) { const T old = h; h += ONE; return old; } \
    static __inline__ T operator--(T& h, int) { const T old = h; h -= ONE; return old; }
__GRADER_STEPS(__GRADER_T, __GRADER_MAKE(::grader::f16::one<__GRADER_F>()))
__GRADER_STEPS(__GRADER_T2, __GRADER_T2(__GRADER_MAKE(::grader::f16::one<__GRADER_F>()),
                                        __GRADER_MAKE(::grader::f16::one<__GRADER_F>())))
#undef __GRADER_STEPS

/* -- atomics: a compare-and-swap loop on the bits (grader_cuda.h), each add rounded as
   __hadd; a pair's lanes added together ------------------------------------------------------ */
static __inline__ __GRADER_T atomicAdd(__GRADER_T* a, const __GRADER_T v) {
    return ::grader::atomic_float<__GRADER_T, unsigned short>(a, v, ::grader::add_op());
}
static __inline__ __GRADER_T2 atomicAdd(__GRADER_T2* a, const __GRADER_T2 v) {
    return ::grader::atomic_float<__GRADER_T2, unsigned int>(a, v, ::grader::add_op());
}

#undef __GRADER_LANES
#undef __GRADER_LANES_2
#undef __GRADER_LANES_3
#undef __GRADER_RN
#undef __GRADER_ROUND
#undef __GRADER_VALUE
#undef __GRADER_MAKE
#undef __GRADER_BITS
#undef __GRADER_NAME
#undef __GRADER_PASTE
#undef __GRADER_PASTE_
