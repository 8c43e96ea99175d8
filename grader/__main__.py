"""The `grader` command's entry point (`python -m grader`, and the console script).

Ctrl-C stops it with exit code 130 and one line from its first instant: while the
grader's modules are imported (numpy, the labs: half a second), a SIGINT ends the
process at once, as nothing has been made that needs cleaning up; from then on it is a
KeyboardInterrupt, which unwinds through the cleanup of every worker and folder."""

import os
import signal
import sys

INTERRUPTED = 130  # grader.errors.ExitCode.INTERRUPTED, which is not imported yet


def _stop_while_loading(signum: int, frame: object) -> None:
    os.write(2, b"grader: interrupted.\n")
    os._exit(INTERRUPTED)


def _forget_interrupted_exec() -> None:
    """CPython remembers a KeyboardInterrupt that left an exec() of a string (dataclasses
    make their methods so, as modules load) and, although the grader caught it, ends
    `python -m grader` by SIGINT (status -2) in place of 130. Every exec of a string
    forgets the one before, so an empty one leaves the exit to the code returned."""
    exec("None")


def main() -> int:
    previous = signal.getsignal(signal.SIGINT)
    if previous is not signal.SIG_IGN:  # nohup and `cmd &` start it with Ctrl-C ignored
        signal.signal(signal.SIGINT, _stop_while_loading)
    from grader.cli import main as run

    signal.signal(signal.SIGINT, previous)
    try:
        code = run()
    except KeyboardInterrupt:  # before or after the verb's own cleanup: parsing, printing
        print("grader: interrupted.", file=sys.stderr)
        code = INTERRUPTED
    _forget_interrupted_exec()
    return code


if __name__ == "__main__":
    raise SystemExit(main())
