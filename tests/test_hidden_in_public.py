"""Public output never names a hidden case. On Gradescope a public case's test is shown
before the deadline, so what it says comes from the public cases alone: a race found only
in a hidden case fails the hidden cases alone, a hint drawn from which cases fail looks
at the public ones, and on a GPU a race the CPU model found at a hidden profile case is
told to a public case with its thread and line, never the case. The hidden cases keep
every detail, where hidden results are shown. Real kernels, graded with the hidden cases
on the CPU backend (and on the GPU, where there is one, for what Gradescope shows)."""

from __future__ import annotations

import json
import re
import sys
from functools import cache

import pytest

from grader import labs
from grader.backends import get_backend, gpu_status
from grader.gradescope.results import results_json
from grader.grading.pipeline import Options, grade
from grader.judge import rules
from grader.model.result import Kind, Result, Status

if not sys.platform.startswith("linux"):
    pytest.skip("the CPU backend's sandbox needs Linux", allow_module_level=True)

SECRET = "a course secret"

# Right at every size; above Width 300 (no public case, the hidden width-517) each thread
# reads its neighbour's slot of a shared array with no barrier after the neighbour's store.
RACES_ABOVE_300 = """
__global__ void matmul(const float* M, const float* N, float* P, int Width) {
    __shared__ float slot[256];
    int row = blockIdx.y * blockDim.y + threadIdx.y;
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    int t = threadIdx.y * blockDim.x + threadIdx.x;
    float sum = 0.0f;
    if (row < Width && col < Width)
        for (int k = 0; k < Width; ++k) sum += M[row * Width + k] * N[k * Width + col];
    if (Width > 300) {
        slot[t] = sum;
        sum = slot[(t + 1) % 256];
    }
    if (row < Width && col < Width) P[row * Width + col] = sum;
}
"""

# The mask's radius written as 1: right for MASK_WIDTH 3, which only hidden cases use.
RADIUS_ONE = (
    (labs.get("conv2d").home / "baseline.cu")
    .read_text()
    .replace("#define MASK_RADIUS (MASK_WIDTH / 2)", "#define MASK_RADIUS 1")
)


# A race in every case (no __syncthreads() after the products): on a GPU the CPU model
# finds it at the profile case, which the secret draws among the hidden cases.
RACES_EVERYWHERE = (labs.get("matmul-tiled").home / "wrong" / "no_second_sync.cu").read_text()


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    """Grades (lab, kernel text, backend) once for the module."""
    done: dict[tuple[str, str, str], Result] = {}

    def grading(lab_name: str, text: str, backend: str = "cpu") -> Result:
        if (lab_name, text, backend) not in done:
            if backend == "cuda" and gpu_reason():
                pytest.skip(f"no usable GPU: {gpu_reason()}")
            path = tmp_path_factory.mktemp(lab_name) / "kernel.cu"
            path.write_text(text)
            with get_backend(backend) as opened:
                options = Options(backend, SECRET, timing=False)
                done[lab_name, text, backend] = grade(labs.get(lab_name), path, opened, options)
        return done[lab_name, text, backend]

    return grading


@cache
def gpu_reason() -> str | None:
    usable, why = gpu_status()
    return None if usable else why


def shown(result: Result, visibility: str) -> str:
    """Every text of the cases of one visibility."""
    cases = [c for c in result.cases if c.visibility == visibility]
    return "\n".join(
        [c.hint or "" for c in cases] + [d.message for c in cases for d in c.diagnostics]
    )


def hidden_mentions(result: Result, text: str) -> list[str]:
    """The hidden cases' names, and sizes no public case has (Width=517, MASK_WIDTH 3),
    that `text` holds."""
    public = {v for c in result.cases if c.visibility == "public" for v in c.sizes.values()}
    found = []
    for case in (c for c in result.cases if c.visibility == "hidden"):
        found += [case.name] if re.search(rf"\b{re.escape(case.name)}\b", text) else []
        found += [
            f"{k}={v}"
            for k, v in case.sizes.items()
            if v not in public and re.search(rf"\b{k}[= ]{v}\b", text)
        ]
    return found


def test_a_race_only_in_a_hidden_case_fails_the_hidden_cases_alone(graded):
    # a public case failed by it would tell, before the deadline, that some hidden size
    # raced: resubmitted with a threshold, a binary search for the hidden sizes
    racing = graded("matmul-naive", RACES_ABOVE_300)
    raced = [c.name for c in racing.cases if any(d.kind == Kind.RACE for d in c.diagnostics)]
    assert "width-517" in raced
    public = [c for c in racing.cases if c.visibility == "public"]
    assert public and all(c.status == Status.PASSED and not c.diagnostics for c in public)
    hidden = [c for c in racing.cases if c.visibility == "hidden"]
    assert all(c.status == Status.FAILED for c in hidden)
    assert "517" not in shown(racing, "public")
    small = next(c for c in racing.cases if c.name == "width-1")
    assert small.diagnostics[0].message.startswith("Case width-517 showed a race in matmul")


def test_a_hint_across_cases_looks_only_at_public_cases_in_a_public_one(graded):
    radius_one = graded("conv2d", RADIUS_ONE)
    by_name = {c.name: c for c in radius_one.cases}
    assert by_name["128x96-mask3"].passed and not by_name["64x64-mask5"].passed
    sentence = "Only the cases with MASK_WIDTH 5 and 7 fail, and every case with MASK_WIDTH 3"
    assert sentence in by_name["131x67-mask7"].hint
    assert sentence not in shown(radius_one, "public")
    assert "MASK_WIDTH 3" not in shown(radius_one, "public")


@pytest.mark.parametrize(
    "backend", ["cpu", pytest.param("cuda", marks=pytest.mark.gpu)], ids=["cpu", "cuda"]
)
@pytest.mark.parametrize(
    ("lab", "text"),
    [
        ("matmul-naive", RACES_ABOVE_300),
        ("conv2d", RADIUS_ONE),
        ("matmul-tiled", RACES_EVERYWHERE),
    ],
    ids=["races_above_300", "radius_one", "races_everywhere"],
)
def test_gradescope_shows_no_hidden_case_before_the_deadline(graded, lab, text, backend):
    result = graded(lab, text, backend)
    data = results_json(labs.get(result.lab), result, SECRET, 1.0)
    visible = [t for t in data["tests"] if t["visibility"] == "visible"]
    hidden = [t for t in data["tests"] if t["visibility"] != "visible"]
    # and the profile of a hidden case, whose measures would tell its size
    at_hidden = result.profile and result.profile.student.case == rules.HIDDEN_CASE
    names = [t["name"] for t in hidden if not t["name"].startswith("hidden case ")]
    assert "Why this speed" in names if at_hidden else "Why this speed" not in names
    assert set(names) <= {"Why this speed", "Rules measured at a hidden case"}
    assert len(hidden) - len(names) == sum(c.visibility == "hidden" for c in result.cases)
    assert hidden_mentions(result, json.dumps(visible) + data["output"]) == []
    assert hidden_mentions(result, json.dumps(hidden))  # the detail is there, after it
    # nor the total, which counts the hidden cases: resubmitted, it would find their sizes
    public = [c for c in result.cases if c.visibility == "public"]
    head = data["output"].splitlines()[0]
    assert f"public cases {sum(c.passed for c in public)} of {len(public)} passed" in head
    assert f"({result.status})" not in head and data["visibility"] == "after_due_date"


@pytest.mark.parametrize(
    ("lab", "kernel"), [("matmul-tiled", "baseline.cu"), ("reduction", "wrong/serial_thread.cu")]
)
def test_gradescope_shows_no_figure_of_the_hidden_profile_case_before_the_deadline(
    graded, lab, kernel
):
    """Graded with the secret, the rules and "why this speed" are measured at a hidden case
    drawn near the public profile case's size, so that a kernel cannot do the work at one
    size alone. A figure of the kernel's own there would tell that size: the naive
    matmul's bytes per output element are 8 * Width + 4 (its loads alone 8 * Width), and
    a serial reduction's busiest thread makes the n loads of n."""
    result = graded(lab, (labs.get(lab).home / kernel).read_text())
    data = results_json(labs.get(lab), result, SECRET, 1.0)
    visible = [t for t in data["tests"] if t["visibility"] == "visible"]
    assert "Why this speed" not in [t["name"] for t in visible]
    text = json.dumps(visible) + data["output"]
    # nor whether the rule broke there: the finding and its cost wait with the hidden cases
    assert "in a hidden case" not in text
    cases = [t for t in visible if t["name"].startswith("public case ")]
    assert cases and all(t["score"] == t["max_score"] for t in cases)
    rules_test = next(t for t in data["tests"] if t["name"] == "Rules measured at a hidden case")
    assert rules_test["visibility"] == "after_due_date" and rules_test["score"] < 0
    assert sum(t.get("score", 0) for t in data["tests"]) == pytest.approx(result.score, abs=1e-3)
    said = [s for s in re.split(r"(?<=\.) ", rules_test["output"]) if "in a hidden case" in s]
    assert said and all(not re.search(r"\d", re.sub(r"\d+/\d+", "", s)) for s in said), said
    public = {v for c in result.cases if c.visibility == "public" for v in c.sizes.values()}
    sizes = [v for c in result.cases if c.visibility == "hidden" for v in c.sizes.values()]
    figures = {f for v in sizes if v > 2 for f in (v, 8 * v, 8 * v + 4)} - public
    assert [f for f in figures if re.search(rf"\b{f:,}\b|\b{f}\b", text)] == []
