"""A case's verdict from one run of it: each output compared with the expected one, what
the buffers show around it (writes past an end, into an input, into row padding), a race
where two runs differ, and the hint that names the bug."""

from __future__ import annotations

import math
from collections.abc import Iterator

import numpy as np

from grader.judge import errormap, hints
from grader.judge.compare import Comparison, Sums, allowed, compare
from grader.judge.launch import Layout
from grader.model.lab import Case, Lab
from grader.model.launch import Buffer, BufferState, Build, Launch, RunOutcome, as_bits
from grader.model.result import CaseResult, Diagnostic, Kind, RaceScope, Status

# Diagnostics that do not fail a case by themselves.
INFORMATIVE = {Kind.OUTPUT}


def judge(
    lab: Lab,
    case: Case,
    sized: Case,  # `case` with the launch macros among its sizes (at_launch)
    inputs: dict[str, np.ndarray],
    reference: Sums,  # the lab's reference on `inputs` at `sized` (compare.sums)
    launch: Launch,
    layouts: dict[str, Layout],
    outcome: RunOutcome,
    build: Build,
) -> CaseResult:
    result = CaseResult(
        name=case.name, visibility=case.visibility, sizes=case.shown_sizes, status=Status.FAILED
    )
    result.diagnostics = list(outcome.diagnostics)
    result.output = outcome.output
    if not outcome.completed:
        result.status = Status.TIMEOUT if outcome.timed_out else Status.ERROR
        found = _fault_hint(lab, sized, inputs, build, result.diagnostics)
        result.hint_kind, result.hint = found or (None, None)
        return result
    past = overruns(launch, outcome, lab.kernel.name)
    result.diagnostics += past + stray_writes(launch, layouts, outcome, lab.kernel.name)
    # a write past a buffer that landed in the guard after it (on the GPU) is what stops
    # the run where it is unmapped (on the CPU): the same hint, whichever backend ran
    overrun = _fault_hint(lab, sized, inputs, build, past) if past else None
    expected, allowances = reference.expected, allowed(lab, sized, reference)
    tol = {name: a.tolerance for name, a in allowances.items()}
    comparisons = [
        compare(
            name,
            want,
            layouts[name].unpack(outcome.buffers[name].data),
            allowances[name].tolerance,
            allowances[name].magnitude,
        )
        for name, want in expected.items()
    ]
    seen = {d.kind for d in outcome.diagnostics}
    of_output = [d for d in output_diagnostics(comparisons, lab.kernel.name) if d.kind not in seen]
    result.diagnostics += of_output
    if Kind.RACE not in seen:
        result.diagnostics += unsteady(comparisons, layouts, outcome, tol, lab.kernel.name)
    _summarise(result, comparisons)
    # an output laid out in the kernel's tiles covers the grid's extent (a reduction's
    # one sum per block does not)
    spans = [n for n in lab.extent(case.sizes) if n > 1]
    tiled = all([n for n in e.shape if n > 1] == spans for e in expected.values())
    result.error_map = errormap.of_run(
        comparisons, layouts, outcome.buffers, build.interface.tile() if tiled else None
    )
    failing = [c for c in comparisons if not c.ok]
    found = overrun
    if failing and found is None:
        cmp = failing[0]
        # what the run found: the judge's own words on the output (its NaN, its elements
        # never written) name no cause, and must not silence a hint that names one
        findings = tuple(d for d in result.diagnostics if d not in of_output)
        ctx = hints.Context(
            lab, sized.sizes, inputs, cmp, tol[cmp.name], build.interface.tile(), findings
        )
        found = hints.output_hint(ctx)
    result.hint_kind, result.hint = found or (None, None)
    failed = failing or any(d.kind not in INFORMATIVE for d in result.diagnostics)
    result.status = Status.FAILED if failed else Status.PASSED
    return result


def _fault_hint(
    lab: Lab,
    sized: Case,
    inputs: dict[str, np.ndarray],
    build: Build,
    diagnostics: list[Diagnostic],
) -> tuple[str, str] | None:
    fault = hints.Fault(
        lab, sized.sizes, inputs, build.interface.tile(), diagnostics, build.submission.text
    )
    return hints.fault_hint(fault)


def _error_order(error: float) -> float:
    """NaN above every number, so the largest error of a case with NaN is NaN."""
    return math.inf if math.isnan(error) else error


def _summarise(result: CaseResult, comparisons: list[Comparison]) -> None:
    result.mismatches = sum(c.mismatches for c in comparisons)
    errors = [c.max_abs_error for c in comparisons if c.max_abs_error is not None]
    result.max_abs_error = max(errors, key=_error_order) if errors else None
    result.first_mismatch = next((c.first_mismatch() for c in comparisons if not c.ok), None)


def _states(launch: Launch, outcome: RunOutcome) -> Iterator[tuple[Buffer, BufferState]]:
    """Each buffer of the launch with what the run left in it."""
    for buf in launch.buffers():
        state = outcome.buffers.get(buf.name)
        if state is not None:
            yield buf, state


def overruns(launch: Launch, outcome: RunOutcome, kernel: str) -> list[Diagnostic]:
    """Writes past the end or before the start of a buffer (its canaries)."""
    out = []
    for buf, state in _states(launch, outcome):
        size = buf.data.size
        if state.written_after:
            first = (
                f" (first at {buf.name}[{size + state.first_after}])"
                if (state.first_after is not None)
                else ""
            )
            out.append(
                Diagnostic(
                    Kind.OUT_OF_BOUNDS,
                    f"The kernel wrote {state.written_after} elements past the end of {buf.name}, "
                    f"which has {size} elements{first}. Threads outside the output must not store: "
                    f"check each index against the sizes ({', '.join(launch.sizes())}) before "
                    "writing.",
                    kernel=kernel,
                )
            )
        if state.written_before:
            out.append(
                Diagnostic(
                    Kind.OUT_OF_BOUNDS,
                    f"The kernel wrote {state.written_before} elements before the start of "
                    f"{buf.name} (a negative index).",
                    kernel=kernel,
                )
            )
    return out


def stray_writes(
    launch: Launch, layouts: dict[str, Layout], outcome: RunOutcome, kernel: str
) -> list[Diagnostic]:
    """Writes into an input, and into the row padding of a pitched output."""
    out = []
    for buf, state in _states(launch, outcome):
        lay = layouts[buf.name]
        if not buf.output and not np.array_equal(as_bits(state.data), as_bits(buf.data)):
            changed = int(np.sum(as_bits(state.data) != as_bits(buf.data)))
            out.append(
                Diagnostic(
                    Kind.OUT_OF_BOUNDS,
                    f"The kernel changed {changed} elements of the input {buf.name}; only the "
                    "output may be written.",
                    kernel=kernel,
                )
            )
        elif buf.output and lay.row_stride != lay.shape[-1]:
            pad = lay.padding(state.data)
            written = int(np.sum(as_bits(pad) != as_bits(lay.padding(buf.data))))
            if written:
                out.append(
                    Diagnostic(
                        Kind.OUT_OF_BOUNDS,
                        f"The kernel wrote {written} elements into the row padding of {buf.name}, "
                        "past the end of a row: rows are a pitch apart, and the pitch is in bytes.",
                        kernel=kernel,
                    )
                )
    return out


def unsteady(
    comparisons: list[Comparison],
    layouts: dict[str, Layout],
    outcome: RunOutcome,
    tol: dict[str, np.ndarray],
    kernel: str,
) -> list[Diagnostic]:
    """A likely race, where the backend ran the case twice (the GPU does) and the wrong
    elements differ between the runs."""
    for cmp in comparisons:
        again = outcome.again.get(cmp.name)
        if again is None:
            continue
        other = compare(cmp.name, cmp.expected, layouts[cmp.name].unpack(again), tol[cmp.name])
        if np.array_equal(cmp.bad, other.bad):
            continue
        return [
            Diagnostic(
                Kind.RACE,
                f"Two runs of this case gave different results: {cmp.mismatches} and "
                f"{other.mismatches} of the {cmp.bad.size} elements of {cmp.name} were wrong. "
                "A result that changes from run to run is likely a race: threads that read "
                "shared memory before the threads that fill it have passed a __syncthreads(), "
                "or blocks that write the same element. Run `grader check` again with "
                "--sanitize to find it (racecheck), or with --backend cpu.",
                kernel=kernel,
                race_scope=RaceScope.RUNS,
            )
        ]
    return []


def output_diagnostics(comparisons: list[Comparison], kernel: str) -> list[Diagnostic]:
    out = []
    for cmp in comparisons:
        missing = int(cmp.unwritten.sum())
        if missing:
            index = tuple(int(i) for i in np.argwhere(cmp.unwritten)[0])
            whole = " (all of it)" if missing == cmp.unwritten.size else ""
            out.append(
                Diagnostic(
                    Kind.UNWRITTEN_OUTPUT,
                    f"{missing} of {cmp.unwritten.size} elements of {cmp.name} were never "
                    f"written{whole}; the first is {cmp.name}{list(index)}.",
                    kernel=kernel,
                )
            )
        nans = int(cmp.nan.sum())
        if nans:
            index = tuple(int(i) for i in np.argwhere(cmp.nan)[0])
            out.append(
                Diagnostic(
                    Kind.NAN,
                    f"{nans} elements of {cmp.name} are NaN, the first {cmp.name}{list(index)} "
                    f"where {float(cmp.expected[index]):.6g} was expected. NaN comes from reading "
                    "memory nobody wrote: shared memory before a __syncthreads, a tile element "
                    "that was never loaded, or the padding of a pitched row.",
                    kernel=kernel,
                )
            )
    return out
