"""Whole gradings through `grader.grading.check`, on both backends: every reference kernel
passes every public and hidden case, every template fails cleanly, and every known-wrong
kernel of tests/data/kernels gets the verdict and diagnostic its EXPECTED.toml names.

The cpu runs need no GPU and run in CI; the cuda runs are marked `gpu` and skip without
one, with the reason."""

from __future__ import annotations

import tomllib
from functools import cache
from pathlib import Path

import pytest

from grader import paths
from grader.grading import Options, check
from grader.labs import all_labs
from grader.result import Kind, Status

ROOT = Path(__file__).resolve().parents[1]
WRONG = ROOT / "tests" / "data" / "kernels"
SECRET = "pipeline-secret"
LABS = sorted(all_labs())


@cache
def gpu_reason() -> str | None:
    from grader.backends import gpu_status

    usable, why = gpu_status()
    return None if usable else why


def backend_param(name: str):
    if name == "cpu":
        return pytest.param("cpu", id="cpu")
    return pytest.param("cuda", id="cuda", marks=pytest.mark.gpu)


BACKENDS = [backend_param("cpu"), backend_param("cuda")]


@pytest.fixture(params=BACKENDS)
def backend(request) -> str:
    if request.param == "cuda" and gpu_reason():
        pytest.skip(f"no usable GPU: {gpu_reason()}")
    return request.param


def grade(lab: str, path: Path, backend: str, **options):
    options = {"timing": False, **options}
    opts = Options(backend=backend, secret=SECRET, timeout=5.0, **options)
    return check(lab, path, opts)


@pytest.mark.parametrize("lab", LABS)
def test_reference_passes_every_case(lab, backend):
    result = grade(
        lab, paths.reference_dir(lab) / "reference.cu", backend, timing=backend == "cuda"
    )
    failing = [(c.name, c.status, c.hint, c.diagnostics) for c in result.cases if not c.passed]
    assert failing == [] and result.diagnostics == []
    assert result.status == Status.PASSED
    assert any(c.visibility == "hidden" for c in result.cases)
    if backend == "cuda":
        assert result.performance is not None
        assert 0.85 < result.performance.speedup < 1.15, result.performance
        assert result.score == pytest.approx(result.max_score, rel=0.05)


@pytest.mark.parametrize("lab", LABS)
def test_baseline_passes_every_case(lab, backend):
    result = grade(lab, paths.reference_dir(lab) / "baseline.cu", backend)
    assert all(c.passed for c in result.cases), [c.name for c in result.cases if not c.passed]


@pytest.mark.parametrize("lab", LABS)
def test_template_fails_cleanly(lab, backend):
    template = paths.template_dir(lab) / "kernel.cu"
    if not template.exists():
        pytest.skip(f"{lab} has no template yet")
    result = grade(lab, template, backend)
    assert result.compile.ok, result.compile.log
    assert result.status == Status.FAILED
    assert not any(c.passed for c in result.cases)
    crashes = {Kind.CRASH, Kind.TIMEOUT, Kind.OUT_OF_BOUNDS}
    assert not [d for c in result.cases for d in c.diagnostics if d.kind in crashes]
    assert all(c.hint or c.diagnostics for c in result.cases)


def expectations() -> list:
    params = []
    for spec in sorted(WRONG.glob("*/EXPECTED.toml")):
        for name, want in tomllib.loads(spec.read_text()).items():
            params.append(
                pytest.param(spec.parent.name, name, want, id=f"{spec.parent.name}/{name}")
            )
    return params


def found_text(result) -> str:
    parts = [d.kind + " " + d.message for d in result.all_diagnostics()]
    parts += [c.hint or "" for c in result.cases]
    parts += result.launch.warnings if result.launch else []
    return "\n".join(parts)


@pytest.mark.parametrize("lab,name,want", expectations())
def test_known_wrong_kernel(lab, name, want, backend):
    wanted = want.get(backend, want)
    sanitize = bool(wanted.get("sanitize", False)) and backend == "cuda"
    timing = bool(wanted.get("timing", False)) and backend == "cuda"
    result = grade(lab, WRONG / lab / name, backend, sanitize=sanitize, timing=timing)
    assert str(result.status) == wanted["verdict"], found_text(result)
    kinds = {str(d.kind) for d in result.all_diagnostics()}
    for kind in wanted.get("kinds", []):
        assert kind in kinds, found_text(result)
    for keyword in wanted.get("keywords", []):
        assert keyword.lower() in found_text(result).lower(), found_text(result)
    for word in wanted.get("absent", []):
        assert word.lower() not in found_text(result).lower(), found_text(result)
    hints = {c.name: c.hint or "" for c in result.cases}
    for case, text in wanted.get("case_hints", {}).items():
        assert text in hints.get(case, ""), (case, hints.get(case))
