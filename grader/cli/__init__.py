"""The `grader` command. It only adapts: it parses the command line, calls one verb, prints
what the verb returns, and turns domain errors into their sentence and exit code. The
student's verbs are in student.py, course staff's in staff.py."""

from __future__ import annotations

import argparse
import os
import signal
import sys
import threading
import traceback
from collections.abc import Iterator, Sequence
from contextlib import contextmanager

import grader
from grader import labs
from grader.cli import config
from grader.cli.args import add_color_and_config, add_lab_roots, add_verbose, painter
from grader.cli.authoring import add_authoring_verbs
from grader.cli.config import add_config_verb
from grader.cli.examples import epilog
from grader.cli.parser import Formatter, Parser
from grader.cli.staff import add_staff_verbs
from grader.cli.student import add_student_verbs
from grader.errors import ExitCode, GraderError, SetupError

DEBUG_ENV = "GRADER_DEBUG"
INTERNAL_ERROR = (
    "grader: internal error ({error}). This is a bug in the grader, not in your kernel: "
    "please send the command you ran and this message to your course staff or the "
    "grader's issue tracker. Run it again with -v (or GRADER_DEBUG=1) to see the traceback."
)
NOT_PERMITTED = (
    "permission denied: you may not open it, or a folder on its way. Give a path of your own."
)


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(
        prog="grader",
        description="Grade CUDA lab kernels, on an NVIDIA GPU or on the CPU without one.",
        epilog=epilog(""),
        formatter_class=Formatter,
    )
    parser.add_argument("--version", action="version", version=f"grader {grader.__version__}")
    verbs = parser.add_subparsers(dest="verb", metavar="COMMAND", required=True)
    add_student_verbs(verbs)  # labs, template, check
    add_staff_verbs(verbs)  # batch, merge, similar, gradescope, init-ci
    add_authoring_verbs(verbs)  # new-lab, lab-readme, validate-lab
    add_config_verb(verbs)  # config
    for name, verb in verbs.choices.items():
        add_lab_roots(verb)
        add_color_and_config(verb)
        add_verbose(verb)
        verb.epilog, verb.formatter_class = epilog(name), Formatter
        verb.set_defaults(parser=verb)  # its usage errors name it, not the grader
    return parser


@contextmanager
def _sigterm_interrupts() -> Iterator[None]:
    """SIGTERM (kill, a scheduler, a CI runner that is cancelled) stops a run as Ctrl-C
    does, so that every scratch folder and worker is removed on the way out."""
    if threading.current_thread() is not threading.main_thread():
        yield  # only the main thread may set a handler
        return
    previous = signal.signal(signal.SIGTERM, _interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised where Ctrl-C would be, so that the same cleanup runs."""


def _interrupt(signum: int, frame: object) -> None:
    raise Terminated


def _interrupted(args: argparse.Namespace, stop: KeyboardInterrupt) -> int:
    """Say that the run stopped, and how to finish it where the verb resumes."""
    resume = "; run the same command again to resume" if getattr(args, "resumable", False) else ""
    print(f"grader: interrupted{resume}.", file=sys.stderr)
    return ExitCode.TERMINATED if isinstance(stop, Terminated) else ExitCode.INTERRUPTED


def main(argv: Sequence[str] | None = None) -> int:
    try:
        args = build_parser().parse_args(argv)
    except SystemExit as stop:  # --help, --version, or a usage error argparse printed
        return stop.code if isinstance(stop.code, int) else ExitCode.USAGE
    try:
        config.apply(args)  # flags > environment > file > defaults
        labs.add_roots(args.labs)
        with _sigterm_interrupts():
            return args.run(args)
    except GraderError as error:
        return _said(args, error)
    except KeyboardInterrupt as stop:  # cleanup ran on the way up
        return _interrupted(args, stop)
    except BrokenPipeError:  # as a shell tool does when `| head` has read enough
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # no flush error
        return ExitCode.PIPE_CLOSED
    except PermissionError as error:
        if error.filename is None:
            return _internal(args, error)
        # a path given to the grader (a submission's folder, --out, a template's
        # destination) that this user may not open is no bug of the grader's
        return _said(args, SetupError(f"{error.filename}: {NOT_PERMITTED}"))
    except Exception as error:  # a bug: one sentence, the traceback only on request
        return _internal(args, error)


def _said(args: argparse.Namespace, error: GraderError) -> int:
    from grader.report.common import printable  # the sentence may name the student's file

    prefix = painter(args, sys.stderr)("grader:", "red", "bold")
    print(f"{prefix} {printable(str(error))}", file=sys.stderr)
    return int(error.exit_code)


def _internal(args: argparse.Namespace, error: Exception) -> int:
    """A bug: one sentence, the traceback only on request."""
    if os.environ.get(DEBUG_ENV) == "1" or getattr(args, "verbose", False):
        traceback.print_exc()
    print(INTERNAL_ERROR.format(error=f"{type(error).__name__}: {error}"), file=sys.stderr)
    return ExitCode.USAGE
