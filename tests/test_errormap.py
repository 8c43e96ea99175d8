"""Error maps: the classification and downsampling on made-up outputs, and the patterns of
the labs' known-wrong kernels graded for real on the CPU backend, checked
on cell classes (never on pixels)."""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path

import numpy as np
import pytest

from grader.grading.pipeline import Options, check
from grader.judge import errormap
from grader.judge.compare import compare
from grader.judge.launch import Layout
from grader.model.launch import POISON_BITS, bits_as_float
from grader.model.result import MAP_CLASSES, CaseResult, ErrorMap, MapSlice, decode_row, encode_row
from grader.report import maps
from grader.validate import wrong_dir

POISON = bits_as_float(POISON_BITS)


def _map(got: np.ndarray, want: np.ndarray, tile=(16, 16, 1), stride: int | None = None):
    """The map of `got` against `want`; `stride` pads each row with poison (a pitched
    output), where `got` may already hold more columns than `want`."""
    width = want.shape[-1]
    layout = Layout(want.shape, stride or width)
    data = np.full(layout.padded_shape, POISON, np.float32)
    data[..., : got.shape[-1]] = got
    cmp = compare("P", want, layout.unpack(data.reshape(-1)), np.full(want.shape, 1e-3))
    return errormap.build(cmp, layout, data.reshape(-1), tile)


def _cells(emap: ErrorMap, plane: int = 0) -> np.ndarray:
    return np.array([list(row) for row in emap.slices[plane].rows])


def test_a_right_output_has_no_map():
    want = np.ones((20, 20))
    assert _map(want.astype(np.float32), want) is None


def test_an_output_too_small_to_draw_has_no_map():
    """A map of a few elements is a block or two of colour (issue 20); the first mismatch
    and the counts say more."""
    want = np.ones(2, np.float32)
    assert _map(np.zeros(2, np.float32), want, tile=(512, 1, 1)) is None
    assert _map(np.zeros((4, 4), np.float32), np.ones((4, 4))) is not None


def test_an_output_not_laid_out_in_tiles_has_no_tile_lines():
    """One sum per block (a reduction's 64 outputs with TILE_X 512): no tile edge, no tile
    caption, where the grid's tiles are another array's."""
    emap = _map(np.zeros(64, np.float32), np.ones(64), tile=None)
    assert emap is not None and not maps.tiled(emap)
    assert "tiles" not in maps.text_map(emap)[-1] and maps.svg_map(emap).tiles == ""
    assert maps.tiled(_map(np.zeros((64, 64), np.float32), np.ones((64, 64))))


def test_each_element_class_gets_its_letter():
    want = np.ones((4, 4))
    got = want.astype(np.float32).copy()
    got[0, 1] = 2.0
    got[1, 2] = np.nan
    got[2, 3] = POISON
    emap = _map(got, want)
    assert emap.slices[0].rows == ["rwrr", "rrnr", "rrru", "rrrr"]
    assert emap.counts == {
        "padding": 0,
        "right": 13,
        "wrong": 1,
        "nan": 1,
        "unwritten": 1,
        "padding_written": 0,
    }


def test_a_large_output_is_downsampled_and_one_wrong_element_marks_its_cell():
    want = np.ones((517, 517))
    got = want.astype(np.float32).copy()
    got[516, 516] = 5.0
    emap = _map(got, want)
    cells = _cells(emap)
    assert emap.cell == (4, 4)  # 517 / 256 needs 3; 4 divides the tile of 16
    assert cells.shape == (130, 130)
    assert cells[-1, -1] == "w" and (cells == "w").sum() == 1


def test_a_cell_shows_its_most_severe_element():
    want = np.ones((512, 512))
    got = want.astype(np.float32).copy()
    got[0, 0] = 9.0  # wrong and never written in the same 2 x 2 cell
    got[1, 1] = POISON
    assert _map(got, want).slices[0].rows[0][0] == "u"


@pytest.mark.parametrize(
    ("need", "tile", "unit", "size"),
    [(1, 16, 1, 1), (3, 16, 1, 4), (13, 16, 1, 16), (26, 16, 1, 32), (3, 7, 1, 3), (5, 8, 4, 8)],
)
def test_cells_line_up_with_the_tile_where_they_can(need, tile, unit, size):
    assert errormap.cell_size(need, tile, unit) == size


def test_a_pitched_output_maps_its_padding_and_writes_into_it():
    want = np.ones((8, 10))
    got = np.ones((8, 16), np.float32)  # the kernel strode by the pitch and wrote it all
    got[:, 10:] = POISON
    got[3, 12] = 1.0
    emap = _map(got, want, stride=16)
    cells = _cells(emap)
    assert emap.columns == 16 and emap.width == 10
    assert (cells[:, :10] == "r").all()
    assert cells[3, 12] == "x" and (cells[:, 10:] == "p").sum() == 8 * 6 - 1
    assert emap.counts["padding_written"] == 1


def test_a_3d_output_shows_the_first_the_worst_inside_and_the_last_slice():
    want = np.ones((6, 4, 4))
    got = want.astype(np.float32).copy()
    got[3] = 0.0
    got[2, 0, 0] = 0.0
    got[5, 1, 1] = 0.0
    emap = _map(got, want, tile=(4, 4, 2))
    picked = [(s.z, s.label) for s in emap.slices]
    assert picked == [(0, "first"), (3, "worst inside"), (5, "last")]
    assert (_cells(emap, 1) == "w").all() and (_cells(emap, 0) == "r").all()


def test_a_1d_output_wraps_into_rows_of_whole_tiles():
    want = np.ones(1000)
    got = want.astype(np.float32).copy()
    got[-10:] = POISON
    emap = _map(got, want, tile=(32, 1, 1))
    assert emap.columns == 32 and emap.height == 32
    rows = emap.slices[0].rows  # 1000 = 31 rows of 32, and 8 more
    assert rows[-2] == "r" * 30 + "uu" and rows[-1] == "u" * 8 + "p" * 24


def test_rows_are_run_length_encoded_and_back():
    row = "rrrrwwnrrrrrrrrrrrrrpx"
    assert encode_row(row) == "4r2wn13rpx"
    assert decode_row(encode_row(row)) == row
    with pytest.raises(ValueError):
        decode_row("3r<script>")


def test_a_map_survives_the_json_report():
    emap = ErrorMap(
        output="P",
        shape=(3, 5),
        columns=5,
        cell=(1, 1),
        tile=(16, 16),
        counts={"wrong": 2},
        slices=[MapSlice(rows=["rrwwr"] * 3)],
    )
    case = CaseResult(name="c", visibility="public", sizes={}, status="failed", error_map=emap)
    assert ErrorMap.from_json(case.to_json()["error_map"]) == emap


# -- the known-wrong kernels, graded for real -------------------------------------------


@cache
def graded(lab: str, kernel: str) -> dict[str, CaseResult]:
    result = check(lab, wrong_dir(lab) / kernel, Options(backend="cpu", timing=False, timeout=5.0))
    return {case.name: case for case in result.cases}


def case_map(lab: str, kernel: str, case: str) -> ErrorMap:
    emap = graded(lab, kernel)[case].error_map
    assert emap is not None, f"{lab}/{kernel} {case} has no map"
    return emap


@pytest.mark.slow
def test_map_of_a_missing_boundary_check_is_the_last_partial_tile():
    """Threads past the edge return before the tile loop, so the partial tiles compute
    from shared memory nobody loaded: the last 4 rows and columns of 100."""
    emap = case_map("matmul-tiled", "early_return_before_sync.cu", "width-100")
    cells = _cells(emap)
    edge = np.zeros(cells.shape, bool)
    edge[96:, :] = edge[:, 96:] = True
    assert emap.tile == (16, 16) and emap.cell == (1, 1)
    assert (cells[edge] != "r").all() and (cells[~edge] == "r").all()


@pytest.mark.slow
def test_map_of_a_truncated_tile_loop_is_wrong_everywhere():
    """The tile loop stops after 6 whole tiles of 16, so every element misses the
    products for k >= 96; none is unwritten."""
    emap = case_map("matmul-tiled", "truncated_tiles.cu", "width-100")
    cells = _cells(emap)
    assert (cells == "w").mean() > 0.99 and set(np.unique(cells)) <= {"w", "r"}


@pytest.mark.slow
def test_map_of_a_wrong_ghost_border_is_a_frame_as_wide_as_the_mask_radius():
    emap = case_map("conv2d", "ghost_cells_not_zero.cu", "100x100-mask5")
    assert graded("conv2d", "ghost_cells_not_zero.cu")["100x100-mask5"].hint_kind == "ghost_border"
    cells = _cells(emap)
    inner = cells[2:-2, 2:-2]
    assert (inner == "r").all() and (cells != "r").any()
    assert (cells[:, :2] == "w").all() and (cells[:, -2:] == "w").all()


@pytest.mark.slow
def test_map_of_a_transposed_output_is_right_only_on_the_diagonal():
    cells = _cells(case_map("matmul-naive", "transposed_write.cu", "width-100"))
    assert ((cells == "r") == np.eye(100, dtype=bool)).all()


@pytest.mark.slow
def test_map_of_a_race_on_shared_memory_has_no_right_cell():
    """Without the barrier, threads read tile elements before they are loaded; the CPU
    backend fills shared memory with NaN, so those outputs are NaN."""
    emap = case_map("matmul-tiled", "missing_syncthreads.cu", "width-64")
    cells = _cells(emap)
    assert set(np.unique(cells)) <= {"w", "n"} and (cells == "n").any()


@pytest.mark.slow
def test_map_of_a_3d_ghost_border_is_a_frame_in_every_slice_shown():
    """Ghost cells tested on the flat index: a neighbour past a face of x or y lands in
    another row instead of counting as 0, so each plane is wrong on a frame 2 wide."""
    emap = case_map("conv3d", "ghost_cells_not_zero.cu", "20x18x12-mask5")
    assert [(s.z, s.label) for s in emap.slices] == [
        (0, "first"),
        (1, "worst inside"),
        (11, "last"),
    ]
    for plane in range(3):
        cells = _cells(emap, plane)
        frame = np.ones(cells.shape, bool)
        frame[2:-2, 2:-2] = False
        assert (cells[frame] == "w").all() and (cells[~frame] == "r").all()


@pytest.mark.slow
def test_map_of_an_ignored_pitch_covers_the_row_padding_written_into():
    emap = case_map("conv3d-pitched", "pitch_ignored.cu", "20x18x12-mask5")
    assert emap.columns > emap.width == 20
    assert emap.counts["padding_written"] > 0
    assert any("x" in row[emap.width :] for s in emap.slices for row in s.rows)


@pytest.mark.slow
def test_a_run_stopped_by_a_fault_has_no_map_but_its_hint():
    """On the CPU backend a store past the end stops the run at the guard page: there is
    no output to draw, and the hint names the partial tile instead."""
    case = graded("matmul-naive", "no_boundary_check.cu")["width-100"]
    assert case.error_map is None and case.hint_kind == "partial_tile_fault"


def test_the_report_schema_allows_exactly_the_map_classes():
    schema = json.loads(
        (Path(__file__).resolve().parents[1] / "grader/schema/report.schema.json").read_text()
    )
    rows = schema["$defs"]["error_map"]["properties"]["slices"]["items"]["properties"]["rows"]
    assert rows["items"]["pattern"] == f"^([0-9]*[{''.join(MAP_CLASSES)}])+$"
