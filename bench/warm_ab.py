"""A warm `grader check` under several trees of the grader, interleaved on one machine: the
A/B of a change's warm check (issue 36: at most 1.0 s a lab on a GPU, hidden cases off).
Two H100 hosts of one day took 0.49 and 0.77 s for the same check of conv2d (bench/host.py),
so trees are compared only within one run of this bench.

    python3 bench/warm_ab.py --tree main=. --tree new=build/new [--labs LAB ...]
        [--runs 6] [--backend cuda|cpu]

Each tree (LABEL=FOLDER, a checkout or a `git archive` of one) gets its bytecode written
(host.compile_bytecode) and a build cache of its own, and each lab is checked once in each
to fill them. Then, `--runs` times, every tree checks the lab's reference in turn, each
check a fresh process (`python -m grader check LAB reference.cu --quiet`, the tree's own
grader). Prints each lab's median seconds per tree, with its runs."""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from bench.host import ROOT, compile_bytecode, describe  # noqa: E402

GRADED = (0, 1)  # `grader check`'s exit codes for a grading that ran: passed, failed


def tree_env(tree: Path, cache: Path) -> dict[str, str]:
    """The environment of a check in `tree`: its own cache, bytecode kept, and this
    tree first on PYTHONPATH in place of this checkout's folder (which the GPU machine's
    runs put there)."""
    env = {key: value for key, value in os.environ.items() if key != "PYTHONDONTWRITEBYTECODE"}
    path = env.get("PYTHONPATH", "").split(os.pathsep)
    kept = [p for p in path if p and Path(p).resolve() != ROOT]
    env["PYTHONPATH"] = os.pathsep.join([str(tree), *kept])
    env["GRADER_CACHE"] = str(cache)
    return env


def graded(
    tree: Path, cache: Path, lab: str, backend: str, kernel: str = "reference.cu", *options: str
) -> tuple[float, str]:
    """Seconds of one `grader check` of `lab`'s `kernel` in `tree` with `options` (NaN where
    it did not grade), and what it printed."""
    command = [sys.executable, "-m", "grader", "check", lab, f"reference_kernels/{lab}/{kernel}"]
    started = time.perf_counter()
    try:
        done = subprocess.run(
            [*command, "--backend", backend, *options],
            cwd=tree,
            env=tree_env(tree, cache),
            capture_output=True,
            text=True,
            timeout=300,
        )
    except subprocess.TimeoutExpired:
        return float("nan"), ""
    seconds = time.perf_counter() - started
    return (seconds if done.returncode in GRADED else float("nan")), done.stdout


def check(tree: Path, cache: Path, lab: str, backend: str) -> float:
    """Seconds of one warm check of `lab`'s reference in `tree` (NaN where it did not grade)."""
    return graded(tree, cache, lab, backend, "reference.cu", "--quiet")[0]


def compare(
    trees: dict[str, Path], labs: list[str], runs: int, backend: str, caches: Path
) -> list[str]:
    """One line per lab and tree: the median of `runs` interleaved checks, and the runs."""
    for tree in trees.values():
        compile_bytecode(tree)
    lines = []
    for lab in labs:
        for label, tree in trees.items():  # the caches filled: compiles, references
            check(tree, caches / label, lab, backend)
        times: dict[str, list[float]] = {label: [] for label in trees}
        for _ in range(runs):
            for label, tree in trees.items():
                times[label].append(check(tree, caches / label, lab, backend))
        for label, found in times.items():
            shown = " ".join(f"{s:.2f}" for s in found)
            lines.append(f"{lab:15} {label:12} {statistics.median(found):6.3f}   {shown}")
    return lines


def tree_arg(text: str) -> tuple[str, Path]:
    label, _, folder = text.partition("=")
    path = Path(folder).resolve()
    if not label or not (path / "grader").is_dir():
        raise argparse.ArgumentTypeError(f"{text!r}: want LABEL=FOLDER, a tree of the grader")
    return label, path


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("--tree", type=tree_arg, action="append", required=True)
    parser.add_argument("--labs", nargs="+", default=["histogram", "scan", "conv2d"])
    parser.add_argument("--runs", type=int, default=6)
    parser.add_argument("--backend", default="cuda")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="warm-ab-") as caches:
        lines = compare(dict(args.tree), args.labs, args.runs, args.backend, Path(caches))
    print(f"{'lab':15} {'tree':12} {'median':>6}   runs (s)")
    print("\n".join(lines))
    print(describe())
    return 0


if __name__ == "__main__":
    sys.exit(main())
