"""grader.judge.cases: inputs drawn from a case's seed."""

import numpy as np
import pytest

from grader.judge import cases


def _as_defined(rng: np.random.Generator, shape) -> np.ndarray:
    """random_signed as first written (np.where on the sign): the values every lab's
    cases were drawn with, which the faster form must keep bit for bit."""
    v = rng.random(shape, dtype=np.float32) * np.float32(4.0) - np.float32(2.0)
    magnitude = np.float32(0.5) + np.abs(v) * np.float32(0.25)
    return np.where(v < 0, -magnitude, magnitude).astype(np.float32)


@pytest.mark.parametrize("shape", [(1,), (3,), (517, 517), (8, 9, 10), (1 << 20,)])
@pytest.mark.parametrize("seed", [0, 1, 2**63 - 1])
def test_random_signed_keeps_the_values_bit_for_bit(shape, seed):
    drawn = cases.random_signed(np.random.default_rng(seed), shape)
    want = _as_defined(np.random.default_rng(seed), shape)
    assert drawn.dtype == np.float32 and drawn.shape == shape
    assert drawn.tobytes() == want.tobytes()
    assert np.all((np.abs(drawn) >= 0.5) & (np.abs(drawn) < 1.0))
