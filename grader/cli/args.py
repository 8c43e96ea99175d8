"""Argument types and settings that more than one verb reads."""

from __future__ import annotations

import argparse
import math
import os
import sys
from collections.abc import Callable
from typing import TextIO

from grader.defaults import CASE_TIMEOUT, MAX_CASE_TIMEOUT, MAX_SUBMISSION_TIMEOUT, SECRET_ENV
from grader.labs import ENV as LABS_ENV


def secret(args: argparse.Namespace) -> str | None:
    """--secret, else the environment's, else None (public cases only)."""
    return args.secret or os.environ.get(SECRET_ENV) or None


def painter(args: argparse.Namespace, stream: TextIO | None = None) -> Callable[..., str]:
    """`paint(text, *styles)` for what a command writes to `stream` (standard output), as
    --color, NO_COLOR and FORCE_COLOR say."""
    from grader.report import terminal

    stream = stream or sys.stdout
    return terminal.painter(terminal.use_color(stream, getattr(args, "color", None) or "auto"))


def seconds_up_to(maximum: float) -> Callable[[str], float]:
    """An argument type: a finite number of seconds above 0 and at most `maximum`."""

    def seconds(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            value = math.nan
        if not 0 < value <= maximum:  # also refuses nan and inf
            raise argparse.ArgumentTypeError(
                f"{text!r} is not a number of seconds above 0 and at most {maximum:g}"
            )
        return value

    return seconds


def positive_int(text: str) -> int:
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not a positive whole number")
    return int(text)


def add_lab(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("lab", metavar="LAB", help="the lab, as `grader labs` names it")


def add_profile(parser: argparse.ArgumentParser, where: str) -> None:
    """--profile, for a verb that grades `where` ("on a GPU", "on GPUs")."""
    parser.add_argument(
        "--profile",
        action="store_true",
        help=f"{where}, why this speed from Nsight Compute's counts of the kernel and the "
        "reference (the lab's rules are measured by the CPU model either way)",
    )


def add_case_timeout(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--timeout",
        type=seconds_up_to(MAX_CASE_TIMEOUT),
        metavar="S",  # no default here: grader.cli.config resolves it
        help=f"seconds one case may run before it counts as hung (default {CASE_TIMEOUT:g}, "
        f"at most {MAX_CASE_TIMEOUT:g})",
    )


def add_submission_timeout(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--submission-timeout",
        type=seconds_up_to(MAX_SUBMISSION_TIMEOUT),
        metavar="S",
        help="seconds one submission may take in all, before it counts as a timeout "
        "(default: its compiles and cases at their own limits, which no honest grading "
        f"reaches; at most {MAX_SUBMISSION_TIMEOUT:g})",
    )


def add_lab_roots(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--labs",
        action="append",
        default=[],
        metavar="DIR",
        help="a lab root of your course (reference_kernels/LAB/ and student_template/LAB/ "
        f"for each of its labs); repeatable, and {LABS_ENV} adds more",
    )


def add_color_and_config(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--color",
        choices=("auto", "always", "never"),
        help="colour what goes to a terminal: auto (default) means on a terminal, unless "
        "NO_COLOR is set; FORCE_COLOR colours a pipe too",
    )
    files = parser.add_mutually_exclusive_group()
    files.add_argument(
        "--config",
        metavar="PATH",
        help="the course's config file (a grader.toml, or a pyproject.toml with "
        "[tool.grader]), or set GRADER_CONFIG; a file found by looking up instead may "
        "decide grades only outside what is graded (`grader config` says why)",
    )
    files.add_argument(
        "--no-config",
        action="store_true",
        help="read no config file (flags, the environment and the defaults still apply)",
    )


def add_verbose(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "-v",
        "--verbose",
        action="store_true",
        help="say more: the whole compiler log, the seconds each step took, the sandbox's "
        "layers, and the traceback of an internal error",
    )
