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


def main() -> int:
    previous = signal.getsignal(signal.SIGINT)
    if previous is not signal.SIG_IGN:  # nohup and `cmd &` start it with Ctrl-C ignored
        signal.signal(signal.SIGINT, _stop_while_loading)
    from grader.cli import main as run

    signal.signal(signal.SIGINT, previous)
    try:
        return run()
    except KeyboardInterrupt:  # before or after the verb's own cleanup: parsing, printing
        print("grader: interrupted.", file=sys.stderr)
        return INTERRUPTED


if __name__ == "__main__":
    raise SystemExit(main())
