"""One program on both backends: the CPU build shows the submission no macro of the
grader's own, so a file cannot test for the CPU backend by a name the grader defines
(issue 17). CUDA's own names stay (`__CUDACC__`, `CUDART_VERSION`), as nvcc defines
them, and the shim's helpers have reserved names or are #undef'd after use."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import numpy as np
import pytest
from cpu_kit import inp, integer, out

from grader.backends.cpu import shim as cpu_shim
from grader.backends.cpu.elf import Elf, dynamic
from grader.model.source import Submission
from grader.toolchain import cxx, special_functions

# Macros the shim defines that nvcc's device pass defines too; all others are reserved.
CUDA_MACROS = {"CUDART_VERSION", "CUDART_CB"}
GRADER_NAME = re.compile(r"\b_*(?:GRADER|grader)\w*")


def _macros(source: str, shim: bool) -> set[str]:
    """The macros defined after `source`, preprocessed as the CPU build compiles a
    module (with the shim) or with the standard headers alone."""
    flags = ["-I", str(cpu_shim.INCLUDE), "-include", cpu_shim.SHIM] if shim else []
    arch = cpu_shim.ARCH_MACRO
    done = subprocess.run(
        [cxx.compiler().path, "-std=gnu++17", *flags, arch, "-dM", "-E", "-x", "c++", "-"],
        input=source,
        capture_output=True,
        text=True,
        check=True,
    )
    return {line.split()[1].split("(")[0] for line in done.stdout.splitlines()}


def _shim_headers() -> tuple[str, str]:
    """The standard headers the shim includes, and the CUDA headers it stands in for."""
    shim = (cpu_shim.INCLUDE / cpu_shim.SHIM).read_text()
    standard = re.findall(r"^#include <[\w./]+>$", shim, re.MULTILINE)
    cuda = [
        f"#include <{p.name}>"
        for p in sorted(cpu_shim.INCLUDE.glob("*.h"))
        if "#error" not in p.read_text() and p.name != "grader_register.h"  # the footer's
    ]
    return "\n".join(standard) + "\n", "\n".join(cuda) + "\n"


def test_the_shim_defines_no_macro_a_file_could_test_for_but_cudas_and_reserved_ones():
    standard, cuda = _shim_headers()
    added = _macros(standard + cuda, shim=True) - _macros(standard, shim=False)
    assert "__CUDACC__" in added and "__syncthreads" in added  # the check sees the shim's
    public = {
        name
        for name in added
        if not re.match(r"__|_[A-Z]", name)
        and name not in CUDA_MACROS
        and not name.startswith("CUDART_")  # math_constants.h, as CUDA's own
    }
    assert public == set()
    assert {name for name in added if GRADER_NAME.fullmatch(name)} == set()


def _names_in_the_runtime() -> list[str]:
    """Every grader_* or GRADER_* word of the shim's headers, reserved or not."""
    words = set()
    for path in cpu_shim.INCLUDE.glob("*.h"):
        words |= set(GRADER_NAME.findall(path.read_text()))
    return sorted(words | {"GRADER_CPU_BACKEND", "printf", "atomicAdd_block"})


def test_a_kernel_that_tests_for_every_grader_name_sees_none_of_them(kit):
    names = _names_in_the_runtime()
    tests = "\n".join(f"#ifdef {name}\n    seen += 1;\n#endif" for name in names)
    source = (
        "__global__ void probe(float* out, int n) {\n"
        "    int seen = 0;\n"
        f"{tests}\n"
        '    if (threadIdx.x == 0) printf("hello\\n");\n'
        "    out[threadIdx.x] = seen + n;\n"
        "}\n"
    )
    outcome = kit.run(kit.built(source), "probe", 1, 4, [out("out", 4), integer("n", 0)])
    assert outcome.completed, outcome.diagnostics
    assert outcome.buffers["out"].data.tolist() == [0.0] * 4  # none of `names` is defined
    # printf is still the runner's, even where the compiler would have made it puts
    assert outcome.output == "hello\n"


SHARED_STORES = """\
__global__ void k(const float* in, float* out) {
    __shared__ float tile[64];
    tile[threadIdx.x] = in[threadIdx.x];
    __syncthreads();
    out[threadIdx.x] = tile[63 - threadIdx.x];
}
"""


@pytest.mark.skipif(
    not cpu_shim.inline_checks(), reason="the module calls a hook before every store"
)
def test_a_grading_module_calls_the_runner_only_where_the_shadow_marks_an_output(kit, no_nvcc):
    """Its stores are checked inline (shim.py): a call only where the runner's shadow
    marks an output's granule (__asan_report_store4_noabort), none before a store into
    shared memory (__asan_store4_noabort was one before every store); the census build,
    whose hooks count every access for the profile and the races, still calls its own."""
    build = kit.built(SHARED_STORES, block=(64, 1, 1))
    imports = set(Elf(build.artifact.module).undefined())
    assert "__asan_report_store4_noabort" in imports
    assert "__asan_store4_noabort" not in imports
    census = kit.backend.build(Submission(Path("k.cu"), SHARED_STORES), {}, (64, 1, 1), True)
    assert {"__tsan_read4", "__tsan_write4"} <= set(Elf(census.artifact.module).undefined())
    result = kit.run(build, "k", 1, 64, [inp("in", np.arange(64)), out("out", 64)])
    assert result.diagnostics == []
    np.testing.assert_array_equal(result.buffers["out"].data, np.arange(64)[::-1])


@pytest.mark.parametrize("census", [False, True], ids=["graded", "census"])
def test_a_module_needs_only_the_libraries_it_takes_a_name_from(kit, no_nvcc, census):
    """Linked --as-needed, which g++ leaves out where a sanitizer is given (ld twice as
    slow): a kernel of plain arithmetic needs no maths library, one that calls erff does,
    and it runs."""
    maths = "__global__ void k(float* P) { P[threadIdx.x] = erff(P[threadIdx.x]); }"
    needs = {}
    for name, text in (("plain", SHARED_STORES), ("maths", maths)):
        built = kit.backend.build(Submission(Path("k.cu"), text), {}, (64, 1, 1), census)
        assert built.ok, built.diagnostics
        needs[name] = dynamic(built.artifact.module).needed
    assert "libm.so.6" not in needs["plain"] and "libm.so.6" in needs["maths"]
    result = kit.run(built, "k", 1, 64, [out("P", 64, 0.0)])
    assert result.completed, result.diagnostics
    np.testing.assert_array_equal(result.buffers["P"].data, 0.0)


def test_under_an_address_space_limit_every_store_calls_the_runner(monkeypatch):
    """A runner under `ulimit -v` could not reserve the shadow an inline check reads
    (16 TiB of address space), so no module is built to read it: each store calls."""
    monkeypatch.setattr(cpu_shim.resource, "getrlimit", lambda which: (8 << 30, 8 << 30))
    cpu_shim._shadow_fits.cache_clear()
    try:
        assert not cpu_shim.inline_checks()
        flags = cpu_shim.module_flags(census=False)
        assert [f for f in flags if f.endswith("instrumentation-with-call-threshold=0")]
        assert not [f for f in flags if f.startswith("-fasan-shadow-offset")]
    finally:
        cpu_shim._shadow_fits.cache_clear()


KERNEL = " void k(float* p) { p[threadIdx.x] = 1.0f; }"
UNHOOKED = {  # what comes before KERNEL
    "attribute": "__global__ __attribute__((no_sanitize_address))",
    "spelled": '__global__ __attribute__((__no_sanitize__("thread")))',
    "standard": "[[gnu::no_sanitize_thread]] __global__",
    "pasted": "#define CAT(a, b) a##b\n__global__ __attribute__((CAT(no_sanitize, _thread)))",
    "undefined": "#undef no_sanitize_address\n__global__ __attribute__((no_sanitize_address))",
}


@pytest.mark.parametrize("census", [False, True], ids=["graded", "census"])
@pytest.mark.parametrize("spelling", sorted(UNHOOKED))
def test_an_attribute_that_would_take_a_kernel_out_of_the_hooks_does_not_compile(
    kit, no_nvcc, spelling, census
):
    """A function marked no_sanitize_address or no_sanitize("thread") gets no hooks from
    the sanitizer's pass: its stores would make no conflict or lost update, and in the
    census build its loads would be missing from the profile. The shim poisons those
    names, whichever way the file spells or builds them."""
    source = Submission(Path("k.cu"), UNHOOKED[spelling] + KERNEL)
    build = kit.backend.build(source, {}, (32, 1, 1), census)
    assert not build.ok and build.refused
    said = " ".join(d.message for d in build.diagnostics)
    assert "out of the grader's sight of its loads and stores" in said
    assert said.startswith("k.cu:")  # with the line that names it


SPECIAL = """\
#include <cmath>
float host_side(float a, float b) { return std::beta(a, b) + std::riemann_zetaf(a); }
__global__ void k(float* out) { out[threadIdx.x] = 1.0f; }
"""


def test_a_file_that_names_a_special_function_is_compiled_with_them(kit, no_nvcc):
    """A module goes without <cmath>'s special functions (include/grader_lean.h), unless
    its file names one, in its host code say, as nvcc's host compiler would take it."""
    assert special_functions.named(SPECIAL)
    assert special_functions.named("#define NAME(a) a##_zeta\n")  # may paste one
    assert not special_functions.named('// std::beta\nconst char* s = "beta";\n')
    kit.built(SPECIAL)
    forced, _ = cpu_shim.shim_include(False, SPECIAL)
    assert forced[forced.index("-include") + 1] == cpu_shim.SHIM
