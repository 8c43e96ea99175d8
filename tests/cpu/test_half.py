"""Half precision and bfloat16 on the CPU backend (include/cuda_fp16.h, cuda_bf16.h,
grader_half_api.h and grader_half.h): every intrinsic of tests/half_kit.py gives, bit for
bit, the result CUDA documents, the exact value rounded (exact_kit), over every 16-bit
value where an op takes one (the conversion to float, the maths functions), and dense
samples elsewhere. Then what a kernel does with them: atomics, shuffles, and the refusal
of what stays GPU-only. The known-wrong half-precision kernels are graded on both backends
by tests/test_pipeline.py."""

from __future__ import annotations

import numpy as np
import pytest
from cpu_kit import integer, kinds, out
from half_kit import OPS, records, run, wrong

from grader.backends.cpu import scan
from grader.model.result import Kind


@pytest.mark.slow
def test_every_half_and_bfloat16_intrinsic_gives_the_documented_bits(kit, no_nvcc):
    drawn = records(np.random.default_rng(36))
    got = run(kit.backend, drawn)
    found = wrong(drawn, got)
    report = [f"{name}: {len(bad)} wrong, e.g. {bad[:3]}" for name, bad in found.items()]
    assert not found, f"{len(found)} of {len(OPS)} ops:\n" + "\n".join(report[:40])


# -- in a kernel: atomics, shuffles, and what stays GPU-only --------------------------------

ATOMICS = """#include <cuda_bf16.h>
__global__ void k(float* out, int n) {
    __shared__ __half h;
    __shared__ __half2 h2;
    __shared__ __nv_bfloat16 b;
    __shared__ __nv_bfloat162 b2;
    __shared__ int seen[2][256];  /* how often each old value came back */
    int t = threadIdx.x;
    seen[0][t] = seen[1][t] = 0;
    if (t == 0) { h = 0.0f; h2 = __floats2half2_rn(0.0f, 0.0f); b = 0.0f;
                  b2 = __floats2bfloat162_rn(0.0f, 0.0f); }
    __syncthreads();
    atomicAdd(&seen[0][(int)atomicAdd(&h, __float2half(1.0f))], 1);
    atomicAdd(&h2, __floats2half2_rn(0.5f, 2.0f));
    atomicAdd(&seen[1][(int)atomicAdd(&b, __float2bfloat16(1.0f))], 1);
    atomicAdd(&b2, __floats2bfloat162_rn(0.25f, -1.0f));
    __syncthreads();
    if (t == 0) {
        out[0] = __half2float(h);
        out[1] = __low2float(h2) * 1000.0f + __high2float(h2);
        out[2] = __bfloat162float(b);
        out[3] = __low2float(b2) * 1000.0f + __high2float(b2);
        int once = 0;
        for (int i = 0; i < n; ++i) once += (seen[0][i] == 1) + (seen[1][i] == 1);
        out[4] = (float)once;
    }
}
"""


def test_atomic_adds_on_half_and_bfloat16_lose_no_add(kit, no_nvcc):
    """Each thread's add lands once: every old value comes back once (the counts are
    exact in both formats up to 256)."""
    n = 256
    build = kit.built(ATOMICS, block=(n, 1, 1))
    outcome = kit.run(build, "k", 1, n, [out("out", 5), integer("n", n)])
    assert not kinds(outcome), outcome.diagnostics
    got = outcome.buffers["out"].data
    assert list(got) == [256.0, 128.0 * 1000 + 512.0, 256.0, 64.0 * 1000 - 256.0, 2.0 * n]


SHUFFLES = """#include <cuda_bf16.h>
__global__ void k(float* out) {
    int t = threadIdx.x;
    __half h = __int2half_rn(t);
    __half2 p = __halves2half2(h, __hneg(h));
    __nv_bfloat16 b = __int2bfloat16_rn(2 * t);
    __half down = __shfl_down_sync(0xffffffffu, h, 1);
    __half2 mirror = __shfl_xor_sync(0xffffffffu, p, 31);
    __nv_bfloat16 first = __shfl_sync(0xffffffffu, b, 5);
    out[4 * t] = __half2float(down);
    out[4 * t + 1] = __low2float(mirror);
    out[4 * t + 2] = __high2float(mirror);
    out[4 * t + 3] = __bfloat162float(first);
}
"""


def test_warp_shuffles_move_half_pairs_and_bfloat16(kit, no_nvcc):
    build = kit.built(SHUFFLES, block=(32, 1, 1))
    outcome = kit.run(build, "k", 1, 32, [out("out", 128)])
    assert not kinds(outcome), outcome.diagnostics
    got = outcome.buffers["out"].data.reshape(32, 4)
    t = np.arange(32)
    assert list(got[:, 0]) == list(np.minimum(t + 1, 31))
    assert list(got[:, 1]) == list(31 - t) and list(got[:, 2]) == list(t - 31)
    assert list(got[:, 3]) == [10.0] * 32


@pytest.mark.parametrize("call", ["hsin(x)", "h2cos(__half2half2(x))", "htanh(x)"])
def test_a_maths_function_that_stays_gpu_only_is_refused_by_name(kit, no_nvcc, call):
    source = f"""#include <cuda_fp16.h>
__global__ void k(float* out) {{
    __half x = __float2half(out[0]);
    auto y = {call};
    out[1] = (float)*(unsigned short*)&y;
}}
"""
    build = kit.build(source)
    assert not build.ok and Kind.COMPILE_ERROR in kinds(build.diagnostics)
    shown = " ".join(d.message for d in build.diagnostics) + build.compile.log
    name = call.split("(")[0]
    assert f"cannot run {name}" in shown and "--backend cuda" in shown, shown


def test_half_precision_is_no_longer_refused_and_tensor_cores_still_are():
    text = """#include <cuda_fp16.h>
#include <cuda_bf16.h>
#include <mma.h>
__global__ void k(__half* a, __nv_bfloat162* b) {
    nvcuda::wmma::fragment<nvcuda::wmma::matrix_a, 16, 16, 16, __half> f;
}
"""
    found = scan.unsupported(text)
    assert {u.line for u in found} == {3, 5}, found
    assert all("tensor-core" in u.sentence for u in found)
