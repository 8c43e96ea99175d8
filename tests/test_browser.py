"""The HTML report in a real browser: headless chromium draws the error map where the
report says, wrong cells right of right ones as in the map, with the tile lines over them.
Skipped, with the reason, where there is no chromium (Debian's `chromium` package, which
.ci/run installs) or no Pillow to read the screenshot."""

from __future__ import annotations

import re
import shutil
import subprocess

import numpy as np
import pytest

from grader.model.result import CaseResult, CompileInfo, ErrorMap, MapSlice, Result, Status
from grader.report import html as html_report

BROWSER = next(
    (p for p in map(shutil.which, ("chromium", "chromium-browser", "google-chrome")) if p), None
)
pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(BROWSER is None, reason="no chromium on PATH (apt-get install chromium)"),
]
WIDTH, HEIGHT = 1000, 1400


def _report() -> str:
    # 64 x 64 output, the right half wrong, tiles of 16
    rows = ["r" * 32 + "w" * 32] * 64
    counts = {"padding": 0, "right": 2048, "wrong": 2048, "nan": 0, "unwritten": 0}
    emap = ErrorMap(
        output="P",
        shape=(64, 64),
        columns=64,
        cell=(1, 1),
        tile=(16, 16),
        counts={**counts, "padding_written": 0},
        slices=[MapSlice(rows=rows)],
    )
    case = CaseResult(
        name="width-64",
        visibility="public",
        sizes={"Width": 64},
        status=Status.FAILED,
        error_map=emap,
    )
    result = Result(
        lab="matmul-naive",
        submission="kernel.cu",
        backend="cpu",
        device="test",
        status=Status.FAILED,
        score=0.0,
        max_score=3.0,
        compile=CompileInfo(ok=True),
    )
    result.cases = [case]
    return html_report.render(result)


def _colour(page: str, letter: str) -> tuple[int, int, int]:
    hex_code = re.search(rf"\.cell-{letter} {{ fill: #([0-9a-f]{{6}})", page)[1]
    return tuple(int(hex_code[i : i + 2], 16) for i in (0, 2, 4))


def _box(pixels: np.ndarray, colour: tuple[int, int, int]) -> tuple[int, int, int, int, int]:
    """(left, top, right, bottom, count) of the large block of `colour`: the rows and
    columns holding at least 100 such pixels, which leaves out the legend's swatches."""
    mask = (pixels == colour).all(axis=2)
    xs, ys = np.nonzero(mask.sum(axis=0) >= 100)[0], np.nonzero(mask.sum(axis=1) >= 100)[0]
    assert len(xs) and len(ys), f"no block of colour {colour}"
    block = mask[ys.min() : ys.max() + 1, xs.min() : xs.max() + 1]
    return xs.min(), ys.min(), xs.max(), ys.max(), int(block.sum())


def test_a_real_browser_draws_the_error_map(tmp_path):
    image = pytest.importorskip("PIL.Image", reason="Pillow reads the screenshot")
    page = _report()
    (tmp_path / "report.html").write_text(page, encoding="utf-8")
    shot = tmp_path / "shot.png"
    subprocess.run(
        [BROWSER, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
         "--force-device-scale-factor=1", f"--user-data-dir={tmp_path / 'profile'}",
         f"--window-size={WIDTH},{HEIGHT}", f"--screenshot={shot}",
         (tmp_path / "report.html").as_uri()],
        check=True, capture_output=True, timeout=120,
    )  # fmt: skip
    pixels = np.asarray(image.open(shot).convert("RGB"))
    right = _box(pixels, _colour(page, "r"))
    wrong = _box(pixels, _colour(page, "w"))
    side = 480  # 64 cells of 7.5 px
    # the wrong half lies right of the right half, both the full height of the map; tile
    # lines cross both halves, so a little less than half the square is each colour
    assert abs(wrong[0] - right[2]) <= 2 and abs(wrong[1] - right[1]) <= 1
    assert abs((wrong[2] - right[0]) - side) <= 3 and abs((wrong[3] - wrong[1]) - side) <= 3
    assert 0.8 * side * side / 2 < wrong[4] < side * side / 2
    assert 0.8 * side * side / 2 < right[4] < side * side / 2
