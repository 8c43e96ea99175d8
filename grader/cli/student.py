"""The student's verbs: labs, template and check."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from grader.cli.args import (
    add_case_timeout,
    add_lab,
    add_profile,
    add_submission_timeout,
    painter,
    secret,
)
from grader.cli.status import StatusLine
from grader.cli.trust import Graded
from grader.defaults import SECRET_ENV
from grader.errors import ExitCode
from grader.report import FORMATS

if TYPE_CHECKING:  # grading is imported where a check runs, so `grader labs` stays quick
    from grader.model.result import Result

# -- labs -------------------------------------------------------------------------------


@dataclass(frozen=True)
class LabInfo:
    name: str
    title: str
    summary: str
    signatures: tuple[str, ...]  # one per kernel, in launch order
    constants: tuple[str, ...]
    macros: tuple[str, ...]
    public_cases: int
    hidden_cases: int
    root: str  # a course's lab root, or "" for the grader's own labs


def list_labs() -> list[LabInfo]:
    """Every lab that loads (grader.labs.listing)."""
    from grader.judge import cases
    from grader.labroot import portable
    from grader.labs import listing

    return [
        LabInfo(
            name=lab.name,
            title=lab.title,
            summary=lab.summary,
            signatures=tuple(k.signature() for k in lab.kernels),
            constants=tuple(f"__constant__ float {c.declaration}" for c in lab.constants),
            macros=lab.macros,
            public_cases=len(lab.public_cases),
            hidden_cases=cases.hidden_count(lab),
            root=str(lab.home.parents[1]) if portable(lab) else "",
        )
        for lab in listing().labs.values()
    ]


def format_lab(info: LabInfo, paint: Callable[..., str] = lambda text, *styles: text) -> str:
    pad = " " * 4
    lines = [f"{paint(info.name, 'bold')}: {info.title}", f"{pad}{info.summary}"]
    lines += [f"{pad}{signature}" for signature in info.signatures]
    if info.constants:
        lines.append(f"{pad}constants: {'; '.join(info.constants)}")
    if info.macros:
        lines.append(f"{pad}set by the grader: {', '.join(info.macros)}")
    lines.append(f"{pad}cases: {info.public_cases} public, {info.hidden_cases} hidden")
    if info.root:
        lines.append(f"{pad}from the lab root {info.root}")
    return "\n".join(lines)


def markdown_table(infos: list[LabInfo]) -> str:
    """The labs as a Markdown table (docs/student.md's, `grader labs --markdown`)."""
    rows = [
        "| lab | you write | constants the grader fills | output |",
        "|---|---|---|---|",
    ]
    for info in infos:
        kernels = "<br>".join(f"`{s}`" for s in info.signatures)
        constants = "<br>".join(f"`{c}`" for c in info.constants) or "-"
        rows.append(f"| `{info.name}` | {kernels} | {constants} | {info.summary} |")
    return "\n".join(rows) + "\n"


def labs_json(infos: list[LabInfo]) -> str:
    """The labs as `grader labs --json` writes them (grader/schema/labs.schema.json)."""
    from grader import schema

    data = {"schema_version": schema.version(schema.LABS), "labs": [asdict(i) for i in infos]}
    return json.dumps(data, indent=2) + "\n"


def run_labs(args: argparse.Namespace) -> int:
    from grader.labs import listing
    from grader.report.common import printable

    infos = list_labs()
    if args.json:
        sys.stdout.write(labs_json(infos))
    elif args.markdown:
        sys.stdout.write(markdown_table(infos))
    else:
        paint = painter(args)
        print("\n\n".join(format_lab(info, paint) for info in infos))
    broken = listing().broken  # each named after the labs that load, never instead of them
    prefix = painter(args, sys.stderr)("grader:", "red", "bold")
    for _, why in broken:
        print(f"{prefix} {printable(why)}", file=sys.stderr)
    return ExitCode.USAGE if broken else ExitCode.OK


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
    from grader.backends import start_early

    start_early(args.backend)  # before grading's imports, which its start-up overlaps
    status = StatusLine(sys.stderr, args.timeout, _elsewhere(args), plain=args.verbose)
    try:
        result, reports = _graded(args, status)
    finally:
        steps = status.close()
    return _show(args, result, reports, steps)


def _elsewhere(args: argparse.Namespace) -> dict[str, float]:
    """The points this check may leave to the course: the hidden cases' without the
    secret, and speed's until the grading says it scores it."""
    from grader.labs import get

    scoring = get(args.lab).scoring
    return {"hidden": 0.0 if secret(args) else scoring.hidden, "speed": scoring.performance}


def _graded(args: argparse.Namespace, status: StatusLine) -> tuple[Result, dict[str, str | None]]:
    # Grading and the renderers are imported here, so `grader labs` stays quick.
    from grader.cli.outputs import check_reports
    from grader.grading.pipeline import Options, check

    reports = {name: getattr(args, name) for name in FORMATS}
    check_reports(reports, inputs=[Path(args.file)])
    options = Options(
        backend=args.backend,
        secret=secret(args),
        timeout=args.timeout,
        timing=not args.no_timing,
        sanitize=args.sanitize,
        profile=args.profile,
        allow_unsandboxed=args.allow_unsandboxed,
        submission_timeout=args.submission_timeout,
        progress=status,
    )
    return check(args.lab, Path(args.file), options), reports


def _show(
    args: argparse.Namespace, result: Result, reports: dict, steps: list[tuple[str, float]]
) -> int:
    from grader.cli.outputs import STDOUT
    from grader.report import render, terminal, write_reports
    from grader.report.common import printable
    from grader.report.wrap import wrap

    piped = next((name for name, target in reports.items() if target == STDOUT), None)
    screen = sys.stderr if piped else sys.stdout  # standard output carries that report
    color = terminal.use_color(screen, args.color)
    if args.quiet:
        print(terminal.score_line(result, color), file=screen)
    else:
        width = terminal.width(screen)
        shown = terminal.render(result, color, terminal.use_unicode(screen), width, args.verbose)
        screen.write(shown)
        if args.verbose:
            screen.write(wrap(terminal.stage_times(steps, result.seconds), width))
    files = {name: target for name, target in reports.items() if target != STDOUT}
    written = write_reports(result, **files)
    if piped:
        sys.stdout.write(render(piped, result))
    if written and not args.quiet:
        names = printable(", ".join(str(path) for path in written))
        print(f"Reports: {names}", file=screen)
    return int(result.exit_code)


# -- parsing ----------------------------------------------------------------------------


def add_student_verbs(verbs: argparse._SubParsersAction) -> None:
    """Add labs, template and check to the `grader` command."""
    labs = verbs.add_parser("labs", help="list the labs", description="List the labs.")
    form = labs.add_mutually_exclusive_group()
    form.add_argument("--markdown", action="store_true", help="as a Markdown table")
    form.add_argument(
        "--json", action="store_true", help="as JSON, with its schema_version (for programs)"
    )
    labs.set_defaults(run=run_labs)

    template = verbs.add_parser(
        "template",
        help="copy a lab's starting template",
        description="Copy LAB's template (kernel.cu and README.md) into DIR.",
    )
    add_lab(template)
    template.add_argument("dir", metavar="DIR", help="the folder to create or fill")
    template.add_argument("--force", action="store_true", help="overwrite existing files")
    template.set_defaults(run=run_template)
    _check_parser(verbs)


def _check_parser(verbs: argparse._SubParsersAction) -> None:
    check = verbs.add_parser(
        "check",
        help="grade a kernel file",
        description="Grade FILE for LAB: compile, interface, every case, timing, score. "
        "Exit code 0 when every case passed, 1 when graded with failures, 2 when "
        "nothing could be graded.",
    )
    add_lab(check)
    check.add_argument("file", metavar="FILE", help="your .cu file")
    check.add_argument(
        "--backend",
        choices=("auto", "cuda", "cpu"),
        help="cuda needs an NVIDIA GPU; cpu checks correctness without one; "
        "auto picks cuda when a GPU is usable (default)",
    )
    check.add_argument(
        "--secret", help=f"the course's secret, to run the hidden cases (or set {SECRET_ENV})"
    )
    add_case_timeout(check)
    add_submission_timeout(check)
    check.add_argument("--no-timing", action="store_true", help="skip the speed measurement")
    check.add_argument(
        "--sanitize",
        action="store_true",
        help="also run the public cases under compute-sanitizer (memcheck, racecheck, synccheck)",
    )
    add_profile(check, "on a GPU")
    check.add_argument(
        "--allow-unsandboxed",
        action="store_true",
        help="on the CPU backend, run the kernel even where no sandbox is available",
    )
    reports = check.add_argument_group("reports (each written only when asked)")
    for name, (_, what) in FORMATS.items():
        reports.add_argument(
            f"--{name}", metavar="PATH", help=f"write {what} to PATH (- for standard output)"
        )
    check.add_argument("--quiet", "-q", action="store_true", help="print only the score line")
    check.set_defaults(run=run_check, graded=lambda args: Graded.kernel(args.file))
