"""Every decision on a lab's rules. Findings that stop a build's cases: a compile error,
the interface, resources, or a rule that `blocks` (what it would compute is not the
student's work). Then the rules against what the kernel executed: a rule that asks the
kernel to do something (read shared memory, use atomics) is broken when the census case's
run counted none of it (RunOutcome.executed), so that a load in a branch never taken does
not count, and neither does a word in a comment or a string. A rule that neither the
module nor the runs decide on this machine is reported as not checked here: a note, never
a pass.

The rules that measure the work (Lab.traffic, Lab.busiest_thread) are decided from the
student's memory profile at the lab's profile case, which the CPU model makes on every
backend from the addresses each thread touched (grader.grading.profiles): never from
what the student's process says of itself. Where that run did not go to its end, the
census case's policy holds: the rule counts as broken, with the reason."""

from __future__ import annotations

import math
from collections.abc import Set
from fractions import Fraction

from grader.model.interface import Executed, Interface
from grader.model.lab import Case, Lab, Requirement
from grader.model.launch import Build
from grader.model.profile import WARP, Profile
from grader.model.result import CaseResult, Diagnostic, Kind, Result, Status, Visibility

# Findings that stop a build from being run at all.
BLOCKING = {Kind.COMPILE_ERROR, Kind.INTERFACE, Kind.RESOURCES}
# What a report calls a hidden profile case: its name and sizes are out of sight until the
# hidden cases are shown (Gradescope's "Why this speed" test is visible before the deadline).
HIDDEN_CASE = "a hidden case"
# The outputs of the cases the profile case is chosen among, with the course's secret,
# against the lab's own profile case's: the CPU model's profile run costs at most 3x.
PROFILE_BAND = (0.5, 3.0)

# One case's counts, by kernel name, with the case's name.
Counted = tuple[str, dict[str, Executed]]


def blocking(lab: Lab, interface: Interface) -> set[str]:
    """The findings of the rules that block (Requirement.blocks) which the module breaks."""
    kernel = lab.kernel.name
    said = (rule.check(interface, kernel) for rule in lab.requirements if rule.blocks)
    return {message for message in said if message}


def stopping(build: Build, blocks: Set[str] = frozenset()) -> list[Diagnostic]:
    """The build's findings that stop its cases: BLOCKING kinds, and those in `blocks`
    (the findings of blocking rules)."""
    return [d for d in build.diagnostics if d.kind in BLOCKING or d.message in blocks]


def blocked(case: Case, build: Build, blocks: Set[str]) -> CaseResult | None:
    """The case's result where its build cannot be run: it did not compile, or one of its
    findings stops it."""
    found = stopping(build, blocks)
    if build.ok and not found:
        return None
    if not build.compile.ok:
        macros = ", ".join(f"{k}={v}" for k, v in build.macros.items())
        why = f"The kernel did not compile{f' with {macros}' if macros else ''}."
    else:
        why = found[0].message if found else "The kernel could not be launched."
    return CaseResult(
        name=case.name,
        visibility=case.visibility,
        sizes=case.shown_sizes,
        status=Status.ERROR,
        hint=why,
    )


def census_case(lab: Lab, cases: list[Case], watches_races: bool) -> str | None:
    """The case whose run is watched most closely: it counts what the kernel executed,
    for the rules that ask, and on a backend that `watches_races` there (the CPU's) every
    access that races among a block's threads. The smallest public one, the same on every
    backend. Watching costs (a build that calls the runner before every load on the CPU,
    more than 5x slower on matmul's largest case; an extra launch on the GPU), so it is
    one case, and none where nothing would be watched."""
    if not (watches_races or any(rule.executes for rule in lab.requirements)):
        return None
    return smallest_public(lab, cases)


def profile_case(lab: Lab, cases: list[Case]) -> str | None:
    """The case whose run is profiled: the lab's own (Lab.profile_case) where it names a
    public case, else the smallest public one. With the course's secret, a hidden case of
    about that size (PROFILE_BAND) where the lab has one, chosen by the named case's seed,
    which the secret and the submission's text draw: the rules are measured where the
    kernel cannot know the sizes beforehand, so that it cannot do the work at the public
    case alone (a tiled product at width 64 only, without the bounds checks that a width
    of 33 or 97 needs, and the naive one elsewhere). A kernel that does not run to its
    end there breaks the rules: measured anywhere else, it could stop itself at the
    drawn case to be measured where it knows the size."""
    named, near = named_profile_case(lab, cases), profile_candidates(lab, cases)
    if not near:
        return named
    seed = next(c.seed for c in cases if c.name == named)
    return near[seed % len(near)]


def profile_candidates(lab: Lab, cases: list[Case]) -> list[str]:
    """The hidden cases that may be profiled in the public profile case's place, by name:
    of about its outputs (PROFILE_BAND), and alike to it where the lab says what makes
    a case alike (Lab.profile_alike: spmv's rows of about one length, where the
    textbook's thread a row keeps the busiest-thread rule). Which one a grading draws
    depends on the file's text, so none may change a verdict the lab's own kernels get
    (grader validate-lab profiles them at every one)."""
    named = named_profile_case(lab, cases)
    if named is None:
        return []
    chosen = next(c for c in cases if c.name == named)
    low, high = (share * _outputs(lab, chosen) for share in PROFILE_BAND)
    return sorted(
        c.name
        for c in cases
        if c.visibility == Visibility.HIDDEN
        and low <= _outputs(lab, c) <= high
        and (lab.profile_alike is None or lab.profile_alike(c.sizes))
    )


def case_phrase(name: str) -> str:
    """ "case width-64", or "a hidden case" for the HIDDEN_CASE label."""
    return name if name == HIDDEN_CASE else f"case {name}"


def named_profile_case(lab: Lab, cases: list[Case]) -> str | None:
    """The lab's own profile case (Lab.profile_case) where it names a public case, else the
    smallest public one: the profile case without the secret."""
    public = {c.name for c in cases if c.visibility == Visibility.PUBLIC}
    return lab.profile_case if lab.profile_case in public else smallest_public(lab, cases)


def _outputs(lab: Lab, case: Case) -> int:
    return math.prod(lab.extent(lab.full_sizes(case.sizes)))


def smallest_public(lab: Lab, cases: list[Case]) -> str | None:
    """The public case with the fewest output elements, the same on every backend (the
    census case, and a kernel's profile case unless its lab names one); None without one."""
    public = [c for c in cases if c.visibility == Visibility.PUBLIC]
    if not public:
        return None
    return min(public, key=lambda c: _outputs(lab, c)).name


def executed(
    lab: Lab, result: Result, built: Interface | None, census: str | None, runs: list[Counted]
) -> None:
    """The lab's rules against what the kernel executed in the census case's run, onto
    the result: `built` is a build's interface (None where nothing compiled), `runs` what
    the census case's runs counted."""
    if built is None:
        return
    if census is not None and lab.kernel.name not in dict(runs).get(census, {}):
        _uncounted(lab, result, built, census)
        return
    found, notes = judge(lab, built, runs)
    known = {(d.kind, d.message) for d in result.diagnostics}
    result.diagnostics += [d for d in found if (d.kind, d.message) not in known]
    result.notes += [n for n in notes if n not in result.notes]


def _uncounted(lab: Lab, result: Result, built: Interface, census: str) -> None:
    """Where the census case's run did not go to the end, a rule about what the kernel
    executes counts as broken: a kernel that crashed or hung there on purpose would
    otherwise leave the rule to the module's instructions, which a load or an atomic
    in a branch no thread takes meets. After a hang the module's own finding is
    dropped as well (a loop that never ends lets the compiler drop the code after
    it): the hang is the reason given."""
    ran = next((c for c in result.cases if c.name == census), None)
    hung = ran is not None and ran.status == Status.TIMEOUT
    kernel = lab.kernel.name
    for rule in (r for r in lab.requirements if r.executes):
        said = rule.check(built, kernel)
        if said and not hung:
            continue  # the module breaks it, and that finding stands
        result.diagnostics = [d for d in result.diagnostics if d.message != said]
        result.diagnostics.append(
            Diagnostic(Kind.REQUIREMENT, _uncounted_why(rule, kernel, census, ran))
        )


def _uncounted_why(rule: Requirement, kernel: str, name: str, census: CaseResult | None) -> str:
    """Why a rule about what `kernel` executes is broken where the census case `name`
    counted nothing: first what stopped it, the hang or crash the report gives first."""
    if census is None:
        head, why = "Not checked: the case was not run.", "that case was not run"
    elif census.status == Status.TIMEOUT:
        head, why = "Not checked: the case hung.", "there the kernel hung (above)"
    elif census.status == Status.ERROR:
        head = "Not checked: the case did not run to its end."
        why = "there the kernel did not run to its end (above)"
    else:
        head = "Not checked: the run that counts stopped early."
        why = "the run that counts it stopped before its end, though the case's own runs did not"
    return (
        f"{head} The lab's rule that {rule.says} is not met in this report: the grader "
        f"counts what {kernel} executes in {case_phrase(name)}, and {why}. The rule counts "
        "as broken until that run goes to its end."
    )


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


# -- the rules that measure the work ----------------------------------------------------

TRAFFIC, BUSIEST = "traffic", "busiest_thread"
# How each one's finding opens: how a reader of the report (grader validate-lab) tells
# which of them a kernel broke.
OPENING = {TRAFFIC: "Each output element read ", BUSIEST: "One thread made "}


def measured_rules(lab: Lab) -> dict[str, str]:
    """The lab's rules that measure the work, by name, each with what it asks (a clause)."""
    found = {BUSIEST: f"no thread makes more than {share(lab.busiest_thread)} of the global loads"}
    if lab.traffic is not None:
        found[TRAFFIC] = (
            f"each output element reads at most {share(lab.traffic.fraction)} of the global "
            "memory the naive kernel reads for it"
        )
    return found


def share(fraction: float) -> str:
    """A lab's fraction as the course writes it: 1/8."""
    found = Fraction(fraction).limit_denominator(1000)
    return f"{found.numerator}/{found.denominator}" if found.denominator > 1 else f"{found}"


def measured(
    lab: Lab,
    result: Result,
    case: str | None,
    student: Profile | None,
    why: str,
    baseline: Profile | None,
    reference: Profile | None = None,
) -> None:
    """The lab's rules that measure the work, decided from the `student`'s profile at the
    profile case `case` (`why` there is none), a traffic rule against the `baseline`'s
    profile there; onto the result. A kernel whose profile run did not go to its end
    breaks every such rule, as a census case's run does (`why` says how); where the CPU
    model could not run on this machine (`student` and `case` None), a note. Where the
    lab's own `reference` breaks the busiest-thread rule there, the case is too small to
    decide it: a note (the lab should name a larger profile case)."""
    kernel = lab.kernel.name
    rules = measured_rules(lab)
    if case is None:
        result.notes += [_not_checked(says, why) for says in rules.values()]
        return
    if student is None:
        result.diagnostics += [
            Diagnostic(Kind.REQUIREMENT, _unmeasured(says, kernel, case, why), kernel=kernel)
            for says in rules.values()
        ]
        return
    found, notes = findings(lab, student, baseline, reference)
    result.notes += notes
    result.diagnostics += [
        Diagnostic(Kind.REQUIREMENT, message, kernel=kernel) for message in found.values()
    ]


def findings(
    lab: Lab, student: Profile, baseline: Profile | None, reference: Profile | None
) -> tuple[dict[str, str], list[str]]:
    """The rules that measure the work which `student`'s profile breaks, by name with the
    finding, and a note for each rule its case cannot decide: the busiest-thread rule
    where the lab's `reference` breaks it too, a traffic rule without the `baseline`."""
    rules, found, notes = measured_rules(lab), {}, []
    if reference is not None and _busiest(lab, reference):
        where = case_phrase(student.case)
        why = f"at {where} even the lab's reference breaks it: the case is too small"
        notes.append(_not_checked(rules[BUSIEST], why))
    else:
        found[BUSIEST] = _busiest(lab, student, reference)
    if lab.traffic is not None:
        if baseline is None:
            why = "the lab's baseline.cu could not be profiled"
            notes.append(_not_checked(rules[TRAFFIC], why))
        else:
            found[TRAFFIC] = _traffic(lab, student, baseline)
    return {name: said for name, said in found.items() if said}, notes


def broken(result: Result) -> set[str]:
    """The rules that measure the work which `result`'s findings say its kernel broke."""
    said = [d.message for d in result.diagnostics if d.kind == Kind.REQUIREMENT]
    return {name for name, opening in OPENING.items() if any(m.startswith(opening) for m in said)}


def broken_at_hidden_case(result: Result) -> list[Diagnostic]:
    """The findings of the rules that measure the work which a hidden profile case decided
    (each names it HIDDEN_CASE, as `measured` writes them, never its name)."""
    return [
        d for d in result.diagnostics if d.kind == Kind.REQUIREMENT and HIDDEN_CASE in d.message
    ]


def _busiest(lab: Lab, profile: Profile, reference: Profile | None = None) -> str | None:
    """The busiest thread's share of the loads, where it is more than the lab allows. Of
    the reference's loads where the kernel makes more: loads that other threads make
    for nothing must not dilute the share of a thread that does the work alone. A wide
    load of the reference's (float4) counts as one for each 4 bytes, as a thread's own
    loads of floats would."""
    reads, busiest = profile.global_reads, profile.busiest_thread_reads
    theirs = 0
    if reference is not None:
        atomics = reference.global_reads - reference.total("global_loads").lanes
        theirs = max(reference.global_reads, reference.total("global_loads").bytes // 4 + atomics)
    whole = min(reads, theirs) if theirs else reads
    if not whole or busiest <= lab.busiest_thread * whole:
        return None
    atomics = " and atomics" if reads > profile.total("global_loads").lanes else ""
    allowed = share(lab.busiest_thread)
    case = case_phrase(profile.case)
    if profile.case == HIDDEN_CASE:  # any figure of its own could tell the case's size
        of = "the global loads" if whole == reads else "the global loads the lab's reference makes"
        made = f"more than {allowed} of {of}{atomics} in {HIDDEN_CASE}, the most the lab "
        made += "allows one thread"
    elif whole == reads:
        made = (
            f"{busiest} of the {reads} global loads{atomics} in {case} ({busiest / reads:.0%}); "
            f"the lab allows one thread at most {allowed} of them"
        )
    else:
        made = (
            f"{busiest} global loads{atomics} in {case}, {busiest / whole:.0%} of the {whole} "
            f"the lab's reference makes there (the kernel makes {reads} in all: loads past "
            f"the reference's do not lessen one thread's share); the lab allows one thread "
            f"at most {allowed} of them"
        )
    return (
        f"{OPENING[BUSIEST]}{made}. Spread the work over the threads: each "
        "thread loads and combines its own part of the input, and the threads of a block "
        "combine their parts together (a tree in shared memory), not one thread after the "
        "others'."
    )


def _read_per_output(profile: Profile) -> float | None:
    """Global bytes read per output element, a warp's global atomic counted as reading 4
    bytes a lane: `atomicAdd(&M[i], 0)` reads M[i] too, and is no load."""
    atomics = sum(k.global_atomics for k in profile.kernels) * WARP * 4
    read = profile.total("global_loads").bytes + atomics
    return read / profile.outputs if profile.outputs and read else None


def _traffic(lab: Lab, profile: Profile, baseline: Profile) -> str | None:
    mine, naive = _read_per_output(profile), _read_per_output(baseline)
    if mine is None or not naive or mine <= lab.traffic.fraction * naive:
        return None
    limit = share(lab.traffic.fraction)
    if profile.case == HIDDEN_CASE:  # any figure of its own could tell the case's size
        read = (
            f"more than {limit} of the naive kernel's global bytes in {HIDDEN_CASE}, the "
            "most the lab allows"
        )
    else:
        ratio = mine / naive
        amount = (
            "the naive kernel's amount" if ratio >= 0.95 else f"{ratio:.0%} of the naive kernel's"
        )
        read = (
            f"{mine:,.0f} bytes of global memory in {case_phrase(profile.case)}, {amount} "
            f"({naive:,.0f}); the lab asks for at most {limit} of that"
        )
    return f"{OPENING[TRAFFIC]}{read}: {lab.traffic.fix}."


def _unmeasured(says: str, kernel: str, case: str, why: str) -> str:
    return (
        f"The lab's rule that {says} is not met in this report: the grader measures what "
        f"{kernel} reads in {case_phrase(case)}, and {why}. The rule counts as broken until that "
        "run goes to its end."
    )


def _not_checked(says: str, why: str) -> str:
    return (
        f"Not checked here: the lab's rule that {says}, because {why}; it is neither met "
        "nor broken in this report."
    )
