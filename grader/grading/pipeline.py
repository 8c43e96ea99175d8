"""One grading, end to end, scheduled: static checks, the deadline, builds made ahead, the
cases in turn or side by side (grader.grading.beside), the profile run
(grader.grading.profiles), the sanitizer and the timing call. What their results say is
the judge's (grader.judge: each case's verdict, the rules, the whole grading's).

Expected outputs and hidden cases stay in this process; backends run the student's
kernel in isolated workers and hand back only what the buffers held."""

from __future__ import annotations

import contextlib
import math
import time
from collections.abc import Callable
from concurrent.futures import Future, wait
from dataclasses import dataclass, field
from pathlib import Path

import grader
from grader import defaults, labs, waiting
from grader.ahead import STOPPING, Ahead
from grader.backends import get_backend
from grader.backends.base import Backend, BackendUnavailable
from grader.errors import GraderError
from grader.files import readable
from grader.grading import grid_order, profiles
from grader.grading.alarm import DeadlinePassed, deadline
from grader.grading.beside import Beside
from grader.grading.progress import Step, tell
from grader.grading.reference_cache import reference_sums
from grader.grading.timing import Drawn, Ready, close_when_ready, draw_ahead, measure, ready_ahead
from grader.judge import cases as casegen
from grader.judge import launch_macros, rules, scoring, why
from grader.judge.deadline import default_submission_timeout
from grader.judge.grading import (
    add_findings,
    conclude,
    cross_case_hints,
    hung_before,
    launchable,
    not_graded,
    race_fails_every_case,
    speed_unmeasured,
)
from grader.judge.launch import at_launch, make_launch
from grader.judge.verdict import judge
from grader.model import interface
from grader.model.interface import LAUNCH_MACROS
from grader.model.lab import Case, Lab
from grader.model.launch import Build, Launch, RunOutcome
from grader.model.profile import Profile, Roofline
from grader.model.result import (
    CaseResult,
    CompileInfo,
    Kind,
    Performance,
    ProfileReport,
    Result,
    Status,
    Visibility,
)
from grader.model.source import (
    Submission,
    gradable,
    no_code,
    read_submission,
    static_checks,
)

# A build is made for each set of macro values, and apart for the census case.
BuildKey = tuple[tuple[tuple[str, int], ...], bool]


@dataclass
class Options:
    backend: str = "auto"  # "auto" | "cuda" | "cpu"
    secret: str | None = None
    timeout: float = defaults.CASE_TIMEOUT
    timing: bool = True
    sanitize: bool = False
    allow_unsandboxed: bool = False
    timing_budget: float = defaults.TIMING_BUDGET
    jobs: int | None = None
    timing_seed: int | None = None  # None: a fresh one for every grading
    submission_timeout: float | None = None  # check's deadline; None: one no honest grading reaches
    profile: bool = False  # on a GPU, Nsight Compute's counts too (--profile)
    progress: Callable[[Step], None] | None = None  # told each step, for a status line
    shared_host: bool = False  # other gradings share the host's cores (a batch's worker)


def check(lab: str, path: Path, options: Options) -> Result:
    """Grade the file at `path` for `lab`, within the submission timeout. Raises
    GraderError only for problems of usage or setup; everything about the submission
    itself goes into the Result, a grading that passed its deadline too."""
    spec = labs.get(lab)
    path = Path(path)
    gradable(path, spec.name)
    seconds = options.submission_timeout or default_submission_timeout(
        spec, options.timeout, options.timing, options.secret, options.sanitize
    )
    tell(options.progress, "backend")
    with get_backend(
        options.backend, jobs=options.jobs, allow_unsandboxed=options.allow_unsandboxed
    ) as backend:
        device = backend.device()
        prepare(backend)  # before the deadline, and before the first case's progress
        try:
            with deadline(seconds):
                return grade(spec, path, backend, options)
        except DeadlinePassed:
            # what ran is lost, as in a batch: its workers were stopped mid-case
            reason = (
                f"Grading took longer than {seconds:g} s (--submission-timeout) and was "
                "stopped; the cases that ran are lost."
            )
            speed = options.timing and backend.measures_speed()
            name, where = readable(path.name), (backend.name, device)
            cases = casegen.cases_for(spec, options.secret)
            return not_graded(
                spec, name, reason, Kind.TIMEOUT, where, cases, bool(options.secret), speed
            )


def prepare(backend: Backend) -> None:
    """Make what gradings on `backend` build once per machine, its CPU model's too, before
    a deadline counts (`check`; a batch's worker, before its first submission). A model
    that cannot run here is left for each grading to say so."""
    backend.prepare()
    if backend.name == profiles.CPU:
        return
    with contextlib.suppress(GraderError), profiles.model_backend(backend) as model:
        if isinstance(model, Backend):
            model.prepare()


def grade(lab: Lab, path: Path, backend: Backend, options: Options) -> Result:
    started = time.monotonic()
    submission, problems = read_submission(path)
    result = Result(
        lab=lab.name,
        submission=submission.name,
        backend=backend.name,
        device=backend.device(),
        status=Status.ERROR,
        score=0.0,
        max_score=0.0,
        compile=CompileInfo(ok=False, log="not compiled: the file failed the static checks"),
        kernel=lab.kernel.name,
        grader_version=grader.__version__,
        source=submission.text,  # empty for a file too large to read
        notes=[submission.note] if submission.note else [],
    )
    problems += static_checks(submission.text, lab.forbidden)
    empty = no_code(submission.text, submission.name, [k.name for k in lab.kernels])
    problems += [empty] if empty and not problems else []
    if problems:
        result.diagnostics = problems
        return _finish(lab, result, options, started, speed_graded=False)
    with profiles.model_backend(backend) as model:
        grading = Grading(lab, submission, backend, options, result, model=model)
        try:
            grading.run()
        finally:
            grading.end_beside()
    result.notes += [n for n in backend.notes if n not in result.notes]
    result.details += backend.details
    speed_graded = options.timing and backend.measures_speed()
    return _finish(lab, result, options, started, speed_graded)


@dataclass
class Grading:
    lab: Lab
    submission: Submission
    backend: Backend
    options: Options
    result: Result
    builds: dict[BuildKey, Build] = field(default_factory=dict)
    ahead: Ahead[BuildKey, Build] = field(init=False)  # run(): later builds made meanwhile
    census: str | None = None  # the case whose run counts what the kernel executed
    blocks: set[str] = field(default_factory=set)  # findings of rules that block cases
    counted: list[rules.Counted] = field(default_factory=list)  # what it executed there
    drawn: Future[Drawn] | None = None  # the timing's inputs, drawn while the cases run
    ready: Future[Ready] | None = None  # the timing made ready while the cases run
    roofline: Roofline | None = None  # the timed run against the ceilings (issue 31's why)
    model: Backend | str = ""  # the backend of the CPU model's profile runs, or why none
    profiled: str | None = None  # the case whose run is profiled
    measured: profiles.Measured | None = None  # the student's profile there, by the CPU model
    modelled: Future | None = None  # on a GPU: the model's run there (profiles.run_beside)
    lab_made: Future | None = None  # on the CPU: profiles.lab_kernels_ahead,
    lab_stop: waiting.Cancel | None = None  # and what stops it
    all_cases: list[Case] = field(default_factory=list)  # run(): every case, in order
    later: grid_order.Later = field(default_factory=grid_order.Later)  # cases to run again

    def run(self) -> None:
        speed = self.options.timing and self.backend.measures_speed()
        if speed:
            self.drawn = draw_ahead(self.lab, self.options.timing_seed)
        self.all_cases = all_cases = casegen.cases_for(
            self.lab, self.options.secret, self.submission.text
        )
        self.census = rules.census_case(self.lab, all_cases, self.backend.watches_races())
        self.profiled = rules.profile_case(self.lab, all_cases)
        keys = [self.build_key(case) for case in all_cases]
        tell(self.options.progress, "compile", speed=speed)
        with Ahead(self.make_build, keys, self.backend.concurrent_builds()) as self.ahead:
            if self.backend.concurrent_runs() > 1:
                Beside(self).grade(all_cases)
            else:
                for case in all_cases:
                    self.add_case(self.grade_case(case))
            grid_order.again(self)
        if not self.options.secret:
            self.result.hidden_not_run = casegen.hidden_count(self.lab)
        cross_case_hints(self.lab, self.result)
        if self.options.sanitize:
            tell(self.options.progress, "sanitize")
            self.sanitize(all_cases)
        built = next((b.interface for b in self.builds.values() if b.ok), None)
        rules.executed(self.lab, self.result, built, self.census, self.counted)
        shown = self.profile(all_cases) if built is not None else None
        race_fails_every_case(self.lab, self.result.cases)  # after the model placed races
        self.result.performance = self.performance(shown)
        if shown is not None:
            self.result.profile = ProfileReport(
                student=shown[0],
                reference=shown[1],
                advice=why.advise(*shown),
                roofline=self.roofline,
            )

    # -- builds ---------------------------------------------------------------------------

    def build_key(self, case: Case) -> BuildKey:
        macros = self.lab.macro_values(case.sizes)
        counts = case.name == self.census or (case.name == self.profiled and self.in_run)
        return tuple(sorted(macros.items())), counts

    @property
    def in_run(self) -> bool:
        """Whether the profile case's own run is the profile run (the CPU backend's)."""
        return self.model is self.backend

    def make_build(self, key: BuildKey) -> Build:
        macros, census = key
        return self.backend.build(
            self.submission, dict(macros), self.lab.launch_defaults, census=census
        )

    def build_for(self, case: Case) -> Build:
        """The case's build; its compile info and diagnostics go on the result in the
        order the cases come, wherever it was made."""
        key = self.build_key(case)
        if key not in self.builds:
            self.builds[key] = build = self.ahead.get(key)
            self.absorb(build, case)
            if build.ok:
                self.model_beside()
                self.start_ready()
        return self.builds[key]

    def absorb(self, build: Build, case: Case) -> None:
        """Record a new build's compile info and diagnostics on the result, once."""
        if len(self.builds) == 1 or not build.compile.ok:
            self.result.compile = build.compile
        found = list(build.diagnostics)
        if build.interface is not None:
            found += interface.check(self.lab, build.interface, case.sizes)
            self.blocks |= rules.blocking(self.lab, build.interface)
            if self.result.launch is None and len(build.interface.launch) == len(LAUNCH_MACROS):
                self.result.launch = launch_macros.describe(
                    self.submission.text, build.interface.launch, build.macros, self.lab
                )
        build.diagnostics = found
        known = {(d.kind, d.message) for d in self.result.diagnostics}
        self.result.diagnostics += [d for d in found if (d.kind, d.message) not in known]

    # -- cases ----------------------------------------------------------------------------

    def grade_case(self, case: Case) -> CaseResult:
        start = time.monotonic()
        self.tell_case()
        build = self.build_for(case)
        result = rules.blocked(case, build, self.blocks) or hung_before(case, self.result.cases)
        if result is None:
            result, outcome, _ = self.run_case(case, build)
            self.count(case, outcome)
        result.seconds = time.monotonic() - start
        return result

    def add_case(self, result: CaseResult) -> None:
        """A case's result, in the report's order. A failure, after which nothing is
        timed, stops the timing's preparation (start_ready)."""
        self.result.cases.append(result)
        if not result.passed:
            self.stop_ready()

    def start_ready(self) -> Future[Ready] | None:
        """The timing's preparation (ready_ahead), started once where speed is graded:
        when the kernel first builds, so that it goes on while the cases compile and run,
        and not after a case failed."""
        failed = any(not c.passed for c in self.result.cases)
        if self.ready is None and self.drawn is not None and not failed:
            made = (self.lab, self.submission, self.backend, self.drawn)
            self.ready = ready_ahead(*made, shared=self.options.shared_host)
        return self.ready

    def stop_ready(self) -> None:
        if self.ready is not None:
            close_when_ready(self.ready)

    def tell_case(self) -> None:
        """The case whose result is awaited now: the next in the report's order."""
        tell(self.options.progress, "case", len(self.result.cases) + 1, len(self.all_cases))

    def run_case(
        self, case: Case, build: Build, ahead: bool = False, in_order: bool = False
    ) -> tuple[CaseResult, RunOutcome, float] | None:
        """The case run and judged, and the seconds that took. With `ahead` (runs of the
        cases before it may be going on), None where the backend must run it in turn;
        `in_order`, with the blocks in grid order (Backend.run_in_grid_order)."""
        if not ahead and self.lab_made is not None:
            wait([self.lab_made])  # a run in turn has the cores to itself
        start = time.monotonic()
        inputs = casegen.make_inputs(self.lab, case)
        sized = at_launch(self.lab, case, build.interface)
        expected = reference_sums(self.lab, case, sized, inputs)
        launch, layouts = make_launch(self.lab, case, inputs, build.interface)
        if case.name == self.profiled and self.in_run:
            profile = self.backend.profile_ahead if ahead else self.backend.profile
            made = profile(build, launch, self.options.timeout)
            if made is None:
                return None
            outcome, kernels = made
            self.measured = profiles.from_run(self.lab, case, build, outcome, kernels)
        elif in_order:
            outcome = self.backend.run_in_grid_order(build, launch, self.options.timeout)
        else:
            run = self.backend.run_ahead if ahead else self.backend.run
            outcome = run(build, launch, self.options.timeout)
        if outcome is None:
            return None
        found = judge(self.lab, case, sized, inputs, expected, launch, layouts, outcome, build)
        return found, outcome, time.monotonic() - start

    def count(self, case: Case, outcome: RunOutcome) -> None:
        """What the kernel executed, from the census case's run; whether the case's
        blocks ran at once, and whether a block read what another stored."""
        if outcome.completed and case.name == self.census:
            self.counted.append((case.name, outcome.executed))
        self.later.note(case, outcome)

    # -- profiles -------------------------------------------------------------------------

    def profile(self, all_cases: list[Case]) -> tuple[Profile, Profile | None] | None:
        """The rules that measure the work, decided from the student's profile at the
        profile case; and the profiles "why this speed" shows, the student's and the
        reference's (None, with a note saying why, where there is none): the CPU model's,
        or with --profile on a GPU, Nsight Compute's where it counted both. On a GPU, what
        the model's run beside the cases saw of each block's threads fails cases."""
        made = self.modelled.result() if self.modelled else None  # ended, whatever follows
        if self.profiled is None or not launchable(self.result):
            return None
        case = next(c for c in all_cases if c.name == self.profiled)
        timeout = self.options.timeout
        if isinstance(self.model, str):
            self.measured = profiles.Measured(None, self.model, here=False)
        elif not self.in_run:  # on a GPU: the CPU model ran the case, and watched its threads
            self.measured = profiles.watch(case, made, self.result)
        measured = self.measured or profiles.Measured(None, "that case was not run")
        if not measured.here:
            rules.measured(self.lab, self.result, None, None, measured.why, None)
            self.result.notes.append(f"Why this speed is not shown: {measured.why}.")
            return None
        student, reference, baseline = measured.profile, None, None  # the lab's own kernels',
        if student is not None:  # where the student's was made
            reference, baseline = self.lab_profiles(case)
        student, reference, baseline = profiles.as_shown(case, student, reference, baseline)
        name = profiles.label(case)
        rules.measured(self.lab, self.result, name, student, measured.why, baseline, reference)
        if student is None:
            self.result.notes.append(
                f"Why this speed is not shown: the grader profiles {rules.case_phrase(name)}, "
                f"and {measured.why}."
            )
            return None
        shown = (student, reference)
        if self.options.profile and self.backend.measures_speed():
            build = self.build_for(case)
            counted, note = profiles.nsight(self.lab, case, self.backend, build, timeout)
            self.result.notes += [note] if note else []
            if counted is not None:
                shown = profiles.as_shown(case, *counted)
        return shown

    def model_beside(self) -> None:
        """The CPU model's runs that need no case's result, started the first time the
        kernel has built and is `launchable`, so that they go on while the cases run: on
        a GPU its run of the profile case, which `profile` takes (profiles.watch); on the
        CPU the lab's own kernels' profiles (`lab_profiles`). A GPU times its kernels
        after the cases, and the lab's profiles could go on that long: it makes them in
        turn."""
        started = self.modelled or self.lab_made
        if started or not (isinstance(self.model, Backend) and self.profiled):
            return
        if launchable(self.result):
            case = next(c for c in self.all_cases if c.name == self.profiled)
            timeout = self.options.timeout
            if self.in_run:
                self.lab_stop = waiting.Cancel()
                own = (self.lab, case, self.model, timeout, self.lab_stop)
                self.lab_made = profiles.lab_kernels_ahead(*own)
            else:
                made = (self.lab, case, self.submission, self.model, timeout)
                self.modelled = profiles.run_beside(*made)

    def end_beside(self) -> None:
        """Stop the lab's kernels' profiles where they go on still (a grading ended by its
        deadline or Ctrl-C), and wait for their compilers and workers to stop, as
        Ahead.close does for the builds."""
        if self.lab_stop is not None:  # set where Ctrl-C came before lab_made was
            self.lab_stop.set()
        if self.lab_made is not None:
            wait([self.lab_made], timeout=STOPPING)
        self.stop_ready()

    def lab_profiles(self, case: Case) -> tuple[Profile | None, Profile | None]:
        """The lab's own kernels' profiles at `case`: those made beside the cases where
        both came, else made now (which says what failed)."""
        made = None
        if self.lab_made is not None and self.lab_made.exception() is None:
            made = self.lab_made.result()
        if made and made[0] is not None and (made[1] is not None or not self.lab.traffic):
            return made
        return profiles.lab_kernels(self.lab, case, self.model, self.options.timeout)

    # -- sanitizer and timing -------------------------------------------------------------

    def sanitize(self, all_cases: list[Case]) -> None:
        """The public cases again, under the backend's checker. What it finds in a case
        fails that case, as the CPU backend's own checks do. Cases that hung are left
        out: the checker would only hang with them."""
        results = {c.name: c for c in self.result.cases}
        public = [
            c
            for c in all_cases
            if c.visibility == Visibility.PUBLIC and results[c.name].status != Status.TIMEOUT
        ]
        groups: dict[int, tuple[Build, list[tuple[CaseResult, Launch]]]] = {}
        for case in sorted(public, key=lambda c: math.prod(self.lab.extent(c.sizes))):
            build = self.build_for(case)
            if not build.ok or rules.stopping(build):
                continue
            inputs = casegen.make_inputs(self.lab, case)
            launch = make_launch(self.lab, case, inputs, build.interface)[0]
            groups.setdefault(id(build), (build, []))[1].append((results[case.name], launch))
        if not groups:
            self.result.notes.append("--sanitize did not run: no public case ran to its end.")
            return
        for build, runs in groups.values():
            launches = [launch for _, launch in runs]
            try:
                found = self.backend.sanitize(
                    build, launches, self.options.timeout * defaults.SANITIZE_FACTOR
                )
            except BackendUnavailable as why:
                self.result.notes.append(f"--sanitize did not run: {why}")
                return
            for (case_result, _), diagnostics in zip(runs, found, strict=True):
                add_findings(case_result, diagnostics)

    def performance(self, shown: tuple[Profile, Profile | None] | None) -> Performance | None:
        why = speed_unmeasured(
            self.result.cases, self.options.timing, self.backend.name, self.backend.measures_speed()
        )
        if why:
            self.result.notes.append(why)
            return None
        tell(self.options.progress, "timing")
        made = (self.options.timing_budget, self.start_ready(), shown or (None, None))
        forfeited = scoring.rule_broken(self.result)  # the speed points: timed less
        timed = measure(self.lab, self.backend, *made, forfeited)
        performance, untrusted, self.roofline = timed
        self.result.diagnostics += untrusted
        return performance


# -- the end -----------------------------------------------------------------------------


def _finish(
    lab: Lab, result: Result, options: Options, started: float, speed_graded: bool
) -> Result:
    conclude(lab, result, bool(options.secret), speed_graded)
    result.seconds = time.monotonic() - started
    return result
