"""Error maps: where a failing case's output is wrong, as a grid of classified cells.

A map is built once, when a case is judged, from what the comparison already knows: each
element is right, wrong, NaN, or still holds the poison the grader wrote before the run
(never written). A pitched output's row padding is poisoned too, so the map covers it and
a write there shows. The grid has at most MAX_CELLS cells a side; a cell shows the most
severe class among its elements, so a cell is wrong when any element in it is wrong.
Cell sizes divide the kernel's tile, or are multiples of it, where one fits, so cells do
not straddle tile edges."""

from __future__ import annotations

import math

import numpy as np

from grader.judge.compare import Comparison, poisoned
from grader.judge.launch import Layout
from grader.model.result import MAP_CLASSES, ErrorMap, MapSlice

MAX_CELLS = 256
MIN_ELEMENTS = 16  # a smaller output's map is a block or two of colour: its numbers say more
SEVERITY = "".join(MAP_CLASSES)  # letters from the least severe to the most
CODE = {letter: code for code, letter in enumerate(SEVERITY)}
_LETTERS = np.frombuffer(SEVERITY.encode(), np.uint8)
_CODES = np.zeros(256, np.uint8)
_CODES[_LETTERS] = np.arange(len(SEVERITY), dtype=np.uint8)


def classify(cmp: Comparison, padding: np.ndarray | None = None) -> np.ndarray:
    """A severity code for every element of the output, then of each row's `padding` (its
    contents, when the buffer is pitched)."""
    codes = np.full(cmp.bad.shape, CODE["r"], np.uint8)
    codes[cmp.bad] = CODE["w"]
    codes[cmp.nan] = CODE["n"]
    codes[cmp.unwritten] = CODE["u"]
    if padding is None or padding.shape[-1] == 0:
        return codes
    pad = np.where(poisoned(padding), CODE["p"], CODE["x"])
    return np.concatenate([codes, pad.astype(np.uint8)], axis=-1)


def cell_size(need: int, tile: int, unit: int = 1) -> int:
    """The smallest multiple of `unit` that is at least `need`, or, if one exists below
    twice that, the smallest that divides `tile` or is a multiple of it."""
    first = max(unit, -(-need // unit) * unit)
    for size in range(first, 2 * first + 1, unit):
        if tile % size == 0 or size % tile == 0:
            return size
    return first


def coarsen(codes: np.ndarray, cy: int, cx: int) -> np.ndarray:
    """Cells of cy x cx elements of a 2D array of codes, each its most severe element."""
    h, w = codes.shape
    rows, cols = -(-h // cy), -(-w // cx)
    padded = np.zeros((rows * cy, cols * cx), np.uint8)  # code 0 is the least severe
    padded[:h, :w] = codes
    return padded.reshape(rows, cy, cols, cx).max(axis=(1, 3))


def letters(codes: np.ndarray) -> list[str]:
    """Rows of codes as rows of MAP_CLASSES letters."""
    return [row.tobytes().decode("ascii") for row in _LETTERS[codes]]


def codes_of(rows: list[str]) -> np.ndarray:
    """The inverse of `letters`."""
    width = len(rows[0]) if rows else 0
    flat = np.frombuffer("".join(rows).encode("ascii"), np.uint8)
    return _CODES[flat].reshape(len(rows), width)


def _planes(codes: np.ndarray, tile_x: int) -> np.ndarray:
    """The (z, y, x) planes to draw: a 2D output is one plane, and a 1D one is wrapped
    into rows a whole number of tiles long, about as many as there are rows."""
    if codes.ndim == 3:
        return codes
    if codes.ndim == 2:
        return codes[None]
    n = codes.size
    columns = min(n, tile_x * max(1, round(math.sqrt(n) / tile_x)))
    flat = np.full(-(-n // columns) * columns, CODE["p"], np.uint8)
    flat[:n] = codes
    return flat.reshape(1, -1, columns)


def _slices(planes: np.ndarray) -> list[tuple[int, str]]:
    """The first plane, the worst of those between, and the last."""
    depth = len(planes)
    if depth == 1:
        return [(0, "")]
    bad = (planes >= CODE["w"]).sum(axis=(1, 2))
    chosen = [(0, "first")]
    if depth > 2:
        chosen.append((1 + int(np.argmax(bad[1:-1])), "worst inside"))
    return [*chosen, (depth - 1, "last")]


def build(
    cmp: Comparison, layout: Layout, data: np.ndarray, tile: tuple[int, ...] | None
) -> ErrorMap | None:
    """The map of output `cmp`, whose buffer held `data` laid out as `layout`, for a kernel
    with TILE_X, TILE_Y = tile[:2] (None: an output not laid out in the kernel's tiles,
    one element per block, say); None when every element is right, or there are too few
    to draw."""
    padding = layout.padding(data) if layout.row_stride != layout.shape[-1] else None
    codes = classify(cmp, padding)
    if codes.max() <= CODE["r"] or cmp.bad.size < MIN_ELEMENTS:
        return None
    tile = tile or tuple(reversed(codes.shape)) + (1,) * (3 - codes.ndim)
    planes = _planes(codes, tile[0])
    tile_yx = (tile[1] if codes.ndim > 1 else planes.shape[1], tile[0])
    cy = cell_size(-(-planes.shape[1] // MAX_CELLS), tile_yx[0])
    cx = cell_size(-(-planes.shape[2] // MAX_CELLS), tile_yx[1])
    counts = np.bincount(codes.ravel(), minlength=len(SEVERITY))
    return ErrorMap(
        output=cmp.name,
        shape=tuple(cmp.bad.shape),
        columns=planes.shape[2],
        cell=(cy, cx),
        tile=tile_yx,
        counts={MAP_CLASSES[s]: int(n) for s, n in zip(SEVERITY, counts, strict=True)},
        slices=[
            MapSlice(
                rows=letters(coarsen(planes[z], cy, cx)),
                z=z if codes.ndim == 3 else None,
                label=label,
            )
            for z, label in _slices(planes)
        ],
    )


def of_run(
    comparisons: list[Comparison],
    layouts: dict[str, Layout],
    buffers: dict,
    tile: tuple[int, ...] | None,
) -> ErrorMap | None:
    """The map of the first output that has something to show (`tile`: as for build)."""
    for cmp in comparisons:
        found = build(cmp, layouts[cmp.name], buffers[cmp.name].data, tile)
        if found:
            return found
    return None
