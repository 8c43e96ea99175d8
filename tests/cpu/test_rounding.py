"""CUDA's directed-rounding intrinsics on the CPU backend (include/grader_cuda.h): every
_rn/_rz/_ru/_rd arithmetic intrinsic and rounding conversion gives, bit for bit, the
exact result rounded in its mode, checked against exact rational arithmetic over random
and edge-case operands (ties, subnormals, overflow, signed zeros, infinities, NaN). A
kernel that accumulates in round-toward-zero then fails the precision check here as on
a GPU."""

from __future__ import annotations

import math
import struct
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest
from cpu_kit import integer, out
from exact_kit import ref_arith, ref_to_int, rounded, same

from grader import labs
from grader.grading.pipeline import Options, grade
from grader.model.launch import Buffer

MODES = ("rn", "rz", "ru", "rd")
F32, F64 = (24, -149, 128), (53, -1074, 1024)  # precision, least exponent, overflow exponent
FMT = {"f": F32, "d": F64}
INT_RANGE = {"i": (-(2**31), 2**31 - 1), "u": (0, 2**32 - 1), "l": (-(2**63), 2**63 - 1),
             "L": (0, 2**64 - 1)}  # fmt: skip
CTYPE = {"f": "float", "d": "double", "i": "int", "u": "unsigned int", "l": "long long",
         "L": "unsigned long long"}  # fmt: skip


# -- the intrinsics under test ------------------------------------------------------------


def _ops():
    """(intrinsic, argument kinds, result kind, reference)"""
    ops = []
    arith = [("add", "fadd", "dadd", 2), ("sub", "fsub", "dsub", 2), ("mul", "fmul", "dmul", 2),
             ("div", "fdiv", "ddiv", 2), ("rcp", "frcp", "drcp", 1), ("sqrt", "fsqrt", "dsqrt", 1),
             ("fma", "fmaf", "fma", 3)]  # fmt: skip
    for mode in MODES:
        for op, fname, dname, n in arith:
            for t, name in (("f", fname), ("d", dname)):
                ops.append((f"__{name}_{mode}", t * n, t, ("arith", op, mode)))
        ops.append((f"__fmaf_ieee_{mode}", "fff", "f", ("arith", "fma", mode)))
        ops.append((f"__double2float_{mode}", "d", "f", ("float", mode)))
        for i, iname in (("i", "int"), ("u", "uint"), ("l", "ll"), ("L", "ull")):
            ops.append((f"__{iname}2float_{mode}", i, "f", ("float", mode)))
            if i in "lL" or mode == "rn":
                ops.append((f"__{iname}2double_{mode}", i, "d", ("float", mode)))
            for t, tname in (("f", "float"), ("d", "double")):
                ops.append((f"__{tname}2{iname}_{mode}", t, i, ("int", mode)))
    ops.append(("__frsqrt_rn", "f", "f", ("arith", "rsqrt", "rn")))
    return ops


OPS = _ops()


def kernel_source() -> str:
    """One thread per record: op, pad, then three 64-bit operands in; 64 bits out."""
    read = {"f": "__uint_as_float(w[{0}])", "i": "(int)w[{0}]", "u": "w[{0}]",
            "d": "__longlong_as_double((long long)(((unsigned long long)w[{1}] << 32) | w[{0}]))",
            "l": "(long long)(((unsigned long long)w[{1}] << 32) | w[{0}])",
            "L": "(((unsigned long long)w[{1}] << 32) | w[{0}])"}  # fmt: skip
    write = {"f": "__float_as_uint(r)", "i": "(unsigned)r", "u": "r",
             "d": "__double_as_longlong(r)", "l": "r", "L": "r"}  # fmt: skip
    cases = []
    for code, (name, kinds, res, _) in enumerate(OPS):
        args = ", ".join(read[k].format(2 + 2 * j, 3 + 2 * j) for j, k in enumerate(kinds))
        cases.append(f"    case {code}: {{ {CTYPE[res]} r = {name}({args}); "
                     f"bits = (unsigned long long){write[res]}; break; }}")  # fmt: skip
    return (
        "__global__ void rounding(const float* in, float* out, int n) {\n"
        "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
        "  if (i >= n) return;\n"
        "  const unsigned* w = (const unsigned*)in + 8 * i;\n"
        "  unsigned long long bits = 0;\n"
        "  switch (w[0]) {\n" + "\n".join(cases) + "\n  }\n"
        "  ((unsigned*)out)[2 * i] = (unsigned)bits;\n"
        "  ((unsigned*)out)[2 * i + 1] = (unsigned)(bits >> 32);\n"
        "}\n"
    )


# -- operands -----------------------------------------------------------------------------


def f32(x) -> float:
    with np.errstate(over="ignore"):
        return float(np.float32(x))


def _floats(rng, t: str, count: int) -> list[float]:
    """Edge cases, then random values of every magnitude, including raw bit patterns."""
    prec, least, over = FMT[t]
    tiny, huge = 2.0**least, (2 - 2.0 ** (1 - prec)) * 2.0 ** (over - 1)
    normal = 2.0 ** (least + prec - 1)
    edge = [0.0, -0.0, math.inf, -math.inf, math.nan, 1.0, -1.0, tiny, -tiny, 3 * tiny, normal,
            -normal, normal - tiny, huge, -huge, huge / 2, 2.0 ** (over // 2), 1.5, 3.0, 0.1,
            -7.25, 1 + 2.0 ** (1 - prec), 1 - 2.0**-prec, 2.0 ** (least // 2)]  # fmt: skip
    if t == "f":
        edge = [f32(x) for x in edge]
        bits = rng.integers(0, 2**32, count, dtype=np.uint64).astype(np.uint32).view(np.float32)
        wide = (rng.uniform(1, 2, count) * 2.0 ** rng.integers(-150, 128, count)).astype(np.float32)
        mid = rng.uniform(-4, 4, count).astype(np.float32)
    else:
        bits = rng.integers(0, 2**64, count, dtype=np.uint64).view(np.float64)
        wide = rng.uniform(1, 2, count) * 2.0 ** rng.integers(-1074, 1024, count).astype(float)
        mid = rng.uniform(-4, 4, count)
    sign = rng.choice([-1.0, 1.0], count)
    pool = [*edge, *map(float, bits), *map(float, wide * sign), *map(float, mid)]
    return pool


def _short(rng, t: str, bits: int, e: int) -> float:
    """An odd integer of `bits` bits times 2^e (products of two are often ties)."""
    m = int(rng.integers(2 ** (bits - 1), 2**bits)) | 1
    x = m * 2.0**e * rng.choice([-1.0, 1.0])
    return f32(x) if t == "f" else x


def _operands(rng, t: str, n: int, count: int) -> list[tuple]:
    prec, least, over = FMT[t]
    pool = _floats(rng, t, count)
    picks = [tuple(pool[int(i)] for i in rng.integers(0, len(pool), 2)) for _ in range(count)]
    edge = pool[:24]
    if n == 1:
        return [(x,) for x in pool]
    pairs = [(x, y) for x in edge for y in edge]
    structured = []
    for _ in range(count // 2):
        half = prec // 2 + 1
        e = int(rng.integers(-20, 20))
        a, b = _short(rng, t, half, e), _short(rng, t, half, -half)
        ulp = 2.0 ** (math.frexp(a)[1] - prec)
        structured += [
            (a, b),  # product or quotient with a tie or exactness now and then
            (a, ulp / 2 * rng.choice([-1, 1, 3, -3])),  # sums that tie
            (a, a * 2.0**-prec),  # sums that tie or round by a sticky bit
            (_short(rng, t, 3, least), 2.0 ** int(rng.integers(-3, 3))),  # subnormal ties
            (_short(rng, t, half, least // 2), _short(rng, t, half, least // 2 - 3)),
            (_short(rng, t, half, over // 2), _short(rng, t, half, over // 2)),  # overflow
        ]
    rows = pairs + structured + picks
    if n == 3:
        # fma: c against the product: cancelling, tying, far below or far above it
        third = []
        for a, b in rows:
            p = a * b if abs(a) < 1e150 and abs(b) < 1e150 else 1.0
            p = f32(p) if t == "f" else p
            pick = int(rng.integers(0, 6))
            c = [-p, p * 2.0**-prec, -p * (1 + 2.0 ** (1 - prec)), pool[int(rng.integers(0, 24))],
                 p * 2.0 ** int(rng.integers(-80, 80)),
                 pool[int(rng.integers(0, len(pool)))]][pick]  # fmt: skip
            third.append((a, b, f32(c) if t == "f" else c))
        return third
    return rows


def _ints(rng, kind: str, count: int) -> list[int]:
    lo, hi = INT_RANGE[kind]
    edge = [lo, hi, 0, 1, lo + 1, hi - 1, 2**24 + 1, 2**24 + 3, 2**53 + 1, 2**31 - 64, 2**25 + 2]
    edge += [-x for x in edge]
    rand = [int(x) for x in rng.integers(lo, hi, count, dtype=np.int64 if lo < 0 else np.uint64,
                                         endpoint=True)]  # fmt: skip
    bits = [(int(rng.integers(1, 2**24)) | 1) << int(rng.integers(0, 40)) for _ in range(count)]
    return [x for x in [*edge, *rand, *bits, *(-b for b in bits)] if lo <= x <= hi]


def _word_pair(kind: str, v) -> tuple[int, int]:
    if kind == "f":
        (u,) = struct.unpack("<I", struct.pack("<f", v))
        return u, 0
    if kind == "d":
        (u,) = struct.unpack("<Q", struct.pack("<d", v))
    else:
        u = v & (2**64 - 1)
    return u & 0xFFFFFFFF, u >> 32


def _result(kind: str, lo: int, hi: int):
    u = lo | hi << 32
    if kind == "f":
        return struct.unpack("<f", struct.pack("<I", lo))[0]
    if kind == "d":
        return struct.unpack("<d", struct.pack("<Q", u))[0]
    if kind == "i":
        return lo - (1 << 32) * (lo >> 31)
    if kind == "u":
        return lo
    return u - (1 << 64) * (u >> 63) if kind == "l" else u


def _expected(kinds: str, res: str, ref, args):
    what, *rest = ref
    if what == "arith":
        return ref_arith(rest[0], args, FMT[res], rest[1])
    if what == "float":  # a conversion to float or double
        x = args[0]
        if isinstance(x, float) and (math.isnan(x) or math.isinf(x) or x == 0):
            return x
        return rounded(Fraction(x), FMT[res], rest[0])
    return ref_to_int(args[0], *INT_RANGE[res], rest[0])


def _records(rng, per_op: int):
    """(op code, arguments) for every intrinsic: operands drawn once per kind and arity."""
    drawn: dict[str, list[tuple]] = {}
    for code, (_, kinds, _, _) in enumerate(OPS):
        if kinds not in drawn:
            if kinds[0] in "fd":
                drawn[kinds] = _operands(rng, kinds[0], len(kinds), per_op)
            else:
                drawn[kinds] = [(x,) for x in _ints(rng, kinds[0], per_op)]
        if kinds == "d" and OPS[code][2] == "f":  # double to float: also values near floats
            near = [x * (1 + s * 2.0**-30) for x in map(f32, _floats(rng, "f", per_op)[24:])
                    for s in (-1, 0, 1)]  # fmt: skip
            yield from ((code, args) for args in drawn[kinds] + [(x,) for x in near])
        else:
            yield from ((code, args) for args in drawn[kinds])


def test_each_rounding_intrinsic_is_correctly_rounded_in_its_mode(kit, no_nvcc):
    rng = np.random.default_rng(20240611)
    records = list(_records(rng, 150))
    words = np.zeros((len(records), 8), np.uint32)
    for i, (code, args) in enumerate(records):
        words[i, 0] = code
        for j, (kind, v) in enumerate(zip(OPS[code][1], args, strict=True)):
            words[i, 2 + 2 * j : 4 + 2 * j] = _word_pair(kind, v)
    build = kit.built(kernel_source())
    n = len(records)
    buffers = [Buffer("in", words.reshape(-1).view(np.float32), False), out("out", 2 * n, 0.0)]
    outcome = kit.run(build, "rounding", (n + 255) // 256, 256, [*buffers, integer("n", n)],
                      timeout=120)  # fmt: skip
    assert outcome.completed, outcome.diagnostics
    got = outcome.buffers["out"].data.view(np.uint32).reshape(n, 2)
    wrong, seen = [], set()
    for (code, args), (lo, hi) in zip(records, got, strict=True):
        name, kinds, res, ref = OPS[code]
        seen.add(name)
        want, have = _expected(kinds, res, ref, args), _result(res, int(lo), int(hi))
        if not same(have, want):
            wrong.append(f"{name}{args}: {have!r}, not {want!r}")
    assert not wrong, f"{len(wrong)} wrong of {n}:\n" + "\n".join(wrong[:40])
    assert seen == {op[0] for op in OPS}


TINY = Fraction(1, 2**60)


@pytest.mark.parametrize(("mode", "x", "want"), [
    ("rn", 1 + Fraction(1, 2**24), 1.0),  # a tie: to even
    ("rn", 1 + 3 * Fraction(1, 2**24), 1 + 2.0**-22),
    ("ru", 1 + TINY, 1 + 2.0**-23),
    ("rz", -(1 + TINY), -1.0),
    ("rd", -(1 + TINY), -(1 + 2.0**-23)),
    ("rz", Fraction(10**300), 3.4028234663852886e38),  # overflow, rounding toward zero
    ("ru", Fraction(10**300), math.inf),
    ("rd", -TINY**3, -(2.0**-149)),  # underflow: the least subnormal where rounding away
    ("ru", -TINY**3, -0.0),
    ("rn", Fraction(3, 2**150), 2.0**-148),  # a subnormal tie: to even
])  # fmt: skip
def test_the_reference_rounds_as_ieee_says(mode, x, want):
    assert same(rounded(x, F32, mode), want)


# -- grading: the precision check sees round-toward-zero accumulation -------------------


# The course's naive kernel, accumulating with an fma rounded in one mode.
MATMUL = (
    (labs.get("matmul-naive").home / "baseline.cu")
    .read_text()
    .replace(
        "sum += M[row * Width + k] * N[k * Width + col];",
        "sum = __fmaf_MODE(M[row * Width + k], N[k * Width + col], sum);",
    )
)


def _graded(tmp_path: Path, mode: str):
    from grader.backends.cpu import CpuBackend

    path = tmp_path / mode / "kernel.cu"
    path.parent.mkdir()
    path.write_text(MATMUL.replace("MODE", mode))
    options = Options(backend="cpu", timeout=60, secret="rounding", timing=False)
    with CpuBackend() as backend:
        return grade(labs.get("matmul-naive"), path, backend, options)


def test_fmaf_rz_accumulation_fails_the_precision_check_and_fmaf_rn_passes(tmp_path, no_nvcc):
    rz = _graded(tmp_path, "rz")
    failed = {c.name: c for c in rz.cases if not c.passed}
    assert rz.score < rz.max_score
    assert {"width-256", "width-517"} & set(failed), [c.name for c in rz.cases]
    for name in {"width-256", "width-517"} & set(failed):
        assert failed[name].hint_kind == "lower_precision"
        assert "less precise than float32" in failed[name].hint
    rn = _graded(tmp_path, "rn")
    assert rn.score == rn.max_score and all(c.passed for c in rn.cases)
