"""`grader batch`: grade every submission in a folder, resumably, in parallel, and write
the course's gradebook, summary and per-student reports.

The secret stays in this process and goes to grading workers over a pipe. Student code
only ever runs inside a worker's backend (sandboxed on the CPU), so what it can reach is
the worker's scrubbed environment, never this process's."""

from __future__ import annotations

import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import TextIO

from grader import defaults, labs, machine
from grader.batch import outputs, summary
from grader.batch.gradebook import Row
from grader.batch.outputs import MANIFEST, Manifest, read_manifest
from grader.batch.progress import Progress
from grader.batch.shard import Shard
from grader.batch.state import (
    RECORD,
    REPORT_HTML,
    REPORT_JSON,
    REPORT_JUNIT,
    Record,
    Settings,
    already_graded,
    secret_fingerprint,
    student_dir,
    write_record,
)
from grader.course import isolation, points, stages
from grader.course.discover import Entry, discover
from grader.course.gpus import physical_device
from grader.course.isolated import failure_result, result_of
from grader.course.pool import BackendInfo, Job, Outcome, Pool, WorkerSpec
from grader.defaults import SECRET_ENV
from grader.errors import GraderError, UsageError
from grader.judge.deadline import default_submission_timeout
from grader.model.lab import Lab
from grader.model.result import Kind, Result
from grader.model.source import read_source
from grader.report import write_reports
from grader.toolchain import nvcc


@dataclass
class BatchReport:
    out: Path
    rows: list[Row]
    counts: summary.Counts  # by status, of the submissions in this shard
    graded: int  # handed to a grading worker in this run
    reused: int  # already graded with the same key
    unsourced: int  # with no one .cu file to grade: none, several, a link (among the errors)
    layout: str
    ignored: list[str]
    seconds: float
    stages: dict[str, float] = field(default_factory=dict)  # grader.course.stages, summed
    window: dict[str, float] = field(default_factory=dict)  # grader.backends.window, summed
    public_only: str | None = None  # what the scores leave out, where the secret was not used


@dataclass(frozen=True)
class Plan:
    """One submission to grade, and the key its folder will carry."""

    entry: Entry
    key: str


def store(out: Path, entry: Entry, key: str | None, result: Result, reason: str = "") -> None:
    """Write the student's reports, then the record that marks the folder complete."""
    folder = student_dir(out, entry.id)
    (folder / RECORD).unlink(missing_ok=True)
    write_reports(
        result,
        json=folder / REPORT_JSON,
        html=folder / REPORT_HTML,
        junit=folder / REPORT_JUNIT,
    )
    write_record(folder, Record.of(entry, key, reason))


def _content(source: Path) -> bytes:
    """What a submission's key covers: its bytes, or for a file that is not read (too
    large, unreadable) the sentence that says why, which names its size."""
    try:
        raw, why = read_source(source)
    except GraderError as error:
        return str(error).encode()
    return raw if raw is not None else why.encode()


def _same_secret(out: Path, settings: Settings) -> None:
    """Refuse to grade into an `out` whose batch record (batch.json) says it was graded
    with another secret, or without one: a rerun would quietly grade every submission
    again and replace its reports."""
    if not (out / MANIFEST).is_file():
        return
    earlier = read_manifest(out).settings.secret
    if earlier == settings.secret:
        return
    how = {
        (True, False): "without a secret, and this run has one",
        (False, True): "with a secret, and this run has none",
    }.get((earlier == "none", settings.secret == "none"), "with another secret")
    raise UsageError(
        f"{out} was graded {how} (its batch.json says so). Running again would grade every "
        "submission again and replace its reports. Give the secret it was graded with "
        f"(--secret or {SECRET_ENV}), grade into another --out, or add --regrade to grade "
        "them all again with this one."
    )


def _without_secret(spec: Lab, secret: str | None, public_only: bool) -> str | None:
    """What this batch's scores will leave out (outputs.left_out), or None when every case
    runs. Refuses a batch without the secret unless `public_only` asks for one (a TA who
    forgot it would publish grades out of the wrong total), and a batch with both."""
    if public_only and secret:
        raise UsageError(
            f"--public-only grades without the secret, and one was given (--secret or "
            f"{SECRET_ENV}): drop one of them."
        )
    note = outputs.left_out(spec, bool(secret))
    if note and not public_only:
        raise UsageError(
            f"No secret was given (--secret or {SECRET_ENV}). "
            f"{points.public_only(spec, ' without it')} Give the secret, or add --public-only "
            "to grade the public cases alone."
        )
    return note


def _plan(out: Path, entries: list[Entry], settings: Settings) -> tuple[list[Plan], int]:
    todo, reused = [], 0
    for entry in entries:
        if entry.source is None:
            continue
        key = settings.key(_content(entry.source))
        if already_graded(out, entry, key):
            reused += 1
        else:
            todo.append(Plan(entry, key))
    return todo, reused


def run_batch(
    lab: str,
    folder: Path,
    out: Path,
    *,
    secret: str | None = None,
    jobs: int = 1,
    gpus: list[int] | None = None,
    timeout: float = defaults.CASE_TIMEOUT,
    submission_timeout: float | None = None,
    backend: str = "auto",
    shard: Shard | None = None,
    timing: bool = True,
    log: TextIO | None = None,
    regrade: bool = False,
    public_only: bool = False,
    profile: bool = False,
) -> BatchReport:
    """Grade the submissions in `folder` (the slice `shard` of them) into `out`.
    Raises GraderError for problems of usage or setup; a submission's own problems,
    crashes and hangs end up in its row. An `out` graded with another secret is refused
    unless `regrade`: every submission would be graded again. Without a secret only
    `public_only` grades a lab that has hidden cases."""
    started = time.monotonic()
    spec = labs.get(lab)
    gpus = list(gpus or [])
    for gpu in gpus:
        physical_device(gpu)  # an index past what is visible is a usage error, now
    found = discover(Path(folder))
    left_out = _without_secret(spec, secret, public_only)
    entries = [e for e in found.entries if shard is None or shard.holds(e.id)]
    settings = Settings(spec.name, backend, timeout, timing, secret_fingerprint(secret), profile)
    out = Path(out)
    if not regrade:
        _same_secret(out, settings)
    out.mkdir(parents=True, exist_ok=True)
    if secret:
        isolation.make_undumpable()  # this process holds the secret from here on
    todo, reused = _plan(out, entries, settings)
    progress = Progress(log, len(todo), reused) if log else None
    deadline = submission_timeout or default_submission_timeout(spec, timeout, timing, secret)
    slots = max(1, jobs, len(gpus))
    plans = {p.entry.id: p for p in todo}
    spent: Counter[str] = Counter()

    def done(outcome: Outcome) -> None:
        plan = plans[outcome.job.id]
        result, reason = result_of(outcome, spec, plan.entry)
        if result is None:
            result = failure_result(
                spec, plan.entry, reason, outcome.kind, pool.backend, secret, timing
            )
        storing = time.monotonic()
        store(out, plan.entry, plan.key, result, reason)
        spent.update({**outcome.stages, stages.REPORTS: time.monotonic() - storing})
        if progress:
            score = f"{result.score:g}/{result.max_score:g}"
            progress.graded(plan.entry.id, score, points.standing(result), outcome.seconds)

    with tempfile.TemporaryDirectory(prefix="grader-gates-") as gates:
        worker_spec = WorkerSpec(
            lab=spec.name,
            backend=backend,
            backend_jobs=max(1, machine.cores() // slots),
            timeout=timeout,
            timing=timing,
            secret=secret,
            gates=Path(gates),
            submission_timeout=deadline,
            profile=profile,
        )
        pool = Pool(worker_spec, slots, gpus)
        if log and left_out:
            log.write(f"{left_out}\n")
        without_nvcc = nvcc.missing_note()  # each report says it too; a TA reads this first
        if log and without_nvcc:
            log.write(f"{without_nvcc}\n")
        if progress:
            progress.start()
        try:
            pool.run([Job(p.entry.id, p.entry.source) for p in todo], done)
        finally:
            pool.close()
    spent[stages.WORKER_START] = pool.start_seconds
    if progress:
        progress.finish()
    info = pool.backend if pool.backend.name else BackendInfo(backend)
    for entry in entries:
        if entry.source is None:
            why = entry.problem
            store(
                out,
                entry,
                None,
                failure_result(spec, entry, why, Kind.INTERFACE, info, secret, timing),
            )
    manifest = Manifest(
        settings=settings,
        students=[e.id for e in entries],
        shard=str(shard) if shard else None,
        layout=found.layout,
        ignored=found.ignored,
    )
    rows = outputs.write_course_files(out, manifest)
    return BatchReport(
        out=out,
        rows=rows,
        counts=summary.counts(rows),
        graded=pool.graded,
        reused=reused,
        unsourced=sum(e.source is None for e in entries),
        layout=found.layout,
        ignored=found.ignored,
        seconds=time.monotonic() - started,
        stages={name: spent[name] for name in stages.STAGES},
        window={name: spent[name] for name in stages.WINDOW},
        public_only=left_out,
    )
