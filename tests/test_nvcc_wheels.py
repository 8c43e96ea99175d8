"""NVIDIA's nvcc from PyPI (the grader's `nvcc` extra) on a machine without the CUDA
toolkit: found in this Python's site-packages after any system toolkit
(grader.toolchain.nvcc.find), and judging the CPU backend's compiles as a GPU's nvcc does.
Without nvcc, g++ alone compiles the file and accepts a kernel that calls a host function,
which no GPU runs; the report says so."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from grader import labs
from grader.toolchain import nvcc

HOST_CALL = """#include <algorithm>
// counts on one thread, through the host's std::fill and std::copy: nvcc refuses it
__global__ void histogram(const unsigned char* input, unsigned int* bins, int n)
{
    if (blockIdx.x != 0 || threadIdx.x != 0) return;
    unsigned int counts[256];
    std::fill(counts, counts + 256, 0u);
    for (int i = 0; i < n; ++i) counts[input[i]]++;
    std::copy(counts, counts + 256, bins);
}
"""
# grades ARG's file with the nvcc NVCC names (a path, or None for none), in a process of
# its own with an empty cache: what nvcc compiled is cached by the file, not the compiler
GRADE = """
import json, sys
from pathlib import Path
from grader.toolchain import nvcc
nvcc.find = lambda: NVCC
from grader.grading.pipeline import Options, check
lab, path = sys.argv[1], Path(sys.argv[2])
result = check(lab, path, Options(backend="cpu", timing=False))
print(json.dumps({
    "compiled": result.compile.ok,
    "log": result.compile.log,
    "registers": [k.registers for k in result.compile.kernels.values()],
    "passed": [c.passed for c in result.cases],
    "notes": result.notes,
    "device": result.device,
}))
"""


def grade(tmp_path: Path, lab: str, path: Path, compiler: str | None) -> dict:
    script = GRADE.replace("NVCC", repr(compiler))
    env = {**os.environ, "GRADER_CACHE": str(tmp_path / "cache")}
    done = subprocess.run(
        [sys.executable, "-c", script, lab, str(path)], env=env, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.splitlines()[-1])


def _executable(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("#!/bin/sh\n")
    path.chmod(0o755)
    return path


def test_the_wheels_nvcc_is_found_in_site_packages_after_a_system_toolkit(tmp_path, monkeypatch):
    site_packages = tmp_path / "site-packages"
    wheel = _executable(site_packages / nvcc.WHEEL_NVCC)
    monkeypatch.setattr(nvcc.sysconfig, "get_path", lambda name: str(site_packages))
    assert nvcc._from_wheels() == str(wheel)
    system = _executable(tmp_path / "bin" / "nvcc")
    monkeypatch.setenv("PATH", str(system.parent))
    nvcc.find.cache_clear()
    try:
        assert nvcc.find() == str(system)
    finally:
        nvcc.find.cache_clear()


def test_a_wheels_nvcc_that_is_not_executable_is_passed_over(tmp_path, monkeypatch):
    site_packages = tmp_path / "site-packages"
    (site_packages / nvcc.WHEEL_NVCC).parent.mkdir(parents=True)
    (site_packages / nvcc.WHEEL_NVCC).write_text("")
    monkeypatch.setattr(nvcc.sysconfig, "get_path", lambda name: str(site_packages))
    monkeypatch.setattr(nvcc.site, "getsitepackages", lambda: [])
    monkeypatch.setattr(nvcc.site, "ENABLE_USER_SITE", False)
    assert nvcc._from_wheels() is None


WHEELS = nvcc._from_wheels()
needs_wheels = pytest.mark.skipif(
    WHEELS is None, reason="NVIDIA's nvcc wheels are not installed (the `nvcc` extra)"
)


@needs_wheels
def test_the_wheels_nvcc_refuses_a_kernel_that_calls_a_host_function(tmp_path):
    path = tmp_path / "kernel.cu"
    path.write_text(HOST_CALL)
    found = grade(tmp_path, "histogram", path, WHEELS)
    assert not found["compiled"]
    assert 'calling a __host__ function("void  ::std::fill' in found["log"]
    assert not any(nvcc.MISSING in note for note in found["notes"])


@needs_wheels
def test_the_wheels_nvcc_compiles_the_reference_and_counts_its_registers(tmp_path):
    reference = labs.get("matmul-tiled").home / "reference.cu"
    found = grade(tmp_path, "matmul-tiled", reference, WHEELS)
    assert found["compiled"] and all(found["passed"]) and found["passed"]
    assert all(r and r > 0 for r in found["registers"]), found["registers"]


def test_without_nvcc_g_plus_plus_alone_compiles_and_the_report_says_what_it_lets_pass(tmp_path):
    path = tmp_path / "kernel.cu"
    path.write_text(HOST_CALL)
    found = grade(tmp_path, "histogram", path, None)
    assert found["compiled"] and all(found["passed"])  # what no GPU would run
    assert any(nvcc.MISSING in note for note in found["notes"]), found["notes"]
    assert found["device"].endswith(", no nvcc; speed is not scored on the CPU")


BATCH = """
import sys
from pathlib import Path
from grader.toolchain import nvcc
nvcc.find = lambda: None
from grader.batch import run_batch
folder, out = Path(sys.argv[1]), Path(sys.argv[2])
run_batch("matmul-naive", folder, out, public_only=True, jobs=1, backend="cpu", log=sys.stdout)
"""


def test_a_batch_without_nvcc_says_so_in_its_log_before_it_grades(tmp_path):
    course = tmp_path / "course"
    course.mkdir()
    (course / "alice.cu").write_text((labs.get("matmul-naive").home / "reference.cu").read_text())
    env = {**os.environ, "GRADER_CACHE": str(tmp_path / "cache")}
    done = subprocess.run(
        [sys.executable, "-c", BATCH, str(course), str(tmp_path / "out")],
        env=env, capture_output=True, text=True,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert nvcc.MISSING_NOTE in done.stdout, done.stdout
