"""The compiled module on disk: every case of a grading runs the one module its compile
wrote, linked read-only into each worker's folder (grader.backends.cpu.shelf), and a
module over defaults.MODULE_BYTES is a compile error that leaves nothing large behind,
however small its source (`__device__ char big[250 << 20] = {1};` is one line)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from grader import defaults, labs
from grader.backends.cpu import CpuBackend
from grader.backends.cpu.shelf import KEPT, Shelf
from grader.grading.pipeline import Options, grade
from grader.model.result import Kind
from grader.toolchain import nvcc

SECRET = "a course secret"
MATMUL = """
__global__ void matmul(const float* M, const float* N, float* P, int Width) {
    int row = blockIdx.y * blockDim.y + threadIdx.y;
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    if (row < Width && col < Width) {
        float sum = big[row % 2];
        for (int k = 0; k < Width; ++k) sum += M[row * Width + k] * N[k * Width + col];
        P[row * Width + col] = sum;
    }
}
"""
# What the worker sees of its module (C++ the CPU backend runs, which nvcc would refuse).
LOOKS_AT_ITS_MODULE = (
    "#include <cstdio>\n#include <sys/stat.h>\n__device__ char big[2];\n"
    + MATMUL.replace(
        "    if (row < Width && col < Width) {",
        """    if (row == 0 && col == 0) {
        struct stat info;
        FILE* written = fopen("module.so", "r+b");
        if (stat("module.so", &info) == 0)
            printf("links=%d mode=%o writable=%d\\n", (int)info.st_nlink,
                   (unsigned)(info.st_mode & 0777), written != NULL);
    }
    if (row < Width && col < Width) {""",
    )
)


def graded(tmp_path: Path, text: str, secret: str | None = SECRET):
    path = tmp_path / "kernel.cu"
    path.write_text(text)
    with CpuBackend() as backend:
        lab = labs.get("matmul-naive")
        return grade(lab, path, backend, Options("cpu", secret, timing=False))


def modules(cache: Path) -> list[Path]:
    """The cache's compiled modules of submissions."""
    return list(cache.glob("cpu/mod-*/module.so"))


def test_every_case_runs_the_one_module_read_only(tmp_path, no_nvcc):
    result = graded(tmp_path, LOOKS_AT_ITS_MODULE)
    assert len(result.cases) == 16 and all(c.passed for c in result.cases)
    for case in result.cases:  # a link of the cache's file, which the kernel cannot open
        # (and another case's, where that case's run went on beside it)
        assert case.output in ("links=2 mode=444 writable=0\n", "links=3 mode=444 writable=0\n")


@pytest.mark.parametrize("megabytes", [20, 250])
def test_a_module_over_the_cap_is_a_compile_error(tmp_path, monkeypatch, no_nvcc, megabytes):
    monkeypatch.setenv("GRADER_CACHE", str(tmp_path / "cache"))
    result = graded(tmp_path, f"__device__ char big[{megabytes} << 20] = {{1}};\n" + MATMUL)
    [error] = result.diagnostics
    assert error.kind == Kind.COMPILE_ERROR and not result.compile.ok
    if megabytes < defaults.COMPILE_FILE_SIZE >> 20:
        # one sentence from the plain and the census build, whose modules' sizes differ
        assert error.message == (
            "The compiled kernel is more than the 16 MiB a submission's module may be: big "
            f"alone is {megabytes} MiB. A __device__ array with an initializer is stored "
            "whole in the module: declare a large one without an initializer and fill it "
            "in a kernel."
        )
    else:
        assert error.message.startswith(
            "The CPU backend could not compile kernel.cu: the compiler's output grew past 64 "
            "MiB and was stopped. A __device__ array with an initializer is stored whole in "
            "the compiled kernel, which may be 16 MiB"
        )
    assert all(c.status == "error" for c in result.cases)
    assert modules(tmp_path / "cache") == []
    left = [p for p in tmp_path.rglob("*") if p.is_file() and p.stat().st_size > 1 << 20]
    # but what a first grading in a cache builds once per machine, whatever it grades
    assert [p for p in left if not p.parent.name.startswith(("runner-", "shim-"))] == []


@pytest.mark.skipif(nvcc.find() is None, reason="nvcc is not installed")
def test_nvcc_refuses_a_module_over_the_cap_alike(tmp_path, monkeypatch):
    monkeypatch.setenv("GRADER_CACHE", str(tmp_path / "cache"))
    result = graded(tmp_path, "__device__ char big[20 << 20] = {1};\n" + MATMUL, None)
    [error] = result.diagnostics
    assert error.message.startswith(
        "The compiled kernel is more than the 16 MiB a submission's module may be: big "
        "alone is 20 MiB."
    )


def _other_file_system(tmp_path: Path) -> Path:
    for folder in ("/dev/shm", "/var/tmp"):
        other = os.path.isdir(folder) and os.stat(folder).st_dev != tmp_path.stat().st_dev
        if other and os.access(folder, os.W_OK):
            return Path(folder)
    pytest.skip("no writable folder on another file system than the temporary one")


def test_a_module_on_another_file_system_is_copied_once(tmp_path):
    elsewhere = _other_file_system(tmp_path)
    module = elsewhere / f"grader-test-{os.getpid()}-module.so"
    module.write_bytes(os.urandom(4096))
    try:
        with Shelf() as shelf:
            for n in range(3):
                shelf.place(module, tmp_path / f"job-{n}.so")
            [copy] = {os.stat(tmp_path / f"job-{n}.so").st_ino for n in range(3)}
            assert copy != module.stat().st_ino
            assert (tmp_path / "job-0.so").stat().st_nlink == 4  # the shelf's and 3 jobs'
            assert (tmp_path / "job-0.so").stat().st_mode & 0o777 == 0o444
        assert (tmp_path / "job-0.so").stat().st_nlink == 3  # the shelf is gone
    finally:
        module.unlink()


def test_the_shelf_keeps_a_bounded_number_of_copies(tmp_path):
    elsewhere = _other_file_system(tmp_path)
    made = [elsewhere / f"grader-test-{os.getpid()}-{n}.so" for n in range(KEPT + 3)]
    try:
        with Shelf() as shelf:
            for n, module in enumerate(made):
                module.write_bytes(b"module %d" % n)
                shelf.place(module, tmp_path / f"job-{n}.so")
            copies = {p for p in Path(shelf._folder).iterdir()}
            assert len(copies) == KEPT
            assert (tmp_path / "job-0.so").read_bytes() == b"module 0"  # still the job's
    finally:
        for module in made:
            module.unlink()
