"""float64 numpy references shared by the labs.

Masks are indexed [z][y][x] and applied as cross-correlation centred on the output, as
in the course notes: P[y, x] = sum_ij N[y - R + i, x - R + j] * M[i, j]. Numbers are
computed in float64; values that are no numbers (numpy object arrays) are computed with
as they are, so that a test can list the terms each element sums."""

from __future__ import annotations

import numpy as np

# numpy's names for the course's three ghost-cell rules
PAD_MODES = {"zero": "constant", "clamp": "edge", "wrap": "wrap"}


def _wide(values) -> np.ndarray:
    """Numbers as float64 (or wider), objects as they are."""
    return np.asarray(values, np.result_type(values, np.float64))


def matmul(m: np.ndarray, n: np.ndarray) -> np.ndarray:
    return _wide(m) @ _wide(n)


def correlate_valid(image: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """Valid cross-correlation: output shape is image.shape - mask.shape + 1. Summed one
    mask element at a time over the whole image, in the mask's order: a tenth of the time
    of a product over sliding windows, which copies every window."""
    image = _wide(image)
    mask = _wide(mask)
    shape = tuple(i - m + 1 for i, m in zip(image.shape, mask.shape, strict=True))
    out = None
    for offset in np.ndindex(mask.shape):
        part = tuple(slice(o, o + n) for o, n in zip(offset, shape, strict=True))
        term = mask[offset] * image[part]
        if out is None:
            out = term
        else:
            out += term
    return out


def correlate_same(image: np.ndarray, mask: np.ndarray, ghost: str = "zero") -> np.ndarray:
    """Centred cross-correlation with the same shape as `image`; ghost cells follow
    `ghost`: "zero", "clamp" (nearest edge) or "wrap" (periodic)."""
    radius = mask.shape[0] // 2
    padded = np.pad(_wide(image), radius, mode=PAD_MODES[ghost])
    return correlate_valid(padded, mask)


# -- a few elements at a time (Sampler, for checking timed launches) ---------------------


def whole(shape: tuple[int, ...]) -> tuple[np.ndarray, ...]:
    """Coordinates of every element of an array of `shape`, broadcast together."""
    return np.ix_(*(np.arange(n) for n in shape))


def window(
    axes: tuple[np.ndarray, ...],
    size: tuple[int, ...],
    start: tuple[int, ...],
    extents: tuple[int, ...],
    ghost: str = "zero",
) -> tuple[np.ndarray, ...]:
    """The input coordinates a correlation reads for the outputs on the grid `axes`:
    along axis a, output i reads i + start[a] + j for j < size[a]. Shaped
    (n0, size0, n1, size1, ...). Ghost cells clamp or wrap here; "zero" leaves them
    outside the input, where they read 0."""
    dims = len(axes)
    out = []
    for a, (ax, m, s, extent) in enumerate(zip(axes, size, start, extents, strict=True)):
        coords = np.asarray(ax)[:, None] + s + np.arange(m)[None, :]
        if ghost == "clamp":
            coords = np.clip(coords, 0, extent - 1)
        elif ghost == "wrap":
            coords = np.mod(coords, extent)
        shape = [1] * (2 * dims)
        shape[2 * a], shape[2 * a + 1] = coords.shape
        out.append(coords.reshape(shape))
    return tuple(out)


def correlate_window(values: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """Correlation from `window`'s values, shaped (n0, m0, n1, m1, ...), and the mask."""
    dims = mask.ndim
    grid, taps = "abcdefgh"[:dims], "ABCDEFGH"[:dims]
    spec = "".join(g + t for g, t in zip(grid, taps, strict=True))
    return np.einsum(f"{spec},{taps}->{grid}", values, _wide(mask), optimize=True)
