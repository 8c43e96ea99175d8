"""Building for the CPU backend: reading kernels and variables from the text, the one
rewrite, the registration footer, the ELF description, the build cache, and the shim's
precompiled header."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from cpu_kit import inp, integer, out

from grader.backends.cpu import describe, scan, shim
from grader.backends.cpu.elf import Elf, dynamic
from grader.model.profile import Traffic
from grader.model.result import Kind
from grader.model.source import Submission
from grader.toolchain import cxx, sandbox


def test_kernels_are_found_with_their_launch_bounds_and_not_in_comments_or_macros():
    text = r"""
    // __global__ void in_a_comment(float* p) {}
    #define KERNEL __global__ void from_a_macro(float* p)
    const char* s = "__global__ void in_a_string(float* p)";
    __global__ void
    __launch_bounds__(THREADS_X * /* lanes */ THREADS_Y, 2)
    coarsened(const float* M) {}
    extern "C" __global__ void plain(float* p, int n);
    template <int T> __global__ void templated(float* p) {}
    static __global__ void __launch_bounds__(256) local(float*) {}
    """
    found = {k.name: k for k in scan.kernels(text)}
    assert set(found) == {"coarsened", "plain", "templated", "local"}
    assert found["coarsened"].bounds == "THREADS_X * THREADS_Y"
    assert found["local"].bounds == "256"
    assert found["templated"].template and not found["plain"].template
    assert found["coarsened"].line == 5


def test_file_scope_variables_static_namespaced_and_several_per_declaration():
    text = """
    static __constant__ float Mc[MASK_WIDTH * MASK_WIDTH];
    __constant__ float a[3] = {1, 2, 3}, b;
    namespace lab { __device__ int counter = 0; }
    __device__ __constant__ float both;
    __device__ float helper(float x) { return x; }
    extern __constant__ float elsewhere[4];
    __global__ void k(float* p) { __shared__ float s[4]; }
    __device__ __managed__ int managed;
    """
    found = {v.name: v for v in scan.variables(text)}
    assert set(found) == {"Mc", "a", "b", "counter", "both", "managed"}
    assert found["Mc"].space == "const" and found["counter"].space == "global"
    assert found["counter"].qualified == "lab::counter"
    assert found["both"].space == "const"


def test_unsupported_features_are_sentences_with_lines():
    text = """#include <cooperative_groups.h>
__global__ void k(float* p) {
    p[0] = tex1Dfetch<float>(t, 0);
}
void host() { k<<<1, 1>>>(0); cudaDeviceSynchronize(); }
"""
    found = scan.unsupported(text)
    lines = {u.line for u in found}
    assert lines == {1, 3, 5}
    assert any("cooperative groups" in u.sentence for u in found)
    assert any("textures" in u.sentence for u in found)
    assert any("<<<" in u.sentence for u in found)
    assert any("CUDA runtime API" in u.sentence for u in found)


def test_a_function_the_file_defines_is_its_own_whatever_its_name():
    """`cudaMulAdd` is the file's device function, which a GPU runs: not the runtime API.
    A runtime call beside it is still refused, at its own line."""
    text = """__device__ float cudaMulAdd(float a, float b, float c) { return a * b + c; }
__global__ void k(float* p) {
    if (cudaMulAdd(p[0], 2.0f, 1.0f) > 0) { p[1] = 1; }
}
"""
    assert scan.unsupported(text) == []
    assert (
        scan.unsupported("#define cudaTwice(x) (2 * (x))\n" + text.replace("> 0", "> cudaTwice(1)"))
        == []
    )
    [found] = scan.unsupported(text + "void host(float** p) { cudaMalloc(p, 4); }\n")
    assert found.line == 5 and "(`cudaMalloc`)" in found.sentence


@pytest.mark.parametrize(
    ("statement", "refused"),
    [
        ('asm volatile("/*\\n\\tld.shared.f32 %f1, [%r1];\\n*/");', True),
        ('asm("// atom.global.add.u32" "/* red */" : : "r"(n));', True),
        ('asm volatile("" ::: "memory");', False),  # a compiler barrier: PTX, not refused
        ('asm("nop; // one" );', False),
        ('asm("/* \\x41 */");', False),  # an escape: read as instructions
        ("asm(TEXT);", False),  # a macro: what it holds is not read
    ],
)
def test_an_asm_of_a_comment_alone_is_refused_and_any_other_is_ptx(statement, refused):
    text = f"__global__ void k(int n) {{\n    {statement}\n}}\n"
    [found] = scan.unsupported(text)
    assert (found.line, found.refused) == (2, refused)
    assert ("only a comment" in found.sentence) == refused
    assert ("inline PTX assembly" in found.sentence) != refused


HOST_LAUNCHER = """__global__ void fill(float* p, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) p[i] = 2.0f * i;
}
void run_on_device(float* host, int n) {
    float* device;
    cudaMalloc(&device, n * sizeof(float));
    fill<<<(n + 255) / 256, 256>>>(device, n);
    cudaMemcpy(host, device, n * sizeof(float), cudaMemcpyDeviceToHost);
}
"""


def test_a_host_function_nothing_names_is_blanked_with_its_lines_kept():
    """The course's complete programs launch from a host function; a GPU grading compiles
    it and never calls it, so the CPU backend leaves it out rather than refuse it."""
    blanked = scan.without_host_functions(HOST_LAUNCHER)
    assert len(blanked) == len(HOST_LAUNCHER) and blanked.count("\n") == HOST_LAUNCHER.count("\n")
    assert blanked.startswith(HOST_LAUNCHER[: HOST_LAUNCHER.index("void run_on_device")])
    assert "cudaMalloc" not in blanked and "<<<" not in blanked
    assert scan.unsupported(blanked) == []


def test_a_host_helper_only_a_blanked_launcher_calls_goes_with_it():
    helper = "void check(int e) { if (e) cudaDeviceReset(); }\n"
    launcher = HOST_LAUNCHER.replace("cudaMemcpy(", "check(0); cudaMemcpy(")
    blanked = scan.without_host_functions(helper + launcher)
    assert "check" not in blanked and "cudaDeviceReset" not in blanked
    called = "__global__ void k(int* p) { check(p[0]); }\n"  # a kernel names it: kept
    assert "void check" in scan.without_host_functions(helper + called + launcher)


@pytest.mark.parametrize(
    "kept",
    [
        "__host__ __device__ float cube(float x) { return x * x * x; }",
        "#define HD __host__ __device__\nHD float sq(float x) { return x; }\nfloat use = sq(1);",
        "struct S { void method() { } };",
        "auto twice = [](int x) { return 2 * x; };",
        "void declared_twice();\nvoid declared_twice() { }",
        "float operator+(S a, S b) { return 0; }",
        "auto trailing() -> int { return 1; }",
    ],
)
def test_a_function_a_gpu_may_run_or_that_is_named_again_is_kept(kept):
    assert scan.without_host_functions(kept) == kept


@pytest.mark.parametrize("nvcc_found", [True, False])
def test_a_file_with_a_host_launcher_builds_and_runs_its_kernel(kit, request, nvcc_found):
    if not nvcc_found:
        request.getfixturevalue("no_nvcc")
    build = kit.built(HOST_LAUNCHER)
    result = kit.run(build, "fill", 1, 8, [out("p", 8), integer("n", 8)])
    assert result.buffers["p"].data.tolist() == [2.0 * i for i in range(8)]


def test_the_extern_shared_rewrite_keeps_every_line_where_it_was(kit, no_nvcc):
    source = """extern __shared__
    float whole_file[];
__global__ void k(float* p) {
    extern __shared__ __align__(16)
        float tile[];
    p[0] = tile[0] + whole_file[0];
    p[1] = undefined_name;
}
"""
    build = kit.build(source)
    assert not build.ok
    assert [d.line for d in build.diagnostics] == [7]
    assert "undefined_name" in build.diagnostics[0].message


def test_an_overloaded_kernel_name_is_left_out_and_explained(kit, no_nvcc):
    build = kit.built(
        """
        __global__ void twice(float* p) { p[0] = 1.0f; }
        __global__ void twice(int* p) { p[0] = 1; }
        __global__ void once(float* p) { p[threadIdx.x] = 3.0f; }
        """
    )
    assert "once" in build.interface.kernels and "twice" not in build.interface.kernels
    result = kit.run(build, "twice", 1, 1, [out("p", 1)])
    diag = result.diagnostics[0]
    assert diag.kind == Kind.INTERFACE and "could not register it" in diag.message
    assert kit.run(build, "once", 1, 2, [out("p", 2)]).buffers["p"].data.tolist() == [3.0, 3.0]


def test_builds_are_cached_by_content(kit, no_nvcc):
    source = f"__global__ void cached(float* p, int n) {{ p[0] = n + {time.time_ns()}; }}\n"
    start = time.monotonic()
    first = kit.built(source)
    cold = time.monotonic() - start
    start = time.monotonic()
    second = kit.built(source)
    warm = time.monotonic() - start
    assert second.artifact.module == first.artifact.module
    assert warm < cold / 4
    result = kit.run(second, "cached", 1, 1, [out("p", 1), integer("n", 0)])
    assert result.completed


def test_macros_change_the_build(kit, no_nvcc):
    source = "__constant__ float Mc[MASK_WIDTH];\n__global__ void k(float* p) { p[0] = Mc[0]; }\n"
    three = kit.built(source, macros={"MASK_WIDTH": 3})
    seven = kit.built(source, macros={"MASK_WIDTH": 7})
    assert three.interface.constants["Mc"].size == 12
    assert seven.interface.constants["Mc"].size == 28


@pytest.mark.parametrize(
    ("symbol", "owner"),
    [
        ("_ZZ6matmulPKfS0_PfiE2Ms", "matmul"),
        ("_ZZN2ns6kernelEPfE4tile", "kernel"),
        ("_ZZ6conv2dE4tile", "conv2d"),
        ("tile", None),
    ],
)
def test_the_function_that_owns_a_shared_array(symbol, owner):
    assert describe._owner(symbol) == owner


def test_type_codes_become_canonical_c_types():
    const_float_ptr = 14 | (1 << 8) | (1 << 12)
    assert describe.ctype_of(const_float_ptr) == "const float*"
    assert describe.ctype_of(14 | (1 << 8)) == "float*"
    assert describe.ctype_of(11) == "size_t"
    assert describe.ctype_of(9) == "unsigned"
    assert describe.ctype_of(8) == "int"
    assert describe.ctype_of(0) is None


def test_the_static_shared_rewrite_keeps_lines_and_reads_every_declarator():
    text = """__shared__ float file_tile[4][4];
template <int N> __global__ void k(float* p) {
    __shared__ __align__(16) volatile float a[N][N + 1], *q, b[2];
    static __shared__ int count;
    __shared__ float init = 0.0f;
    __syncthreads();
}
"""
    rewritten, found = scan.rewrite_static_shared(text)
    assert [(d.name, d.line, d.slot) for d in found] == [
        ("file_tile", 1, 0), ("a", 3, 1), ("q", 3, 2), ("b", 3, 3), ("count", 4, 4)
    ]  # fmt: skip
    lines = rewritten.splitlines()
    assert "__syncthreads();" in lines[lines.index("#line 1") + 6]  # text after it kept its line
    assert "typedef volatile float grader_shared_t_a[N][N + 1];" in rewritten
    assert "typedef volatile float *grader_shared_t_q;" in rewritten
    assert "#define file_tile (::grader::static_shared<grader_shared_t_file_tile>" in rewritten
    assert "__shared__ float init = 0.0f;" in rewritten  # an initializer: left as it was


def test_rewritten_shared_arrays_are_counted_as_the_kernels_shared_memory(kit, no_nvcc):
    build = kit.built(
        """__shared__ float everywhere[8];
        __device__ float helper() { __shared__ float own[100]; return own[0]; }
        __global__ void k(float* p) {
            __shared__ float tile[16][16];
            __shared__ double sums[4];
            p[0] = tile[0][0] + sums[0] + everywhere[0] + helper();
        }"""
    )
    assert build.interface.kernels["k"].resources.shared_bytes == 4 * 256 + 8 * 4 + 4 * 8


needs_gxx = pytest.mark.skipif(
    cxx.compiler().version.startswith("clang++"),
    reason="the shim is precompiled for g++ only",
)
SHARED_LOADS = """#include <cuda_runtime.h>
__global__ void k(const float* in, float* out) {
    __shared__ float tile[64];
    tile[threadIdx.x] = in[threadIdx.x];
    __syncthreads();
    out[threadIdx.x] = tile[63 - threadIdx.x] + sinf(tile[threadIdx.x]);
}
"""


def _code(module) -> list[str]:
    """The module's instructions, without their addresses."""
    dump = subprocess.run(["objdump", "-d", "--no-show-raw-insn", str(module)], text=True,
                          capture_output=True, check=True).stdout  # fmt: skip
    return [line.split("\t", 1)[-1] for line in dump.splitlines()[3:]]


@needs_gxx
@pytest.mark.parametrize("census", [False, True], ids=["plain", "census"])
def test_modules_compile_against_the_precompiled_shim_in_their_sandbox(tmp_path, census):
    """g++ takes the shim from its precompiled header, for a census module too, and the
    code is what the header itself gives: a change of the module's flags that made the
    header unusable would silently make every compile slower."""
    forced, reads = shim.shim_include(census)
    assert len(reads) == 2, "the shim was not precompiled"
    (tmp_path / "k.cu").write_text(SHARED_LOADS)
    flags = [*shim.module_flags(census), *shim.folder_flags(tmp_path, census)]
    command = [cxx.compiler().path, *flags]
    source = ["-x", "c++", str(tmp_path / "k.cu")]
    pch = [*command, *forced, "-H", "-o", str(tmp_path / "pch.so"), *source]
    run = sandbox.run_compiler(pch, tmp_path, reads=reads)
    assert run.code == 0, run.log
    assert f"! {reads[0]}/{shim.LEAN}.gch" in run.log.splitlines()
    plain = [*command, *forced[forced.index("-I") :], "-o", str(tmp_path / "plain.so"), *source]
    assert sandbox.run_compiler(plain, tmp_path, reads=[str(shim.INCLUDE)]).code == 0
    assert _code(tmp_path / "pch.so") == _code(tmp_path / "plain.so")


@needs_gxx
def test_graders_starting_at_once_precompile_the_shim_once(tmp_path):
    script = "from grader.backends.cpu import shim; print(shim.precompiled_shim())"
    env = {**os.environ, "GRADER_CACHE": str(tmp_path)}
    started = [
        subprocess.Popen([sys.executable, "-c", script], env=env, stdout=subprocess.PIPE, text=True)
        for _ in range(3)
    ]
    folders = {p.communicate()[0].strip() for p in started}
    assert len(folders) == 1
    folder = Path(folders.pop())
    assert (folder / f"{shim.LEAN}.gch").is_file()
    # nothing else: no second build, no staging folder left behind
    assert [p for p in (tmp_path / "cpu").iterdir() if not p.name.startswith(".")] == [folder]


@needs_gxx
def test_a_census_module_links_no_thread_sanitizer_runtime(kit, no_nvcc):
    """A census module built by g++ is instrumented as -fsanitize=thread instruments, and
    the runner serves its hooks: libtsan, which g++ would link with it, is not needed."""
    build = kit.backend.build(Submission(Path("k.cu"), SHARED_LOADS), {}, (64, 1, 1), True)
    assert build.ok, build.diagnostics
    module = build.artifact.module
    assert not [name for name in dynamic(module).needed if "tsan" in name]
    assert {"__tsan_read4", "__tsan_write4"} <= set(Elf(module).undefined())


ATOMIC_LOAD = """\
__global__ void copy(const float* in, float* out) {
    int i = threadIdx.x;
    out[i] = __int_as_float(__atomic_load_n((const int*)&in[i], ORDER));
}
"""


@needs_gxx
@pytest.mark.parametrize("order", [42, 0], ids=["no-such-order", "relaxed"])
def test_a_census_module_refuses_an_atomic_builtin_that_calls_no_hook(kit, no_nvcc, order):
    """g++'s thread-sanitizer pass leaves an atomic builtin given a memory order C++ does
    not have as it was: a load that no hook would see, missing from the profile, so the
    census build fails and names its line. With an order, the builtin calls the runner,
    and its load counts."""
    source = Submission(Path("k.cu"), ATOMIC_LOAD.replace("ORDER", str(order)))
    build = kit.backend.build(source, {}, (32, 1, 1), census=True)
    if order == 42:
        assert [d.line for d in build.diagnostics] == [3]
        assert build.diagnostics[0].message.startswith(
            "k.cu:3: an atomic builtin (__atomic_load_4) is given a memory order that C++ "
            "does not have"
        )
        assert kit.build(source.text, name="k.cu").ok  # a plain build hooks no load
        return
    assert build.ok, build.diagnostics
    _, found = kit.profile(build, "copy", 1, 32, [inp("in", np.ones(32)), out("out", 32)])
    assert found.global_loads == Traffic(1, 4, 128, 32)


BYPASSES = {
    # the C library's memcpy, which the link's --wrap leaves to the name __real_memcpy
    "real": """\
extern "C" void* __real_memcpy(void*, const void*, size_t);
__global__ void sum(const float* in, float* out) {
    float buf[64];
    __real_memcpy(buf, in, sizeof buf);
    out[threadIdx.x] = buf[threadIdx.x];
}
""",
    # a copy of constant size g++ makes moves after the thread sanitizer's pass
    "builtin": """\
__global__ void sum(const float* in, float* out) {
    float buf[64];
    __builtin_memcpy(buf, in, sizeof buf);
    out[threadIdx.x] = buf[threadIdx.x];
}
""",
    # the C library's memcpy, found by name
    "dlsym": """\
#include <dlfcn.h>
__global__ void sum(const float* in, float* out) {
    float buf[64];
    ((void* (*)(void*, const void*, size_t))dlsym(RTLD_DEFAULT, "memcpy"))(buf, in, 256);
    out[threadIdx.x] = buf[threadIdx.x];
}
""",
}


@needs_gxx
@pytest.mark.parametrize(
    ("bypass", "opening"),
    [
        ("real", "k.cu:1: the kernel calls the C library's memcpy itself"),
        ("builtin", "k.cu:3: __builtin_memcpy is a copy g++ makes with moves"),
        ("dlsym", "k.cu:4: the kernel calls the C library's dlsym itself"),
    ],
)
def test_a_census_module_refuses_a_copy_that_calls_no_hook(kit, no_nvcc, bypass, opening):
    """A census module's memcpy, memmove and memset are the runner's, which log every
    byte; a copy that would not be (the C library's own, or moves g++ makes of a
    builtin's) fails the census build with its line, and with it every case
    (judge.grading.refusal_fails_every_case). A plain build, which logs no load, takes
    it."""
    source = Submission(Path("k.cu"), BYPASSES[bypass])
    build = kit.backend.build(source, {}, (32, 1, 1), census=True)
    assert not build.ok and build.refused
    assert build.diagnostics[0].message.startswith(opening), build.diagnostics
    assert kit.build(source.text, name="k.cu").ok


POINTER = """\
__global__ void sum(const float* in, float* out) {
    void* (*volatile copy)(void*, const void*, size_t) = memcpy;
    float buf[2];
    copy(buf, in + 2 * threadIdx.x, sizeof buf);
    out[threadIdx.x] = buf[0] + buf[1];
}
"""


@needs_gxx
def test_a_pointer_to_memcpy_is_the_runners_and_its_bytes_count(kit, no_nvcc):
    """The link's --wrap binds every reference to memcpy to the runner's, a pointer's
    too: the module takes no memcpy from the C library."""
    build = kit.backend.build(Submission(Path("k.cu"), POINTER), {}, (32, 1, 1), census=True)
    assert build.ok, build.diagnostics
    assert "memcpy" not in Elf(build.artifact.module).imports()
    args = [inp("in", np.ones(64)), out("out", 32)]
    _, found = kit.profile(build, "sum", 1, 32, args)
    # byte k of each lane's 8: 32 lanes 8 bytes apart, 8 sectors a request
    assert found.global_loads == Traffic(8, 64, 256, 256)
