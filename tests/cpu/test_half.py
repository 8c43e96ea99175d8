"""Half precision and bfloat16 on the CPU backend (include/cuda_fp16.h, cuda_bf16.h,
grader_half_api.h and grader_half.h): every intrinsic of tests/half_kit.py gives, bit for
bit, the result CUDA documents, the exact value rounded (exact_kit), over every 16-bit
value where an op takes one (the conversion to float, the maths functions), and dense
samples elsewhere. Then what a kernel does with them: atomics, shuffles, the refusal of
what stays GPU-only, and a half-precision kernel graded as a GPU grades it."""

from __future__ import annotations

import numpy as np
from cpu_kit import integer, kinds, out
from half_kit import OPS, records, run, wrong

from grader.backends.cpu import scan
from grader.model.result import Kind


def test_every_half_and_bfloat16_intrinsic_gives_the_documented_bits(kit, no_nvcc):
    drawn = records(np.random.default_rng(36))
    got = run(kit.backend, drawn)
    found = wrong(drawn, got)
    report = [f"{name}: {len(bad)} wrong, e.g. {bad[:3]}" for name, bad in found.items()]
    assert not found, f"{len(found)} of {len(OPS)} ops:\n" + "\n".join(report[:40])
