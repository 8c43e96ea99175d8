"""From a lab, a case and its inputs to a backend-neutral `Launch`, and back.

Buffers are laid out as the device sees them: row-major, x fastest, and for a pitched
parameter each row padded to its pitch in bytes. The padding of an input holds NaN, so
a kernel that strides by the width instead of the pitch reads NaN; outputs (padding
included) start poisoned, so elements never written show, unless the lab says they
start at zero (an accumulator). A lab of several kernels is one Launch per kernel, in
order, on one set of buffers: one per array, named as the array."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, replace

import numpy as np

from grader.model.interface import Interface
from grader.model.lab import Array, Case, Kernel, Lab, Param, Sizes
from grader.model.launch import POISON_BITS, Buffer, Drawn, Launch, Repeated, Scalar, filled

PADDING_BITS = 0x7FC0BADD  # what an input's row padding holds


@dataclass(frozen=True)
class Layout:
    """How a logical array sits in its device buffer."""

    shape: tuple[int, ...]
    row_stride: int  # elements from one row to the next (== shape[-1] unless pitched)
    dtype: str = "float32"

    @property
    def padded_shape(self) -> tuple[int, ...]:
        return (*self.shape[:-1], self.row_stride)

    @property
    def elements(self) -> int:
        return math.prod(self.padded_shape)

    @property
    def strides(self) -> tuple[int, ...]:
        """Elements from one index to the next along each axis."""
        out = [1]
        for extent in reversed(self.padded_shape[1:]):
            out.insert(0, out[0] * extent)
        return tuple(out)

    def pack(self, logical: np.ndarray, fill: np.generic) -> np.ndarray:
        buffer = np.full(self.padded_shape, fill, self.dtype)
        buffer[..., : self.shape[-1]] = logical
        return buffer.reshape(-1)

    def unpack(self, data: np.ndarray) -> np.ndarray:
        return data.reshape(self.padded_shape)[..., : self.shape[-1]]

    def padding(self, data: np.ndarray) -> np.ndarray:
        return data.reshape(self.padded_shape)[..., self.shape[-1] :]


def launch_sizes(lab: Lab, sizes: Sizes, interface: Interface) -> dict[str, int]:
    """A case's sizes with the module's launch macros (BLOCK_X .. TILE_Z) added, and
    what the lab derives from them (a count of blocks, say)."""
    return lab.full_sizes({**sizes, **interface.launch})


def at_launch(lab: Lab, case: Case, interface: Interface) -> Case:
    """`case` with the module's launch macros among its sizes."""
    return replace(case, sizes=launch_sizes(lab, case.sizes, interface))


def layout(lab: Lab, param: Param, sizes) -> Layout:
    array = lab.array(param.array_name)
    shape = array.shape(sizes)
    itemsize = np.dtype(array.dtype).itemsize
    stride = sizes[param.pitch] // itemsize if param.pitch else shape[-1]
    return Layout(shape, stride, array.dtype)


def grid_for(
    lab: Lab, sizes, interface: Interface, kernel: Kernel | None = None
) -> tuple[int, int, int]:
    """The kernel's grid: the lab's own, or ceil(extent / TILE) on each axis."""
    kernel = kernel or lab.kernel
    if kernel.grid is not None:
        return tuple(int(v) for v in kernel.grid(launch_sizes(lab, sizes, interface)))
    extent = lab.extent(sizes)
    return tuple(max(1, -(-e // t)) for e, t in zip(extent, interface.tile(), strict=True))


def constant_values(lab: Lab, sizes, inputs) -> dict[str, np.ndarray]:
    """Each constant's full declared length: the input's values, then NaN."""
    out = {}
    for const in lab.constants:
        values = np.full(const.elements(sizes), np.nan, np.float32)
        flat = inputs[const.array].reshape(-1)
        values[: flat.size] = flat
        out[const.name] = values
    return out


def shape_for(lab: Lab, case: Case, interface: Interface, kernel: Kernel | None = None) -> dict:
    """The grid, block and dynamic shared memory a module's launch macros ask for."""
    sizes = launch_sizes(lab, case.sizes, interface)
    return {
        "grid": grid_for(lab, sizes, interface, kernel),
        "block": interface.block(),
        "shared_bytes": lab.dynamic_shared(sizes, interface.launch) if lab.dynamic_shared else 0,
    }


def make_launch(lab: Lab, case: Case, inputs: dict[str, np.ndarray], interface: Interface):
    """The Launch for `case`, and the Layout of each buffer (by array name)."""
    padding = PADDING_BITS

    def contents(array: Array, lay: Layout) -> np.ndarray:
        if array.name in inputs:
            return lay.pack(inputs[array.name], filled(padding, array.dtype))
        return np.full(lay.elements, _initial(array), array.dtype)

    return _assemble(lab, case, interface, contents, constant_values(lab, case.sizes, inputs))


def timing_launches(
    lab: Lab,
    case: Case,
    host: dict[str, np.ndarray],
    student: Interface,
    reference: Interface,
) -> tuple[Launch, Launch]:
    """The student's and the reference's Launch for timing, on one set of buffers: each
    as large as the larger of the two needs (their tiles may size outputs differently).
    A buffer the host drew is one array in both, so it crosses to the GPU once."""
    packed: dict[str, np.ndarray] = {}
    launches = (
        timing_launch(lab, case, host, student, packed),
        timing_launch(lab, case, host, reference, packed),
    )
    largest: dict[str, int] = {}
    for launch in launches:
        for buffer in launch.buffers():
            largest[buffer.name] = max(largest.get(buffer.name, 0), buffer.data.size)
    for launch in launches:
        for buffer in launch.buffers():
            if buffer.name not in packed:
                buffer.data = replace(buffer.data, size=largest[buffer.name])
    return launches


def timing_launch(
    lab: Lab,
    case: Case,
    host: dict[str, np.ndarray],
    interface: Interface,
    packed: dict[str, np.ndarray] | None = None,
) -> Launch:
    """The Launch for timing: the GPU draws every input buffer, row padding included,
    before each timed launch (grader.backends.timing), but those the host drew (`host`,
    cases.timing_inputs: a sparse matrix's structure), which it uploads; outputs start
    as the poison (or zero) repeated; `host` fills the __constant__ symbols too. Nothing
    large is built here but the host's buffers, packed into `packed` once."""
    packed = {} if packed is None else packed

    def contents(array: Array, lay: Layout) -> np.ndarray | Repeated | Drawn:
        if array.name in host:
            if array.name not in packed:
                packed[array.name] = lay.pack(host[array.name], filled(PADDING_BITS, array.dtype))
            return packed[array.name]
        if lab.is_input(array.name):
            return Drawn(lay.elements, np.dtype(array.dtype))
        return Repeated(np.array([_initial(array)], array.dtype), lay.elements)

    return _assemble(lab, case, interface, contents, constant_values(lab, case.sizes, host))[0]


def _initial(array: Array) -> np.generic:
    return filled(POISON_BITS if array.initial == "poison" else 0, array.dtype)


def _assemble(
    lab: Lab, case: Case, interface: Interface, contents: Callable, constants
) -> tuple[Launch, dict[str, Layout]]:
    sizes = launch_sizes(lab, case.sizes, interface)
    buffers: dict[str, Buffer] = {}
    layouts: dict[str, Layout] = {}
    steps = []
    for kernel in lab.kernels:
        args: list[Buffer | Scalar] = []
        for param in kernel.params:
            if not param.is_pointer:
                args.append(Scalar(param.name, param.ctype, int(sizes[param.value_name])))
                continue
            name = param.array_name
            if name not in buffers:
                array = lab.array(name)
                lay = layouts[name] = layout(lab, param, sizes)
                writable = not lab.is_input(name)
                accumulates = writable and array.initial == "zero"
                buffers[name] = Buffer(name, contents(array, lay), writable, accumulates)
            args.append(buffers[name])
        steps.append(
            Launch(
                kernel=kernel.name,
                args=args,
                constants=constants,
                **shape_for(lab, case, interface, kernel),
            )
        )
    first = steps[0]
    first.then = steps[1:]
    return first, layouts
