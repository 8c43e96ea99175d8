"""Domain errors. Each message is the sentence the user sees; only the CLI prints them."""

from enum import IntEnum


class ExitCode(IntEnum):
    OK = 0  # every case passed
    FAILED = 1  # graded, with failures
    USAGE = 2  # a usage or setup error: nothing was graded
    # stopped by a signal, after cleaning up: 128 + its number, as shells report it
    INTERRUPTED = 130  # SIGINT (Ctrl-C)
    TERMINATED = 143  # SIGTERM
    PIPE_CLOSED = 141  # SIGPIPE: the reader went away (grader labs | head)


class GraderError(Exception):
    """An error that stops grading before a result exists."""

    exit_code = ExitCode.USAGE


class UsageError(GraderError):
    """The command line asked for something that does not exist or does not fit."""


class SetupError(GraderError):
    """This machine cannot do what was asked (no GPU, no compiler, no sandbox)."""
