"""One grading, end to end: static checks, compile, interface, every case, timing, score.

Expected outputs and hidden cases stay in this process; backends run the student's
kernel in isolated workers and hand back only what the buffers held."""

from __future__ import annotations

import math
import signal
import threading
import time
from collections import deque
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor, wait
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import grader
from grader import defaults, labs
from grader.ahead import Ahead
from grader.backends import get_backend
from grader.backends.base import Backend, BackendUnavailable
from grader.errors import UsageError
from grader.files import readable
from grader.grading.timing import Drawn, draw_ahead, measure
from grader.judge import cases as casegen
from grader.judge import hints, launch_macros, rules, scoring
from grader.judge.launch import at_launch, make_launch
from grader.judge.verdict import INFORMATIVE, judge
from grader.model import interface
from grader.model.interface import LAUNCH_MACROS
from grader.model.lab import Case, Lab, Requirement
from grader.model.launch import Build, Launch, RunOutcome
from grader.model.result import (
    CaseResult,
    CompileInfo,
    Diagnostic,
    Kind,
    Performance,
    Result,
    Status,
)
from grader.model.source import Submission, link_on_the_way, no_code, read_submission, static_checks

# Diagnostics that stop a build from being run at all.
BLOCKING = {Kind.COMPILE_ERROR, Kind.INTERFACE, Kind.RESOURCES}
SPEED_WAITS = "Speed is measured once every case passes; it earns 0 now."
SANITIZE_FACTOR = 10  # a case under a sanitizer may take this many times its timeout
SANITIZER_FOUND = (
    "The output matched, but the sanitizer saw the kernel do something undefined (below): "
    "a result that is right by luck can be wrong on another GPU, size or run."
)


# A build is made for each set of macro values, and apart for the census case.
BuildKey = tuple[tuple[tuple[str, int], ...], bool]
# a case of grade_cases_beside: its build, the seconds before its run, and its run made
# ahead, its result where it cannot run, or None where it is not run ahead
Waiting = tuple[Case, Build, float, CaseResult | Future | None]
SLACK = 60.0  # seconds of a submission's deadline beyond what its compiles and cases need


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


def default_submission_timeout(
    lab: Lab, case_timeout: float, timing: bool, secret: str | None, sanitize: bool = False
) -> float:
    """A deadline no honest grading reaches: every build at the compile timeout, every
    case twice at the case timeout (the CPU backend runs two thread orders), timing, and
    each public case under each sanitizer tool, loaded and run at its own limits."""
    cases = casegen.cases_for(lab, secret)
    builds = len({tuple(sorted(lab.macro_values(c.sizes).items())) for c in cases})
    seconds = (builds + (2 if timing else 0)) * defaults.COMPILE_TIMEOUT
    seconds += 2 * case_timeout * len(cases) + SLACK
    if sanitize:
        public = sum(c.visibility == "public" for c in cases)
        seconds += 3 * public * (defaults.COMPILE_TIMEOUT + SANITIZE_FACTOR * case_timeout)
    return seconds + (2 * defaults.TIMING_BUDGET if timing else 0.0)


class DeadlinePassed(BaseException):
    """The whole grading took longer than its deadline. A BaseException, as Ctrl-C is: it
    unwinds through every `finally` that stops a worker or removes a folder, and no
    `except Exception` on the way keeps the grading going."""


@contextmanager
def _deadline(seconds: float) -> Iterator[None]:
    """Raise DeadlinePassed in this thread once `seconds` have passed (SIGALRM, which only
    the main thread receives; elsewhere there is no deadline)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def expire(signum: int, frame: object) -> None:
        raise DeadlinePassed

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def check(lab: str, path: Path, options: Options) -> Result:
    """Grade the file at `path` for `lab`, within the submission timeout. Raises
    GraderError only for problems of usage or setup; everything about the submission
    itself goes into the Result, a grading that passed its deadline too."""
    spec = labs.get(lab)
    path = Path(path)
    link = link_on_the_way(path)
    if link == path:
        raise UsageError(f"{path} is a symbolic link; grade the file itself, not a link to it.")
    if link is not None:
        raise UsageError(
            f"{path} is reached through {link}, a symbolic link; grade the file by a path "
            "with no link in it."
        )
    if path.is_dir():
        kernels = sorted(str(p) for p in path.glob("*.cu")) or [str(path / "kernel.cu")]
        raise UsageError(
            f"{path} is a folder; give the kernel file in it: grader check {spec.name} "
            f"{' or '.join(kernels[:3])}."
        )
    if not path.exists():
        raise UsageError(f"There is no file {path}.")
    if not path.is_file():
        raise UsageError(f"{path} is not a regular file (a device or a FIFO); give a .cu file.")
    seconds = options.submission_timeout or default_submission_timeout(
        spec, options.timeout, options.timing, options.secret, options.sanitize
    )
    with get_backend(
        options.backend, jobs=options.jobs, allow_unsandboxed=options.allow_unsandboxed
    ) as backend:
        device = backend.device()
        try:
            with _deadline(seconds):
                return grade(spec, path, backend, options)
        except DeadlinePassed:
            # what ran is lost, as in a batch: its workers were stopped mid-case
            reason = (
                f"Grading took longer than {seconds:g} s (--submission-timeout) and was "
                "stopped; the cases that ran are lost."
            )
            speed = options.timing and backend.measures_speed()
            name = readable(path.name)
            return not_graded(spec, name, reason, Kind.TIMEOUT, (backend.name, device),
                              options.secret, speed)  # fmt: skip


def not_graded(
    lab: Lab,
    submission: str,
    reason: str,
    kind: Kind,
    backend: tuple[str, str],
    secret: str | None,
    speed: bool,
) -> Result:
    """The result of a submission that could not be graded (`backend` is the backend's
    name and device): every case an error, no points, and the maximum it would have
    had, so that it adds up like the others."""
    cases = [
        CaseResult(
            name=c.name,
            visibility=c.visibility,
            sizes=c.shown_sizes,
            status=Status.ERROR,
            hint=reason,
        )
        for c in casegen.cases_for(lab, secret)
    ]
    most = scoring.total(lab.scoring, cases, bool(secret), None, speed, False).max_points
    return Result(
        lab=lab.name,
        submission=submission,
        backend=backend[0],
        device=backend[1],
        status=Status.ERROR,
        score=0.0,
        max_score=most,
        compile=CompileInfo(ok=False, log=f"not graded: {reason}"),
        cases=cases,
        diagnostics=[Diagnostic(kind, reason)],
        kernel=lab.kernel.name,
        grader_version=grader.__version__,
    )


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
    )
    problems += static_checks(submission.text, lab.forbidden)
    empty = no_code(submission.text, submission.name, [k.name for k in lab.kernels])
    problems += [empty] if empty and not problems else []
    if problems:
        result.diagnostics = problems
        return _finish(lab, result, options, started, speed_graded=False)
    Grading(lab, submission, backend, options, result).run()
    result.notes += [n for n in backend.notes if n not in result.notes]
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
    stopping: set[str] = field(default_factory=set)  # findings of rules that block cases
    counted: list[rules.Counted] = field(default_factory=list)  # what it executed there
    drawn: Future[Drawn] | None = None  # the timing's inputs, drawn while the cases run
    in_turn: bool = False  # grade_cases_beside: the cases left run one at a time

    def run(self) -> None:
        if self.options.timing and self.backend.measures_speed():
            self.drawn = draw_ahead(self.lab, self.options.timing_seed)
        all_cases = casegen.cases_for(self.lab, self.options.secret, self.submission.text)
        self.census = rules.census_case(self.lab, all_cases)
        keys = [self.build_key(case) for case in all_cases]
        with Ahead(self.make_build, keys, self.backend.concurrent_builds()) as self.ahead:
            if self.backend.concurrent_runs() > 1:
                self.grade_cases_beside(all_cases)
            else:
                for case in all_cases:
                    self.result.cases.append(self.grade_case(case))
        if not self.options.secret:
            self.result.hidden_not_run = casegen.hidden_count(self.lab)
        self.cross_case_hints()
        if self.options.sanitize:
            self.sanitize(all_cases)
        self.race_fails_every_case()
        self.executed_rules()
        self.result.performance = self.performance()

    # -- builds ---------------------------------------------------------------------------

    def build_key(self, case: Case) -> BuildKey:
        macros = self.lab.macro_values(case.sizes)
        return tuple(sorted(macros.items())), case.name == self.census

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
        return self.builds[key]

    def absorb(self, build: Build, case: Case) -> None:
        """Record a new build's compile info and diagnostics on the result, once."""
        if len(self.builds) == 1 or not build.compile.ok:
            self.result.compile = build.compile
        found = list(build.diagnostics)
        if build.interface is not None:
            found += interface.check(self.lab, build.interface, case.sizes)
            kernel = self.lab.kernel.name
            for rule in self.lab.requirements:
                message = rule.check(build.interface, kernel) if rule.blocks else None
                if message:
                    self.stopping.add(message)
            if self.result.launch is None and len(build.interface.launch) == len(LAUNCH_MACROS):
                self.result.launch = launch_macros.describe(
                    self.submission.text, build.interface.launch, build.macros
                )
        build.diagnostics = found
        known = {(d.kind, d.message) for d in self.result.diagnostics}
        self.result.diagnostics += [d for d in found if (d.kind, d.message) not in known]

    # -- cases ----------------------------------------------------------------------------

    def grade_case(self, case: Case) -> CaseResult:
        start = time.monotonic()
        build = self.build_for(case)
        result = self.blocked(case, build) or self.hung_before(case)
        if result is None:
            result, outcome, _ = self.run_case(case, build)
            self.count(case, outcome)
        result.seconds = time.monotonic() - start
        return result

    def grade_cases_beside(self, cases: list[Case]) -> None:
        """grade_case for each case, a case's run started while those of the cases before
        it go on; each result is taken in the cases' order, so the report is the one a
        grading in turn makes. A case the kernel hung too often before is not run, as in
        turn: its run, and every later one, is stopped. A run the backend could not make
        ahead (one that depends on what the earlier ones found, or one that timed out
        beside another) is made again in turn and alone (`alone`)."""
        width = self.backend.concurrent_runs()
        waiting: deque[Waiting] = deque()
        with ThreadPoolExecutor(width, thread_name_prefix="grader-case") as pool:
            try:
                for case in cases:
                    if self.in_turn:
                        while waiting:
                            self.take(waiting)
                        self.result.cases.append(self.grade_case(case))
                        continue
                    start = time.monotonic()
                    build = self.build_for(case)  # absorbed, and its blocks decided, in order
                    item = self.blocked(case, build)
                    if item is None and self.hung_before(case) is None:
                        item = pool.submit(self.run_case, case, build, True)
                    waiting.append((case, build, time.monotonic() - start, item))
                    while sum(isinstance(w[3], Future) for w in waiting) >= width:
                        self.take(waiting)
                while waiting:
                    self.take(waiting)
            except BaseException:
                self.backend.stop_runs()  # the pool's threads end with their workers
                raise

    def take(self, waiting: deque[Waiting]) -> None:
        """The result of the first case waiting in grade_cases_beside, once those before
        it are taken."""
        case, build, waited, item = waiting.popleft()
        if isinstance(item, CaseResult):
            item.seconds = waited
            self.result.cases.append(item)
            return
        result = self.hung_before(case)
        if result is not None:
            if item is not None:
                self.backend.stop_runs()  # every run going on is of a case after this one
            seconds = waited
        else:
            made = item.result() if item is not None else None
            if made is None:
                self.alone(waiting)
                made = self.run_case(case, build)
            result, outcome, seconds = made
            self.count(case, outcome)
            seconds += waited
        result.seconds = seconds
        self.result.cases.append(result)

    def alone(self, waiting: deque[Waiting]) -> None:
        """Stop the runs made ahead of the cases waiting, which are then made in turn, as
        are the cases after them: a run in turn has the cores to itself, and a kernel's
        timeout, which is wall-clock, then means what it means in a grading in turn."""
        self.in_turn = True
        if any(isinstance(w[3], Future) for w in waiting):
            self.backend.stop_runs()
        for index, (case, build, waited, item) in enumerate(waiting):
            if isinstance(item, Future):
                wait([item])  # ended by the stop; what it found is dropped
                waiting[index] = (case, build, waited, None)

    def blocked(self, case: Case, build: Build) -> CaseResult | None:
        """The case's result where its build cannot be run."""
        blocked = [d for d in build.diagnostics if d.kind in BLOCKING or d.message in self.stopping]
        return _not_run(case, blocked, build) if not build.ok or blocked else None

    def hung_before(self, case: Case) -> CaseResult | None:
        """The case's result where the kernel hung in too many of the cases before it."""
        hangs = sum(c.status == Status.TIMEOUT for c in self.result.cases)
        if hangs < defaults.MAX_TIMEOUTS:
            return None
        return CaseResult(
            name=case.name,
            visibility=case.visibility,
            sizes=case.shown_sizes,
            status=Status.TIMEOUT,
            hint=f"Not run: the kernel already hung in {hangs} cases.",
        )

    def run_case(
        self, case: Case, build: Build, ahead: bool = False
    ) -> tuple[CaseResult, RunOutcome, float] | None:
        """The case run and judged, and the seconds that took. With `ahead` (runs of the
        cases before it may be going on), None where the backend must run it in turn."""
        start = time.monotonic()
        inputs = casegen.make_inputs(self.lab, case)
        sized = at_launch(self.lab, case, build.interface)
        expected = casegen.expected_outputs(self.lab, sized, inputs)
        launch, layouts = make_launch(self.lab, case, inputs, build.interface)
        run = self.backend.run_ahead if ahead else self.backend.run
        outcome = run(build, launch, self.options.timeout)
        if outcome is None:
            return None
        found = judge(self.lab, case, sized, inputs, expected, launch, layouts, outcome, build)
        return found, outcome, time.monotonic() - start

    def count(self, case: Case, outcome: RunOutcome) -> None:
        """What the kernel executed, from the census case's run."""
        if outcome.completed and case.name == self.census:
            self.counted.append((case.name, outcome.executed))

    def cross_case_hints(self) -> None:
        """A sentence from what the cases have in common. A public case's comes from the
        public cases alone: its report is shown before the deadline, and must say nothing
        of how the hidden cases went."""
        public = [c for c in self.result.cases if c.visibility == "public"]
        by_sight = {
            "public": hints.cross_case(self.lab, public),
            "hidden": hints.cross_case(self.lab, self.result.cases),
        }
        for case in self.result.cases:
            found = by_sight[case.visibility]
            if found and not case.passed:
                kind, sentence = found
                case.hint = f"{case.hint} {sentence}" if case.hint else sentence
                case.hint_kind = case.hint_kind or kind

    def race_fails_every_case(self) -> None:
        """A race among threads found in one case makes the kernel wrong in every case
        that may see it: where its numbers came out right, that was luck, and a GPU has
        more of it than the CPU backend, whose threads take turns. So both backends grade
        it alike. A public case answers to the public cases alone: had a race found only
        in a hidden case failed it, its result, shown before the deadline, would tell
        that some hidden case (some size) raced, and resubmitting would find which."""
        found = [(c, d) for c in self.result.cases for d in c.diagnostics if _among_threads(d)]
        for case in self.result.cases:
            seen = next(((c, d) for c, d in found if _may_name(case, c)), None)
            if not case.passed or seen is None:
                continue
            raced, race = seen
            kernel = race.kernel or self.lab.kernel.name
            case.status = Status.FAILED
            case.diagnostics.append(
                Diagnostic(
                    Kind.RACE,
                    f"Case {raced.name} showed a race in {kernel} (see that case). With a "
                    "race the results depend on the order the threads happen to run in, so "
                    "this case's right numbers were luck: it fails until the race is fixed.",
                    kernel=race.kernel,
                )
            )

    def executed_rules(self) -> None:
        """The lab's rules against what the kernel executed in the census case's run."""
        built = next((b.interface for b in self.builds.values() if b.ok), None)
        if built is None:
            return
        counted = dict(self.counted).get(self.census, {})
        if self.census is not None and self.lab.kernel.name not in counted:
            self.uncounted_rules(built)
            return
        found, notes = rules.judge(self.lab, built, self.counted)
        known = {(d.kind, d.message) for d in self.result.diagnostics}
        self.result.diagnostics += [d for d in found if (d.kind, d.message) not in known]
        self.result.notes += [n for n in notes if n not in self.result.notes]

    def uncounted_rules(self, built: interface.Interface) -> None:
        """Where the census case's run did not go to the end, a rule about what the kernel
        executes counts as broken: a kernel that crashed or hung there on purpose would
        otherwise leave the rule to the module's instructions, which a load or an atomic
        in a branch no thread takes meets. After a hang the module's own finding is
        dropped as well (a loop that never ends lets the compiler drop the code after
        it): the hang is the reason given."""
        census = next((c for c in self.result.cases if c.name == self.census), None)
        hung = census is not None and census.status == Status.TIMEOUT
        kernel = self.lab.kernel.name
        for rule in (r for r in self.lab.requirements if r.executes):
            said = rule.check(built, kernel)
            if said and not hung:
                continue  # the module breaks it, and that finding stands
            self.result.diagnostics = [d for d in self.result.diagnostics if d.message != said]
            self.result.diagnostics.append(
                Diagnostic(Kind.REQUIREMENT, _uncounted(rule, kernel, self.census, census))
            )

    # -- sanitizer and timing -------------------------------------------------------------

    def sanitize(self, all_cases: list[Case]) -> None:
        """The public cases again, under the backend's checker. What it finds in a case
        fails that case, as the CPU backend's own checks do. Cases that hung are left
        out: the checker would only hang with them."""
        results = {c.name: c for c in self.result.cases}
        public = [
            c
            for c in all_cases
            if c.visibility == "public" and results[c.name].status != Status.TIMEOUT
        ]
        groups: dict[int, tuple[Build, list[tuple[CaseResult, Launch]]]] = {}
        for case in sorted(public, key=lambda c: math.prod(self.lab.extent(c.sizes))):
            build = self.build_for(case)
            if not build.ok or any(d.kind in BLOCKING for d in build.diagnostics):
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
                    build, launches, self.options.timeout * SANITIZE_FACTOR
                )
            except BackendUnavailable as why:
                self.result.notes.append(f"--sanitize did not run: {why}")
                return
            for (case_result, _), diagnostics in zip(runs, found, strict=True):
                _add_findings(case_result, diagnostics)

    def performance(self) -> Performance | None:
        if not self.options.timing:
            self.result.notes.append("Speed was not measured (--no-timing).")
            return None
        if not self.backend.measures_speed():
            self.result.notes.append(
                f"Speed is scored only on a GPU; the {self.backend.name} backend checks "
                "correctness and memory safety."
            )
            return None
        if not self.result.cases or not all(c.passed for c in self.result.cases):
            self.result.notes.append(SPEED_WAITS)
            return None
        performance, untrusted = measure(
            self.lab,
            self.submission,
            self.backend,
            self.options.timing_budget,
            self.drawn,
        )
        self.result.diagnostics += untrusted
        return performance


def _uncounted(rule: Requirement, kernel: str, name: str, census: CaseResult | None) -> str:
    """Why a rule about what `kernel` executes is broken where the census case `name`
    counted nothing."""
    if census is None:
        why = "that case was not run"
    elif census.status == Status.TIMEOUT:
        why = "there the kernel hung (see that case)"
    elif census.status == Status.ERROR:
        why = "there the kernel did not run to its end (see that case)"
    else:
        why = "the run that counts it stopped before its end, though the case's own runs did not"
    return (
        f"The lab's rule that {rule.says} is not met in this report: the grader counts what "
        f"{kernel} executes in case {name}, and {why}. The rule counts as broken until that "
        "run goes to its end."
    )


def _may_name(case: CaseResult, other: CaseResult) -> bool:
    """Whether `case`'s messages may name `other`: a hidden case may name any case, a
    public one only public ones."""
    return other.visibility == "public" or case.visibility == "hidden"


def _among_threads(found: Diagnostic) -> bool:
    """A race whose outcome timing decides wherever the code runs; not two blocks storing
    into one element (the CPU backend names the block and no thread), an index that goes
    wrong at some sizes only, which fails just the cases it shows in."""
    return found.kind == Kind.RACE and not (found.block is not None and found.thread is None)


def _add_findings(result: CaseResult, found: list[Diagnostic]) -> None:
    known = {(d.kind, d.message) for d in result.diagnostics}
    result.diagnostics += [d for d in found if (d.kind, d.message) not in known]
    if result.passed and any(d.kind not in INFORMATIVE for d in found):
        result.status = Status.FAILED
        if not result.hint:
            result.hint, result.hint_kind = SANITIZER_FOUND, "sanitizer_found"


def _not_run(case: Case, blocked: list[Diagnostic], build: Build) -> CaseResult:
    if not build.compile.ok:
        macros = ", ".join(f"{k}={v}" for k, v in build.macros.items())
        why = f"The kernel did not compile{f' with {macros}' if macros else ''}."
    else:
        why = blocked[0].message if blocked else "The kernel could not be launched."
    return CaseResult(
        name=case.name,
        visibility=case.visibility,
        sizes=case.shown_sizes,
        status=Status.ERROR,
        hint=why,
    )


# -- the end -----------------------------------------------------------------------------


def _finish(
    lab: Lab, result: Result, options: Options, started: float, speed_graded: bool
) -> Result:
    rule_broken = any(d.kind == Kind.REQUIREMENT for d in result.diagnostics)
    score = scoring.total(
        lab.scoring,
        result.cases,
        bool(options.secret),
        result.performance,
        speed_graded,
        rule_broken,
    )
    result.score, result.max_score = score.points, score.max_points
    result.status = _status(result)
    if result.hidden_not_run:
        result.notes.append(
            # said to students too (Gradescope, CI): no flag or secret they cannot have
            f"{result.hidden_not_run} hidden cases, worth {lab.scoring.hidden:g} points, were "
            "not run here: the course staff run them when they grade."
        )
    result.seconds = time.monotonic() - started
    return result


def _status(result: Result) -> Status:
    """error: nothing could be run; failed: graded with failures; passed: all passed."""
    if not result.cases or all(
        c.status == Status.ERROR and not c.diagnostics for c in result.cases
    ):
        return Status.ERROR
    failed = any(not c.passed for c in result.cases) or any(
        d.kind not in INFORMATIVE for d in result.diagnostics
    )
    return Status.FAILED if failed or not result.cases else Status.PASSED
