"""Is a CUDA device usable here (grader.backends.cuda.probe), without a GPU: the grader
process never imports PyCUDA, and a yes is remembered until forgotten."""

from __future__ import annotations

import importlib
import sys


def test_importing_and_probing_the_backend_does_not_import_pycuda():
    from grader.backends.cuda import probe

    usable, why = probe()
    assert "pycuda" not in sys.modules
    assert usable or why


def test_a_yes_from_the_probe_is_remembered_until_forgotten(tmp_path, monkeypatch):
    probing = importlib.import_module("grader.backends.cuda.probe")  # the module, not probe()
    monkeypatch.setenv("GRADER_CACHE", str(tmp_path))
    monkeypatch.setattr("grader.toolchain.nvcc.find", lambda: "/usr/bin/nvcc")
    asked = []
    yes = {"ok": True, "name": "GPU", "arch": "sm_90", "cuda": "13.0", "memory": 1}
    monkeypatch.setattr(probing, "_ask", lambda: asked.append(1) or dict(yes))
    probing.device_info.cache_clear()
    try:
        assert probing.device_info() == yes and asked == [1]
        probing.device_info.cache_clear()  # a new grading process
        assert probing.device_info() == yes and asked == [1]  # read, not asked
        monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "1")  # another device list: ask again
        probing.device_info.cache_clear()
        assert probing.device_info() == yes and asked == [1, 1]
        probing.forget()  # its worker did not start
        assert probing.device_info() == yes and asked == [1, 1, 1]
        no = {"ok": False, "reason": "no CUDA device"}
        monkeypatch.setattr(probing, "_ask", lambda: asked.append(1) or dict(no))
        probing.forget()
        assert probing.device_info() == no
        probing.device_info.cache_clear()
        assert probing.device_info() == no and len(asked) == 5  # a no is never remembered
    finally:
        probing.device_info.cache_clear()


def test_a_driver_of_an_older_cuda_than_nvcc_is_no_usable_device(tmp_path, monkeypatch):
    """NVIDIA's nvcc from PyPI is CUDA 13 whatever the driver: a CUDA 12 driver cannot
    load its kernels, so the device is not usable (auto grades on the CPU), and says why."""
    probing = importlib.import_module("grader.backends.cuda.probe")
    monkeypatch.setenv("GRADER_CACHE", str(tmp_path))
    monkeypatch.setattr("grader.toolchain.nvcc.find", lambda: "/venv/nvidia/cu13/bin/nvcc")
    monkeypatch.setattr("grader.toolchain.nvcc.version", lambda: "13.0")
    for cuda, usable in (("12.8", False), ("13.0", True), ("13.2", True)):
        yes = {"ok": True, "name": "GPU", "arch": "sm_89", "cuda": cuda, "memory": 1}
        monkeypatch.setattr(probing, "_ask", lambda yes=yes: dict(yes))
        probing.forget()
        try:
            found = probing.device_info()
        finally:
            probing.device_info.cache_clear()
        assert found["ok"] == usable, found
        if not usable:
            assert "supports CUDA 12.8" in found["reason"] and "is CUDA 13.0" in found["reason"]
