"""The fill patterns of grader.model.launch: shared memory that no thread wrote reads as
NaN in every floating-point type a kernel may keep there."""

from __future__ import annotations

import numpy as np
import pytest

from grader.model.launch import CANARY_BITS, POISON_BITS, SHARED_FILL_BITS


def _bfloat16_is_nan(bits: int) -> bool:
    return (bits >> 7) & 0xFF == 0xFF and bits & 0x7F != 0


@pytest.mark.parametrize("bits", [SHARED_FILL_BITS, POISON_BITS, CANARY_BITS])
def test_a_fill_word_is_a_float_nan(bits):
    assert np.isnan(np.array([bits], np.uint32).view(np.float32)[0])


def test_shared_fill_is_nan_as_double_half_and_bfloat16():
    words = np.full(4, SHARED_FILL_BITS, np.uint32)
    assert np.isnan(words.view(np.float64)).all()
    assert np.isnan(words.view(np.float16)).all()  # a __half array left unwritten
    assert all(_bfloat16_is_nan(int(h)) for h in words.view(np.uint16))
