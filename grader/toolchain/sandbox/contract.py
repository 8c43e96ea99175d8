"""The contract between the grader and its sandbox executable (main.cpp): how `sandbox
exec` ends and the options it takes, written once, here. The grader reads this module;
the sandbox's build writes it as the C++ header sandbox_contract.h
(grader.toolchain.sandbox.contract_header), which main.cpp includes.
tests/cpu/test_contract.py checks that each side uses all of it and nothing past it."""

from __future__ import annotations

from enum import IntEnum

from grader.toolchain.header import ANY, AT_MOST_ONCE, ONCE


class Exit(IntEnum):
    """How `sandbox exec` ends where the program's own status does not say (EXEC_* in
    C++); a program a signal ended gives 128 + the signal."""

    USAGE = 2  # a command line it does not understand: the grader's own mistake
    TIMED_OUT = 124  # the program ran past --timeout, and its group was killed
    NO_FILES = 125  # --require-files, and landlock could not be applied
    NOT_RUN = 127  # the program could not be started


# `sandbox exec DIR OPTION... -- PROGRAM ARG...`: each option, and how many times a
# command line has it (OPTION_* in C++). Any other option, or one more or fewer times
# than this says, is a usage error.
OPTIONS = {
    "--read": ANY,  # PATH: a folder or file the program may read
    "--timeout": ONCE,  # S: seconds of wall-clock time, then the group is killed
    "--cpu": ONCE,  # S: seconds of CPU time of each process
    "--memory": ONCE,  # B: bytes of address space of each process
    "--fsize": ONCE,  # B: bytes of each file it writes
    "--require-files": AT_MOST_ONCE,  # stop, with NO_FILES, unless landlock applies
    "--status": AT_MOST_ONCE,  # FD: where the "exec" record goes
}
