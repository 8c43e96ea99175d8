"""Which kernels store only at their thread's element along x (grader.toolchain.
thread_stores), so that the CPU backend's pool threads need not note which block stored
each element: nvcc's PTX of kernels that do and of kernels that come close, and PTX by
hand for what nvcc does not write on its own."""

from __future__ import annotations

import subprocess

import numpy as np
import pytest

from grader.backends.cpu import job
from grader.backends.cpu.build import Artifact
from grader.model.launch import Buffer, Launch, Scalar
from grader.toolchain import nvcc, ptx, thread_stores

needs_nvcc = pytest.mark.skipif(nvcc.find() is None, reason="nvcc is not installed")

APART = {
    "saxpy": (
        "__global__ void k(const float* x, float* y, float a, int n) {"
        " int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) y[i] = a * x[i] + y[i]; }",
        {1: 4},
    ),
    "two outputs": (
        "__global__ void k(const float* x, float* y, double* z, int n) {"
        " unsigned i = threadIdx.x + blockDim.x * blockIdx.x;"
        " if (i < n) { y[i] = x[i]; z[i] = 2.0 * x[i]; } }",
        {1: 4, 2: 8},
    ),
    "float2 lanes": (
        "__global__ void k(float2* y) { int i = blockIdx.x * blockDim.x + threadIdx.x;"
        " y[i] = make_float2(1.0f, 2.0f); }",
        {0: 8},
    ),
    "stored twice": (
        "__global__ void k(float* y, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x;"
        " if (i < n) { y[i] = 1.0f; __syncthreads(); y[i] += 2.0f; } }",
        {0: 4},
    ),
}
TOGETHER = {
    "the block's thread": "__global__ void k(float* y) { y[threadIdx.x] = 1.0f; }",
    "the block's element": "__global__ void k(float* y) { y[blockIdx.x] = 1.0f; }",
    "the next element": "__global__ void k(float* y) { int i = blockIdx.x * blockDim.x"
    " + threadIdx.x; y[i + 1] = 1.0f; }",
    "a row of a 2D grid": "__global__ void k(float* y) { int i = blockIdx.y * blockDim.x"
    " + threadIdx.x; y[i] = 1.0f; }",
    "grid-stride": "__global__ void k(float* y, int n) { for (int i = blockIdx.x * blockDim.x"
    " + threadIdx.x; i < n; i += blockDim.x * gridDim.x) y[i] = 1.0f; }",
    "two widths": "__global__ void k(float* y) { int i = blockIdx.x * blockDim.x + threadIdx.x;"
    " y[i] = 1.0f; ((double*)y)[i] = 2.0; }",
    "an atomic": "__global__ void k(float* y) { int i = blockIdx.x * blockDim.x + threadIdx.x;"
    " y[i] = 1.0f; atomicAdd(y, 1.0f); }",
    "a pointer it read": "__global__ void k(float** y) { int i = blockIdx.x * blockDim.x"
    " + threadIdx.x; y[0][i] = 1.0f; }",
    "a called function": "__device__ __noinline__ void put(float* y, int i) { y[i] = 1.0f; }\n"
    "__global__ void k(float* y) { put(y, blockIdx.x * blockDim.x + threadIdx.x); }",
    "a __device__ variable": "__device__ float g[1 << 20];\n"
    "__global__ void k() { g[blockIdx.x * blockDim.x + threadIdx.x] = 1.0f; }",
}


def compiled(tmp_path, text: str):
    """The kernel k's signature, as nvcc's PTX gives it."""
    source = tmp_path / "k.cu"
    source.write_text(text)
    out = tmp_path / "k.ptx"
    subprocess.run([nvcc.find(), "-ptx", "-arch", "sm_90", "-o", out, source], check=True)
    kernels = nvcc.parse_ptx(out.read_text()).kernels
    return kernels["k"]


@needs_nvcc
@pytest.mark.parametrize("name", APART)
def test_a_kernel_that_stores_at_its_threads_element_is_shown_to(tmp_path, name):
    text, strides = APART[name]
    assert compiled(tmp_path, text).stores_by_thread == strides


@needs_nvcc
@pytest.mark.parametrize("name", TOGETHER)
def test_a_store_two_blocks_may_share_leaves_the_kernel_unproven(tmp_path, name):
    assert compiled(tmp_path, TOGETHER[name]).stores_by_thread is None


@needs_nvcc
def test_overloaded_kernels_of_one_name_are_unproven(tmp_path):
    text = APART["saxpy"][0] + "\n__global__ void k(double* y) { y[threadIdx.x] = 1.0; }"
    assert compiled(tmp_path, text).stores_by_thread is None


HAND = """\
.visible .entry k(.param .u64 k_param_0, .param .u32 k_param_1)
{
\tld.param.u64 \t%rd1, [k_param_0];
\tmov.u32 \t%r1, %ctaid.x;
\tmov.u32 \t%r2, %ntid.x;
\tmov.u32 \t%r3, %tid.x;
\tmad.lo.s32 \t%r4, %r1, %r2, %r3;
\tmul.wide.s32 \t%rd2, %r4, 4;
\tadd.s64 \t%rd3, %rd1, %rd2;
\tst.global.f32 \t[%rd3], %f1;
\tret;
}
"""


def hand(text: str) -> dict[int, int] | None:
    code = ptx.clean(text)
    return thread_stores.stores_by_thread(ptx.functions(code)["k"])


def test_a_kernel_by_hand_is_read_as_nvcc_s():
    assert hand(HAND) == {0: 4}
    assert hand(HAND.replace("st.global.f32", "st.f32")) == {0: 4}  # generic, at the element


@pytest.mark.parametrize(
    "old, new",
    [
        ("\tmad", "\t@%p1 mad"),  # the index only where a predicate holds
        ("\tret;", "\tmov.u32 \t%r4, 0;\n\tret;"),  # the index written twice
        ("\tret;", "\t{ .reg .b64 %rd3; st.global.f32 \t[%rd3], %f1; }\n\tret;"),  # anew
        ("[%rd3]", "[%rd3+4]"),  # past the thread's element
        ("st.global.f32", "st.global.v2.f32"),  # more than the element's bytes
        ("st.global.f32 \t[%rd3], %f1", "st.global.f32 \t[%rd2], %f1"),  # no parameter
        ("mul.wide.s32 \t%rd2, %r4, 4", "shl.b32 \t%r5, %r4, 2;\n\tcvt.u64.u32 \t%rd2, %r5"),
        ("mov.u32 \t%r3, %tid.x", "mov.u32 \t%r3, %tid.y"),
        # scaled by 2^63 and by 2^64: threads' addresses the same, mod 2^64
        (
            "mul.wide.s32 \t%rd2, %r4, 4",
            "mul.wide.s32 \t%rd7, %r4, 65536;\n\tmul.lo.s64 \t%rd8, %rd7, 65536;\n"
            "\tshl.b64 \t%rd2, %rd8, 31",
        ),
        ("mul.wide.s32 \t%rd2, %r4, 4", "mul.wide.s32 \t%rd7, %r4, 1;\n\tshl.b64 \t%rd2, %rd7, 64"),
        ("\tret;", "\tsust.b.1d.b32.trap [%rd9, {%r1}], {%r2};\n\tret;"),  # a surface
        ("\tret;", "\tcp.async.bulk.global.shared::cta [%rd9], [%r9], 16;\n\tret;"),
        ("ld.param.u64 \t%rd1, [k_param_0]", "ld.param.u32 \t%rd1, [k_param_1]"),
    ],
)
def test_anything_else_leaves_the_kernel_unproven(old, new):
    assert hand(HAND.replace(old, new)) is None


def launch(grid, args, kernel="k"):
    return Launch(kernel, grid, (256, 1, 1), 0, args, {})


def test_a_launch_stores_apart_only_where_its_shape_keeps_the_proof(tmp_path):
    artifact = Artifact(tmp_path / "m.so", "k.cu", stores_by_thread={"k": {0: 4}})
    floats = [Buffer("y", np.zeros(4, np.float32), True), Scalar("n", "int", 4)]
    assert job.blocks_apart(artifact, launch((4, 1, 1), floats))
    assert not job.blocks_apart(artifact, launch((4, 2, 1), floats))  # rows share x
    assert job.blocks_apart(artifact, launch((1 << 23, 1, 1), floats))  # 2^31 threads
    assert not job.blocks_apart(artifact, launch((1 + (1 << 23), 1, 1), floats))
    assert not job.blocks_apart(artifact, launch((4, 1, 1), floats, "other"))
    doubles = [Buffer("y", np.zeros(4, np.float64), True)]  # half an element a thread
    assert not job.blocks_apart(artifact, launch((4, 1, 1), doubles))
    assert not job.blocks_apart(artifact, launch((4, 1, 1), floats[::-1]))  # a scalar
