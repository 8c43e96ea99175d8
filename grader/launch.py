"""From a lab, a case and its inputs to a backend-neutral `Launch`, and back.

Buffers are laid out as the device sees them: row-major, x fastest, and for a pitched
parameter each row padded to its pitch in bytes. The padding of an input holds NaN, so
a kernel that strides by the width instead of the pitch reads NaN; outputs (padding
included) start poisoned, so elements never written show."""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np

from grader.backends.base import (
    POISON_BITS,
    Buffer,
    Drawn,
    Launch,
    Repeated,
    Scalar,
    bits_as_float,
)
from grader.interface import Interface
from grader.labs.model import Case, Lab, Param, Role

PADDING_BITS = 0x7FC0BADD  # what an input's row padding holds


@dataclass(frozen=True)
class Layout:
    """How a logical array sits in its device buffer."""

    shape: tuple[int, ...]
    row_stride: int  # elements from one row to the next (== shape[-1] unless pitched)

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

    def pack(self, logical: np.ndarray, fill: np.float32) -> np.ndarray:
        buffer = np.full(self.padded_shape, fill, np.float32)
        buffer[..., : self.shape[-1]] = logical
        return buffer.reshape(-1)

    def unpack(self, data: np.ndarray) -> np.ndarray:
        return data.reshape(self.padded_shape)[..., : self.shape[-1]]

    def padding(self, data: np.ndarray) -> np.ndarray:
        return data.reshape(self.padded_shape)[..., self.shape[-1] :]


def layout(lab: Lab, param: Param, sizes) -> Layout:
    shape = lab.array_shape(param.array_name, sizes)
    stride = sizes[param.pitch] // 4 if param.pitch else shape[-1]
    return Layout(shape, stride)


def grid_for(lab: Lab, sizes, interface: Interface) -> tuple[int, int, int]:
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


def shape_for(lab: Lab, case: Case, interface: Interface) -> dict:
    """The grid, block and dynamic shared memory a module's launch macros ask for."""
    sizes = case.sizes
    return {
        "grid": grid_for(lab, sizes, interface),
        "block": interface.block(),
        "shared_bytes": lab.dynamic_shared(sizes, interface.launch) if lab.dynamic_shared else 0,
    }


def relaunch(lab: Lab, case: Case, launch: Launch, interface: Interface) -> Launch:
    """`launch`'s buffers and constants, shaped for another module (the reference)."""
    return replace(launch, **shape_for(lab, case, interface))


def make_launch(lab: Lab, case: Case, inputs: dict[str, np.ndarray], interface: Interface):
    """The Launch for `case`, and the Layout of each pointer parameter."""
    poison, padding = bits_as_float(POISON_BITS), bits_as_float(PADDING_BITS)

    def contents(param: Param, lay: Layout) -> np.ndarray:
        if param.role == Role.OUTPUT:
            return np.full(lay.elements, poison, np.float32)
        return lay.pack(inputs[param.array_name], padding)

    return _assemble(lab, case, interface, contents, constant_values(lab, case.sizes, inputs))


def timing_launch(
    lab: Lab, case: Case, constants: dict[str, np.ndarray], interface: Interface
) -> Launch:
    """The Launch for timing: the GPU draws every input buffer, row padding included,
    before each timed launch (grader.backends.timed); outputs start as the poison
    repeated; `constants` (cases.timing_constants) fill the __constant__ symbols. Nothing
    large is built here."""
    poison = np.array([bits_as_float(POISON_BITS)], np.float32)

    def contents(param: Param, lay: Layout) -> Repeated | Drawn:
        if param.role == Role.OUTPUT:
            return Repeated(poison, lay.elements)
        return Drawn(lay.elements)

    return _assemble(lab, case, interface, contents, constant_values(lab, case.sizes, constants))[0]


def _assemble(lab: Lab, case: Case, interface: Interface, contents, constants) -> tuple:
    sizes = case.sizes
    args: list[Buffer | Scalar] = []
    layouts: dict[str, Layout] = {}
    for param in lab.kernel.params:
        if not param.is_pointer:
            args.append(Scalar(param.name, param.ctype, int(sizes[param.value_name])))
            continue
        lay = layouts[param.name] = layout(lab, param, sizes)
        args.append(Buffer(param.name, contents(param, lay), param.role == Role.OUTPUT))
    launch = Launch(
        kernel=lab.kernel.name,
        args=args,
        constants=constants,
        **shape_for(lab, case, interface),
    )
    return launch, layouts
