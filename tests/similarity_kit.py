"""A class of 40 matmul-tiled submissions for the similarity check, made of the labs' own
kernels: 36 that are each other's code by no more than the lab's template and its
boilerplate, the untouched template, two renamed copies of one kernel (the course notes'
coarsened design, variants/course_coarsened.cu), and a renamed copy of a public solution
(the lab's reference, as if it had leaked to GitHub). Renamed means every name the
student may choose is another, parameters too, the layout is another and the comments
are new."""

from __future__ import annotations

import re
from pathlib import Path

from grader import labs
from grader.model import lexer

LAB = "matmul-tiled"
COPIES = ("dana", "eli")  # the two renamed copies of one kernel
PUBLIC_COPY = "finn"  # the renamed copy of the public solution
PUBLIC = "public/matmul_tiled_fast.cu"  # the public solution, as the comparison names it
TEMPLATE = "template"  # the student who handed in the template as it is
# The lab's known-wrong kernels that are the same code as another of the pool: each is
# the naive baseline with shared memory added, unused, or a launch counter (the check
# finds them: test_similarity's test_the_labs_own_copies_are_found).
SAME_AS_BASELINE = (
    "no_shared_memory",
    "asm_comment_shared",
    "unused_shared_array",
    "shared_read_never_taken",
    "hangs_where_counted",
    "crashes_where_counted",
    "decorative_shared_load",  # the naive multiply with a shared store and load beside it
    "atomic_reads",  # the naive multiply reading through atomicAdd(p, 0)
    "half_tiles",  # the reference's tiles held as __half
    "tiled_at_public_size_only",  # the naive multiply with a tiled one at one size
    "stops_at_hidden_profile_sizes",  # the same, stopping itself at the sizes around it
    "memcpy_rows",  # the naive multiply reading M's rows through memcpy
)
OTHER_REFERENCES = (
    "histogram",
    "reduction",
    "scan",
    "spmv-csr",
    "spmv-jds",
    "conv2d",
    "conv2d-valid",
)
OTHER_BASELINES = ("histogram", "reduction", "scan", "spmv-csr", "conv2d")


def home(lab: str) -> Path:
    return labs.get(lab).home


def pool() -> dict[str, str]:
    """The 36 kernels of the labs that share no more than boilerplate, by student."""
    wrong = home(LAB) / "wrong"
    found = {
        path.stem: path.read_text()
        for path in sorted(wrong.glob("*.cu"))
        if path.stem not in SAME_AS_BASELINE
    }
    found["baseline"] = (home(LAB) / "baseline.cu").read_text()
    for lab in OTHER_REFERENCES:
        found[f"{lab}-reference"] = (home(lab) / "reference.cu").read_text()
    for lab in OTHER_BASELINES:
        found[f"{lab}-baseline"] = (home(lab) / "baseline.cu").read_text()
    return found


def template() -> str:
    return (labs.get(LAB).template_home / "kernel.cu").read_text()


def disguised(text: str, names: dict[str, str], indent: str, note: str) -> str:
    """`text` with its comments gone, each of `names` renamed, each line indented anew
    and blank lines doubled, and a comment `note` after every line that is code."""
    text = lexer.uncommented(text)
    for old, new in names.items():
        text = re.sub(rf"\b{re.escape(old)}\b", new, text)
    lines = []
    for number, line in enumerate(text.splitlines(), 1):
        body = line.strip()
        depth = (len(line) - len(line.lstrip())) // 4
        if not body:
            lines += ["", ""]
        elif body.startswith("#"):
            lines.append(body)
        else:
            lines.append(f"{indent * depth}{body}    // {note} {number}")
    return "\n".join(lines) + "\n"


COARSENED_AS_DANA = {
    "CC_T": "TILE", "CC_C": "COARSE", "Ms": "sharedA", "Ns": "sharedB", "tx": "lx",
    "ty": "ly", "tid": "lane", "row0": "rowBase", "col0": "colBase", "acc": "sum",
    "k0": "kt", "M": "A", "N": "B", "P": "C", "Width": "n",
}  # fmt: skip
COARSENED_AS_ELI = {
    "CC_T": "T_EDGE", "CC_C": "PER_THREAD", "Ms": "tileM", "Ns": "tileN", "tx": "col_t",
    "ty": "row_t", "tid": "flat", "row0": "r0", "col0": "c0", "acc": "out",
    "k0": "step", "l": "idx", "a": "ra", "b": "rb", "M": "left", "N": "right", "P": "prod",
    "Width": "size",
}  # fmt: skip
REFERENCE_AS_FINN = {
    "mm_at": "load_or_zero", "mm_load4": "load_vec", "mm_fetch": "prefetch",
    "mm_stash": "store_tiles", "mm_body": "compute", "MM_THREADS": "NTHREADS",
    "MM_TM": "ROWS_PER", "MM_TN": "COLS_PER", "As": "tileA", "Bs": "tileB", "acc": "result",
    "ra": "regA", "rb": "regB", "tid": "t", "cur": "buf", "more": "has_next", "vec": "aligned",
    "Width": "W",
}  # fmt: skip


def planted() -> dict[str, str]:
    """The copies: two of one kernel, and one of the public solution."""
    coarsened = (home(LAB) / "variants" / "course_coarsened.cu").read_text()
    reference = (home(LAB) / "reference.cu").read_text()
    return {
        COPIES[0]: disguised(coarsened, COARSENED_AS_DANA, "\t", "my tiled kernel, step"),
        COPIES[1]: disguised(coarsened, COARSENED_AS_ELI, "  ", "EE5xx lab 2 -"),
        PUBLIC_COPY: disguised(reference, REFERENCE_AS_FINN, "   ", "fast path"),
    }


def public() -> dict[str, str]:
    """The public solution: the lab's reference as it would be found online."""
    return {PUBLIC: (home(LAB) / "reference.cu").read_text()}


def submissions() -> dict[str, str]:
    """The class of 40, by student."""
    return {**pool(), TEMPLATE: template(), **planted()}


def write(folder: Path, texts: dict[str, str]) -> Path:
    """Each text as folder/<name>.cu, a plain layout `grader batch` reads."""
    folder.mkdir(parents=True, exist_ok=True)
    for name, text in texts.items():
        (folder / f"{name}.cu").write_text(text)
    return folder
