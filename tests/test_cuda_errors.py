"""CUDA errors as the student should read them (grader.backends.cuda.errors), without a
GPU: which are sticky, and which are a crash or a resources error."""

from __future__ import annotations

from grader.backends.cuda import errors
from grader.model.result import Kind


def test_illegal_address_is_a_sticky_crash_that_suggests_the_sanitizer():
    text = "cuCtxSynchronize failed: an illegal memory access was encountered"
    assert errors.is_sticky(text)
    diag = errors.diagnostic(text, "matmul", "grid (1,1,1), block (1,1,1)", at_launch=False)
    assert diag.kind == Kind.CRASH and diag.kernel == "matmul"
    assert "an illegal memory access was encountered" in diag.message
    assert "CUDA_ERROR_ILLEGAL_ADDRESS" in diag.message and "--sanitize" in diag.message
    assert not diag.message.startswith("cuCtxSynchronize")


def test_refused_launch_configuration_is_a_resources_error():
    text = "cuLaunchKernel failed: too many resources requested for launch"
    assert not errors.is_sticky(text)
    diag = errors.diagnostic(text, "matmul", "grid (4,4,1), block (32,32,1)", at_launch=True)
    assert diag.kind == Kind.RESOURCES and "block (32,32,1)" in diag.message
    invalid = errors.diagnostic(
        "cuLaunchKernel failed: invalid argument", "matmul", "grid", at_launch=True
    )
    assert invalid.kind == Kind.RESOURCES and "1024 threads" in invalid.message


def test_configuration_errors_after_the_launch_and_unknown_errors_are_crashes():
    late = errors.diagnostic("cuMemcpyDtoH failed: invalid argument", "k", "", at_launch=False)
    assert late.kind == Kind.CRASH
    odd = "cuCtxSynchronize failed: something new"
    assert errors.is_sticky(odd)
    assert errors.diagnostic(odd, "k", "", at_launch=False).kind == Kind.CRASH
