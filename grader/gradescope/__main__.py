"""`python -m grader.gradescope ROOT`: what the zip's run_autograder script runs;
`python -m grader.gradescope --warm ROOT`: what its setup.sh runs last."""

import sys
from pathlib import Path

from grader.errors import GraderError
from grader.gradescope.run import DEFAULT_ROOT, run_autograder, warm
from grader.report.common import printable


def main(argv: list[str]) -> int:
    warming = argv[1:2] == ["--warm"]
    args = argv[2:] if warming else argv[1:]
    root = Path(args[0]) if args else DEFAULT_ROOT
    try:
        said = warm(root) if warming else f"Wrote {run_autograder(root)}"
    except GraderError as error:  # a setup problem: Gradescope shows this log to staff
        print(f"grader: {printable(str(error))}")
        return int(error.exit_code)
    print(printable(said))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv))
