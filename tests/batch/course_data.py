"""A generated course of matmul-naive submissions, with the verdict each must get.

Correct ones are the lab's reference and baseline kernels and variations a class hands in
(other block shapes, a double accumulator, coarsening, the same code with other
comments); buggy ones are the mistakes the course notes warn about; adversarial ones
(tests/batch/data/adversarial) attack the grader. The known-wrong kernels of
the lab's known-wrong kernels and the student template join in when they exist."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from grader import labs
from grader.validate import wrong_dir

LAB = "matmul-naive"
HERE = Path(__file__).parent
ADVERSARIAL = HERE / "data" / "adversarial"
CHECK = "if (row < Width && col < Width) {"


@dataclass(frozen=True)
class Expect:
    """What a submission's row must say: its status, and diagnostic kinds it must have
    (`kinds`) or may have beside them (`allowed`; None allows any)."""

    statuses: frozenset[str]
    kinds: frozenset[str] = frozenset()
    allowed: frozenset[str] | None = frozenset()


def expect(status: str, *kinds: str, allowed: tuple[str, ...] | None = ()) -> Expect:
    """`status` may name several, as "failed|compile_error"."""
    statuses = frozenset(status.split("|"))
    return Expect(statuses, frozenset(kinds), None if allowed is None else frozenset(allowed))


PASSED = expect("passed")
FAILING = expect("failed|compile_error|not_graded", allowed=None)


def _baseline() -> str:
    return (labs.get(LAB).home / "baseline.cu").read_text()


def _edit(old: str, new: str) -> str:
    text = _baseline()
    assert old in text, old
    return text.replace(old, new)


COARSENED = """\
// Two columns per thread: a block of 16 x 16 threads covers 32 x 16 outputs.
#define BLOCK_X 16
#define BLOCK_Y 16
#define TILE_X 32
__global__ void matmul(const float* M, const float* N, float* P, int Width)
{
    int row = blockIdx.y * BLOCK_Y + threadIdx.y;
    for (int c = 0; c < 2; ++c) {
        int col = blockIdx.x * TILE_X + c * BLOCK_X + threadIdx.x;
        if (row < Width && col < Width) {
            float sum = 0.0f;
            for (int k = 0; k < Width; ++k)
                sum += M[row * Width + k] * N[k * Width + col];
            P[row * Width + col] = sum;
        }
    }
}
"""

BLOCKS = [(8, 8), (32, 8), (32, 4), (4, 4), (64, 4), (16, 32), (8, 32), (128, 2), (2, 128),
          (1, 256), (256, 1), (32, 32), (24, 8), (20, 20), (48, 4), (12, 12)]  # fmt: skip


def correct() -> dict[str, str]:
    found = {
        "reference": (labs.get(LAB).home / "reference.cu").read_text(),
        "baseline": _baseline(),
        "double-sum": _edit("float sum = 0.0f;", "double sum = 0.0;"),
        "renamed": _baseline().replace("sum", "acc").replace("row", "r").replace("col", "c"),
        "early-return": _edit(CHECK, "if (row >= Width || col >= Width) return;\n    {"),
        "coarsened": COARSENED,
    }
    for x, y in BLOCKS:
        found[f"block-{x}x{y}"] = f"#define BLOCK_X {x}\n#define BLOCK_Y {y}\n{_baseline()}"
    for i in range(8):  # the same kernel, handed in by several students
        found[f"copy-{i}"] = f"// Lab 1, student {i}: my matrix multiply.\n{_baseline()}"
    return found


def buggy() -> dict[str, tuple[str, Expect]]:
    loop = "for (int k = 0; k < Width; ++k)"
    store = "P[row * Width + col] = sum;"
    return {
        "no-bounds-check": (_edit(CHECK, "{"), expect("failed", "out_of_bounds")),
        "transposed": (_edit(store, "P[col * Width + row] = sum;"), expect("failed")),
        "off-by-one": (_edit(loop, "for (int k = 0; k < Width - 1; ++k)"), expect("failed")),
        "reads-past-end": (
            _edit(loop, "for (int k = 0; k <= Width; ++k)"),
            expect("failed", "out_of_bounds", allowed=("requirement",)),
        ),
        "wrong-index": (
            _edit("M[row * Width + k]", "M[k * Width + row]"),
            expect("failed"),
        ),
        "half-written": (
            _edit(CHECK, "if (row < Width / 2 && col < Width) {"),
            expect("failed", "unwritten_output"),
        ),
        "int-sum": (_edit("float sum = 0.0f;", "int sum = 0;"), expect("failed")),
        "row-check-only": (
            _edit(CHECK, "if (row < Width) {"),
            expect("failed", "out_of_bounds", allowed=None),
        ),
        "nan": (_edit(store, "P[row * Width + col] = sum / 0.0f * 0.0f;"), expect("failed", "nan")),
        "zero": (_edit(store, "P[row * Width + col] = 0.0f;"), expect("failed")),
        "compile-error": (
            _edit("float sum = 0.0f;", "float sum = 0.0f"),
            expect("compile_error", "compile_error"),
        ),
        "wrong-signature": (
            _edit("float* P", "double* P").replace("float sum", "double sum"),
            expect("compile_error", "interface"),
        ),
        "missing-kernel": (
            _edit("void matmul(", "void matmul_kernel("),
            expect("compile_error", "interface"),
        ),
        "has-main": (
            _baseline() + "\nint main() { return 0; }\n",
            expect("not_graded", "requirement"),  # refused before it compiled
        ),
        "accumulates-into-P": (
            _edit(store, "P[row * Width + col] += sum;"),  # NaN poison + sum keeps the poison
            expect("failed", "unwritten_output"),
        ),
        "hard-coded-16": (
            "#define BLOCK_X 32\n#define BLOCK_Y 32\n"
            + _edit("blockIdx.y * blockDim.y", "blockIdx.y * 16").replace(
                "blockIdx.x * blockDim.x", "blockIdx.x * 16"
            ),
            expect("failed", allowed=None),
        ),
        "too-many-threads": (
            "#define BLOCK_X 64\n#define BLOCK_Y 32\n" + _baseline(),
            expect("compile_error", "resources"),
        ),
    }


ADVERSARIAL_EXPECT = {
    "infinite_loop": expect("failed", "timeout", allowed=("requirement",)),
    "oob_write": expect("failed", "out_of_bounds", allowed=("requirement",)),
    "fork_bomb": PASSED,
    "memory_hog": expect("failed", "crash", allowed=None),
    "printf_flood": expect("passed", "output"),
    "compile_bomb": expect("compile_error", "compile_error"),
    "write_outside": PASSED,
    "network": PASSED,
    "read_secret": PASSED,
    "read_other": PASSED,
    "forge": expect("failed", allowed=None),
    "include_other": expect("not_graded", "compile_error"),  # refused before it compiled
    "include_secret": expect("compile_error|not_graded", "compile_error"),
    "forged_symbol": expect("compile_error", "compile_error"),
    "forged_fault": expect("failed", "out_of_bounds", allowed=("requirement",)),
}
VICTIM = "baseline"  # whose file the adversarial ones try to read


@dataclass
class Course:
    folder: Path
    expected: dict[str, Expect]
    tag: str


def adversarial(values: dict[str, str]) -> dict[str, str]:
    """The adversarial kernels, with the paths and port they attack filled in."""
    found = {}
    for path in sorted(ADVERSARIAL.glob("*.cu")):
        text = path.read_text()
        for name, value in values.items():
            text = text.replace(f"@{name}@", value)
        assert not re.search(r"@[A-Z_]+@", text), path.name
        found[path.stem] = text
    return found


def known_wrong() -> dict[str, str]:
    """Known-wrong matmul kernels written for the grading core's tests, when present."""
    folder = wrong_dir(LAB)
    return {f"known-wrong-{p.stem}": p.read_text() for p in sorted(folder.glob("*.cu"))}


def build(folder: Path, out: Path, port: int, tag: str, secret_file: Path) -> Course:
    folder.mkdir(parents=True)
    expected: dict[str, Expect] = {}
    for name, text in correct().items():
        (folder / f"{name}.cu").write_text(text)
        expected[name] = PASSED
    for name, (text, verdict) in buggy().items():
        (folder / f"{name}.cu").write_text(text)
        expected[name] = verdict
    values = {
        "OUT": str(out),
        "COURSE": str(folder),
        "TAG": tag,
        "PORT": str(port),
        "VICTIM": str(folder / f"{VICTIM}.cu"),
        "VICTIM_ID": VICTIM,
        "SECRET_FILE": str(secret_file),
    }
    for name, text in adversarial(values).items():
        (folder / f"{name}.cu").write_text(text)
        expected[name] = ADVERSARIAL_EXPECT[name]
    for name, text in known_wrong().items():
        (folder / f"{name}.cu").write_text(text)
        expected[name] = FAILING
    template = labs.get(LAB).template_home / "kernel.cu"
    if template.is_file():
        (folder / "template.cu").write_text(template.read_text())
        expected["template"] = FAILING
    return Course(folder, expected, tag)
