"""A lab's rules against what the kernel executed. A rule that asks the kernel to do
something (read shared memory, use atomics) is broken when the census case's run counted
none of it (RunOutcome.executed), so that a load in a branch never taken does not count,
and neither does a word in a comment or a string. A rule that neither the module nor the
runs decide on this machine is reported as not checked here: a note, never a pass."""

from __future__ import annotations

import math

from grader.model.interface import Executed, Interface
from grader.model.lab import Case, Lab
from grader.model.result import Diagnostic, Kind, Visibility

# One case's counts, by kernel name, with the case's name.
Counted = tuple[str, dict[str, Executed]]


def census_case(lab: Lab, cases: list[Case]) -> str | None:
    """The case whose run counts what the kernel executed, where a rule asks: the
    smallest public one, the same on every backend. Counting costs (a build that calls
    the runner before every load on the CPU, more than 5x slower on matmul's largest
    case; an extra launch on the GPU), so it is one case."""
    public = [c for c in cases if c.visibility == Visibility.PUBLIC]
    if not public or not any(rule.executes for rule in lab.requirements):
        return None
    return min(public, key=lambda c: math.prod(lab.extent(lab.full_sizes(c.sizes)))).name


def judge(
    lab: Lab, interface: Interface, runs: list[Counted]
) -> tuple[list[Diagnostic], list[str]]:
    """The requirement findings the runs add to the module's own (interface.check), and
    a note for each rule decided neither way."""
    kernel = lab.kernel.name
    found, notes = [], []
    for rule in lab.requirements:
        if rule.check(interface, kernel):
            continue  # the module breaks it: interface.check said so
        counts = _counts(runs, kernel, rule.executes) if rule.executes else []
        idle = next((case for case, count in counts if count == 0), None)
        if idle is not None:
            found.append(
                Diagnostic(Kind.REQUIREMENT, rule.not_executed(kernel, idle), kernel=kernel)
            )
        elif not counts and rule.known is not None and not rule.known(interface, kernel):
            notes.append(
                f"Not checked here: the lab's rule that {rule.says}. Without nvcc the grader "
                "cannot read it from the compiled module, and this backend does not count it "
                "as the kernel runs; it is neither met nor broken in this report."
            )
    return found, notes


def _counts(runs: list[Counted], kernel: str, count: str) -> list[tuple[str, int]]:
    """(case, count) for every run that counted it."""
    out = []
    for case, executed in runs:
        value = getattr(executed[kernel], count) if kernel in executed else None
        if value is not None:
            out.append((case, value))
    return out
