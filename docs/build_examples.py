"""Rebuild the guides' examples from real runs on the CPU backend:

    docs/student.md                  the sample `grader check` of "What a report looks
                                     like", as an 80-column terminal shows it
                                     (tests/test_docs.py compares it with a fresh run)
    docs/examples/report.png         the HTML report of a known-wrong kernel: its error map
                                     and annotated source (headless chromium, then Pillow)
    docs/class-summary/              `grader batch` over the project's known-wrong course
                                     (tests/batch/course_data.py, without the attacks):
                                     summary.html, its similar pairs' pages and every
                                     student's report.html

Needs chromium and Pillow (`pip install pillow`). Run from the repository root:

    python docs/build_examples.py           # all of them
    python docs/build_examples.py student   # the student's guide's sample run alone
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from PIL import Image

from grader.batch import run_batch
from grader.grading.pipeline import Options, check
from grader.report import html as html_report
from grader.report import terminal
from grader.validate import wrong_dir

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "batch"))
import course_data  # noqa: E402

DOCS = ROOT / "docs"
GUIDE = DOCS / "student.md"  # the guide whose sample run this writes
SHOT_LAB = "matmul-tiled"
SHOT_KERNEL = wrong_dir(SHOT_LAB) / "early_return_before_sync.cu"
SECRET = "docs-example"  # a made-up course secret, so the hidden cases run too
WIDTH, COLOURS = 980, 64
RUN_LAB = "matmul-tiled"
RUN_KERNEL = wrong_dir(RUN_LAB) / "no_boundary_check.cu"  # the course's first tiled kernel
RUN_COLUMNS = 80
RUN_MARKS = (
    "<!-- docs/build_examples.py writes this run; tests/test_docs.py compares it -->\n",
    "<!-- the run ends -->",
)


def terminal_run(device: str | None = None) -> str:
    """`grader check` of the guide's kernel as an 80-column terminal shows it, indented
    as Markdown code; `device` names the machine in place of this one's."""
    with tempfile.TemporaryDirectory() as tmp:
        kernel = Path(tmp) / "kernel.cu"
        kernel.write_bytes(RUN_KERNEL.read_bytes())
        result = check(RUN_LAB, kernel, Options(backend="cpu"))
    result.device = device or result.device
    shown = f"$ grader check {RUN_LAB} kernel.cu\n" + terminal.render(result, columns=RUN_COLUMNS)
    return "".join(f"    {line}".rstrip() + "\n" for line in shown.splitlines())


def with_run(guide: str, run: str) -> str:
    """The guide with `run` between its marks."""
    head, rest = guide.split(RUN_MARKS[0], 1)
    return f"{head}{RUN_MARKS[0]}\n{run}\n{RUN_MARKS[1]}{rest.split(RUN_MARKS[1], 1)[1]}"


def device_of(guide: str) -> str:
    """The machine the guide's run names, its header line unwrapped."""
    run = guide.split(RUN_MARKS[0], 1)[1]
    header = run.split("    backend cpu, device ", 1)[1].split("\n\n", 1)[0]
    return " ".join(line.strip() for line in header.splitlines())


def chromium() -> str:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        found = shutil.which(name)
        if found:
            return found
    sys.exit("No chromium on PATH: apt-get install chromium")


def screenshot(page: Path, png: Path, height: int) -> None:
    with tempfile.TemporaryDirectory() as profile:
        subprocess.run(
            [chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
             f"--user-data-dir={profile}", f"--window-size={WIDTH},{height}",
             f"--screenshot={png}", page.as_uri()],
            check=True, capture_output=True, timeout=120,
        )  # fmt: skip


def report_picture(out: Path) -> None:
    """The failing case's map and the annotated source, cut from the whole page."""
    result = check(SHOT_LAB, SHOT_KERNEL, Options(backend="cpu", timing=False))
    with tempfile.TemporaryDirectory() as tmp:
        page, png = Path(tmp) / "report.html", Path(tmp) / "page.png"
        page.write_text(html_report.render(result), encoding="utf-8")
        screenshot(page, png, 3000)
        whole = Image.open(png).convert("RGB")
    top, bottom = _map_to_marked_source(whole)
    picture = whole.crop((0, top, WIDTH, bottom)).quantize(COLOURS)
    picture.save(out, optimize=True)


def _rows_with(image: Image.Image, colour: tuple[int, int, int]) -> list[int]:
    pixels = image.load()
    return [
        y
        for y in range(image.height)
        if sum(pixels[x, y] == colour for x in range(0, image.width, 4)) > 20
    ]


def _map_to_marked_source(image: Image.Image) -> tuple[int, int]:
    """From just above the error map (its right cells' colour) to a little below the
    last marked source line (its background colour)."""
    right, marked = (0xC9, 0xEC, 0xD4), (0xFF, 0xF1, 0xE5)
    return _rows_with(image, right)[0] - 60, _rows_with(image, marked)[-1] + 110


def class_summary(out: Path) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "submissions"
        folder.mkdir()
        sources = {**course_data.correct(), **course_data.known_wrong()}
        sources.update({name: text for name, (text, _) in course_data.buggy().items()})
        for name, text in sources.items():
            (folder / f"{name}.cu").write_text(text)
        graded = Path(tmp) / "out"
        run_batch(
            course_data.LAB, folder, graded, secret=SECRET, jobs=2, backend="cpu", timing=False
        )
        shutil.rmtree(out, ignore_errors=True)
        (out / "students").mkdir(parents=True)
        shutil.copy(graded / "summary.html", out / "summary.html")
        shutil.copytree(graded / "similar", out / "similar")
        for report in sorted(graded.glob("students/*/report.html")):
            (out / "students" / report.parent.name).mkdir()
            shutil.copy(report, out / "students" / report.parent.name / "report.html")


if __name__ == "__main__":
    GUIDE.write_text(with_run(GUIDE.read_text(), terminal_run()))
    if sys.argv[1:] == ["student"]:
        sys.exit(0)
    (DOCS / "examples").mkdir(parents=True, exist_ok=True)
    report_picture(DOCS / "examples" / "report.png")
    class_summary(DOCS / "class-summary")
