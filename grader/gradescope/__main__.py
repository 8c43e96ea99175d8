"""`python -m grader.gradescope ROOT`: what the zip's run_autograder script runs."""

import sys
from pathlib import Path

from grader.errors import GraderError
from grader.gradescope.run import DEFAULT_ROOT, run_autograder
from grader.report.common import printable


def main(argv: list[str]) -> int:
    root = Path(argv[1]) if len(argv) > 1 else DEFAULT_ROOT
    try:
        written = run_autograder(root)
    except GraderError as error:  # a setup problem: Gradescope shows this log to staff
        print(f"grader: {printable(str(error))}")
        return int(error.exit_code)
    print(f"Wrote {written}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv))
