"""A batch on a GPU (marked `gpu`, skipped without one): after an illegal address or a
hang, the worker is replaced and the next submissions are graded as if nothing had
happened; timing runs alone on the GPU while another worker uses it for cases."""

from __future__ import annotations

import csv
from functools import cache

import pytest

from grader import labs
from grader.batch import run_batch

LAB = "matmul-tiled"
pytestmark = pytest.mark.gpu


@cache
def no_gpu() -> str | None:
    from grader.backends import gpu_status

    usable, why = gpu_status()
    return None if usable else why


@pytest.fixture(autouse=True)
def need_gpu():
    if no_gpu():
        pytest.skip(f"no usable CUDA device: {no_gpu()}")


ILLEGAL_ADDRESS = """\
__global__ void matmul(const float* M, const float* N, float* P, int Width) {
    P[(size_t)1 << 40] = 1.0f;  // far outside any allocation
}
"""
HANG = """\
__global__ void matmul(const float* M, const float* N, float* P, int Width) {
    volatile float* out = P;  // a store nvcc cannot drop, unlike a local spin flag
    while (true)
        out[0] = out[0] + 1.0f;
}
"""


@pytest.mark.parametrize("jobs", [1, 3])
def test_bad_kernels_cost_only_themselves(tmp_path, jobs):
    reference = (labs.get(LAB).home / "reference.cu").read_text()
    folder = tmp_path / "course"
    folder.mkdir()
    kernels = {"a1": reference, "b-illegal": ILLEGAL_ADDRESS, "c2": reference, "d-hang": HANG}
    kernels |= {"e3": reference, "f4": reference}
    for i, (name, text) in enumerate(kernels.items()):
        (folder / f"{name}.cu").write_text(f"// {i}\n{text}")
    report = run_batch(LAB, folder, tmp_path / "out", jobs=jobs, gpus=[0], timeout=3.0,
                       backend="cuda", public_only=True)  # fmt: skip
    assert report.graded == len(kernels)
    with open(tmp_path / "out" / "gradebook.csv", newline="") as f:
        rows = {r["student"]: r for r in csv.DictReader(f)}
    for name in ("a1", "c2", "e3", "f4"):
        assert rows[name]["status"] == "passed", rows[name]
        assert 0.8 < float(rows[name]["speedup"]) < 1.25, rows[name]
    # memcheck, where installed, names the address (issue 20): out_of_bounds, not crash
    illegal = rows["b-illegal"]
    assert illegal["status"] == "failed"
    assert {"crash", "out_of_bounds"} & set(illegal["diagnostics"].split()), illegal
    assert rows["d-hang"]["status"] == "failed" and "timeout" in rows["d-hang"]["diagnostics"]
    # where the time went: every stage of a GPU batch, timing included (grader.course.stages)
    assert all(seconds > 0 for seconds in report.stages.values()), report.stages
