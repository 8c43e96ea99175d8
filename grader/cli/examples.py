"""The examples at the end of each command's --help: what a user types first."""

from __future__ import annotations

EXAMPLES: dict[str, tuple[str, ...]] = {
    "": (
        "grader labs                                  # the labs",
        "grader template matmul-tiled mylab/          # a lab's skeleton",
        "grader check matmul-tiled mylab/kernel.cu    # grade it",
        "grader COMMAND --help                        # a command's options",
    ),
    "labs": (
        "grader labs",
        "grader labs --json | jq '.labs[].name'",
        "grader labs --markdown > LABS.md",
    ),
    "template": (
        "grader template matmul-tiled mylab/",
        "grader template conv2d mylab/ --force       # overwrite mylab/kernel.cu",
    ),
    "check": (
        "grader check matmul-tiled kernel.cu",
        "grader check conv2d kernel.cu --backend cpu --no-timing",
        "grader check matmul-tiled kernel.cu --json report.json --html report.html",
        "grader check matmul-tiled kernel.cu --json - | jq .score",
    ),
    "batch": (
        "GRADER_SECRET=... grader batch matmul-tiled submissions/ --out grades/",
        "grader batch conv2d submissions/ --out grades/ --jobs 8 --gpus 0,1",
        "grader batch conv2d submissions/ --out shard-1 --shard 1/3",
        "grader batch matmul-tiled submissions/ --out grades/ --slurm",
    ),
    "merge": ("grader merge shard-1 shard-2 shard-3 --out grades/",),
    "similar": (
        "grader similar matmul-tiled submissions/",
        "grader similar matmul-tiled submissions/ --against public/ --out similar/",
        "grader similar conv2d submissions/ --threshold 80%",
    ),
    "gradescope": (
        "grader gradescope matmul-tiled --out autograder.zip",
        "GRADER_SECRET=... grader gradescope conv2d --out conv2d.zip   # hidden cases too",
    ),
    "init-ci": (
        "grader init-ci matmul-naive --out template-repo/.github/workflows/grader.yml",
        "grader init-ci matmul-tiled --gpu-runner h100 --runner-is-ephemeral "
        "--grader-source git+https://github.com/COURSE/grader@<commit>",
        "grader init-ci conv2d --vendor-wheel      # commit a wheel of this grader",
    ),
    "new-lab": (
        "grader new-lab matmul-rect --from matmul-naive --into course-labs/",
        "grader validate-lab matmul-rect --labs course-labs/",
    ),
    "validate-lab": (
        "grader validate-lab conv2d",
        "grader validate-lab matmul-rect --labs course-labs/ --backend cpu",
    ),
    "config": (
        "grader config",
        "grader config kernel.cu        # what `grader check LAB kernel.cu` here reads",
        "grader config submissions/     # what `grader batch LAB submissions/` here reads",
        "GRADER_CONFIG=~/course/grader.toml grader config",
        "GRADER_TIMEOUT=30 grader config --no-config",
    ),
}


def epilog(verb: str) -> str:
    """The examples section of `verb`'s help ("" for the grader's own)."""
    return "examples:\n" + "".join(f"  {line}\n" for line in EXAMPLES[verb])
