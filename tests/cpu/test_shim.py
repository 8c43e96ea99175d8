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
from grader.backends.cpu.describe import describe
from grader.backends.cpu.elf import Elf
from grader.model.source import Submission
from grader.toolchain import cxx
from grader.toolchain.sandbox import CompilerRun

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


GATHER = """__global__ void gather(const float* in, float* out, int n) {
    __shared__ float tile[32];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    tile[threadIdx.x] = i < n ? in[(i * 7) % n] : 0.0f;
    __syncthreads();
    if (i < n) out[i] = tile[31 - threadIdx.x] * 2.0f;
}
"""


@pytest.mark.parametrize("census", [False, True], ids=["plain", "census"])
def test_a_module_linked_by_gold_is_the_module_ld_bfd_links(kit, no_nvcc, monkeypatch, census):
    """Where gold links (shim.linker), a module reads (its registration, its undefined
    and imported names) and runs as the default linker's link of the same objects."""
    if not cpu_shim.linker():
        pytest.skip("the compiler cannot link with gold here")
    data = np.arange(100, dtype=np.float32)
    seen = []
    for linker in (cpu_shim.linker(), ()):
        monkeypatch.setattr(cpu_shim, "linker", lambda linker=linker: linker)
        build = kit.backend.build(Submission(Path("k.cu"), GATHER), {}, (32, 1, 1), census)
        assert build.ok, build.diagnostics
        module = build.artifact.module
        found = describe(module)
        args = [inp("in", data), out("out", 100), integer("n", 100)]
        outcome = kit.run(build, "gather", 4, 32, args)
        assert outcome.completed, outcome.diagnostics
        seen.append(
            (
                repr(found.interface),
                found.codes,
                found.variables,
                sorted(Elf(module).undefined()),
                sorted(Elf(module).imports()),
                outcome.buffers["out"].data.tobytes(),
            )
        )
    assert seen[0] == seen[1]


def test_where_gold_cannot_link_a_module_is_linked_by_the_default_linker(monkeypatch):
    """binutils 2.44 no longer ships gold: the probe's failure leaves the linker flag
    out, and the module's flags are the default linker's."""
    monkeypatch.setattr(
        cpu_shim.sandbox,
        "run_compiler",
        lambda *a, **k: CompilerRun(1, "collect2: fatal error: cannot find 'ld.gold'"),
    )
    cpu_shim._gold.cache_clear()
    try:
        assert cpu_shim.linker() == ()
        assert not [f for f in cpu_shim.module_flags(False) if f.startswith("-fuse-ld")]
    finally:
        cpu_shim._gold.cache_clear()  # the next test probes this machine's compiler again
