"""The `grader` command. It only adapts: it parses the command line, calls one verb, prints
what the verb returns, and turns domain errors into their sentence and exit code."""

from __future__ import annotations

import argparse
import os
import sys
import traceback
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import grader
from grader import defaults
from grader.errors import ExitCode, GraderError

SECRET_ENV = "GRADER_SECRET"
DEBUG_ENV = "GRADER_DEBUG"
INTERNAL_ERROR = (
    "grader: internal error ({error}). This is a bug in the grader, not in your kernel: "
    "please send the command you ran and this message to your course staff or the "
    "grader's issue tracker. Set GRADER_DEBUG=1 to see the traceback."
)


# -- labs -------------------------------------------------------------------------------


@dataclass(frozen=True)
class LabInfo:
    name: str
    title: str
    summary: str
    signature: str
    constants: tuple[str, ...]
    macros: tuple[str, ...]
    public_cases: int
    hidden_cases: int


def list_labs() -> list[LabInfo]:
    from grader import cases
    from grader.labs import all_labs

    return [
        LabInfo(
            name=lab.name,
            title=lab.title,
            summary=lab.summary,
            signature=lab.kernel.signature(),
            constants=tuple(f"__constant__ float {c.declaration}" for c in lab.constants),
            macros=lab.macros,
            public_cases=len(lab.public_cases),
            hidden_cases=cases.hidden_count(lab),
        )
        for lab in all_labs().values()
    ]


def format_lab(info: LabInfo) -> str:
    pad = " " * 4
    lines = [f"{info.name}: {info.title}", f"{pad}{info.summary}", f"{pad}{info.signature}"]
    if info.constants:
        lines.append(f"{pad}constants: {'; '.join(info.constants)}")
    if info.macros:
        lines.append(f"{pad}set by the grader: {', '.join(info.macros)}")
    lines.append(f"{pad}cases: {info.public_cases} public, {info.hidden_cases} hidden")
    return "\n".join(lines)


def run_labs(args: argparse.Namespace) -> int:
    print("\n\n".join(format_lab(info) for info in list_labs()))
    return ExitCode.OK


# -- template ---------------------------------------------------------------------------


def run_template(args: argparse.Namespace) -> int:
    from grader.templates import copy_template

    written = copy_template(args.lab, Path(args.dir), force=args.force)
    print(f"Copied the {args.lab} template into {args.dir}:")
    print("\n".join(f"  {path}" for path in written))
    kernels = [path for path in written if path.suffix == ".cu"]
    if kernels:
        print(f"Next: fill in the TODOs, then run\n  grader check {args.lab} {kernels[0]}")
    return ExitCode.OK


# -- check ------------------------------------------------------------------------------


def run_check(args: argparse.Namespace) -> int:
    # Grading and the renderers are imported here, so `grader labs` stays quick.
    from grader.grading import Options, check
    from grader.report import terminal, write_reports

    options = Options(
        backend=args.backend,
        secret=args.secret or os.environ.get(SECRET_ENV) or None,
        timeout=args.timeout,
        timing=not args.no_timing,
        sanitize=args.sanitize,
        allow_unsandboxed=args.allow_unsandboxed,
    )
    result = check(args.lab, Path(args.file), options)
    color = terminal.use_color(sys.stdout, args.color)
    if args.quiet:
        print(terminal.score_line(result, color))
    else:
        sys.stdout.write(terminal.render(result, color))
    written = write_reports(
        result, json=args.json, html=args.html, junit=args.junit, markdown=args.markdown
    )
    if written and not args.quiet:
        print(f"Reports: {', '.join(str(path) for path in written)}")
    return int(result.exit_code)


# -- parsing ----------------------------------------------------------------------------


def _positive_seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not value > 0:
        raise argparse.ArgumentTypeError(f"{text!r} is not a positive number of seconds")
    return value


def _check_parser(verbs: argparse._SubParsersAction) -> None:
    check = verbs.add_parser(
        "check",
        help="grade a kernel file",
        description="Grade FILE for LAB: compile, interface, every case, timing, score. "
        "Exit code 0 when every case passed, 1 when graded with failures, 2 when "
        "nothing could be graded.",
    )
    check.add_argument("lab", metavar="LAB", help="the lab, as `grader labs` names it")
    check.add_argument("file", metavar="FILE", help="your .cu file")
    check.add_argument(
        "--backend",
        choices=("auto", "cuda", "cpu"),
        default="auto",
        help="cuda needs an NVIDIA GPU; cpu checks correctness without one; "
        "auto picks cuda when a GPU is usable (default)",
    )
    check.add_argument(
        "--secret", help=f"the course's secret, to run the hidden cases (or set {SECRET_ENV})"
    )
    check.add_argument(
        "--timeout",
        type=_positive_seconds,
        default=defaults.CASE_TIMEOUT,
        metavar="S",
        help="seconds one case may run before it counts as hung "
        f"(default {defaults.CASE_TIMEOUT:g})",
    )
    check.add_argument("--no-timing", action="store_true", help="skip the speed measurement")
    check.add_argument(
        "--sanitize",
        action="store_true",
        help="also run the public cases under compute-sanitizer (memcheck, racecheck, synccheck)",
    )
    check.add_argument(
        "--allow-unsandboxed",
        action="store_true",
        help="on the CPU backend, run the kernel even where no sandbox is available",
    )
    reports = check.add_argument_group("reports (each written only when asked)")
    for name, what in (
        ("json", "the JSON report"),
        ("html", "a self-contained HTML report"),
        ("junit", "JUnit XML for CI"),
        ("markdown", "Markdown for a CI step summary"),
    ):
        reports.add_argument(f"--{name}", metavar="PATH", help=f"write {what} to PATH")
    check.add_argument("--quiet", "-q", action="store_true", help="print only the score line")
    check.add_argument(
        "--color",
        choices=("auto", "always", "never"),
        default="auto",
        help="colour the summary: auto means on a terminal, unless NO_COLOR is set",
    )
    check.set_defaults(run=run_check)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="grader",
        description="Grade CUDA lab kernels, on an NVIDIA GPU or on the CPU without one.",
    )
    parser.add_argument("--version", action="version", version=f"grader {grader.__version__}")
    verbs = parser.add_subparsers(dest="verb", metavar="COMMAND", required=True)

    labs = verbs.add_parser("labs", help="list the labs", description="List the labs.")
    labs.set_defaults(run=run_labs)

    template = verbs.add_parser(
        "template",
        help="copy a lab's starting template",
        description="Copy LAB's template (kernel.cu and README.md) into DIR.",
    )
    template.add_argument("lab", metavar="LAB")
    template.add_argument("dir", metavar="DIR", help="the folder to create or fill")
    template.add_argument("--force", action="store_true", help="overwrite existing files")
    template.set_defaults(run=run_template)

    _check_parser(verbs)
    from grader.batch.cli import add_staff_verbs  # it imports this module: here, not on top

    add_staff_verbs(verbs)  # batch, merge, gradescope, init-ci
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    try:
        args = build_parser().parse_args(argv)
    except SystemExit as stop:  # --help, --version, or a usage error argparse printed
        return stop.code if isinstance(stop.code, int) else ExitCode.USAGE
    try:
        return args.run(args)
    except GraderError as error:
        print(f"grader: {error}", file=sys.stderr)
        return int(error.exit_code)
    except KeyboardInterrupt:
        print("grader: interrupted.", file=sys.stderr)
        return ExitCode.USAGE
    except Exception as error:  # a bug: one sentence, the traceback only on request
        if os.environ.get(DEBUG_ENV) == "1":
            traceback.print_exc()
        print(INTERNAL_ERROR.format(error=f"{type(error).__name__}: {error}"), file=sys.stderr)
        return ExitCode.USAGE
