"""Every lab's own kernels graded as its folder promises (grader.validate, what `grader
validate-lab` runs), for every lab the registry finds, on both backends: the reference
passes every case, the baseline too, the template fails cleanly, each known-wrong
kernel in the lab's wrong/ folder gets what its EXPECTED.toml names, and each slow one in
slow/ passes and gets the "why this speed" words its EXPECTED.toml names.

The cpu runs need no GPU and run in CI; the cuda runs are marked `gpu` and skip without
one, with the reason."""

from __future__ import annotations

from functools import cache

import pytest

from grader import validate
from grader.backends import get_backend
from grader.labs import all_labs

TIMEOUT = 5.0
CHECKS = [check for lab in all_labs().values() for check in validate.checks(lab)]


@cache
def gpu_reason() -> str | None:
    from grader.backends import gpu_status

    usable, why = gpu_status()
    return None if usable else why


@pytest.fixture(
    scope="module",
    params=[pytest.param("cpu", id="cpu"), pytest.param("cuda", id="cuda", marks=pytest.mark.gpu)],
)
def backend(request):
    if request.param == "cuda" and gpu_reason():
        pytest.skip(f"no usable GPU: {gpu_reason()}")
    with get_backend(request.param) as opened:
        yield opened


def test_every_lab_has_a_reference_a_baseline_a_template_and_known_wrong_kernels():
    for lab in all_labs().values():
        roles = [c.role for c in validate.checks(lab)]
        assert roles[:3] == ["reference", "baseline", "template"] and "wrong" in roles, lab.name
        assert all(c.path.is_file() for c in validate.checks(lab)), lab.name


@pytest.mark.parametrize("check", CHECKS, ids=lambda c: c.label)
def test_lab_kernel_grades_as_its_folder_says(check, backend):
    problems, _ = validate.examine(check, backend, TIMEOUT)
    assert problems == [], "\n".join(problems)


def test_slow_kernels_name_why_they_are_slow():
    slow = [c for lab in all_labs().values() for c in validate.checks(lab) if c.role == "slow"]
    assert slow, "no lab has slow/ kernels"
    assert all(c.expected.get("verdict") == "passed" and c.expected.get("why") for c in slow)
