"""cuda_fp16.h's and cuda_bf16.h's intrinsics as data, for tests/cpu/test_half.py (the CPU
backend against exact arithmetic) and tests/gpu/test_half_on_gpu.py (a GPU against the
same, and against the CPU backend): each intrinsic of __half and __nv_bfloat16 with the
result CUDA documents for it, one kernel that runs any of them on records of operands, and
the operands: every 16-bit value for the conversion to float, the cross conversions and the
maths functions; every 16th value's neighbourhood (itself, its midpoints, a float's step
either side) for the conversions from float in each mode; edge cases, ties, cancellations
and random bits for the rest.

A result is the exact value rounded (exact_kit) and compared bit for bit, any NaN equal to
any NaN. A maths function's exact value is transcendental or a root: its result is checked
to lie in the interval that rounds to the result's bits (Nearest), from a double near it,
or where that double lies near the interval's ends, from the exact value itself."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from decimal import Decimal, localcontext
from fractions import Fraction
from functools import cache
from pathlib import Path

import numpy as np
from exact_kit import ref_arith, ref_to_int, rounded, same

from grader.model.launch import Buffer, Launch, Scalar
from grader.model.source import Submission

MODES = ("rn", "rz", "ru", "rd")
KERNEL = "half_ops"


@dataclass(frozen=True)
class Fmt:
    label: str
    ctype: str  # __half
    pair: str  # __half2
    word: str  # the type in CUDA's names: __float2half_rn, __half2float
    word2: str  # half2: __floats2half2_rn
    frac: int  # fraction bits
    emin: int  # least normal exponent

    @property
    def exact(self) -> tuple[int, int, int]:
        """exact_kit's (precision, least exponent, overflow exponent)"""
        return (self.frac + 1, self.emin - self.frac, 2 - self.emin)

    @property
    def inf(self) -> int:
        return 0x8000 - (1 << self.frac)

    @property
    def one(self) -> int:
        return (1 - self.emin) << self.frac


HALF = Fmt("half", "__half", "__half2", "half", "half2", 10, -14)
BF16 = Fmt("bf16", "__nv_bfloat16", "__nv_bfloat162", "bfloat16", "bfloat162", 7, -126)
FORMATS = (HALF, BF16)


def other(fmt: Fmt) -> Fmt:
    return BF16 if fmt is HALF else HALF


def value(fmt: Fmt, b: int) -> float:
    """The 16-bit value's exact value."""
    sign = -1.0 if b & 0x8000 else 1.0
    e, m = (b & 0x7FFF) >> fmt.frac, b & ((1 << fmt.frac) - 1)
    if e == 0x7FFF >> fmt.frac:
        return math.nan if m else sign * math.inf
    if e == 0:
        return sign * math.ldexp(m, fmt.emin - fmt.frac)
    return sign * math.ldexp(m | 1 << fmt.frac, e - 1 + fmt.emin - fmt.frac)


def bits_of(fmt: Fmt, x: float) -> int:
    """The bits of x, which the format holds exactly (NaN: the canonical NaN)."""
    if math.isnan(x):
        return 0x7FFF
    sign = 0x8000 if math.copysign(1, x) < 0 else 0
    x = abs(x)
    if x in (0, math.inf):
        return sign | (fmt.inf if x else 0)
    q = max(math.frexp(x)[1] - 1, fmt.emin) - fmt.frac
    n = math.ldexp(x, -q)
    assert n == int(n), f"{x} is no {fmt.label} value"
    return sign | (((q - fmt.emin + fmt.frac) << fmt.frac) + int(n))


def is_nan(fmt: Fmt, b: int) -> bool:
    return b & 0x7FFF > fmt.inf


def nearest_bits(fmt: Fmt, x: Fraction | float, mode: str = "rn") -> int:
    """x's exact value rounded to the format in the mode, as bits."""
    if isinstance(x, float) and (math.isnan(x) or math.isinf(x) or x == 0):
        return bits_of(fmt, x)
    return _rounded_bits(fmt, Fraction(x), mode)


@cache
def _rounded_bits(fmt: Fmt, x: Fraction, mode: str) -> int:
    """Cached apart from nearest_bits: -0.0 and 0.0 are one key to a cache."""
    return bits_of(fmt, rounded(x, fmt.exact, mode))


# -- what a maths function's result must be ------------------------------------------------


def _interval(fmt: Fmt, b: int) -> tuple[float, float, bool]:
    """The values that round to nearest to bits b: (low, high, whether the ends are in)."""
    mag, sign = b & 0x7FFF, -1.0 if b & 0x8000 else 1.0
    top = math.ldexp(1.0, fmt.exact[2])  # where the first value past the largest would be
    step = [value(fmt, m) if m < fmt.inf else top for m in (mag - 1, mag, mag + 1)]
    if mag == fmt.inf:
        lo, hi = (value(fmt, fmt.inf - 1) + top) / 2, math.inf
    else:
        lo = (step[0] + step[1]) / 2 if mag else 0.0
        hi = (step[1] + step[2]) / 2
    ends = mag % 2 == 0  # a tie rounds to the even neighbour
    return (lo, hi, ends) if sign > 0 else (-hi, -lo, ends)


@dataclass(frozen=True)
class Nearest:
    """f(x) rounded to nearest: `near` is a double within 2^-50 of f(x), relatively, and
    `cmp(v)` the sign of f(x) - v, exactly, for the rare v that `near` cannot decide."""

    fmt: Fmt
    near: float
    cmp: Callable[[float], int]

    def holds(self, b: int) -> bool:
        if is_nan(self.fmt, b) or math.isnan(self.near):
            return is_nan(self.fmt, b) and math.isnan(self.near)
        lo, hi, ends = _interval(self.fmt, b)
        slack = 2.0**-45
        if lo + slack * abs(lo) < self.near < hi - slack * abs(hi):
            return True
        above = math.isinf(lo) or self.cmp(lo) > 0 or (ends and self.cmp(lo) == 0)
        below = math.isinf(hi) or self.cmp(hi) < 0 or (ends and self.cmp(hi) == 0)
        return above and below


def _sign(d) -> int:
    return (d > 0) - (d < 0)


def _decimal(fn: Callable[[], Decimal]) -> Decimal:
    with localcontext() as ctx:
        ctx.prec = 60
        return fn()


def _power_cmp(x: float, base: int) -> Callable[[float], int]:
    """sign(base^x - v): exact where x is an integer, else in 60 digits (base^x, for a
    rational x not an integer, is no rational number: it meets no v exactly). Past
    2^1100 or below 2^-1100, base^x is beyond every double, and is not computed."""

    def cmp(v: float) -> int:
        if v <= 0:
            return 1
        if abs(x) > 1100:
            return _sign(x)
        if x == int(x):
            return _sign(Fraction(base) ** int(x) - Fraction(v))
        return _sign(_decimal(lambda: Decimal(x) * Decimal(base).ln() - Decimal(v).ln()))

    return cmp


def _log_cmp(x: float, base: int) -> Callable[[float], int]:
    """sign(log_base(x) - v), as x against base^v (exact where v is an integer)."""

    def cmp(v: float) -> int:
        if v == int(v):
            return _sign(Fraction(x) - Fraction(base) ** int(v))
        return _sign(_decimal(lambda: Decimal(x).ln() - Decimal(v) * Decimal(base).ln()))

    return cmp


def _safe(fn: Callable[[float], float], x: float) -> float:
    try:
        return fn(x)
    except OverflowError:
        return math.inf


def maths_want(fmt: Fmt, stem: str, b: int):
    """hSTEM(x)'s result: bits where IEEE 754 fixes them, else a Nearest."""
    x = value(fmt, b)
    if math.isnan(x):
        return 0x7FFF
    if stem in ("ceil", "floor", "trunc", "rint"):
        return bits_of(fmt, float(getattr(np, stem)(x)))
    if stem == "rcp":
        return nearest_bits(fmt, 1 / Fraction(x)) if x and not math.isinf(x) else (
            bits_of(fmt, math.copysign(0.0 if x else math.inf, x)))  # fmt: skip
    if stem in ("sqrt", "rsqrt"):
        if x < 0:
            return 0x7FFF
        if x == 0 or math.isinf(x):
            flip = stem == "rsqrt"
            return bits_of(fmt, math.copysign(math.inf if (x == 0) == flip else 0.0, x))
        if stem == "sqrt":
            cmp = lambda v: 1 if v < 0 else _sign(Fraction(x) - Fraction(v) ** 2)  # noqa: E731
            return Nearest(fmt, math.sqrt(x), cmp)
        cmp = lambda v: 1 if v <= 0 else _sign(1 - Fraction(v) ** 2 * Fraction(x))  # noqa: E731
        return Nearest(fmt, 1 / math.sqrt(x), cmp)
    if stem.startswith("exp"):
        if math.isinf(x):
            return bits_of(fmt, math.inf if x > 0 else 0.0)
        base = {"exp": None, "exp2": 2, "exp10": 10}[stem]
        if base is None:
            cmp = lambda v: 1 if v <= 0 else _sign(_decimal(lambda: Decimal(x) - Decimal(v).ln()))  # noqa: E731
            return Nearest(fmt, _safe(math.exp, x), cmp) if x else fmt.one
        return Nearest(fmt, _safe(lambda t: float(base) ** t, x), _power_cmp(x, base))
    # the logarithms
    if x < 0:
        return 0x7FFF
    if x == 0 or math.isinf(x):
        return bits_of(fmt, -math.inf if x == 0 else math.inf)
    if x == 1:
        return 0
    if stem == "log":
        cmp = lambda v: _sign(_decimal(lambda: Decimal(x).ln() - Decimal(v)))  # noqa: E731
        return Nearest(fmt, math.log(x), cmp)
    base, near = (2, math.log2(x)) if stem == "log2" else (10, math.log10(x))
    return Nearest(fmt, near, _log_cmp(x, base))


# -- the intrinsics ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Op:
    """One intrinsic or operator on one format: `call` is C with operands a, b, c of the
    `kinds` (READ), its result of kind `result` (WRITE); `want` takes the operands'
    values (a 16-bit value's bits, a pair's two, a float, an integer) and gives the result
    CUDA documents; `draw` names the operands it is run on (operands())."""

    fmt: Fmt
    call: str
    kinds: str
    result: str
    want: Callable
    draw: str

    @property
    def name(self) -> str:
        return f"{self.fmt.label}: {self.call}"


# an integer kind's name in CUDA's conversions, and its range
INTEGERS = {"s": ("short", -(2**15), 2**15 - 1), "S": ("ushort", 0, 2**16 - 1),
            "i": ("int", -(2**31), 2**31 - 1), "u": ("uint", 0, 2**32 - 1),
            "l": ("ll", -(2**63), 2**63 - 1), "L": ("ull", 0, 2**64 - 1),
            "c": ("char", -128, 127), "C": ("uchar", 0, 255)}  # fmt: skip
COMPARISONS = {
    "eq": lambda x, y: x == y, "ne": lambda x, y: x < y or x > y,
    "le": lambda x, y: x <= y, "ge": lambda x, y: x >= y,
    "lt": lambda x, y: x < y, "gt": lambda x, y: x > y,
    "equ": lambda x, y: not (x < y or x > y), "neu": lambda x, y: x != y,
    "leu": lambda x, y: not x > y, "geu": lambda x, y: not x < y,
    "ltu": lambda x, y: not x >= y, "gtu": lambda x, y: not x <= y,
}  # fmt: skip
MATHS = ("sqrt", "rsqrt", "rcp", "exp", "exp2", "exp10", "log", "log2", "log10")
ROUNDINGS = ("ceil", "floor", "trunc", "rint")


def to_integer(fmt: Fmt, b: int, kind: str, mode: str) -> int:
    """As PTX's cvt: saturated, NaN 0; a 64-bit integer's NaN is 0x8000000000000000."""
    _, lo, hi = INTEGERS[kind]
    if is_nan(fmt, b) and kind in "lL":
        return 2**63 if kind == "L" else -(2**63)
    return ref_to_int(value(fmt, b), lo, hi, mode)


@cache
def _exact(fmt: Fmt, op: str, bits: tuple[int, ...]) -> int:
    """exact_kit's IEEE result of op on 16-bit operands, rounded to nearest even"""
    return bits_of(fmt, ref_arith(op, tuple(value(fmt, b) for b in bits), fmt.exact, "rn"))


def _ops(fmt: Fmt) -> list[Op]:
    w, t = fmt.word, fmt.ctype
    out: list[Op] = []

    def add(call, kinds, result, want, draw="some"):
        out.append(Op(fmt, call, kinds, result, want, draw))

    def rn(x):
        return nearest_bits(fmt, x)

    def arith(op):
        return lambda *bits: _exact(fmt, op, bits)

    def sat(bits):
        return 0 if is_nan(fmt, bits) or bits & 0x8000 else min(bits, fmt.one)

    def relu(bits):
        return 0x7FFF if is_nan(fmt, bits) else 0 if bits & 0x8000 else bits

    # -- conversions
    add(f"__{w}2float(a)", "h", "f", lambda b: value(fmt, b), "every")
    add("(float)a", "h", "f", lambda b: value(fmt, b))
    add(f"{t}(a)", "o", "h", lambda b: rn(value(other(fmt), b)), "every")
    for m in MODES:
        add(f"__float2{w}_{m}(a)", "f", "h", lambda x, m=m: nearest_bits(fmt, x, m), "dense")
        for k in "sSiulL":
            s = INTEGERS[k][0]
            add(f"__{s}2{w}_{m}(a)", k, "h", lambda i, m=m: nearest_bits(fmt, Fraction(i), m),
                "integers")  # fmt: skip
            add(f"__{w}2{s}_{m}(a)", "h", k, lambda b, k=k, m=m: to_integer(fmt, b, k, m))
    add(f"__float2{w}(a)", "f", "h", rn, "dense")
    add(f"{t}(a)", "f", "h", rn, "dense")
    add(f"__double2{w}(a)", "d", "h", rn, "doubles")
    add(f"{t}(a)", "d", "h", rn, "doubles")
    for k in "iulL":
        add(f"{t}(a)", k, "h", lambda i: rn(Fraction(i)), "integers")
    for k in "cC":
        add(f"__{w}2{INTEGERS[k][0]}_rz(a)", "h", k, lambda b, k=k: to_integer(fmt, b, k, "rz"))
    for c, k in (("(int)a", "i"), ("(unsigned)a", "u"), ("(short)a", "s"), ("(long long)a", "l")):
        add(c, "h", k, lambda b, k=k: to_integer(fmt, b, k, "rz"))
    add("(bool)a", "h", "b", lambda b: int(b & 0x7FFF != 0))
    add(f"__{w}_as_short(a)", "h", "s", lambda b: b - (b & 0x8000) * 2)
    # -- arithmetic
    for op, name in (("add", "__hadd"), ("sub", "__hsub"), ("mul", "__hmul")):
        add(f"{name}(a, b)", "hh", "h", arith(op), "pairs")
        add(f"{name}_rn(a, b)", "hh", "h", arith(op), "pairs")
        add(f"{name}_sat(a, b)", "hh", "h", lambda a, b, op=op: sat(arith(op)(a, b)), "pairs")
    add("__hdiv(a, b)", "hh", "h", arith("div"), "pairs")
    for c, op in (("a + b", "add"), ("a - b", "sub"), ("a * b", "mul"), ("a / b", "div"),
                  ("(a += b)", "add"), ("(a *= b)", "mul")):  # fmt: skip
        add(c, "hh", "h", arith(op), "pairs")
    add("__hfma(a, b, c)", "hhh", "h", arith("fma"), "triples")
    add("__hfma_sat(a, b, c)", "hhh", "h", lambda *x: sat(arith("fma")(*x)), "triples")
    add("__hfma_relu(a, b, c)", "hhh", "h", lambda *x: relu(arith("fma")(*x)), "triples")
    add("(++a)", "h", "h", lambda b: arith("add")(b, fmt.one))
    for c in ("__hneg(a)", "-a"):
        add(c, "h", "h", lambda b: b ^ 0x8000)
    add("__habs(a)", "h", "h", lambda b: b & 0x7FFF)
    # -- comparisons
    for op, holds in COMPARISONS.items():
        add(f"__h{op}(a, b)", "hh", "b", lambda a, b, h=holds: int(h(value(fmt, a), value(fmt, b))),
            "pairs")  # fmt: skip
    for c, op in (("a == b", "eq"), ("a != b", "neu"), ("a < b", "lt"), ("a >= b", "ge")):
        add(c, "hh", "b", lambda a, b, h=COMPARISONS[op]: int(h(value(fmt, a), value(fmt, b))),
            "pairs")  # fmt: skip
    add("__hisnan(a)", "h", "b", lambda b: int(is_nan(fmt, b)))
    add("__hisinf(a)", "h", "i", lambda b: {fmt.inf: 1, fmt.inf | 0x8000: -1}.get(b, 0))

    def extreme(pick_max, nan_wins):
        def want(a, b):
            if is_nan(fmt, a) or is_nan(fmt, b):
                both = is_nan(fmt, a) and is_nan(fmt, b)
                return 0x7FFF if both or nan_wins else (b if is_nan(fmt, a) else a)
            x, y = value(fmt, a), value(fmt, b)
            if x != y:
                return a if (x > y) == pick_max else b
            return b if bool(a & 0x8000) == pick_max else a  # +0 is above -0

        return want

    extremes = (("__hmax", True, False), ("__hmin", False, False), ("__hmax_nan", True, True),
                ("__hmin_nan", False, True))  # fmt: skip
    for name, pick_max, nan_wins in extremes:
        add(f"{name}(a, b)", "hh", "h", extreme(pick_max, nan_wins), "pairs")
    # -- maths
    for stem in MATHS:
        add(f"h{stem}(a)", "h", "h", lambda b, s=stem: maths_want(fmt, s, b), "every")
    for stem in ROUNDINGS:
        add(f"h{stem}(a)", "h", "h", lambda b, s=stem: maths_want(fmt, s, b))
    out += _pair_ops(fmt, arith, sat, relu, extreme)
    return out


def _lanes(f):
    """A pair intrinsic's want from its scalar's, lane by lane."""
    return lambda *pairs: tuple(f(*(p[i] for p in pairs)) for i in (0, 1))


def _pair_ops(fmt: Fmt, arith, sat, relu, extreme) -> list[Op]:
    w, w2 = fmt.word, fmt.word2
    one = fmt.one

    def op(call, kinds, result, want):
        return Op(fmt, call, kinds, result, want, "lanes")

    def rn(x):
        return nearest_bits(fmt, x)

    def cmadd(a, b, c):  # four fmas, as CUDA's __hcmadd
        fma = arith("fma")
        re, im = fma(a[0], b[0], c[0]), fma(a[0], b[1], c[1])
        return (fma(a[1] ^ 0x8000, b[1], re), fma(a[1], b[0], im))

    def compare(name):
        holds = COMPARISONS[name]
        return lambda a, b: holds(value(fmt, a), value(fmt, b))

    return [
        op("__hadd2(a, b)", "pp", "p", _lanes(arith("add"))),
        op("__hsub2_sat(a, b)", "pp", "p", _lanes(lambda a, b: sat(arith("sub")(a, b)))),
        op("__hmul2_rn(a, b)", "pp", "p", _lanes(arith("mul"))),
        op("__h2div(a, b)", "pp", "p", _lanes(arith("div"))),
        op("__hfma2(a, b, c)", "ppp", "p", _lanes(arith("fma"))),
        op("__hfma2_relu(a, b, c)", "ppp", "p", _lanes(lambda *x: relu(arith("fma")(*x)))),
        op("__hcmadd(a, b, c)", "ppp", "p", cmadd),
        op("__hneg2(a)", "p", "p", _lanes(lambda b: b ^ 0x8000)),
        op("__habs2(a)", "p", "p", _lanes(lambda b: b & 0x7FFF)),
        op("__hmax2(a, b)", "pp", "p", _lanes(extreme(True, False))),
        op("__hmin2_nan(a, b)", "pp", "p", _lanes(extreme(False, True))),
        op("__hisnan2(a)", "p", "p", _lanes(lambda b: one if is_nan(fmt, b) else 0)),
        op("__hle2(a, b)", "pp", "p", _lanes(lambda a, b: one if compare("le")(a, b) else 0)),
        op(
            "__hgtu2_mask(a, b)",
            "pp",
            "u",
            lambda a, b: sum(0xFFFF << 16 * i for i in (0, 1) if compare("gtu")(a[i], b[i])),
        ),
        op("__hbeq2(a, b)", "pp", "b", lambda a, b: int(all(map(compare("eq"), a, b)))),
        op("__hbneu2(a, b)", "pp", "b", lambda a, b: int(all(map(compare("neu"), a, b)))),
        op("h2sqrt(a)", "p", "p", _lanes(lambda b: maths_want(fmt, "sqrt", b))),
        op("h2exp(a)", "p", "p", _lanes(lambda b: maths_want(fmt, "exp", b))),
        op("h2floor(a)", "p", "p", _lanes(lambda b: maths_want(fmt, "floor", b))),
        op("a + b", "pp", "p", _lanes(arith("add"))),
        op("a * b", "pp", "p", _lanes(arith("mul"))),
        op("-a", "p", "p", _lanes(lambda b: b ^ 0x8000)),
        op("a == b", "pp", "b", lambda a, b: int(all(map(compare("eq"), a, b)))),
        op("a != b", "pp", "b", lambda a, b: int(all(map(compare("neu"), a, b)))),
        op(f"__halves2{w2}(a, b)", "hh", "p", lambda a, b: (a, b)),
        op(f"make_{w2}(a, b)", "hh", "p", lambda a, b: (a, b)),
        op(f"__{w}2{w2}(a)", "h", "p", lambda a: (a, a)),
        op(f"__low2{w}(a)", "p", "h", lambda a: a[0]),
        op(f"__high2{w}(a)", "p", "h", lambda a: a[1]),
        op(f"__low2{w2}(a)", "p", "p", lambda a: (a[0], a[0])),
        op(f"__high2{w2}(a)", "p", "p", lambda a: (a[1], a[1])),
        op(f"__lows2{w2}(a, b)", "pp", "p", lambda a, b: (a[0], b[0])),
        op(f"__highs2{w2}(a, b)", "pp", "p", lambda a, b: (a[1], b[1])),
        op("__lowhigh2highlow(a)", "p", "p", lambda a: (a[1], a[0])),
        op("__low2float(a)", "p", "f", lambda a: value(fmt, a[0])),
        op("__high2float(a)", "p", "f", lambda a: value(fmt, a[1])),
        op(f"__float2{w2}_rn(a)", "f", "p", lambda x: (rn(x), rn(x))),
        op(f"__floats2{w2}_rn(a, b)", "ff", "p", lambda x, y: (rn(x), rn(y))),
        op(f"__float22{w2}_rn(a)", "g", "p", lambda g: (rn(g[0]), rn(g[1]))),
        op(f"__{w2}2float2(a)", "p", "g", lambda a: (value(fmt, a[0]), value(fmt, a[1]))),
    ]


OPS = [op for fmt in FORMATS for op in _ops(fmt)]


# -- the kernel -----------------------------------------------------------------------------

# each operand kind read from the record's words i (and j, for 64 bits)
READ = {
    "h": "__ushort_as_{w}((unsigned short)w[{i}])",
    "o": "__ushort_as_{ow}((unsigned short)w[{i}])",
    "p": "make_{w2}(__ushort_as_{w}((unsigned short)w[{i}]), "
         "__ushort_as_{w}((unsigned short)(w[{i}] >> 16)))",
    "f": "__uint_as_float(w[{i}])",
    "g": "make_float2(__uint_as_float(w[{i}]), __uint_as_float(w[{j}]))",
    "d": "__longlong_as_double((long long)(((unsigned long long)w[{j}] << 32) | w[{i}]))",
    "s": "(short)w[{i}]", "S": "(unsigned short)w[{i}]", "i": "(int)w[{i}]", "u": "w[{i}]",
    "l": "(long long)(((unsigned long long)w[{j}] << 32) | w[{i}])",
    "L": "(((unsigned long long)w[{j}] << 32) | w[{i}])",
}  # fmt: skip
WIDE = "gdlL"  # two words
# each result kind as 64 bits; the integers and bools sign-extended
WRITE = {
    "h": "__{w}_as_ushort(r)",
    "p": "((unsigned long long)__{w}_as_ushort(r.y) << 16 | __{w}_as_ushort(r.x))",
    "f": "__float_as_uint(r)",
    "g": "((unsigned long long)__float_as_uint(r.y) << 32 | __float_as_uint(r.x))",
}


def kernel_source(ops: list[Op] = OPS) -> str:
    """One thread per record of 4 words: the op's index, then its operands; 64 bits out."""
    cases = []
    for code, op in enumerate(ops):
        names = dict(w=op.fmt.word, w2=op.fmt.word2, ow=other(op.fmt).word)
        reads, at = [], 1
        for var, kind in zip("abc", op.kinds, strict=False):
            reads.append(f"auto {var} = {READ[kind].format(i=at, j=at + 1, **names)};")
            at += 2 if kind in WIDE else 1
        write = WRITE.get(op.result, "(long long)(r)").format(**names)
        cases.append(f"    case {code}: {{ {' '.join(reads)} auto r = {op.call}; "
                     f"bits = (unsigned long long)({write}); break; }}")  # fmt: skip
    return (
        "#include <cuda_bf16.h>\n"
        f"__global__ void {KERNEL}(const float* in, float* out, int n) {{\n"
        "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
        "  if (i >= n) return;\n"
        "  const unsigned* w = (const unsigned*)in + 4 * i;\n"
        "  unsigned long long bits = 0;\n"
        "  switch (w[0]) {\n" + "\n".join(cases) + "\n  }\n"
        "  ((unsigned*)out)[2 * i] = (unsigned)bits;\n"
        "  ((unsigned*)out)[2 * i + 1] = (unsigned)(bits >> 32);\n"
        "}\n"
    )


def _words(op: Op, args: tuple) -> list[int]:
    words: list[int] = []
    for kind, a in zip(op.kinds, args, strict=True):
        if kind == "p":
            words.append(a[0] | a[1] << 16)
        elif kind in "fg":
            words += [int(np.float32(x).view(np.uint32)) for x in (a if kind == "g" else (a,))]
        elif kind == "d":
            u = int(np.float64(a).view(np.uint64))
            words += [u & 0xFFFFFFFF, u >> 32]
        else:  # a 16-bit value's bits or an integer
            u = a & (2**64 - 1)
            words += [u & 0xFFFFFFFF, u >> 32] if kind in WIDE else [u & 0xFFFFFFFF]
    return words


def _got(kind: str, lo: int, hi: int):
    """A record's 64 result bits as the result kind's value."""
    if kind == "h":
        return lo & 0xFFFF
    if kind == "p":
        return (lo & 0xFFFF, lo >> 16)
    if kind in "fg":
        f32 = [float(np.uint32(u).view(np.float32)) for u in (lo, hi)]
        return f32[0] if kind == "f" else tuple(f32)
    u = lo | hi << 32
    return u if kind == "L" else u - (u >> 63 << 64)


def run(backend, records: list[tuple[int, tuple]], ops: list[Op] = OPS, timeout: float = 300.0):
    """Each record's result on `backend` (a CpuBackend or CudaBackend), as _got reads it."""
    words = np.zeros((len(records), 4), np.uint32)
    for row, (code, args) in enumerate(records):
        packed = [code, *_words(ops[code], args)]
        words[row, : len(packed)] = packed
    build = backend.build(Submission(Path("half_ops.cu"), kernel_source(ops)), {}, (256, 1, 1))
    assert build.ok, build.compile.log
    n = len(records)
    args = [Buffer("in", words.reshape(-1).view(np.float32), False),
            Buffer("out", np.zeros(2 * n, np.float32), True), Scalar("n", "int", n)]  # fmt: skip
    launch = Launch(KERNEL, ((n + 255) // 256, 1, 1), (256, 1, 1), 0, args, {})
    outcome = backend.run(build, launch, timeout)
    assert outcome.completed, [d.message for d in outcome.diagnostics]
    got = outcome.buffers["out"].data.view(np.uint32).reshape(n, 2)
    return [_got(ops[code].result, int(lo), int(hi))
            for (code, _), (lo, hi) in zip(records, got, strict=True)]  # fmt: skip


def agrees(op: Op, got, want) -> bool:
    if op.result in "hp":
        pairs = zip(got, want, strict=True) if op.result == "p" else [(got, want)]
        return all(_same16(op.fmt, g, w) for g, w in pairs)
    if op.result in "fg":
        return all(map(same, *((got, want) if op.result == "g" else ((got,), (want,)))))
    return got == want


def _same16(fmt: Fmt, got: int, want) -> bool:
    if isinstance(want, Nearest):
        return want.holds(got)
    return got == want or (is_nan(fmt, got) and is_nan(fmt, want))


def wrong(records, got, ops: list[Op] = OPS) -> dict[str, list[str]]:
    """Each op's records whose result is not what CUDA documents, as sentences."""
    out: dict[str, list[str]] = {}
    for (code, args), have in zip(records, got, strict=True):
        op = ops[code]
        want = op.want(*args)
        if not agrees(op, have, want):
            shown = want.near if isinstance(want, Nearest) else want
            said = f"{_shown(args)} gave {_shown(have)}, not {_shown(shown)}"
            out.setdefault(op.name, []).append(said)
    return out


def _shown(v) -> str:
    if isinstance(v, tuple):
        return "(" + ", ".join(map(_shown, v)) + ")"
    return f"{v:#06x}" if isinstance(v, int) and 0 <= v < 0x10000 else repr(v)


# -- operands -------------------------------------------------------------------------------


def edges(fmt: Fmt) -> list[int]:
    """Zeros, infinities, NaNs, the ends of the subnormals and normals, 1 and its
    neighbours, 0.5, 2, 3, and values whose products overflow or underflow."""
    f, one, inf = 1 << fmt.frac, fmt.one, fmt.inf
    half_range = (1 - fmt.emin) // 2 << fmt.frac
    mags = [0, 1, 2, 3, f - 1, f, f + 1, one - 1, one, one + 1, one - f, one + f,
            one + f + (f >> 1), inf - 2, inf - 1, inf, inf + 1, 0x7FFF,
            one + half_range + f - 1, one - half_range]  # fmt: skip
    return mags + [m | 0x8000 for m in mags]


def _random_bits(rng, count: int) -> list[int]:
    return [int(b) for b in rng.integers(0, 0x10000, count)]


def _near_pairs(rng, fmt: Fmt, count: int) -> list[tuple[int, int]]:
    """Pairs whose sums, differences and products often tie or carry: exponents a few
    steps apart, and fractions with their low bits clear half the time."""
    top = fmt.inf >> fmt.frac  # the exponent field of infinity
    out = []
    for _ in range(count):
        ea = int(rng.integers(1, top))
        eb = min(max(ea - int(rng.integers(-2, fmt.frac + 3)), 0), top - 1)
        fa, fb = (int(x) for x in rng.integers(0, 1 << fmt.frac, 2))
        if rng.integers(0, 2):
            keep = ~((1 << (fmt.frac // 2 + 1)) - 1)
            fa, fb = fa & keep, fb & keep
        sa, sb = (int(x) << 15 for x in rng.integers(0, 2, 2))
        out.append((sa | ea << fmt.frac | fa, sb | eb << fmt.frac | fb))
    return out


def _third(rng, fmt: Fmt, a: int, b: int) -> int:
    """c for a*b + c: cancelling the product, at its rounding point, tiny, or anything."""
    p = value(fmt, a) * value(fmt, b)
    if math.isnan(p) or math.isinf(p) or p == 0:
        return int(rng.integers(0, 0x10000))
    near = nearest_bits(fmt, p)
    if is_nan(fmt, near) or near & 0x7FFF == fmt.inf:
        return int(rng.integers(0, 0x10000))
    ulp = math.ldexp(1.0, max(math.frexp(p)[1] - 1, fmt.emin) - fmt.frac)
    choices = [near ^ 0x8000, nearest_bits(fmt, math.copysign(ulp / 2, -p)), 1, 0x8001,
               int(rng.integers(0, 0x10000)), near ^ 0x8000 ^ 1]  # fmt: skip
    return choices[int(rng.integers(0, len(choices)))]


def _floats(rng, fmt: Fmt, stride: int) -> list[float]:
    """Floats on and beside every `stride`-th value and its midpoint with the next: the
    value, the midpoint, and the floats either side of each; past the largest value;
    float subnormals, infinities, NaN; random float bits. Both signs."""
    top = math.ldexp(1.0, fmt.exact[2])
    start = int(rng.integers(0, stride))
    picked = [*range(start + 1, fmt.inf, stride), 1, 2, (1 << fmt.frac) - 1, 1 << fmt.frac,
              fmt.one, fmt.inf - 1]  # fmt: skip
    out = [0.0, math.inf, math.nan, math.ldexp(1.0, -149), 3.4028234663852886e38, 1e30]
    for b in picked:
        v = value(fmt, b)
        nxt = value(fmt, b + 1) if b + 1 < fmt.inf else top
        for x in (v, (v + nxt) / 2):
            x32 = np.float32(x)
            if not np.isfinite(x32):
                continue
            out += [float(x32), float(np.nextafter(x32, np.float32(np.inf))),
                    float(np.nextafter(x32, np.float32(0)))]  # fmt: skip
    drawn = rng.integers(0, 2**32, 2000, dtype=np.uint64).astype(np.uint32)
    out += [float(x) for x in drawn.view(np.float32)]
    return out + [-x for x in out]


def _doubles(rng, fmt: Fmt) -> list[float]:
    """Doubles a float cannot hold, just either side of midpoints (so that rounding through
    a float would tie), and some of _floats."""
    out = []
    for b in rng.integers(1, fmt.inf - 1, 1500):
        v, nxt = value(fmt, int(b)), value(fmt, int(b) + 1)
        mid = (v + nxt) / 2
        out += [mid * (1 + 2.0**-40), mid * (1 - 2.0**-40), math.nextafter(mid, math.inf)]
    half_least = math.ldexp(1.0, fmt.emin - fmt.frac - 1)  # half the least subnormal
    out += [math.ldexp(1.0, -1074), 1e300, half_least * (1 + 2.0**-50)]
    out += _floats(rng, fmt, 256)
    return out + [-x for x in out]


def _integers(rng, kind: str) -> list[int]:
    _, lo, hi = INTEGERS[kind]
    special = [
        0,
        1,
        2,
        3,
        65504,
        65519,
        65520,
        65535,
        65536,
        2**24 + 1,
        2**24 + 3,
        2**53 + 1,
        2**31 - 1,
        2**32 - 1,
        2**63 - 1,
        2**64 - 1,
        255,
        257,
        258,
        259,
        511,
        4095,
        32767,
    ]
    special += [-x for x in special] + [lo, hi, lo + 1, hi - 1]
    drawn = [int(x) for x in rng.integers(lo, hi, 200, dtype=np.int64 if lo < 0 else np.uint64,
                                          endpoint=True)]  # fmt: skip
    shifted = [(int(rng.integers(1, 2**12)) | 1) << int(rng.integers(0, 52)) for _ in range(200)]
    return [x for x in [*special, *drawn, *shifted, *(-s for s in shifted)] if lo <= x <= hi]


def records(rng) -> list[tuple[int, tuple]]:
    """(op index, operands) for every op of OPS: what each op's `draw` names."""
    pools = {}
    for fmt in FORMATS:
        some = edges(fmt) + _random_bits(rng, 1500)
        pairs = [(a, b) for a in edges(fmt) for b in edges(fmt)]
        drawn = zip(_random_bits(rng, 1000), _random_bits(rng, 1000), strict=True)
        pairs += _near_pairs(rng, fmt, 1500) + list(drawn)
        floats = _floats(rng, fmt, 16)
        lanes = [tuple(some[int(i)] for i in rng.integers(0, len(some), 2)) for _ in range(400)]
        pools[fmt] = {
            "every": [(b,) for b in range(0x10000)],
            "some": [(b,) for b in some],
            "pairs": pairs,
            "triples": [(a, b, _third(rng, fmt, a, b)) for a, b in pairs[::2]],
            "dense": [(x,) for x in floats],
            "doubles": [(x,) for x in _doubles(rng, fmt)],
            "lanes": lanes,
            "floats": [floats[int(i)] for i in rng.integers(0, len(floats), 800)],
        }
    integers = {k: [(i,) for i in _integers(rng, k)] for k in INTEGERS}
    out = []
    for code, op in enumerate(OPS):
        pool = pools[op.fmt]
        if op.draw == "integers":
            drawn = integers[op.kinds]
        elif op.draw == "lanes":
            drawn = _lane_operands(rng, op.kinds, pool)
        else:
            drawn = pool[op.draw]
        out += [(code, args) for args in drawn]
    return out


def _lane_operands(rng, kinds: str, pool: dict) -> list[tuple]:
    """Operands for a pair op: pairs of values, single values, floats, float2s."""
    count = len(pool["lanes"])
    pick = {
        "p": lambda i: pool["lanes"][i],
        "h": lambda i: pool["lanes"][i][0],
        "f": lambda i: pool["floats"][i],
        "g": lambda i: (pool["floats"][i], pool["floats"][-1 - i]),
    }
    return [tuple(pick[k](int(rng.integers(0, count))) for k in kinds) for _ in range(count)]
