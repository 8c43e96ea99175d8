"""The verbs for writing a course's own labs: new-lab and validate-lab."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from grader.cli.args import add_case_timeout, painter
from grader.errors import ExitCode

# -- new-lab ----------------------------------------------------------------------------


def run_new_lab(args: argparse.Namespace) -> int:
    from grader.labroot import new_lab

    written = new_lab(args.name, args.source, Path(args.into))
    print(f"Wrote the lab {args.name}, a copy of {args.source}, into the lab root {args.into}:")
    print("\n".join(f"  {path}/" for path in written))
    definition = written[0] / "lab.py"
    print(
        f"Next: edit {definition} (its kernels, cases, reference and scoring), the kernels "
        f"beside it and {written[1] / 'README.md'}, then\n"
        f"  grader validate-lab {args.name} --labs {args.into}"
    )
    return ExitCode.OK


# -- validate-lab -----------------------------------------------------------------------


def run_validate_lab(args: argparse.Namespace) -> int:
    from grader import labs
    from grader.validate import validate

    labs.get(args.lab)  # an unknown lab is a usage error before any backend starts
    backends = _backends(args.backend)
    try:
        failed = validate(args.lab, backends, args.timeout, _printer(painter(args)))
    finally:
        for backend in backends:
            backend.close()
    names = " and ".join(b.name for b in backends)
    if failed:
        print(f"{args.lab}: {failed} check{'s' if failed != 1 else ''} failed on {names}.")
        return ExitCode.FAILED
    print(f"{args.lab}: every check passed on {names}.")
    return ExitCode.OK


def _backends(choice: str) -> list:
    """The backends to validate on: both where a GPU is usable, unless one is asked for."""
    from grader.backends import get_backend, gpu_status

    if choice != "all":
        return [get_backend(choice)]
    names = ["cpu", "cuda"] if gpu_status()[0] else ["cpu"]
    return [get_backend(name) for name in names]


def _printer(paint):
    def show(check, backend, problems: list[str]) -> None:
        mark = paint("ok  ", "green") if not problems else paint("FAIL", "red", "bold")
        print(f"{mark} {backend.name:4} {check.role:9} {check.path.name}")
        for problem in problems:
            print(f"       {problem}")
        sys.stdout.flush()

    return show


# -- parsing ----------------------------------------------------------------------------


def add_authoring_verbs(verbs: argparse._SubParsersAction) -> None:
    """Add new-lab and validate-lab to the `grader` command."""
    new = verbs.add_parser(
        "new-lab",
        help="start a lab of your own from a copy of another",
        description="Write a lab root DIR holding reference_kernels/NAME and "
        "student_template/NAME, a renamed copy of LAB, ready to edit. Use it with --labs "
        "DIR or GRADER_LABS=DIR.",
    )
    new.add_argument("name", metavar="NAME", help="the new lab's name")
    new.add_argument("--from", dest="source", required=True, metavar="LAB", help="the lab to copy")
    new.add_argument("--into", required=True, metavar="DIR", help="the lab root to write")
    new.set_defaults(run=run_new_lab)

    validate = verbs.add_parser(
        "validate-lab",
        help="grade a lab's own kernels as its folder promises",
        description="Grade LAB's reference (it must pass every case, hidden ones too), its "
        "baseline and each variant in variants/ (the same), its template (it must fail "
        "cleanly), each known-wrong "
        "kernel in wrong/ (it must get what wrong/EXPECTED.toml names) and each slow one in "
        "slow/ (the same, and the why words of slow/EXPECTED.toml), on every backend "
        "this machine has. Exit code 0 when every check holds, 1 otherwise.",
    )
    validate.add_argument("lab", metavar="LAB", help="the lab, as `grader labs` names it")
    validate.add_argument(
        "--backend",
        choices=("all", "cpu", "cuda"),
        default="all",
        help="all: the CPU, and the GPU where one is usable (default)",
    )
    add_case_timeout(validate)
    validate.set_defaults(run=run_validate_lab)
