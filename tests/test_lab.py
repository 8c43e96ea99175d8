"""The lab model beyond one float32 kernel: element types, outputs that start at zero,
a grid the lab defines, kernels launched in order on a scratch buffer, exact integer
comparison, and the lab's own tolerance; through the launch, the protocol to the GPU
worker, and a whole grading on the CPU backend."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from grader.backends.cpu import CpuBackend
from grader.backends.cuda import protocol
from grader.grading.pipeline import Options, grade
from grader.judge import cases
from grader.judge.compare import allowances, compare
from grader.judge.launch import launch_sizes, make_launch, timing_launches
from grader.labs import get
from grader.model.interface import Interface, LaunchDefaults
from grader.model.lab import Array, Case, Kernel, Lab, Param, Role, Scoring
from grader.model.launch import POISON_BITS, Buffer, Drawn, Repeated, filled
from grader.model.result import Kind, Status
from grader.model.source import launch_footer


def _blocks(s):
    return (-(-s["n"] // s["TILE_X"]),)


def _reference(a, s):
    doubled = 2 * a["input"]
    return {"total": np.array([doubled.sum()]), "count": np.bincount(a["input"], minlength=4)}


# Two kernels on a byte input: `spread` doubles each byte into a uint32 scratch buffer,
# over ceil(n / TILE_X) blocks; `gather` sums the scratch into `total` and counts byte
# values into `count`, one block of threads, both outputs starting at zero.
LAB = Lab(
    name="two-step",
    title="two kernels",
    summary="a test lab",
    kernel=Kernel(
        "spread",
        (
            Param("input", "const unsigned char*", Role.INPUT),
            Param("scratch", "unsigned int*", Role.OUTPUT),
            Param("n", "int", Role.SCALAR),
        ),
    ),
    then=(
        Kernel(
            "gather",
            (
                Param("input", "const unsigned char*", Role.INPUT),
                Param("scratch", "const unsigned int*", Role.INPUT),
                Param("total", "unsigned int*", Role.OUTPUT),
                Param("count", "unsigned int*", Role.OUTPUT),
                Param("n", "int", Role.SCALAR),
            ),
            grid=lambda s: (1, 1, 1),
        ),
    ),
    inputs=(
        Array(
            "input",
            lambda s: (s["n"],),
            "uint8",
            draw=lambda rng, shape, s: rng.integers(0, 4, shape),
        ),
    ),
    outputs=(
        Array("total", lambda s: (1,), "uint32", initial="zero"),
        Array("count", lambda s: (4,), "uint32", initial="zero"),
    ),
    scratch=(Array("scratch", lambda s: (s["n"],), "uint32"),),
    reference=_reference,
    extent=lambda s: (s["n"], 1, 1),
    public_cases=(Case("n-1", {"n": 1}), Case("n-517", {"n": 517}), Case("n-3001", {"n": 3001})),
    profile_case="n-3001",  # at n-1 one thread makes every load, whatever the kernel
    hidden_cases=(),
    random_sizes=lambda rng: {"n": int(rng.integers(1, 100))},
    random_cases=0,
    timing_sizes={"n": 1 << 20},
    work=lambda s: (0.0, 5.0 * s["n"]),
    dims=1,
    block=(128, 1, 1),
    tile=("2 * BLOCK_X", "BLOCK_Y", "BLOCK_Z"),
    scoring=Scoring(),
)

# The launch macros come from the lab's defaults (the grader appends them after the
# file), so the kernels use blockDim; TILE_X is 2 * BLOCK_X.
RIGHT = r"""
__global__ void spread(const unsigned char* input, unsigned int* scratch, int n) {
    for (int k = 0; k < 2; ++k) {
        int i = blockIdx.x * 2 * blockDim.x + k * blockDim.x + threadIdx.x;
        if (i < n) scratch[i] = 2u * input[i];
    }
}
__global__ void gather(const unsigned char* input, const unsigned int* scratch,
                       unsigned int* total, unsigned int* count, int n) {
    for (int i = threadIdx.x; i < n; i += blockDim.x) {
        atomicAdd(total, scratch[i]);
        atomicAdd(&count[input[i]], 1u);
    }
}
"""

# spread covers only the first BLOCK_X elements of its 2 * BLOCK_X
HALF_TILE = RIGHT.replace("k < 2", "k < 1")
# gather counts byte value v into count[v + 1]: past the end for v = 3
PAST_THE_END = RIGHT.replace(
    "atomicAdd(&count[input[i]], 1u);", "atomicAdd(&count[input[i] + 1], 1u);"
)


def interface(block=(128, 1, 1), tile=(256, 1, 1)) -> Interface:
    names = ("BLOCK_X", "BLOCK_Y", "BLOCK_Z", "TILE_X", "TILE_Y", "TILE_Z")
    return Interface(launch=dict(zip(names, (*block, *tile), strict=True)))


def test_the_footer_takes_the_labs_tile_default():
    footer = launch_footer(LAB.launch_defaults)
    assert "#define BLOCK_X 128" in footer and "#define TILE_X (2 * BLOCK_X)" in footer
    assert "#define TILE_Y BLOCK_Y" in footer
    assert launch_footer((16, 16, 1)) == launch_footer(LaunchDefaults((16, 16, 1)))


def test_kernels_share_buffers_in_order_with_the_labs_grid():
    case = cases.public_cases(LAB)[1]
    inputs = cases.make_inputs(LAB, case)
    assert inputs["input"].dtype == np.uint8 and inputs["input"].max() < 4
    launch, layouts = make_launch(LAB, case, inputs, interface())
    assert [s.kernel for s in launch.steps] == ["spread", "gather"]
    assert launch.grid == (3, 1, 1) and launch.then[0].grid == (1, 1, 1)
    buffers = {b.name: b for b in launch.buffers()}
    assert list(buffers) == ["input", "scratch", "total", "count"]
    assert launch.then[0].args[1] is buffers["scratch"]  # one buffer, named twice
    assert buffers["scratch"].output and not buffers["input"].output
    assert (buffers["scratch"].data == filled(POISON_BITS, np.uint32)).all()
    assert buffers["total"].data.dtype == np.uint32 and not buffers["total"].data.any()
    assert layouts["count"].dtype == "uint32"


def test_timing_buffers_are_as_large_as_either_kernel_needs():
    case = cases.timing_case(LAB)
    student, reference = timing_launches(LAB, case, {}, interface(), interface(tile=(64, 1, 1)))
    assert student.grid == (4096, 1, 1) and reference.grid == (16384, 1, 1)
    drawn = student.buffers()[0].data
    assert isinstance(drawn, Drawn) and drawn.dtype == np.uint8 and drawn.size == 1 << 20
    total = student.buffers()[2].data
    assert isinstance(total, Repeated) and total.pattern.dtype == np.uint32
    assert not total.pattern.any()  # an accumulator starts at zero


def test_launches_of_several_kernels_and_types_cross_to_the_worker():
    case = cases.public_cases(LAB)[1]
    launch, _ = make_launch(LAB, case, cases.make_inputs(LAB, case), interface())
    table = protocol.ArrayTable()
    spec = protocol.encode_launch(launch, ["_Z6spread", "_Z6gather"], table)
    assert len(table.arrays) == 4  # each buffer's contents once
    back, symbols = protocol.decode_launch(spec, table.arrays)
    assert symbols == ["_Z6spread", "_Z6gather"]
    assert [s.kernel for s in back.steps] == ["spread", "gather"]
    assert back.then[0].args[1] is back.buffers()[1]
    for sent, got in zip(launch.buffers(), back.buffers(), strict=True):
        assert got.data.dtype == sent.data.dtype and np.array_equal(got.data, sent.data)
    message = protocol.decode(*_frame(protocol.encode(protocol.Message({}, table.arrays))))
    assert [a.dtype for a in message.arrays] == [np.uint8, np.uint32, np.uint32, np.uint32]


def _frame(raw: bytes) -> tuple[bytes, bytes]:
    head = int.from_bytes(raw[:4], "little")
    return raw[12 : 12 + head], raw[12 + head :]


def test_drawn_buffers_keep_their_type_across():
    case = cases.public_cases(LAB)[0]
    launch, _ = make_launch(LAB, case, cases.make_inputs(LAB, case), interface())
    launch.args[0] = Buffer("input", Drawn(5, np.dtype(np.uint8)), False)
    table = protocol.ArrayTable()
    back, _ = protocol.decode_launch(
        protocol.encode_launch(launch, ["a", "b"], table), table.arrays
    )
    assert back.buffers()[0].data == Drawn(5, np.dtype(np.uint8))
    assert back.then[0].args[0] is back.buffers()[0]


def test_integer_outputs_compare_exactly_and_poison_shows_as_unwritten():
    want = np.array([3.0, 7.0, float(POISON_BITS)])
    got = np.array([3, 8, POISON_BITS], np.uint32)
    found = compare("count", want, got, np.zeros(3))
    assert found.bad.tolist() == [False, True, False] and not found.unwritten.any()
    missing = compare("count", np.array([1.0, 2.0]), np.array([1, POISON_BITS], np.uint32), 0)
    assert missing.unwritten.tolist() == [False, True] and missing.mismatches == 1


def test_integer_outputs_have_no_tolerance():
    case = cases.public_cases(LAB)[1]
    sized = {**case.sizes, **interface().launch}
    allowed = allowances(LAB, Case(case.name, sized), cases.make_inputs(LAB, case))
    assert not allowed["total"].tolerance.any() and not allowed["count"].tolerance.any()
    assert allowed["total"].magnitude is None  # and no precision test
    assert launch_sizes(LAB, case.sizes, interface())["TILE_X"] == 256


def test_a_lab_may_set_its_own_tolerance_from_each_elements_terms():
    lab = replace(
        get("matmul-naive"), tolerance=lambda sizes, bound, terms: 0.5 * bound + terms / 17
    )
    case = Case("w17", {"Width": 17}, seed=17)
    inputs = cases.make_inputs(lab, case)
    bound = np.abs(inputs["M"].astype(np.float64)) @ np.abs(inputs["N"].astype(np.float64))
    allowed = allowances(lab, case, inputs)["P"]
    assert np.allclose(allowed.tolerance, 0.5 * bound + 1, rtol=1e-12, atol=0)
    assert allowed.magnitude is None  # the lab's own model has no precision test


@pytest.fixture(scope="module")
def cpu():
    with CpuBackend(jobs=2) as backend:
        yield backend


def _graded(tmp_path, source: str, cpu):
    path = tmp_path / "kernel.cu"
    path.write_text(source)
    return grade(LAB, path, cpu, Options(backend="cpu", timing=False, timeout=10.0))


def test_a_right_two_kernel_submission_passes_on_the_cpu(tmp_path, cpu):
    result = _graded(tmp_path, RIGHT, cpu)
    assert result.status == Status.PASSED, [(c.name, c.hint, c.diagnostics) for c in result.cases]
    assert [c.sizes for c in result.cases][0] == {"n": 1}  # the launch macros stay out


def test_a_scratch_element_left_unwritten_is_caught_exactly(tmp_path, cpu):
    result = _graded(tmp_path, HALF_TILE, cpu)
    assert result.status == Status.FAILED
    short = {c.name: c for c in result.cases}
    assert short["n-1"].passed and not short["n-517"].passed  # 517 spans a half tile
    assert short["n-517"].first_mismatch.index == (0,)


def test_a_write_past_an_integer_output_is_out_of_bounds(tmp_path, cpu):
    result = _graded(tmp_path, PAST_THE_END, cpu)
    assert result.status == Status.FAILED
    found = [d for c in result.cases for d in c.diagnostics if d.kind == Kind.OUT_OF_BOUNDS]
    assert found and "count" in found[0].message and found[0].kernel == "gather"
