"""A grading's deadline: longer than an honest grading takes with every compile and case at
its own limit, so that only a submission that stalls the grader reaches it. `grader check`,
a batch and Gradescope give it to each grading they run."""

from __future__ import annotations

from grader import defaults
from grader.judge import cases as casegen
from grader.model.lab import Lab
from grader.model.result import Visibility

SLACK = 60.0  # seconds of a submission's deadline beyond what its compiles and cases need
# The profile's builds and runs (grader.grading.profiles): on a GPU the student's kernel
# for the CPU model; the reference's and the baseline's, where not cached.
PROFILE_RUNS = 3


def default_submission_timeout(
    lab: Lab, case_timeout: float, timing: bool, secret: str | None, sanitize: bool = False
) -> float:
    """A deadline no honest grading reaches: every build at the compile timeout, every
    case twice at the case timeout (the CPU backend runs two thread orders), the profile
    runs, timing, and each public case under each sanitizer tool, loaded and run at its
    own limits."""
    cases = casegen.cases_for(lab, secret)
    builds = len({tuple(sorted(lab.macro_values(c.sizes).items())) for c in cases})
    builds += PROFILE_RUNS
    seconds = (builds + (2 if timing else 0)) * defaults.COMPILE_TIMEOUT
    seconds += 2 * case_timeout * (len(cases) + PROFILE_RUNS) + SLACK
    if sanitize:
        public = sum(c.visibility == Visibility.PUBLIC for c in cases)
        factor = defaults.SANITIZE_FACTOR
        seconds += 3 * public * (defaults.COMPILE_TIMEOUT + factor * case_timeout)
    return seconds + (2 * defaults.TIMING_BUDGET if timing else 0.0)
