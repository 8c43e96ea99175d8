"""Exact references for the CUDA shim's floating-point intrinsics (tests/cpu/test_rounding.py,
tests/cpu/test_half.py): a rational value rounded to a binary format in one of CUDA's four
modes, IEEE 754's results for the arithmetic operations around it, and sameness bit for
bit. A format is (precision, least exponent, overflow exponent): float32 is (24, -149, 128),
the least exponent that of the smallest subnormal."""

from __future__ import annotations

import math
from fractions import Fraction


def rounded(x: Fraction, fmt, mode: str) -> float:
    """x rounded to the format in the mode, as a Python float (a nonzero x that rounds to
    zero keeps its sign). In integers: x's last kept bit is 2^q, the rest a remainder."""
    prec, least, over = fmt
    sign = -1.0 if x < 0 else 1.0
    num, den = abs(x.numerator), x.denominator
    if num == 0:
        return 0.0
    e = num.bit_length() - den.bit_length()  # x lies in [2^e, 2^(e+1)), or just below
    if (num if e >= 0 else num << -e) < (den << e if e >= 0 else den):
        e -= 1
    q = max(e - prec + 1, least)
    scaled, whole = (num, den << q) if q >= 0 else (num << -q, den)
    n, rest = divmod(scaled, whole)
    up = {
        "rn": 2 * rest > whole or (2 * rest == whole and n % 2 == 1),
        "rz": False,
        "ru": rest > 0 and sign > 0,
        "rd": rest > 0 and sign < 0,
    }[mode]
    n += up
    if q > over - prec or (q == over - prec and n >= 2**prec):  # overflow
        largest = math.ldexp(2**prec - 1, over - prec)
        toward_zero = mode == "rz" or (mode == "ru" and sign < 0) or (mode == "rd" and sign > 0)
        return sign * largest if toward_zero else sign * math.inf
    return sign * math.ldexp(n, q) if n else math.copysign(0.0, sign)


def exact_sqrt(x: Fraction, fmt, mode: str) -> float:
    """sqrt(x) rounded: isqrt gives sqrt(x) within 2^-k; where it is not exact, a point
    strictly inside that interval rounds as it does (no rounding boundary lies inside)."""
    k = 1200
    lo = Fraction(math.isqrt(x.numerator * 4**k // x.denominator), 2**k)
    if lo * lo == x:
        return rounded(lo, fmt, mode)
    return rounded(lo + Fraction(1, 2 ** (k + 1)), fmt, mode)


def zero_sum(t1: float, t2: float, mode: str) -> float:
    """An exact zero sum's sign (IEEE 754 6.3): -0 in round-down unless both terms are +0;
    in the other modes -0 only when both are -0."""
    pos = math.copysign(1, t1) > 0, math.copysign(1, t2) > 0
    if mode == "rd":
        return 0.0 if all(pos) else -0.0
    return -0.0 if not any(pos) else 0.0


def is_nan(*xs) -> bool:
    return any(isinstance(x, float) and math.isnan(x) for x in xs)


def ref_arith(op: str, args: tuple, fmt, mode: str) -> float:
    """The exact result of `op` on finite operands, rounded; IEEE's rules elsewhere."""
    if is_nan(*args):
        return math.nan
    a = args[0]
    if op in ("add", "sub"):
        b = args[1] if op == "add" else -args[1]
        if math.isinf(a) or math.isinf(b):
            return math.nan if math.isinf(a) and math.isinf(b) and a != b else a + b
        s = Fraction(a) + Fraction(b)
        return zero_sum(a, b, mode) if s == 0 else rounded(s, fmt, mode)
    if op == "mul":
        b = args[1]
        if math.isinf(a) or math.isinf(b):
            return math.nan if a == 0 or b == 0 else a * b
        if a == 0 or b == 0:
            return math.copysign(0.0, a) * math.copysign(1, b)
        return rounded(Fraction(a) * Fraction(b), fmt, mode)
    if op in ("div", "rcp"):
        a, b = (1.0, a) if op == "rcp" else (a, args[1])
        if (math.isinf(a) and math.isinf(b)) or (a == 0 and b == 0):
            return math.nan
        sign = math.copysign(1, a) * math.copysign(1, b)
        if math.isinf(a) or b == 0:
            return sign * math.inf
        if math.isinf(b) or a == 0:
            return sign * 0.0
        return rounded(Fraction(a) / Fraction(b), fmt, mode)
    if op in ("sqrt", "rsqrt"):
        if a < 0:
            return math.nan
        if op == "sqrt":
            return a if a == 0 or math.isinf(a) else exact_sqrt(Fraction(a), fmt, mode)
        if a == 0:
            return math.copysign(math.inf, a)
        return 0.0 if math.isinf(a) else exact_sqrt(1 / Fraction(a), fmt, mode)
    assert op == "fma"
    b, c = args[1], args[2]
    if math.isinf(a) or math.isinf(b):
        if a == 0 or b == 0:
            return math.nan
        p = math.copysign(math.inf, a) * math.copysign(1, b)
        return math.nan if math.isinf(c) and c != p else p
    if math.isinf(c):
        return c
    s = Fraction(a) * Fraction(b) + Fraction(c)
    if s == 0:
        return zero_sum(math.copysign(0.0, a) * math.copysign(1, b) if a * b == 0 else a * b,
                        c, mode)  # fmt: skip
    return rounded(s, fmt, mode)


def ref_to_int(x: float, lo: int, hi: int, mode: str) -> int:
    """x rounded to an integer in the mode, saturated to [lo, hi] (NaN: 0), as PTX's cvt."""
    if math.isnan(x):
        return 0
    if math.isinf(x):
        return hi if x > 0 else lo
    f = Fraction(x)
    n = {"rz": math.trunc(f), "ru": math.ceil(f), "rd": math.floor(f), "rn": round(f)}[mode]
    return min(max(n, lo), hi)


def same(got, want) -> bool:
    if isinstance(want, float):
        if math.isnan(want):
            return math.isnan(got)
        return got == want and math.copysign(1, got) == math.copysign(1, want)
    return got == want
