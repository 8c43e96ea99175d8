"""The GPU backend's own compile: PyCUDA's compiler runs nvcc itself, in the worker.
It gets nvcc.sandboxed_nvcc(), so the include tricks that the grader's text check might
miss leak nothing through it either, and it leaves nothing in TMPDIR."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from include_tricks import TRICKS, plant_secret

from grader import cli
from grader.backends.cuda.backend import ModuleSpec
from grader.backends.cuda.client import Reply, WorkerProcess
from grader.backends.cuda.probe import device_info
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
    """The TMPDIR the worker (and so PyCUDA) sees."""
    folder = tmp_path / "worker-tmp"
    folder.mkdir()
    monkeypatch.setenv("TMPDIR", str(folder))
    return folder


def load(source: str) -> Reply:
    """One load request, as CudaBackend makes it, in a fresh worker."""
    worker = WorkerProcess()
    try:
        assert worker.start().ok
        arch = device_info()["arch"]
        spec = ModuleSpec("k", source, ("-lineinfo",), arch, nvcc.sandboxed_nvcc())
        return worker.call(spec.load_request(), timeout=120)
    finally:
        worker.stop()


def test_sourcemodule_compiles_through_the_sandboxed_nvcc(worker_tmp):
    reply = load("#include <cstdio>\n" + KERNEL)  # an #include: PyCUDA preprocesses first
    assert reply.ok, reply.error or reply.why
    assert list(worker_tmp.iterdir()) == []


@pytest.mark.parametrize("trick", TRICKS)
def test_an_include_trick_leaks_nothing_through_sourcemodule(secret, worker_tmp, trick):
    reply = load(TRICKS[trick].replace("SECRET", str(secret)) + KERNEL)
    assert not reply.ok
    said = json.dumps(reply.message.header if reply.message else reply.why)
    assert secret.read_text().split()[0] not in said
    assert "Permission denied" in said
    assert list(worker_tmp.iterdir()) == []


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
