"""Argument types and settings that more than one verb reads."""

from __future__ import annotations

import argparse
import os

from grader.defaults import CASE_TIMEOUT, SECRET_ENV


def secret(args: argparse.Namespace) -> str | None:
    """--secret, else the environment's, else None (public cases only)."""
    return args.secret or os.environ.get(SECRET_ENV) or None


def positive_seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not value > 0:
        raise argparse.ArgumentTypeError(f"{text!r} is not a positive number of seconds")
    return value


def positive_int(text: str) -> int:
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not a positive whole number")
    return int(text)


def add_case_timeout(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--timeout",
        type=positive_seconds,
        default=CASE_TIMEOUT,
        metavar="S",
        help=f"seconds one case may run before it counts as hung (default {CASE_TIMEOUT:g})",
    )
