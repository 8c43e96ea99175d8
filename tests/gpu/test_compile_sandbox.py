"""The GPU worker compiles none of a submission: it loads the cubin nvcc.inspect made,
sandboxed (tests/test_interface.py tries the include tricks on that compile). Its one
compile is the grader's own helpers, by PyCUDA's compiler given nvcc.sandboxed_nvcc(),
which leaves nothing in TMPDIR. A check on the GPU leaks nothing past the text check."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from include_tricks import TRICKS, plant_secret

from grader import cli
from grader.backends.cuda.backend import CudaBackend, ModuleSpec
from grader.backends.cuda.client import Reply, WorkerProcess
from grader.backends.cuda.probe import device_info
from grader.model.source import Submission
from grader.toolchain import nvcc

KERNEL = (
    "__global__ void matmul(const float* M, const float* N, float* P, int Width) "
    "{ P[threadIdx.x] = M[threadIdx.x] * N[threadIdx.x] * Width; }\n"
)


@pytest.fixture
def secret(tmp_path) -> Path:
    return plant_secret(tmp_path)


@pytest.fixture
def worker_tmp(tmp_path, monkeypatch) -> Path:
    """The TMPDIR the worker (and so PyCUDA) sees, and a cache of its own, empty."""
    folder = tmp_path / "worker-tmp"
    folder.mkdir()
    monkeypatch.setenv("TMPDIR", str(folder))
    monkeypatch.setenv("GRADER_CACHE", str(tmp_path / "cache"))
    return folder


def load(spec: ModuleSpec) -> Reply:
    """One load request, as CudaBackend makes it, in a fresh worker."""
    worker = WorkerProcess()
    try:
        assert worker.start().ok
        return worker.call(*spec.load_request(), timeout=120)
    finally:
        worker.stop()


def test_a_build_loads_inspect_s_cubin_and_compiles_only_the_helpers(tmp_path, worker_tmp):
    with CudaBackend() as cuda:
        built = cuda.build(Submission(Path("kernel.cu"), KERNEL), {}, (16, 16, 1))
    assert built.ok and built.artifact.cubin.startswith(b"\x7fELF")
    reply = load(built.artifact)
    assert reply.ok, reply.error or reply.why
    assert list(worker_tmp.iterdir()) == []  # the helpers' compile left nothing there
    assert len(list((tmp_path / "cache" / "pycuda").glob("*.cubin"))) == 1  # theirs alone


def test_bytes_that_are_no_cubin_are_refused_in_words(worker_tmp):
    arch = device_info()["arch"]
    reply = load(ModuleSpec("k", b"#include </etc/passwd>", arch, nvcc.sandboxed_nvcc()))
    assert not reply.ok and reply.error["phase"] == "load", reply.error or reply.why


def test_check_on_the_gpu_leaks_nothing_past_the_text_check(tmp_path, capsys, secret, monkeypatch):
    monkeypatch.setattr("grader.grading.pipeline.static_checks", lambda text, forbidden: [])
    path = tmp_path / "kernel.cu"
    path.write_text(TRICKS["digraph"].replace("SECRET", str(secret)) + KERNEL)
    reports = [tmp_path / "r.json", tmp_path / "r.html", tmp_path / "r.xml"]
    argv = ["check", "matmul-naive", str(path), "--backend", "cuda", "--json", str(reports[0])]
    code = cli.main([*argv, "--html", str(reports[1]), "--junit", str(reports[2])])
    every = "".join(capsys.readouterr()) + "".join(p.read_text() for p in reports)
    assert code == 1 and json.loads(reports[0].read_text())["compile"]["ok"] is False
    assert secret.read_text().split()[0] not in every
