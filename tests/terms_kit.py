"""The terms each output element sums, listed by running a lab's sampler on symbols;
float32 sums of them in the orders kernels add in; and inputs in lower precisions.

A float output element is a sum of products of inputs (grader.judge.compare). Given symbols
instead of numbers, the sampler's own numpy arithmetic builds each element's sum as a
tree whose leaves are those products, whatever the lab; no lab has to list its terms.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from grader.judge.cases import widened
from grader.model.lab import Lab


class Term:
    """A product of input values."""

    __slots__ = ("factors",)

    def __init__(self, *factors: float) -> None:
        self.factors = factors

    def __mul__(self, other):
        if type(other) is Term:
            return Term(*self.factors, *other.factors)
        if type(other) is Sum:
            return other * self
        return _zero(other, "multiplied by")

    __rmul__ = __mul__

    def __add__(self, other):
        return _sum(self, other)

    __radd__ = __add__


class Sum:
    """A sum, left then right."""

    __slots__ = ("left", "right")

    def __init__(self, left, right) -> None:
        self.left, self.right = left, right

    def __mul__(self, other):
        if type(other) in SYMBOLS:
            return _sum(self.left * other, self.right * other)
        return _zero(other, "multiplied by")

    __rmul__ = __mul__

    def __add__(self, other):
        return _sum(self, other)

    def __radd__(self, other):
        return _sum(other, self)


SYMBOLS = (Term, Sum)


def _zero(number, how: str):
    """A number a symbol meets must be 0 (a ghost cell, numpy's starting value)."""
    if number == 0:
        return 0
    raise TypeError(f"a term is {how} the number {number}: no sum of products of inputs")


def _sum(left, right):
    if type(left) not in SYMBOLS:
        _zero(left, "added to")
        return right
    if type(right) not in SYMBOLS:
        _zero(right, "added to")
        return left
    return Sum(left, right)


def symbols(values: np.ndarray) -> np.ndarray:
    """Float inputs as symbols (0 stays 0: a ghost cell or a zeroed input adds nothing)."""
    values = np.asarray(values, np.float64)
    out = np.frompyfunc(Term, 1, 1)(values)
    out[values == 0] = 0
    return np.asarray(out, object)


def terms(element) -> tuple[np.ndarray, np.ndarray]:
    """An element's terms in the order the sampler adds them: exact (float64 holds the
    product of two float32 values) and as a float32 multiply rounds them."""
    factors, stack = [], [element]
    while stack:
        node = stack.pop()
        if type(node) is Sum:
            stack += (node.right, node.left)
        elif type(node) is Term:
            factors.append(node.factors)
    if not factors:  # an element that sums nothing (an empty row)
        return np.zeros(0), np.zeros(0, np.float32)
    table = np.array(factors, np.float64).reshape(len(factors), -1)
    return table.prod(axis=1), table.astype(np.float32).prod(axis=1, dtype=np.float32)


def values_at(inputs: dict[str, np.ndarray], needs) -> dict[str, np.ndarray]:
    """The inputs at the coordinates the sampler needs (None: all), 0 outside."""
    read = reader(inputs)
    return {name: read(name, coords) for name, coords in needs.items()}


def reader(inputs: dict[str, np.ndarray]):
    """read(name, coords) over whole inputs, as the sampler's `needs` gets it."""

    def read(name: str, coords) -> np.ndarray:
        values = widened(inputs[name])
        if coords is None:
            return values
        shape = values.shape
        inside = np.logical_and.reduce(
            np.broadcast_arrays(*((c >= 0) & (c < n) for c, n in zip(coords, shape, strict=True)))
        )
        if 0 in shape:
            return np.zeros(inside.shape, values.dtype)
        clipped = tuple(np.clip(c, 0, n - 1) for c, n in zip(coords, shape, strict=True))
        return np.where(inside, values[clipped], 0)

    return read


@dataclass
class Sums:
    """Sampled elements' sums, shaped as their grid: `orders`, float32 sums in each order
    (float32_sums); `exact`, the float64 sums of the same terms; `half`, products and
    sums in half precision, one term after the other."""

    orders: dict[str, np.ndarray]
    exact: np.ndarray
    half: np.ndarray


def sums_of(lab: Lab, sizes, values: dict[str, np.ndarray], axes, output: str, rng) -> Sums:
    """The sums of the elements on the grid `axes` of `output`, from `values`, the
    inputs the sampler needs for them."""
    symbolic = {k: symbols(v) if v.dtype.kind == "f" else v for k, v in values.items()}
    grid = lab.sampler.combine(sizes, symbolic, axes)[output]
    listed = [terms(element) for element in np.ravel(grid)]
    exact = padded([e for e, _ in listed], np.float64)
    products = padded([r for _, r in listed], np.float32)
    shape = np.shape(grid)
    half = np.cumsum(products.astype(np.float16), axis=1, dtype=np.float16)[:, -1]
    return Sums(
        {order: got.reshape(shape) for order, got in float32_sums(exact, products, rng).items()},
        exact.sum(axis=1).reshape(shape),
        half.reshape(shape),
    )


def padded(rows: list[np.ndarray], dtype) -> np.ndarray:
    """Rows of different lengths as one array, padded with zeros (adding 0 is exact), at
    least one column wide."""
    out = np.zeros((len(rows), max((len(r) for r in rows), default=1) or 1), dtype)
    for i, row in enumerate(rows):
        out[i, : len(row)] = row
    return out


def sequential(products: np.ndarray) -> np.ndarray:
    """One term after the other, each addition rounded to float32 (a thread's loop)."""
    return np.cumsum(products, axis=1, dtype=np.float32)[:, -1]


def tree(products: np.ndarray) -> np.ndarray:
    """Pairs, then pairs of pairs (a shared-memory tree, warp shuffles)."""
    values = products.astype(np.float32)
    width = 1 << max(0, values.shape[1] - 1).bit_length()
    values = np.pad(values, ((0, 0), (0, width - values.shape[1])))
    while values.shape[1] > 1:
        values = values[:, 0::2] + values[:, 1::2]
    return values[:, 0]


def fused(exact: np.ndarray) -> np.ndarray:
    """One term after the other with fused multiply-adds: each exact product added to
    the float32 sum, rounded once."""
    total = np.zeros(exact.shape[0], np.float32)
    for column in exact.T:
        total = (total.astype(np.float64) + column).astype(np.float32)
    return total


def float32_sums(exact: np.ndarray, rounded: np.ndarray, rng) -> dict[str, np.ndarray]:
    """Each element's float32 sum in the orders kernels add in (elements by row)."""
    out = {
        "sequential": sequential(rounded),
        "reversed": sequential(rounded[:, ::-1]),
        "tree": tree(rounded),
        "as atomics land": sequential(rng.permuted(rounded, axis=1)),
    }
    if exact.shape[1] <= 1 << 13:  # a Python loop per term
        out["fused"] = fused(exact)
    return out


# Bits of mantissa each lower precision keeps (TF32 keeps half's 10).
LOWER = {"half": 10, "bfloat16": 7}


def rounded(values: np.ndarray, bits: int) -> np.ndarray:
    """Float values rounded to nearest (ties to even) with `bits` bits of mantissa, as
    float32; integers as they are."""
    if values.dtype.kind != "f":
        return values
    words = values.astype(np.float32).view(np.uint32).astype(np.uint64)
    drop = 23 - bits
    words = (words + (1 << (drop - 1)) - 1 + ((words >> drop) & 1)) >> drop << drop
    return words.astype(np.uint32).view(np.float32)
