"""Bytes one grading writes: `grader check` of each FILE, with a build cache of its own
(the CPU backend's runner built beforehand, so only the grading counts).

    python3 bench/bytes_written.py [--secret S] [--no-nvcc] LAB FILE ...

The count is what the grading's processes, and every process they started and waited
for, passed to write(2) and its kin (`wchar` of /proc/self/io, which takes in children
once they are reaped): files in the cache and in $TMPDIR, pipes too. --no-nvcc grades as
on a machine without nvcc, where the CPU backend compiles with g++ alone."""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
GRADE = """
import sys
import grader.toolchain.nvcc
if sys.argv[1] == "no-nvcc":
    grader.toolchain.nvcc.find = lambda: None
from grader.cli import main
main(sys.argv[2:])
"""


def written(argv: list[str], env: dict[str, str]) -> int:
    """Bytes written by `python -c GRADE argv...` and all it started."""
    child = [sys.executable, "-c", GRADE, *argv]
    report = (
        "import subprocess, sys; subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, "
        "stderr=subprocess.DEVNULL); "
        "print(dict(l.split(': ') for l in open('/proc/self/io').read().splitlines())['wchar'])"
    )
    out = subprocess.run(
        [sys.executable, "-c", report, *child], env=env, capture_output=True, text=True
    )
    return int(out.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("lab")
    parser.add_argument("files", nargs="+", type=Path)
    parser.add_argument("--secret", help="run the hidden cases too")
    parser.add_argument("--no-nvcc", action="store_true", help="grade as without nvcc")
    args = parser.parse_args()
    nvcc = "no-nvcc" if args.no_nvcc else "nvcc"
    extra = ["--secret", args.secret] if args.secret else []
    with tempfile.TemporaryDirectory(prefix="bytes-written-") as cache:
        env = {**os.environ, "GRADER_CACHE": cache}
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
        reference = ROOT / "reference_kernels" / args.lab / "reference.cu"
        written([nvcc, "check", args.lab, str(reference), "--backend", "cpu", "-q"], env)
        for path in args.files:
            command = [nvcc, "check", args.lab, str(path), "--backend", "cpu", "--no-timing"]
            count = written([*command, *extra], env)
            print(f"{path.name:24} {count / 1e6:10.1f} MB")


if __name__ == "__main__":
    main()
