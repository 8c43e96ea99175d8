"""Error maps drawn for the renderers: SVG geometry for the HTML report, and a small
character map (at most TEXT_COLUMNS wide) for the terminal and Markdown. Both draw the
cells a case's ErrorMap holds (grader.judge.errormap classified them when the case was judged);
coarser maps merge cells the same way, each showing its most severe class."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from grader.judge.errormap import cell_size, coarsen, codes_of, letters
from grader.model.result import MAP_CLASSES, ErrorMap, MapSlice

# What each class is called in a legend, in the order a legend lists them.
TITLES = {
    "w": "wrong",
    "n": "NaN",
    "u": "never written",
    "x": "written into the row padding",
    "r": "right",
    "p": "row padding, untouched",
}
GLYPHS = {
    True: {"p": " ", "r": "·", "w": "█", "n": "?", "u": "░", "x": "!"},
    False: {"p": " ", "r": ".", "w": "#", "n": "?", "u": "_", "x": "!"},
}
TICKS = {True: ("╷", "╶"), False: ("|", "-")}  # tile edges along x (above), y (left)
STYLES = {"r": ("green",), "w": ("red",), "n": ("magenta",), "u": ("yellow",), "x": ("red",)}
TEXT_COLUMNS = 40
TEXT_ROWS = 20
SLICE_GAP = 3
MIN_TILE_PX = 3  # tile lines closer than this would hide the cells
_RUNS = re.compile(r"(.)\1*")

Paint = Callable[..., str]


def _plane_title(plane: MapSlice, short: bool = False) -> str:
    if plane.z is None:
        return ""
    if short:
        return f"z={plane.z} {plane.label.split(' ')[0]}".rstrip()
    return f"z = {plane.z}" + (f" ({plane.label})" if plane.label else "")


def size_text(emap: ErrorMap) -> str:
    """The output's extent, x first: "517 x 517", "33 x 9 x 17"."""
    return " x ".join(str(n) for n in reversed(emap.shape))


def legend(emap: ErrorMap) -> list[tuple[str, str, int]]:
    """(letter, title, elements) of each class the output has."""
    counts = {letter: emap.counts.get(name, 0) for letter, name in MAP_CLASSES.items()}
    return [(letter, title, counts[letter]) for letter, title in TITLES.items() if counts[letter]]


def _ticks(extent: int, tile: int, per: int) -> set[int]:
    """The characters (of `per` elements) where a tile starts, when a tile spans more
    than one character; otherwise every character would be marked."""
    if tile <= per:
        return set()
    return {start // per for start in range(0, extent, tile)}


# -- the character map ------------------------------------------------------------------


@dataclass(frozen=True)
class _TextScale:
    cells_y: int  # map cells per character
    cells_x: int
    elements_y: int
    elements_x: int


def _text_scale(emap: ErrorMap, planes: int) -> _TextScale:
    cy, cx = emap.cell
    ty, tx = emap.tile
    budget = max(4, (TEXT_COLUMNS - SLICE_GAP * (planes - 1)) // planes)
    ex = cell_size(-(-emap.columns // budget), tx, cx)
    # a character is about twice as tall as it is wide, but a flat map keeps a few rows
    square = min(2 * ex, max(1, emap.height // 8))
    ey = cell_size(max(square, -(-emap.height // TEXT_ROWS)), ty, cy)
    return _TextScale(ey // cy, ex // cx, ey, ex)


def _text_plane(emap: ErrorMap, plane: MapSlice, scale: _TextScale, unicode: bool) -> list[str]:
    """The plane's characters: a ruler of tile edges above, a gutter of them on the left."""
    cells = letters(coarsen(codes_of(plane.rows), scale.cells_y, scale.cells_x))
    glyphs = GLYPHS[unicode]
    across, down = TICKS[unicode]
    xs = _ticks(emap.columns, emap.tile[1], scale.elements_x)
    ys = _ticks(emap.height, emap.tile[0], scale.elements_y)
    width = len(cells[0])
    lines = [" " + "".join(across if i in xs else " " for i in range(width))] if xs else []
    for i, row in enumerate(cells):
        lines.append((down if i in ys else " ") + "".join(glyphs[c] for c in row))
    return lines


def _paint_line(line: str, unicode: bool, paint: Paint) -> str:
    style = {GLYPHS[unicode][letter]: STYLES.get(letter, ()) for letter in MAP_CLASSES}
    return "".join(paint(run[0], *style.get(run[1], ())) for run in _RUNS.finditer(line))


def text_map(emap: ErrorMap, unicode: bool = True, paint: Paint | None = None) -> list[str]:
    """The map as lines of at most TEXT_COLUMNS map characters (plus a gutter), with a
    title and a legend. `paint(text, *styles)` colours the cells, on a terminal."""
    scale = _text_scale(emap, len(emap.slices))
    blocks = [_text_plane(emap, plane, scale, unicode) for plane in emap.slices]
    titles = [_plane_title(plane, short=True) for plane in emap.slices]
    width = max(len(line) for block in [*blocks, titles] for line in block)
    body = []
    if any(titles):
        body.append((" " * SLICE_GAP).join(t.ljust(width) for t in titles).rstrip())
    for parts in zip(*blocks, strict=True):
        line = (" " * SLICE_GAP).join(part.ljust(width) for part in parts).rstrip()
        body.append(_paint_line(line, unicode, paint) if paint else line)
    glyphs = GLYPHS[unicode]
    keys = "  ".join(
        f"{glyphs[letter].strip() or '(blank)'} {title} ({n})" for letter, title, n in legend(emap)
    )
    ticks = TICKS[unicode]
    tiles = (
        f"; {ticks[0]} and {ticks[1]} mark where {emap.tile[1]} x {emap.tile[0]} tiles start"
        if tiled(emap)
        else ""
    )
    return [
        f"Error map of {emap.output} ({size_text(emap)}): x across, y down",
        *body,
        f"Legend: {keys}",
        f"1 character = {scale.elements_x} x {scale.elements_y} elements (x by y), shown as "
        f"the worst element in it{tiles}.",
    ]


def tiled(emap: ErrorMap) -> bool:
    """Whether a tile edge falls inside the output: when none does, the tiles have
    nothing to say (one tile covers it, or it is not laid out in tiles)."""
    return emap.tile[1] < emap.columns or emap.tile[0] < emap.height


# -- SVG geometry -----------------------------------------------------------------------


@dataclass(frozen=True)
class SvgPlane:
    """One plane in cell units, for an <svg> whose viewBox is cols x rows cells."""

    title: str
    cols: int
    rows: int
    px: float  # pixels per cell
    paths: list[tuple[str, str]]  # (class letter, path data) for every class but right
    tile_xs: list[float]  # tile edges, in cells
    tile_ys: list[float]
    row_end: float | None  # where the row padding starts, in cells

    @property
    def width(self) -> float:
        return round(self.cols * self.px, 1)

    @property
    def height(self) -> float:
        return round(self.rows * self.px, 1)


@dataclass(frozen=True)
class SvgMap:
    planes: list[SvgPlane]
    legend: list[tuple[str, str, int]]
    size: str
    cell: str  # "1 cell = 4 x 4 elements"
    tiles: str  # what the lines are, or why there are none; empty where none fall inside


def _rectangles(rows: list[str]) -> dict[str, list[str]]:
    """Path data per class letter: each run of a row, merged with the same run in the
    rows below it into one rectangle."""
    found: dict[str, list[str]] = {}
    open_runs: dict[tuple[int, int, str], int] = {}  # (x, length, letter) -> first row

    def close(key: tuple[int, int, str], last: int) -> None:
        x, n, letter = key
        top = open_runs.pop(key)
        found.setdefault(letter, []).append(f"M{x} {top}h{n}v{last - top}h-{n}z")

    for y, row in enumerate([*rows, ""]):
        here = set()
        for run in _RUNS.finditer(row):
            if run[1] != "r":
                here.add((run.start(), len(run[0]), run[1]))
        for key in [k for k in open_runs if k not in here]:
            close(key, y)
        for key in here:
            open_runs.setdefault(key, y)
    return found


def _edges(extent: int, tile: int, cell: int) -> list[float]:
    return [round(start / cell, 3) for start in range(tile, extent, tile)]


def svg_map(emap: ErrorMap, target_px: int = 480) -> SvgMap:
    """The map laid out for the HTML template: planes side by side, about `target_px`
    wide for one plane or a wide one (a pitched row), and narrower for several."""
    cy, cx = emap.cell
    ty, tx = emap.tile
    rows, cols = len(emap.slices[0].rows), len(emap.slices[0].rows[0])
    wide = cols > 2 * rows
    target = target_px if len(emap.slices) == 1 or wide else target_px * 0.6
    px = round(min(16.0, target / max(rows, cols)), 2)
    show = min(tx / cx, ty / cy) * px >= MIN_TILE_PX
    planes = [
        SvgPlane(
            title=_plane_title(plane),
            cols=cols,
            rows=rows,
            px=px,
            paths=[(c, " ".join(d)) for c, d in sorted(_rectangles(plane.rows).items())],
            tile_xs=_edges(emap.columns, tx, cx) if show else [],
            tile_ys=_edges(emap.height, ty, cy) if show else [],
            row_end=round(emap.width / cx, 3) if emap.columns > emap.width else None,
        )
        for plane in emap.slices
    ]
    if (cy, cx) == (1, 1):
        cell = "each cell is one element"
    else:
        cell = f"1 cell = {cx} x {cy} elements (x by y), shown as the worst element in it"
    if not tiled(emap):
        tiles = ""
    elif show:
        tiles = f"lines mark the kernel's {tx} x {ty} tiles (TILE_X x TILE_Y)"
    else:
        tiles = f"the kernel's {tx} x {ty} tiles are too small at this scale to draw"
    return SvgMap(planes, legend(emap), size_text(emap), cell, tiles)
