"""From a case to the buffers, grid and constants a backend launches with."""

import math

import numpy as np
import pytest
from lab_kit import default_interface

from grader.backends.cuda import protocol
from grader.judge import cases
from grader.judge.compare import poisoned
from grader.judge.launch import (
    PADDING_BITS,
    Layout,
    launch_sizes,
    make_launch,
    timing_launch,
    timing_launches,
)
from grader.labs import all_labs, get
from grader.model.interface import Interface
from grader.model.launch import POISON_BITS, Buffer, Drawn, Repeated, Scalar, as_bits, filled


def interface(block=(16, 16, 1), tile=None):
    tile = tile or block
    names = ("BLOCK_X", "BLOCK_Y", "BLOCK_Z", "TILE_X", "TILE_Y", "TILE_Z")
    return Interface(launch=dict(zip(names, (*block, *tile), strict=True)))


def launch_for(lab_name, case_name, iface):
    lab = get(lab_name)
    case = cases.find_case(lab, case_name, "secret")
    inputs = cases.make_inputs(lab, case)
    launch, layouts = make_launch(lab, case, inputs, iface)
    return lab, case, inputs, launch, layouts


def test_matmul_launch_follows_the_convention():
    _, _, inputs, launch, _ = launch_for("matmul-tiled", "width-517", interface())
    assert launch.grid == (33, 33, 1) and launch.block == (16, 16, 1)
    kinds = [(type(a).__name__, a.name) for a in launch.args]
    assert kinds == [("Buffer", "M"), ("Buffer", "N"), ("Buffer", "P"), ("Scalar", "Width")]
    m, _, p, width = launch.args
    assert np.array_equal(m.data, inputs["M"].reshape(-1)) and not m.output
    assert p.output and poisoned(p.data).all() and width.value == 517


def test_tile_sets_the_grid_and_block_is_kept():
    iface = interface(block=(16, 16, 1), tile=(128, 128, 1))
    _, _, _, launch, _ = launch_for("matmul-tiled", "width-517", iface)
    assert launch.grid == (5, 5, 1) and launch.block == (16, 16, 1)


def test_conv2d_grid_is_columns_by_rows():
    _, _, _, launch, _ = launch_for("conv2d", "517x300-mask5", interface((20, 20, 1), (16, 16, 1)))
    assert launch.grid == (33, 19, 1)
    assert launch.constants["Mc"].shape == (25,)


def test_valid_constant_is_padded_with_nan_and_shared_memory_sized():
    _, case, inputs, launch, _ = launch_for("conv2d-valid", "70x90-k3x7", interface())
    values = launch.constants["c_kernel"]
    assert values.shape == (4096,)
    assert np.array_equal(values[:21], inputs["kernel"].reshape(-1))
    assert np.isnan(values[21:]).all()
    assert launch.shared_bytes == 4 * (16 + 3 - 1) * (16 + 7 - 1)
    assert launch.grid == (
        -(-case.sizes["output_cols"] // 16),
        -(-case.sizes["output_rows"] // 16),
        1,
    )


def test_pitched_buffers_pad_rows():
    iface = interface((8, 8, 8))
    lab, case, inputs, launch, layouts = launch_for("conv3d-pitched", "37x23x11-mask5", iface)
    s = case.sizes
    n = next(a for a in launch.args if isinstance(a, Buffer) and a.name == "N")
    p = next(a for a in launch.args if isinstance(a, Buffer) and a.name == "P")
    assert n.data.size == s["D"] * s["H"] * s["pitchN"] // 4
    assert p.data.size == s["D"] * s["H"] * s["pitchP"] // 4
    assert np.array_equal(layouts["N"].unpack(n.data), inputs["N"])
    pad = layouts["N"].padding(n.data)
    assert (pad.view(np.uint32) == PADDING_BITS).all()
    assert (p.data.view(np.uint32) == POISON_BITS).all()
    scalars = {a.name: (a.ctype, a.value) for a in launch.args if isinstance(a, Scalar)}
    assert scalars["pitchN"] == ("size_t", s["pitchN"]) and scalars["D"] == ("int", 11)
    assert launch.grid == (5, 3, 2)


@pytest.mark.parametrize("name", sorted(all_labs()))
def test_timing_launch_has_the_gpu_draw_its_inputs_and_sends_only_the_host_draws(name):
    """The host sends the mask, and what the lab's own draw gives (a sparse matrix's
    structure); the GPU draws every other input."""
    lab = get(name)
    case, constants = cases.timing_inputs(lab, seed=7)
    iface = default_interface(lab)
    sizes = launch_sizes(lab, case.sizes, iface)
    launch = timing_launch(lab, case, constants, iface)
    buffers = {p.array_name for k in lab.kernels for p in k.params if p.is_pointer}
    own = set(lab.draw(np.random.default_rng(7), case.sizes)[0]) if lab.draw else set()
    assert set(constants) == ({a.name for a in lab.inputs} - buffers) | own
    for kernel, step in zip(lab.kernels, launch.steps, strict=True):
        for param, arg in zip(kernel.params, step.args, strict=True):
            if not param.is_pointer:
                assert arg.value == sizes[param.value_name]
                continue
            array = lab.array(param.array_name)
            shape = array.shape(sizes)
            itemsize = np.dtype(array.dtype).itemsize
            stride = sizes[param.pitch] // itemsize if param.pitch else shape[-1]
            assert arg.data.size == math.prod(shape[:-1]) * stride
            assert np.dtype(arg.data.dtype) == np.dtype(array.dtype)
            if array.name in own:
                assert np.array_equal(arg.data, constants[array.name].reshape(-1))
            elif lab.is_input(array.name):
                assert isinstance(arg.data, Drawn)
            else:
                assert isinstance(arg.data, Repeated) and arg.output
                start = POISON_BITS if array.initial == "poison" else 0
                first = np.array([filled(start, array.dtype)])
                assert (as_bits(arg.data.pattern) == as_bits(first)).all()
    for const in lab.constants:
        values = launch.constants[const.name]
        mask = constants[const.array].reshape(-1)
        assert np.array_equal(values[: mask.size], mask) and np.isnan(values[mask.size :]).all()


def test_a_structure_the_host_drew_crosses_to_the_gpu_once_for_both_kernels():
    """spmv-csr's row_ptr and col_idx are one array each in the student's and the
    reference's launch (tiles of their own), so the message to the GPU holds them once."""
    lab = get("spmv-csr")
    case, host = cases.timing_inputs(lab, 3, cases.public_cases(lab)[1])
    student, reference = interface((256, 1, 1)), interface((128, 1, 1), (4, 1, 1))
    launches = timing_launches(lab, case, host, student, reference)
    table = protocol.ArrayTable()
    for launch in launches:
        protocol.encode_launch(launch, ["spmv_csr"], table)
    sizes = [a.size for a in table.arrays]
    assert sizes.count(case.sizes["nnz"]) == 1 and sizes.count(case.sizes["num_rows"] + 1) == 1
    assert sum(sizes) == case.sizes["nnz"] + case.sizes["num_rows"] + 1 + 2  # and y's poison
    assert launches[0].grid != launches[1].grid


def test_timing_constants_come_from_the_seed():
    lab = get("conv2d")
    one, again = (cases.timing_inputs(lab, seed=1)[1] for _ in range(2))
    other = cases.timing_inputs(lab, seed=2)[1]
    assert np.array_equal(one["mask"], again["mask"])
    assert not np.array_equal(one["mask"], other["mask"])


def test_layout_strides_step_over_the_pitch():
    lay = Layout((4, 3, 5), 8)
    assert lay.strides == (24, 8, 1)
    assert Layout((6, 7), 7).strides == (7, 1)
