"""Whose fault a worker's failure is: the machine's (a setup error, exit 2) or the
submission's (a graded failure).

The grader decides it from what it knows itself. Records written before the worker's
"load" record come from the runner alone, since no code of the submission had run yet,
so a failure there is the machine's. A worker that ends some other way than the runner
ends it (a fault, a timeout, an interface error, or a clean end with every output) is
run again with the grader's own module in its place (the backend's control run): if that
fails too, the machine is at fault, otherwise the submission. Text the worker wrote after
"load" only ever appears quoted as the submission's."""

from __future__ import annotations

import signal

from grader.backends.cpu.contract import Exit
from grader.backends.cpu.job import Report
from grader.backends.cpu.protocol import Error, Sandbox
from grader.model.result import Diagnostic, Kind

QUOTE_LIMIT = 300

# Setup failures the runner records before loading the module: cause, and what to do.
_SETUP = {
    "job": "could not read its job folder ({detail}). Let TMPDIR name a folder every user "
    "can enter, such as /tmp",
    "job_key": "was given a job it cannot read ({detail}): the grader and its runtime "
    "disagree, which is a bug of the grader. Report it",
    "preload": "could not load a library the compiled module needs ({detail}). Install the C++ "
    "compiler's runtime libraries (libstdc++, libgcc_s, libm)",
    "threads": "could not start its threads. Raise the limit on processes (ulimit -u) or the "
    "container's pids.max, or grade with fewer --jobs",
    "allocation": "could not get memory for the buffer {detail}. Give the grader more memory "
    "(ulimit -v, the container's memory.max), or grade with fewer --jobs",
    "buffer_file": "could not read the input {detail} from its job folder. Check that TMPDIR "
    "has free space",
    "constant_file": "could not read the constant {detail} from its job folder. Check that "
    "TMPDIR has free space",
    "shadow": "could not reserve the address space its stores' checks read ({detail}): 16 "
    "TiB at 0x7fff8000, which hold no memory. Lift the limit on address space (ulimit -v)",
}


class Unexplained(Exception):
    """The worker ended in a way only a control run can attribute. `happened` is the
    grader's own account (from the exit status and the files); `said` is what the worker
    wrote about it, which may be the submission's words."""

    def __init__(self, happened: str, said: str):
        super().__init__(happened)
        self.happened = happened
        self.said = said


def one_line(text: str) -> str:
    """Text the worker wrote, on one line of printable characters, cut at QUOTE_LIMIT."""
    flat = " ".join("".join(c if c.isprintable() else " " for c in text).split())
    return flat[:QUOTE_LIMIT] + "..." if len(flat) > QUOTE_LIMIT else flat


def quoted(text: str) -> str:
    """Text from the submission's process, in quotes and marked as its own."""
    flat = one_line(text)
    return f'"{flat}" (written by the submission\'s process)' if flat else ""


def before_loading(report: Report, fix: str = "") -> str:
    """The setup error for a worker that failed before any code of the submission ran;
    `fix` is added where the sandbox itself failed."""
    error = report.first_setup(Error)
    sandbox = report.first_setup(Sandbox)
    if report.returncode == Exit.SANDBOX and sandbox is not None:
        why = sandbox.layers.error.strip().rstrip(";") or "a required layer failed"
        if "could not switch from root" in why:
            fix = "Grade as an ordinary user, or let root change user (CAP_SETUID, CAP_SETGID)"
        elif "scratch folder" in why:
            fix = "Let TMPDIR name a folder the grader can write, such as /tmp"
        cause = f"could not apply its sandbox ({why})"
        return _setup(cause, fix or "Grade on a Linux kernel with landlock and seccomp")
    if error is not None and error.what in _SETUP:
        return _setup(_SETUP[error.what].format(detail=error.detail), "")
    return _setup(f"{_ended(report)} before any code of the submission ran", fix)


def control_failed(report: Report) -> str:
    """The setup error when the grader's own module fails in the worker too."""
    if not report.loaded:
        return before_loading(report)
    error = report.first(Error)
    if error is not None and error.what == "load":
        cause = f"cannot load even the grader's own compiled module ({error.detail})"
        return _setup(cause, "Check that the C++ runtime libraries are installed")
    happened = ending(report).happened
    return _setup(f"{happened} even with the grader's own module in place of the kernel", "")


def ending(report: Report) -> Unexplained:
    """What the grader saw of a worker that ended abnormally after loading the module."""
    if report.returncode == 0 and report.unreadable:
        files = ", ".join(report.unreadable[:3])
        happened = f"ended without its outputs: {files} was missing, unreadable or resized"
    else:
        happened = _ended(report)
    error = report.first(Error)
    said = f"{error.what}: {error.detail}" if error is not None else report.stderr
    return Unexplained(happened, said)


def submission_crash(err: Unexplained, kernel: str) -> Diagnostic:
    """The graded failure for an Unexplained end, once the control run showed the
    machine can run the grader's own module in the same sandbox."""
    said = quoted(err.said)
    return Diagnostic(
        Kind.CRASH,
        f"The worker running {kernel} {err.happened}. The grader's own module runs in the "
        "same sandbox here, so the cause is in the submission (a global constructor, or "
        "code that ends, changes or signals its own process)."
        + (f" Before it ended, it wrote {said}." if said else ""),
        kernel=kernel,
    )


def _ended(report: Report) -> str:
    code = report.returncode
    if code is None:
        return "did not finish in time"
    if code < 0:
        try:
            name = signal.Signals(-code).name
        except ValueError:
            name = f"signal {-code}"
        why = {"SIGKILL": " (out of memory?)", "SIGXCPU": " (out of CPU time)"}.get(name, "")
        return f"was killed by {name}{why}"
    return f"ended with exit status {code}"


def _setup(cause: str, fix: str) -> str:
    fix = f" {fix.rstrip('.')}." if fix else ""
    return f"The CPU backend cannot run kernels on this machine: its worker {cause}.{fix}"
