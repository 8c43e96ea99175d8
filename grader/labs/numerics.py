"""float64 numpy references shared by the labs.

Masks are indexed [z][y][x] and applied as cross-correlation centred on the output, as
in the course notes: P[y, x] = sum_ij N[y - R + i, x - R + j] * M[i, j]."""

from __future__ import annotations

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

# numpy's names for the course's three ghost-cell rules
PAD_MODES = {"zero": "constant", "clamp": "edge", "wrap": "wrap"}


def matmul(m: np.ndarray, n: np.ndarray) -> np.ndarray:
    return np.asarray(m, np.float64) @ np.asarray(n, np.float64)


def correlate_valid(image: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """Valid cross-correlation: output shape is image.shape - mask.shape + 1."""
    image = np.asarray(image, np.float64)
    mask = np.asarray(mask, np.float64)
    windows = sliding_window_view(image, mask.shape)
    axes = tuple(range(image.ndim))
    return np.tensordot(windows, mask, axes=(tuple(a + image.ndim for a in axes), axes))


def correlate_same(image: np.ndarray, mask: np.ndarray, ghost: str = "zero") -> np.ndarray:
    """Centred cross-correlation with the same shape as `image`; ghost cells follow
    `ghost`: "zero", "clamp" (nearest edge) or "wrap" (periodic)."""
    radius = mask.shape[0] // 2
    padded = np.pad(np.asarray(image, np.float64), radius, mode=PAD_MODES[ghost])
    return correlate_valid(padded, mask)
