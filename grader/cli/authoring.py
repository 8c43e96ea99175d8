"""The verbs for writing a course's own labs: new-lab, lab-readme and validate-lab."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from grader.cli.args import add_case_timeout, add_lab, painter
from grader.errors import ExitCode, UsageError

# -- new-lab ----------------------------------------------------------------------------


def run_new_lab(args: argparse.Namespace) -> int:
    from grader import labs
    from grader.labroot import left_out, new_lab

    copies = args.copy or []
    written = new_lab(args.name, args.source, Path(args.into), copies)
    print(f"Wrote the lab {args.name}, a copy of {args.source}, into the lab root {args.into}:")
    print("\n".join(f"  {path}/" for path in written))
    rest = left_out(labs.get(args.source), copies)
    if rest:
        print(f"Not copied from {args.source} (name any with --copy): {', '.join(rest)}.")
    definition = written[0] / "lab.py"
    print(
        f"Next: edit {definition} (its kernels, cases, reference and scoring), the kernels "
        f"beside it and {written[1] / 'README.md'} (`grader lab-readme {args.name} --labs "
        f"{args.into}` rewrites its generated sections from lab.py), then\n"
        f"  grader validate-lab {args.name} --labs {args.into}"
    )
    return ExitCode.OK


# -- lab-readme -------------------------------------------------------------------------


def run_lab_readme(args: argparse.Namespace) -> int:
    from grader import lab_readme, labs
    from grader.labroot import portable

    lab = labs.get(args.lab)
    if not portable(lab):
        raise UsageError(
            f"{lab.name} is one of the grader's own labs, whose README is written by hand; "
            "`grader lab-readme` writes those of a course's labs (--labs DIR)."
        )
    done, definition = lab_readme.rewrite(lab), lab.home / labs.DEFINITION
    if done.skeleton:
        print(f"Wrote {done.path}, a skeleton whose sections come from {definition}.")
    if done.rewritten:
        print(f"Rewrote from {definition} the {_listed(done.rewritten)} of {done.path}.")
    if done.added:
        print(
            f"Added the {_listed(done.added)} at the end of {done.path}: move them where "
            "they belong."
        )
    return ExitCode.OK


def _listed(sections: list[str]) -> str:
    """'cases section', or 'signatures, cases and scoring sections'."""
    if len(sections) == 1:
        return f"{sections[0]} section"
    return f"{', '.join(sections[:-1])} and {sections[-1]} sections"


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
    """Add new-lab, lab-readme and validate-lab to the `grader` command."""
    new = verbs.add_parser(
        "new-lab",
        help="start a lab of your own from a copy of another",
        description="Write a lab root DIR holding reference_kernels/NAME and "
        "student_template/NAME, a renamed copy of LAB's definition, reference, baseline "
        "and template, with a README skeleton, ready to edit; LAB's known-wrong kernels "
        "only where --copy names them. Use it with --labs DIR or GRADER_LABS=DIR.",
    )
    new.add_argument("name", metavar="NAME", help="the new lab's name")
    new.add_argument("--from", dest="source", required=True, metavar="LAB", help="the lab to copy")
    new.add_argument("--into", required=True, metavar="DIR", help="the lab root to write")
    new.add_argument(
        "--copy",
        action="append",
        metavar="PATH",
        help="also copy this file of LAB's folder, or all files of this folder in it "
        "(wrong/no_atomics.cu, wrong, variants); repeatable. A known-wrong kernel comes "
        "with its entries of wrong/EXPECTED.toml. Without it: lab.py, reference.cu, "
        "baseline.cu and the template",
    )
    new.set_defaults(run=run_new_lab)

    readme = verbs.add_parser(
        "lab-readme",
        help="rewrite a lab's README sections that its lab.py decides",
        description="Rewrite the generated sections of student_template/LAB/README.md "
        "(the kernels' signatures, the cases and the scoring) from LAB's lab.py, leaving "
        "the prose around them as it is; a section the README lacks is added at its end.",
    )
    readme.add_argument("lab", metavar="LAB", help="a lab of a course's lab root")
    readme.set_defaults(run=run_lab_readme)

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
    add_lab(validate)
    validate.add_argument(
        "--backend",
        choices=("all", "cpu", "cuda"),
        default="all",
        help="all: the CPU, and the GPU where one is usable (default)",
    )
    add_case_timeout(validate)
    validate.set_defaults(run=run_validate_lab)
