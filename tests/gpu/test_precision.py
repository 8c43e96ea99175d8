"""On a GPU: timed outputs are held to float32. A kernel that computes in half precision
or TF32 only at the timed size passes every case and earns no speed points, with a
finding that says why; the same lab's reference keeps its speed points."""

from __future__ import annotations

import pytest

from grader import labs
from grader.grading.pipeline import Options, check
from grader.model.result import Kind, Status
from grader.validate import wrong_dir

CHEATS = [
    ("matmul-tiled", "half_tensor_cores_at_timed_size.cu"),
    ("matmul-tiled", "tf32_at_timed_size.cu"),
    ("conv2d", "half_products_at_timed_size.cu"),
    ("reduction", "half_sums_at_timed_size.cu"),
]


def _timed(lab: str, path):
    return check(lab, path, Options(backend="cuda", timing=True))


@pytest.mark.parametrize("lab,name", CHEATS, ids=[name for _, name in CHEATS])
def test_lower_precision_at_the_timed_size_earns_no_speed_points(lab, name):
    result = _timed(lab, wrong_dir(lab) / name)
    assert all(c.passed for c in result.cases), [c.hint for c in result.cases if not c.passed]
    perf = result.performance
    found = [d.message for d in result.diagnostics if d.kind == Kind.TIMING]
    print(perf.speedup if perf else None, "\n".join(found))
    assert perf is not None and perf.score == 0.0 and "Not scored" in perf.note
    assert found and "less precise than float32" in found[0], found
    assert result.status == Status.FAILED


@pytest.mark.parametrize("lab", sorted({lab for lab, _ in CHEATS}))
def test_the_reference_keeps_its_speed_points(lab):
    result = _timed(lab, labs.get(lab).home / "reference.cu")
    perf = result.performance
    print(perf.speedup, perf.score, perf.note)
    assert result.diagnostics == [] and result.status == Status.PASSED
    assert perf.score == perf.max_score
