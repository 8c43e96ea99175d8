"""The interface check and compile messages, through nvcc without a GPU."""

import base64
import re
import shutil
from dataclasses import replace
from pathlib import Path

import cubin_kit
import pytest
from census_kit import NAIVE as MATMUL
from include_tricks import TRICKS

from grader.labs import common, get
from grader.model import interface
from grader.model.interface import canonical_ctype
from grader.model.result import Kind
from grader.model.source import read_submission, static_checks
from grader.toolchain import libraries, nvcc

pytestmark = pytest.mark.skipif(nvcc.find() is None, reason="nvcc is not installed")


CONV3D_PITCHED = """\
#ifndef MASK_WIDTH
#define MASK_WIDTH 5
#endif
static __constant__ float Mc[MASK_WIDTH * MASK_WIDTH * MASK_WIDTH];
__global__ void conv3d_pitched(const float* N, float* P, {pitch} pitchN, size_t pitchP,
                               int W, int H, int D) {{
    P[0] = N[0] * Mc[0];
}}
"""


def inspect(tmp_path, text, lab="matmul-naive", macros=None, name="kernel.cu"):
    path = Path(tmp_path, name)
    path.write_text(text)
    sub, problems = read_submission(path)
    assert not problems
    spec = get(lab) if isinstance(lab, str) else lab
    sizes = {"MASK_WIDTH": 5, **(macros or {})}
    found = nvcc.inspect(sub, spec.macro_values(sizes), spec.default_block)
    return spec, found, sizes, sub


def check(tmp_path, text, lab="matmul-naive", macros=None):
    spec, found, sizes, sub = inspect(tmp_path, text, lab, macros)
    assert found.compile.ok, found.compile.log
    return interface.check(spec, found.interface, sizes)


def test_a_correct_kernel_fits(tmp_path):
    assert check(tmp_path, MATMUL) == []


def test_parameters_and_resources_are_read(tmp_path):
    _, found, _, _ = inspect(tmp_path, MATMUL)
    sig = found.interface.kernels["matmul"]
    assert [p.ctype for p in sig.params] == ["const float*", "const float*", "float*", "int"]
    assert [p.size for p in sig.params] == [8, 8, 8, 4]
    assert sig.resources.registers > 0
    assert found.interface.launch == {
        "BLOCK_X": 16,
        "BLOCK_Y": 16,
        "BLOCK_Z": 1,
        "TILE_X": 16,
        "TILE_Y": 16,
        "TILE_Z": 1,
    }


def test_launch_macros_are_evaluated(tmp_path):
    text = "#define TILE_X 64\n#define TILE_Y (TILE_X / 2)\n#define BLOCK_X (TILE_X / 4)\n"
    _, found, _, _ = inspect(tmp_path, text + MATMUL)
    assert found.interface.tile() == (64, 32, 1)
    assert found.interface.block() == (16, 16, 1)


def test_missing_kernel_names_what_is_there(tmp_path):
    found = check(tmp_path, MATMUL.replace("void matmul(", "void matmul_kernel("))
    assert [d.kind for d in found] == [Kind.INTERFACE]
    assert "matmul_kernel" in found[0].message and "Expected:" in found[0].message


def test_wrong_parameter_count_and_type(tmp_path):
    found = check(tmp_path, MATMUL.replace(", int Width)", ")").replace("Width", "64"))
    assert "takes 3 parameters" in found[0].message
    found = check(tmp_path, MATMUL.replace("float* P", "double* P"))
    assert "Parameter 3 of matmul (P)" in found[0].message and "double" in found[0].message


def test_int_pitch_is_caught(tmp_path):
    found = check(tmp_path, CONV3D_PITCHED.format(pitch="int"), "conv3d-pitched")
    assert len(found) == 1 and "pitchN" in found[0].message and "size_t" in found[0].message


def test_static_constant_is_accepted(tmp_path):
    assert check(tmp_path, CONV3D_PITCHED.format(pitch="size_t"), "conv3d-pitched") == []


def test_constant_of_the_wrong_size(tmp_path):
    text = (
        CONV3D_PITCHED.format(pitch="size_t")
        .replace("#ifndef MASK_WIDTH\n#define MASK_WIDTH 5\n#endif", "#define MW 5")
        .replace("MASK_WIDTH * MASK_WIDTH * MASK_WIDTH", "MW * MW * MW")
    )
    found = check(tmp_path, text, "conv3d-pitched", {"MASK_WIDTH": 7})
    assert len(found) == 1 and "holds 125 floats" in found[0].message and "343" in found[0].message


def test_missing_constant(tmp_path):
    text = CONV3D_PITCHED.format(pitch="size_t").replace("static __constant__ float", "float")
    text = text.replace("* Mc[0]", "")
    found = check(tmp_path, text, "conv3d-pitched")
    assert any("does not declare it" in d.message for d in found)


def test_mask_in_device_memory_breaks_the_rule(tmp_path):
    text = CONV3D_PITCHED.format(pitch="size_t").replace("__constant__", "__device__")
    found = check(tmp_path, text, "conv3d-pitched")
    assert [d.kind for d in found] == [Kind.REQUIREMENT]
    assert "global memory" in found[0].message


# A course's own tiled lab whose rule is grader.labs.common's shared_memory(): the
# module's instructions decide it (matmul-tiled measures its traffic instead, issue 31).
SHARED_RULE = replace(get("matmul-tiled"), requirements=(common.shared_memory(),))


def test_tiled_lab_requires_shared_memory(tmp_path):
    found = check(tmp_path, MATMUL, SHARED_RULE)
    assert [d.kind for d in found] == [Kind.REQUIREMENT]
    assert "shared memory" in found[0].message


SHARED_WRITTEN_ONLY = MATMUL.replace(
    "float sum = 0;", "__shared__ float unused[256]; unused[threadIdx.x] = 1; float sum = 0;"
)
DYNAMIC_TILE = """\
extern __shared__ float tile[];
__global__ void matmul(const float* M, const float* N, float* P, int Width) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    tile[threadIdx.x] = i < Width ? M[i] : 0.0f;
    __syncthreads();
    if (i < Width) P[i] = tile[blockDim.x - 1 - threadIdx.x] * N[i];
}
"""
HELPER_READS = """\
__device__ __noinline__ float pick(const float* tile, int i) { return tile[i]; }
__global__ void matmul(const float* M, const float* N, float* P, int Width) {
    __shared__ float tile[256];
    tile[threadIdx.x] = M[threadIdx.x];
    __syncthreads();
    P[threadIdx.x] = pick(tile, 255 - threadIdx.x) * N[0] * Width;
}
"""


# An inline asm statement whose text names instructions only in comments.
ASM_BLOCK_COMMENT = (
    'asm volatile("/*\\n\\tld.shared.f32 %f1, [%r1];\\n\\tatom.add.u32 %r1, [%rd1], 1;\\n*/");'
)
ASM_LINE_COMMENT = 'asm volatile("// ld.shared.f32 %f1, [Mc]; atom.global.add.u32");'


@pytest.mark.parametrize(
    "text, reads",
    [
        (MATMUL, False),
        ('static const char* s = "__shared__";\n' + MATMUL, False),  # a word, not memory
        (MATMUL.replace("float sum = 0;", ASM_BLOCK_COMMENT + " float sum = 0;"), False),
        (MATMUL.replace("float sum = 0;", ASM_LINE_COMMENT + " float sum = 0;"), False),
        (SHARED_WRITTEN_ONLY, False),
        (DYNAMIC_TILE, True),
        (HELPER_READS, True),  # in a device function it calls
    ],
)
def test_the_shared_memory_rule_reads_the_module(tmp_path, text, reads):
    found = check(tmp_path, text, SHARED_RULE)
    assert (found == []) == reads, [d.message for d in found]
    if not reads:
        assert [d.kind for d in found] == [Kind.REQUIREMENT]
        assert found[0].message.startswith("matmul reads no shared memory")


def test_instructions_in_an_asm_comment_are_no_atomics_and_read_no_constant(tmp_path):
    for comment in (ASM_BLOCK_COMMENT, ASM_LINE_COMMENT):
        text = MATMUL.replace("float sum = 0;", comment + " float sum = 0;")
        kernel = inspect(tmp_path, text)[1].interface.kernels["matmul"]
        assert (kernel.reads_shared, kernel.atomics) == (False, False)
    text = CONV3D_PITCHED.format(pitch="size_t").replace(
        "N[0] * Mc[0]", 'N[0] * 0.04f; asm volatile("// ld.const.f32 %f1, [Mc];")'
    )
    found = check(tmp_path, text, "conv3d-pitched")
    assert "never reads the __constant__ mask Mc" in found[0].message


def test_a_constant_mask_the_kernel_never_reads_breaks_the_rule(tmp_path):
    text = CONV3D_PITCHED.format(pitch="size_t").replace("N[0] * Mc[0]", "N[0] * 0.04f")
    found = check(tmp_path, text, "conv3d-pitched")
    assert [d.kind for d in found] == [Kind.REQUIREMENT]
    assert "never reads the __constant__ mask Mc" in found[0].message


CUB_REDUCTION = """\
INCLUDE
__global__ void reduction(const float* input, float* output, int n) {
    typedef cub::BlockReduce<float, 256> Reduce;
    __shared__ typename Reduce::TempStorage temp;
    float v = blockIdx.x * 512 + threadIdx.x < n ? input[blockIdx.x * 512 + threadIdx.x] : 0.0f;
    float sum = Reduce(temp).Sum(v);
    if (threadIdx.x == 0) output[blockIdx.x] = sum;
}
"""


@pytest.mark.parametrize(
    "include",
    [
        "#include <cccl/cub/block/block_reduce.cuh>",  # CUDA 13's own path
        "%:include <cub/block/block_reduce.cuh>",  # a digraph
        "#\\\ninclude <cub/block/block_reduce.cuh>",  # a line splice
        "#define LIB(x) <x/block/block_reduce.cuh>\n#include LIB(cub)",  # a macro
    ],
)
def test_a_library_is_found_by_what_the_compile_read_whatever_the_spelling(tmp_path, include):
    found = check(tmp_path, CUB_REDUCTION.replace("INCLUDE", include), "reduction")
    assert [d.kind for d in found] == [Kind.REQUIREMENT]
    assert "CUB: the compile read cub/block/block_reduce.cuh" in found[0].message
    assert get("reduction").requirements[0].blocks


CUB_HEADER = "#include <cub/block/block_reduce.cuh>"
FIRST = """\
INCLUDE
__global__ void reduction(const float* input, float* output, int n) {
    if (threadIdx.x == 0) output[blockIdx.x] = input[blockIdx.x];
}
"""


@pytest.mark.parametrize(
    "include",
    [
        f"#ifndef __CUDA_ARCH__\n{CUB_HEADER}\n#endif",  # read on the host's pass alone
        f"#ifdef __CUDA_ARCH__\n{CUB_HEADER}\n#endif",  # on the device's alone
        f"void on_the_host() {{}}\n{CUB_HEADER}",  # after a host function
    ],
)
def test_a_library_header_read_on_one_side_only_is_found(tmp_path, include):
    found = check(tmp_path, FIRST.replace("INCLUDE", include), "reduction")
    assert [d.kind for d in found] == [Kind.REQUIREMENT]
    assert "CUB: the compile read cub/block/block_reduce.cuh" in found[0].message


@pytest.mark.parametrize(
    "text",
    [
        *(t.replace("SECRET", "x.h") for t in TRICKS.values()),
        "#  /* a comment */ include <x.h>",
        "#/*\n*/include <x.h>",
        "#inc\\\nlude <x.h>",
        "#inc\\  \r\nlude <x.h>",
        "#inc\\\rlude <x.h>",
        "#include_next <x.h>",
        "#embed <x.h>",
        "#if __has_include(<x.h>)\n#endif",
        "import <x.h>;",
    ],
)
def test_every_spelling_of_a_directive_that_reads_a_file_is_seen(text):
    assert nvcc.may_read_files(text)


def test_a_word_include_outside_a_directive_reads_nothing():
    words = ("// the halo included\n", "x.include();\n", "int excluded;\n", "int important;\n")
    for text in (*words, MATMUL):
        assert not nvcc.may_read_files(text)


def test_a_file_that_reads_no_file_has_the_dependency_list_of_a_compile_with_md(
    tmp_path, monkeypatch
):
    monkeypatch.setenv("GRADER_CACHE", str(tmp_path / "cache"))  # nothing learnt yet
    listed, run = [], nvcc.sandbox.run_compiler

    def spied(cmd, *args, **kwargs):
        listed.append("-MD" in cmd)
        return run(cmd, *args, **kwargs)

    monkeypatch.setattr(nvcc.sandbox, "run_compiler", spied)

    def headers(text, folder):
        folder.mkdir()
        raw = nvcc._compile(folder, "kernel.cu", text, {"MASK_WIDTH": 3}, "sm_90")
        return libraries.dependencies(raw["deps"])

    first = headers(MATMUL, tmp_path / "a")
    other = MATMUL.replace("matmul", "other") + "// halo included\n"
    learnt = headers(other, tmp_path / "b")
    nvcc._headers_path({"MASK_WIDTH": 3}, "sm_90", lean=True).unlink()
    again = headers(other, tmp_path / "c")
    assert listed == [True, False, False, False, True, False]  # nvcc, ptxas; -MD once learnt
    assert learnt[0] == str(tmp_path / "b" / "kernel.cu")
    assert learnt[1:] == first[1:] == again[1:] and len(learnt) > 10
    assert not any(nvcc.LEAN in name for name in first)  # the grader's header is not the file's


def test_a_list_that_names_a_library_is_never_learnt(tmp_path, monkeypatch):
    # a file whose include the text check missed must not hand its library to later files
    monkeypatch.setenv("GRADER_CACHE", str(tmp_path / "cache"))
    source = tmp_path / "kernel 1.cu"
    read = ["/usr/local/cuda/include/cuda_runtime.h", "/opt/x y/include/cub/block/block_reduce.cuh"]
    nvcc._learn_headers({}, "sm_90", True, [str(source), *read], source)
    assert nvcc._known_headers({}, "sm_90", True) is None
    nvcc._learn_headers({}, "sm_90", True, [str(source), *read[:1]], source)
    assert nvcc._known_headers({}, "sm_90", True) == read[:1]
    assert nvcc._known_headers({}, "sm_90", False) is None  # the full compile reads more


def test_device_variables_past_the_limit_are_a_resources_finding(tmp_path):
    # uninitialized, they take no room in the module but GPU memory that a batch shares
    hog = "__device__ float hog[80 << 20];\n"  # 320 MiB
    found = check(tmp_path, hog + MATMUL)
    assert [d.kind for d in found] == [Kind.RESOURCES] and "320 MiB" in found[0].message
    assert check(tmp_path, "__device__ float scratch[1 << 20];\n" + MATMUL) == []


def test_a_local_frame_past_the_limit_is_a_resources_finding(tmp_path):
    # the GPU reserves a thread's frame for every thread it can hold at once
    frame = """\
__global__ void matmul(const float* M, const float* N, float* P, int Width) {
    volatile float frame[WORDS];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    frame[i % WORDS] = M[0];
    if (i < Width * Width) P[i] = frame[(i * 7) % WORDS] + N[0];
}
"""
    found = check(tmp_path, frame.replace("WORDS", "20000"))  # 80 000 bytes
    assert [d.kind for d in found] == [Kind.RESOURCES] and "local memory" in found[0].message
    assert check(tmp_path, frame.replace("WORDS", "1000")) == []


def test_too_many_threads_and_launch_bounds(tmp_path):
    found = check(tmp_path, "#define BLOCK_X 64\n#define BLOCK_Y 32\n" + MATMUL)
    assert [d.kind for d in found] == [Kind.RESOURCES] and "2048 threads" in found[0].message
    bounded = MATMUL.replace("void matmul", "void __launch_bounds__(128) matmul")
    found = check(tmp_path, bounded)
    assert [d.kind for d in found] == [Kind.RESOURCES]
    assert "__launch_bounds__(128)" in found[0].message


REDUCTION = """\
#define BLOCK_X 1024
#define TILE_X {tile}
__global__ void reduction(const float* input, float* output, int n) {{
    if (threadIdx.x == 0) output[blockIdx.x] = input[blockIdx.x * TILE_X];
}}
"""


def test_a_launch_macro_past_the_labs_largest_is_a_resources_finding(tmp_path):
    assert check(tmp_path, REDUCTION.format(tile="(64 * BLOCK_X)"), lab="reduction") == []
    for tile, value in (("(64 * BLOCK_X + 1)", 65537), ("(1 << 24)", 16777216)):
        found = check(tmp_path, REDUCTION.format(tile=tile), lab="reduction")
        assert [d.kind for d in found] == [Kind.RESOURCES]
        assert f"TILE_X = {value}" in found[0].message and "up to 65536" in found[0].message


def test_compile_errors_are_on_the_students_lines(tmp_path):
    text = MATMUL.replace("float sum = 0.0f;", "float sum = 0.0f;\n        sum += undefined_name;")
    _, found, _, _ = inspect(tmp_path, text, name="my kernel.cu")
    assert not found.compile.ok and found.interface is None
    assert found.diagnostics[0].line == 6
    assert found.diagnostics[0].message.startswith("my kernel.cu:6:")
    assert "undefined_name" in found.diagnostics[0].message
    assert "grader-nvcc" not in found.compile.log


def test_results_are_cached(tmp_path, monkeypatch):
    first = inspect(tmp_path, MATMUL)[1]

    def no_second_compile(*args, **kwargs):
        raise AssertionError("nvcc ran again for a source it has inspected")

    monkeypatch.setattr(nvcc, "_compile", no_second_compile)
    again = inspect(tmp_path, MATMUL)[1]
    assert again.interface == first.interface and again.compile.ok


def test_canonical_types():
    assert canonical_ctype("float const*") == "const float*"
    assert canonical_ctype("const float * __restrict__") == "const float*"
    assert canonical_ctype("unsigned long") == "size_t"
    assert canonical_ctype("int") == "int"


def test_forbidden_constructs_are_found_outside_comments():
    forbidden = get("matmul-tiled").forbidden
    assert static_checks("// #include <cublas_v2.h>\n", forbidden) == []
    found = static_checks("\n#include <cublas_v2.h>\n", forbidden)
    assert found[0].line == 2 and "cuBLAS" in found[0].message
    for spelling in ("#include <cccl/cub/cub.cuh>", "%:include <thrust/reduce.h>"):
        assert "CUB" in static_checks(spelling, forbidden)[0].message
    assert "main()" in static_checks("int main(void) { return 0; }", forbidden)[0].message


def test_the_graders_own_launch_symbol_is_no_name_for_a_file():
    # renamed by a #define, the footer's copy would leave the file's own values to be read
    for text in (
        "#define grader_launch_config mine\n",
        "__constant__ int grader_launch_\\\nconfig[6];\n",  # a spliced line
    ):
        found = static_checks(text, ())
        assert [d.kind for d in found] == [Kind.COMPILE_ERROR], text
        assert "the grader's own name" in found[0].message
    assert static_checks("// grader_launch_config\nint grader_launch_configs;\n", ()) == []


def test_device_variables_are_the_modules_state_and_not_the_compilers(tmp_path):
    text = (
        "#include <cstdio>\n"
        "__device__ unsigned int count;\n"
        "static __device__ int hidden = 3;\n"
        "__managed__ float total;\n"
        "namespace ns { __device__ int inner; }\n"
        "__constant__ float Mc[4];\n"
        "__global__ void k(float* p) {\n"
        "    count++; hidden++; total += Mc[0]; ns::inner++;\n"
        '    printf("%u\\n", count);\n'
        "}\n"
    )
    _, found, _, _ = inspect(tmp_path, text)
    assert found.compile.ok, found.compile.log
    assert any(not name.isidentifier() for name in found.interface.constants)  # printf's
    wanted = {"count", "hidden", "total", "_ZN2ns5innerE"}
    assert set(found.interface.device_variables()) == wanted


def test_a_module_over_the_cap_is_told_by_its_variable_or_by_its_size():
    """A variable over the cap alone names the failure whatever module measured it (a
    plain and a census build of one file differ in size); under it, the module's size
    does."""
    mib = 1 << 20
    big = interface.Interface(constants={"big": interface.ConstantSig("big", 20 * mib)})
    plain, census = (
        interface.module_size(n, big).message for n in (20 * mib, 20 * mib + mib // 10)
    )
    assert plain == census
    assert plain.startswith("The compiled kernel is more than the 16 MiB a submission's ")
    assert "big alone is 20 MiB." in plain
    parts = interface.Interface(constants={"a": interface.ConstantSig("a", 10 * mib)})
    said = interface.module_size(17 * mib, parts).message
    assert said.startswith("The compiled kernel is 17 MiB, more than the 16 MiB")
    assert "; a alone is 10 MiB." in said
    assert interface.module_size(16 * mib, parts) is None


LIMITS = """\
#include <cstdio>
int host_side(int n) { return std::min(n, std::numeric_limits<int>::max()); }
__global__ void k(float* o, int n) {
    o[0] = std::min(n, std::numeric_limits<int>::max()) + std::is_same<int, float>::value;
}
"""
HOST_LIMITS = LIMITS.split("__global__")[0]
BYTE = "__global__ void k(float* o) { std::byte b{1}; o[0] = std::to_integer<int>(b); }\n"
REFERENCES = Path(__file__).parents[1] / "reference_kernels"
KERNELS = sorted(REFERENCES.glob("*/*.cu")) + sorted(
    p for p in REFERENCES.glob("*/*/*.cu") if "#include" in p.read_text()
)


def compiled_both_ways(tmp_path, monkeypatch, text, lab="matmul-naive"):
    """nvcc's raw products for `text`, without the special functions and with them, each
    compiled in the same folder (-lineinfo writes its name into the PTX), the cubin's
    sections but those that name the file (its time too)."""
    spec = get(lab)
    macros = spec.macro_values(spec.full_sizes(spec.public_cases[0].sizes))
    folder = tmp_path / "k"

    def compiled():
        shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir()
        raw = nvcc._compile(folder, "kernel.cu", text, macros, "sm_90")
        raw["ptxas"] = re.sub(r"Compile time = .*", "", raw["ptxas"])
        if raw["ok"]:
            raw["cubin"] = cubin_kit.code(base64.b64decode(raw["cubin"]))
        return {**raw, "deps": ""}

    assert nvcc._lean_flags(tmp_path, text)  # the file names no special function
    lean = compiled()
    monkeypatch.setattr(nvcc, "_lean_flags", lambda tmp, source: [])
    return lean, compiled()


@pytest.mark.parametrize("path", KERNELS, ids=lambda p: "/".join(p.parts[-3:]))
def test_a_compile_without_the_special_functions_gives_the_same_module(tmp_path, monkeypatch, path):
    """A file that names no special function is compiled without them (a fifth of nvcc's
    time): every lab kernel, and those that read headers, to the same PTX and resources."""
    lab = path.relative_to(REFERENCES).parts[0]
    lean, full = compiled_both_ways(tmp_path, monkeypatch, path.read_text(), lab)
    assert lean["ok"] and lean == full


@pytest.mark.parametrize("text, ok", [(LIMITS, False), (HOST_LIMITS, True), (BYTE, False)])
def test_the_standard_library_declares_the_same_without_them(tmp_path, monkeypatch, text, ok):
    """What their header declared besides (std::min, std::numeric_limits) is declared
    without them too, with nvcc's own words on a device call; std::byte in neither."""
    lean, full = compiled_both_ways(tmp_path, monkeypatch, text)
    assert lean["ok"] is ok and lean == full


def test_a_file_that_names_a_special_function_is_compiled_with_them(tmp_path):
    text = (
        "#include <cmath>\nfloat f(float a) { return std::beta(a, a); }\n__global__ void k() {}\n"
    )
    assert nvcc._lean_flags(tmp_path, text) == []
    assert nvcc._compile(tmp_path, "kernel.cu", text, {}, "sm_90")["ok"]
    assert nvcc._lean_flags(tmp_path, text.replace("std::beta(a, a)", "a")) != []


def test_the_lean_compile_reads_no_special_function(tmp_path, monkeypatch):
    """What saves the time: nvcc's front end never reads their header."""

    def read(folder):
        folder.mkdir()
        raw = nvcc._compile(folder, "kernel.cu", "#include <cmath>\n" + HOST_LIMITS, {}, "sm_90")
        return [Path(name).name for name in libraries.dependencies(raw["deps"])]

    lean = read(tmp_path / "lean")
    monkeypatch.setattr(nvcc, "_lean_flags", lambda tmp, source: [])
    full = read(tmp_path / "full")
    assert "specfun.h" in full and "specfun.h" not in lean and "cmath" in lean
