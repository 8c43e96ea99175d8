"""`grader validate-lab LAB`: the lab's own kernels, graded as its folders promise.

- `reference.cu` passes every case, public and hidden (graded with a secret of this
  module's own); on a GPU it is also timed against itself and must come out at a
  speedup near 1 with full points;
- `baseline.cu` passes every case, and breaks the rules that measure the work which the
  lab says it breaks (Lab.baseline_breaks: a tiled lab's naive kernel its traffic rule)
  and no other;
- each correct alternative in `variants/` passes every case, with nothing said against it;
- `student_template/LAB/kernel.cu` compiles and fails every case cleanly: no crash, hang
  or access out of bounds, and every case says why;
- each known-wrong kernel in `wrong/` gets what `wrong/EXPECTED.toml` names for it: the
  verdict, and any diagnostic kinds, keywords, absent words, case hints and the most
  points it may score (`points_at_most`: what its honest part earns), the line a
  diagnostic of a kind names (`lines`, {kind = line}) and a shorter case timeout for a
  kernel that hangs (`timeout`). A table
  ["file.cu".cpu] or ["file.cu".cuda] replaces the file's entry on that backend, and
  `sanitize` or `timing` there grade it with --sanitize or with timing on a GPU (KEYS;
  docs/expected-toml.md);
- each slow-but-right kernel in `slow/` gets what `slow/EXPECTED.toml` names for it, in
  the same keys (its verdict is "passed"), and `why`: words the "why this speed" advice
  must hold, so that each kernel is slow for the reason its entry names; a grading
  without a profile is a problem;
- the reference, the baseline, the variants and the slow kernels keep those rules (the
  baseline breaks those it says) at every hidden case a grading may profile in the public
  profile case's place (rules.profile_candidates): which one is drawn depends on the
  file's text, and comments must not cost a correct kernel its points;
- `student_template/LAB/README.md` states the kernels' signatures, the cases and the
  scoring (grader.lab_readme)."""

from __future__ import annotations

import tomllib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from grader import lab_readme, labs
from grader.backends.base import Backend
from grader.grading import profiles
from grader.grading.pipeline import Options, grade
from grader.judge import cases as casegen
from grader.judge import rules
from grader.labs import EXPECTED, WRONG
from grader.model.lab import Case, Lab
from grader.model.result import Kind, Result, Status, Visibility
from grader.model.source import Submission, read_submission

SECRET = "validate-lab"  # hidden cases are derived from it, as from a course's secret
SLOW = "slow"
VARIANTS = "variants"
SPEEDUP = (0.85, 1.15)  # the reference timed against itself
CRASHES = {Kind.CRASH, Kind.TIMEOUT, Kind.OUT_OF_BOUNDS}
# The kernels that keep the rules that measure the work (a baseline, those it breaks)
KEEPS_RULES = ("reference", "baseline", "variant", SLOW)
BACKENDS = ("cpu", "cuda")  # the tables that replace an entry on one backend
# What an EXPECTED.toml entry may hold (docs/build_reference.py writes
# docs/expected-toml.md from this table): key -> (TOML type, meaning).
KEYS = {
    "verdict": ("string", 'the report\'s status: "passed", "failed" or "error" (required)'),
    "kinds": ("array of strings", "diagnostic kinds that must all appear (out_of_bounds, race...)"),
    "keywords": ("array of strings", "words that must appear in some diagnostic or case hint"),
    "absent": ("array of strings", "words that must appear in no diagnostic or case hint"),
    "case_hints": (
        "table: case name = string",
        "text that the named case's own hint must hold",
    ),
    "sanitize": ("boolean", "on the cuda backend, grade with --sanitize"),
    "timing": ("boolean", "on the cuda backend, time the kernel too (its timed launches checked)"),
    "points_at_most": (
        "number",
        "the most points the grading may give (what its honest part earns)",
    ),
    "lines": ("table: kind = integer", "a diagnostic of that kind names that line"),
    "timeout": ("number", "seconds each case may run, for a kernel that hangs"),
    "why": (
        "array of strings",
        'slow/ only: words that must appear in the "why this speed" advice',
    ),
}


def wrong_dir(lab: str) -> Path:
    """The folder of a lab's known-wrong kernels and their EXPECTED.toml."""
    return labs.get(lab).home / WRONG


@dataclass(frozen=True)
class Check:
    """One kernel of a lab and what its grading must show."""

    lab: str
    role: str  # "reference", "baseline", "template", "wrong", "slow", "variant" or "readme"
    path: Path
    expected: dict  # a known-wrong or slow kernel's EXPECTED.toml entry

    @property
    def label(self) -> str:
        return f"{self.lab}/{self.role}/{self.path.name}"


def checks(lab: Lab) -> list[Check]:
    """Every check of the lab, the reference first."""
    found = [
        Check(lab.name, "reference", lab.home / "reference.cu", {}),
        Check(lab.name, "baseline", lab.home / "baseline.cu", {}),
        Check(lab.name, "template", lab.template_home / "kernel.cu", {}),
    ]
    for role in (WRONG, SLOW):
        table = lab.home / role / EXPECTED
        if table.is_file():
            for name, expected in tomllib.loads(table.read_text()).items():
                found.append(Check(lab.name, role, table.parent / name, expected))
    for path in sorted((lab.home / VARIANTS).glob("*.cu")):
        found.append(Check(lab.name, "variant", path, {}))
    found.append(Check(lab.name, "readme", lab.template_home / lab_readme.README, {}))
    return found


def run(check: Check, backend: Backend, timeout: float) -> list[str]:
    """What is wrong with `check` graded on `backend`: sentences, none when it holds."""
    return examine(check, backend, timeout)[0]


def examine(check: Check, backend: Backend, timeout: float) -> tuple[list[str], Result | None]:
    """What is wrong with `check` graded on `backend`, and the Result of that grading
    (None where nothing was graded)."""
    if check.role == "readme":
        return lab_readme.problems(labs.get(check.lab)), None
    if not check.path.is_file():
        return [f"{check.path} does not exist."], None
    unknown = _unknown_keys(check)
    if unknown:
        return unknown, None
    wanted = check.expected.get(backend.name, check.expected)
    gpu = backend.measures_speed()
    options = Options(
        backend=backend.name,
        secret=SECRET,
        timeout=min(timeout, wanted.get("timeout", timeout)),
        timing=gpu and (check.role == "reference" or bool(wanted.get("timing"))),
        sanitize=gpu and bool(wanted.get("sanitize")),
    )
    lab = labs.get(check.lab)
    result = grade(lab, check.path, backend, options)
    judges = {WRONG: _expected, SLOW: _slow, "template": _template, "baseline": _baseline}
    problems = judges.get(check.role, _passes)(result, wanted)
    if check.role in KEEPS_RULES:
        breaks = set(lab.baseline_breaks) if check.role == "baseline" else set()
        problems += _at_every_profile_case(lab, check.path, backend, timeout, breaks)
    if check.role == "reference" and gpu and not problems:
        problems = _timed_against_itself(result)
    return problems, result


def _unknown_keys(check: Check) -> list[str]:
    """A sentence for each key of the kernel's EXPECTED.toml entry that validate-lab does
    not know (a misspelt key would silently check nothing)."""
    entries = [("", check.expected)]
    entries += [(f".{b}", check.expected[b]) for b in BACKENDS if b in check.expected]
    known = [k for k in KEYS if k != "why" or check.role == SLOW]  # why: slow/ only
    return [
        f'{EXPECTED}\'s entry ["{check.path.name}"{where}] has the key {key!r}, which is '
        f"none of {', '.join(known)} (docs/expected-toml.md)."
        for where, entry in entries
        for key in entry
        if key not in known and not (where == "" and key in BACKENDS)
    ]


def _passes(result: Result, wanted: dict) -> list[str]:
    """Every case passes, and nothing is said against the kernel."""
    problems = _cases_pass(result, wanted)
    return problems + [f"{d.kind}: {d.message}" for d in result.diagnostics]


def _cases_pass(result: Result, wanted: dict) -> list[str]:
    """Every case passes."""
    failing = [c for c in result.cases if not c.passed]
    problems = [f"case {c.name} {c.status}: {_why(c)}" for c in failing]
    if not any(c.visibility == Visibility.HIDDEN for c in result.cases):
        problems.append("no hidden case ran")
    return problems


def _baseline(result: Result, wanted: dict) -> list[str]:
    """Every case passes, and the rules that measure the work are broken as the lab says
    (Lab.baseline_breaks: a tiled lab's naive kernel breaks its traffic rule)."""
    expected = set(labs.get(result.lab).baseline_breaks)
    found = {name: _rule(result, name) for name in rules.broken(result)}
    return _cases_pass(result, wanted) + _unlike(found, expected)


def _unlike(found: dict[str, str], breaks: set[str], where: str = "") -> list[str]:
    """Where the rules that measure the work which a kernel broke (`found`, by name with
    the finding) are not those it should break (`breaks`); `where` opens each sentence."""
    problems = [
        f"{where}breaks the {n} rule: {said}" for n, said in found.items() if n not in breaks
    ]
    kept = breaks - set(found)
    return problems + [f"{where}keeps the {n} rule, which the lab says it breaks" for n in kept]


def _at_every_profile_case(
    lab: Lab, path: Path, backend: Backend, timeout: float, breaks: set[str]
) -> list[str]:
    """Where the kernel at `path` breaks other rules that measure the work than `breaks`
    at a hidden case a grading may profile (rules.profile_candidates). Which one a
    grading draws depends on the file's text: a lab's own kernel that broke a rule at
    one of them would lose points for its comments."""
    submission, _ = read_submission(path)
    cases = casegen.cases_for(lab, SECRET, submission.text)
    candidates = set(rules.profile_candidates(lab, cases))
    problems = []
    with profiles.model_backend(backend) as model:
        if isinstance(model, str):  # no CPU model here: the grading's notes say so
            return []
        for case in (c for c in cases if c.name in candidates):
            found = _profiled_at(lab, case, submission, model, timeout)
            if isinstance(found, str):
                problems.append(f"at hidden case {case.name}, {found}")
                continue
            where = f"at hidden case {case.name}, which a grading may profile, it "
            problems += _unlike(found, breaks, where)
    return problems


def _profiled_at(
    lab: Lab, case: Case, submission: Submission, model: Backend, timeout: float
) -> dict[str, str] | str:
    """The rules that measure the work which `submission` breaks at `case`, by name with
    the finding; or why it could not be profiled there."""
    measured = profiles.run(lab, case, submission, model, timeout)[1]
    if measured.profile is None:
        return f"the CPU model made no profile: {measured.why}"
    reference, baseline = profiles.lab_kernels(lab, case, model, timeout)
    return rules.findings(lab, measured.profile, baseline, reference)[0]


def _rule(result: Result, name: str) -> str:
    return next(d.message for d in result.diagnostics if d.message.startswith(rules.OPENING[name]))


def _template(result: Result, wanted: dict) -> list[str]:
    problems = []
    if not result.compile.ok:
        problems.append(f"does not compile: {result.compile.log[:300]}")
    problems += [f"case {c.name} passed" for c in result.cases if c.passed]
    problems += [
        f"case {c.name}: {d.kind}: {d.message}"
        for c in result.cases
        for d in c.diagnostics
        if d.kind in CRASHES
    ]
    problems += [f"case {c.name} fails without a reason" for c in result.cases if not _why(c)]
    if result.compile.ok and result.status != Status.FAILED:
        problems.append(f"status {result.status}, not failed")
    return problems


def _slow(result: Result, wanted: dict) -> list[str]:
    """What the entry names, and its why words in the advice."""
    problems = _expected(result, wanted)
    if result.profile is None:
        return [*problems, f"the grading made no profile: {' '.join(result.notes)}"]
    said = " ".join(a.message for a in result.profile.advice)
    missing = [w for w in wanted.get("why", []) if w.lower() not in said.lower()]
    problems += [f"the why-this-speed advice lacks {w!r}" for w in missing]
    if missing:
        problems.append(f"what the advice said: {said or 'nothing'}")
    return problems


def _expected(result: Result, wanted: dict) -> list[str]:
    text = _found_text(result)
    problems = []
    if str(result.status) != wanted.get("verdict"):
        problems.append(f"verdict {result.status}, not {wanted.get('verdict')}")
    kinds = {str(d.kind) for d in result.all_diagnostics()}
    problems += [f"no {kind} diagnostic" for kind in wanted.get("kinds", []) if kind not in kinds]
    lowered = text.lower()
    problems += [f"no {w!r}" for w in wanted.get("keywords", []) if w.lower() not in lowered]
    problems += [f"{w!r} is said" for w in wanted.get("absent", []) if w.lower() in lowered]
    most = wanted.get("points_at_most")
    if most is not None and result.score > most + 1e-9:
        problems.append(f"scored {result.score:g} points, more than {most:g}")
    for kind, line in wanted.get("lines", {}).items():
        named = sorted({d.line for d in result.all_diagnostics() if str(d.kind) == kind} - {None})
        if line not in named:
            problems.append(f"no {kind} diagnostic names line {line} (lines named: {named})")
    hints = {c.name: c.hint or "" for c in result.cases}
    for case, hint in wanted.get("case_hints", {}).items():
        if hint not in hints.get(case, ""):
            problems.append(f"case {case}'s hint lacks {hint!r}: {hints.get(case)!r}")
    if problems:
        problems.append(f"what the grading said: {text[:1500]}")
    return problems


def _timed_against_itself(result: Result) -> list[str]:
    perf = result.performance
    if perf is None:
        return ["the reference was not timed: " + " ".join(result.notes)]
    low, high = SPEEDUP
    if not low < perf.speedup < high:
        return [f"timed against itself, the reference's speedup is {perf.speedup:.3f}: {perf.note}"]
    if result.score < 0.95 * result.max_score:
        return [f"the reference scores {result.score:g} of {result.max_score:g}: {perf.note}"]
    return []


def _why(case) -> str:
    return case.hint or "; ".join(d.message for d in case.diagnostics)


def _found_text(result: Result) -> str:
    parts = [f"{d.kind} {d.message}" for d in result.all_diagnostics()]
    parts += [c.hint or "" for c in result.cases]
    parts += result.launch.warnings if result.launch else []
    return "\n".join(p for p in parts if p)


def validate(
    lab: str,
    backends: list[Backend],
    timeout: float,
    report: Callable[[Check, Backend, list[str]], None],
) -> int:
    """Run every check of `lab` on every backend, calling `report` after each; returns
    how many failed."""
    failed = 0
    for backend in backends:
        for check in checks(labs.get(lab)):
            problems = run(check, backend, timeout)
            failed += bool(problems)
            report(check, backend, problems)
    return failed
