"""The GPU's profiler: launches profiled with Nsight Compute. The GPU worker itself runs
under ncu (nsight.command): it loads each job's module, fills its buffers and constants
and launches its kernels as it runs a case, with every buffer at its exact size and apart
from the others (as under compute-sanitizer), and ncu counts what the lab's kernels did.

Jobs share one ncu session, whose start-up costs seconds: the rows of its log are the
jobs' launches, in order. A job that fails (a kernel that crashes or hangs under ncu, a
module that does not load) ends the session with a note that says why, and the jobs after
it get a new session. Everything a session runs is the student's code: each request to
the worker has a deadline, and what goes wrong is a note on the job, never an exception
(the caller then takes the CPU model's profile).

What ncu counted is cached, in the grader's cache (`nsight/`, evicted with the builds),
by what decides it: the module (the file with the grader's footer, its macros, the
target), the launch (sizes, grid, inputs), the device, nvcc's and ncu's versions and the
metrics asked for. A re-check of the same file costs nothing, nor does the reference on a
device that profiled it before."""

from __future__ import annotations

import hashlib
import json
import re
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from grader import defaults
from grader.backends.cuda import nsight
from grader.backends.cuda.client import WorkerProcess
from grader.backends.cuda.protocol import ArrayTable, Message, encode, encode_launch
from grader.files import write_atomically
from grader.model.launch import Launch
from grader.model.profile import KernelProfile
from grader.toolchain import build_cache, nvcc, scratch

CACHE_FORMAT = 2  # bump when what a cache entry holds, or how it is counted, changes
NOT_COUNTED = (
    "Nsight Compute counts neither loads per thread or block nor constant-memory reads: the "
    "busiest thread's and block's shares and the constant loads are the CPU model's to say."
)
NO_LANES = (
    " This GPU's counters do not say how many lanes took part in each global or shared "
    "request: the idle lanes are the CPU model's to say."
)


def could_not(why: str) -> str:
    """The note of a job Nsight Compute could not profile."""
    return f"Nsight Compute could not profile this kernel: {why.rstrip('.')}."


@dataclass(frozen=True)
class Job:
    """One launch to profile: its module (backend.ModuleSpec: `key` and `load_request()`),
    the launch, and each step's kernel symbol."""

    spec: Any
    launch: Launch
    symbols: tuple[str, ...]


@dataclass
class Measured:
    """What ncu counted in one job: each kernel's counters, by the lab's kernel name,
    summed over its launches; or `note`, why nothing was."""

    counters: dict[str, dict[str, float]] = field(default_factory=dict)
    arch: str = ""
    note: str = ""
    cached: bool = False

    @property
    def ok(self) -> bool:
        return bool(self.counters) and not self.note

    def kernels(self) -> list[KernelProfile]:
        return [nsight.kernel_profile(k, c, self.arch) for k, c in self.counters.items()]

    def dram_bytes(self) -> float | None:
        found = [b for c in self.counters.values() if (b := nsight.dram_bytes(c)) is not None]
        return sum(found) if found else None

    def remarks(self) -> str:
        """What a Profile from these counts cannot say, as its note (judge.profiling's
        case_profile makes the Profile, source nsight-compute, with dram_bytes())."""
        if self.note:
            return self.note
        missing = nsight.tool().missing()
        lanes = {names[3] for names in nsight.TRAFFIC.values()}
        unread = [m for m in missing if m not in lanes]
        asked = f" This ncu was not asked for {', '.join(unread)}." if unread else ""
        return NOT_COUNTED + (NO_LANES if lanes & set(missing) else "") + asked

    def to_json(self) -> dict[str, Any]:
        return {"counters": self.counters, "arch": self.arch}


def measure(
    jobs: list[Job], device: str, timeout: float, prepare: Callable[[Job], None] | None = None
) -> list[Measured]:
    """What ncu counted in each job, from the cache where it counted it before; each
    request to a worker under ncu may take `timeout` seconds. `prepare` is called first
    for each job not cached (to compile its module outside ncu). A run refused for a
    metric this ncu does not know is made again without it."""
    asked: tuple[str, ...] | None = None
    unknown = ""
    while True:
        found = nsight.tool()
        if not found.ok:
            return [Measured(note=could_not(found.why_not)) for _ in jobs]
        if found.metrics() == asked:  # a refusal the cache could not keep: never again
            return [Measured(note=could_not(f"ncu does not know {unknown}")) for _ in jobs]
        asked = found.metrics()
        try:
            return _measured(found, jobs, device, timeout, prepare)
        except UnknownMetrics as refused:
            unknown = str(refused)  # remembered: the tool now asks for fewer


class UnknownMetrics(Exception):
    """ncu refused the run for metrics it does not know (now remembered)."""


def _measured(
    found: nsight.Tool,
    jobs: list[Job],
    device: str,
    timeout: float,
    prepare: Callable[[Job], None] | None,
) -> list[Measured]:
    keys = [key(job, device, found) for job in jobs]
    results = [_cached(k) for k in keys]
    todo = [i for i, result in enumerate(results) if result is None]
    if prepare is not None:
        for index in todo:
            prepare(jobs[index])
    while todo:
        done = _session(found, [jobs[i] for i in todo], timeout)
        for index, measured in zip(todo, done, strict=False):
            results[index] = measured
            if measured.ok:
                _store(keys[index], measured)
        todo = todo[len(done) :]
    return results


def key(job: Job, device: str, found: nsight.Tool) -> str:
    """The cache key of a job's counts: everything that decides them."""
    table = ArrayTable()
    launch = encode_launch(job.launch, list(job.symbols), table)
    decided = [CACHE_FORMAT, job.spec.key, device, nvcc.version(), found.version, found.metrics()]
    digest = hashlib.sha256(json.dumps(decided).encode())
    digest.update(encode(Message({"launch": launch}, table.arrays)))
    return digest.hexdigest()


def _entry(key: str) -> Path:
    return defaults.cache_dir() / "nsight" / f"{key}.json"


def _cached(key: str) -> Measured | None:
    path = _entry(key)
    try:
        data = json.loads(path.read_text())
        counters = {
            str(kernel): {str(name): float(value) for name, value in values.items()}
            for kernel, values in data["counters"].items()
        }
        measured = Measured(counters, str(data["arch"]), cached=True)
    except (OSError, ValueError, TypeError, KeyError, AttributeError):
        return None
    build_cache.used(path)
    return measured


def _store(key: str, measured: Measured) -> None:
    try:
        write_atomically(_entry(key), json.dumps(measured.to_json()))
    except OSError:
        return
    build_cache.stored()


# -- one session ----------------------------------------------------------------------------


def _session(found: nsight.Tool, jobs: list[Job], timeout: float) -> list[Measured]:
    """Profile `jobs` in order in one worker under ncu, until one fails: the Measured of
    each job that ran, then the failed one's. Where ncu or its worker did not start, or
    ncu was refused, every job's."""
    symbols = [s for job in jobs for s in job.symbols]
    with tempfile.TemporaryDirectory(prefix=scratch.prefix("nsight")) as folder:
        log = Path(folder, "ncu.csv")
        worker = WorkerProcess(prefix=nsight.command(found, symbols, len(symbols), log))
        try:
            ran, failure = _run(worker, jobs, timeout)
        finally:
            worker.stop()  # ncu writes the last rows as its worker exits
        text = log.read_text(errors="replace") if log.is_file() else ""
    why = nsight.error(text)
    unknown = nsight.unknown(text, found.metrics())
    if unknown:
        nsight.refuse(metrics=unknown)
        raise UnknownMetrics(", ".join(unknown))
    if nsight.PERMISSION in text:
        nsight.refuse(why)
    if ran is None or nsight.PERMISSION in text:
        return [Measured(note=could_not(why or failure)) for _ in jobs]
    measured = attributed(jobs[:ran], nsight.rows(text), why)
    if ran < len(jobs):
        said = f"; ncu said: {why}" if why and why not in failure else ""
        measured.append(Measured(note=could_not(failure + said)))
    return measured


def _run(worker: WorkerProcess, jobs: list[Job], timeout: float) -> tuple[int | None, str]:
    """Run the jobs in the worker: how many ran to their end, and why the next one did
    not; None where the worker did not start."""
    hello = worker.start()
    if not hello.ok:
        return None, f"the GPU worker did not start under ncu ({hello.reason})"
    for ran, job in enumerate(jobs):
        if job.spec.key not in worker.loaded:
            reply = worker.call(*job.spec.load_request(), timeout=defaults.COMPILE_TIMEOUT)
            if not reply.ok:
                return ran, f"its module did not load ({reply.reason})"
            worker.loaded.add(job.spec.key)
        table = ArrayTable()
        header = {
            "op": "run",
            "key": job.spec.key,
            "launch": encode_launch(job.launch, list(job.symbols), table),
        }
        reply = worker.call(header, table.arrays, timeout)
        worker.take_output()  # the kernel's printf is not shown
        if not reply.ok:
            return ran, f"it did not run to its end under ncu ({reply.reason})"
    return len(jobs), ""


def attributed(jobs: list[Job], rows: list[nsight.Row], why: str) -> list[Measured]:
    """Each job's counters from the session's rows, which are the jobs' launches in
    order. A job whose launches have no rows (and every job after it, whose rows can no
    longer be told apart) gets a note."""
    measured, at = [], 0
    for job in jobs:
        mine = rows[at : at + len(job.symbols)]
        at += len(job.symbols)
        if not _launches_of(job, mine):
            missing = why or "its log holds no count of its launches"
            measured += [Measured(note=could_not(missing)) for _ in jobs[len(measured) :]]
            break
        launches: dict[str, list[nsight.Row]] = {}
        for step, row in zip(job.launch.steps, mine, strict=True):
            launches.setdefault(step.kernel, []).append(row)
        counters = {kernel: nsight.summed(found) for kernel, found in launches.items()}
        measured.append(Measured(counters, mine[0].arch if mine else ""))
    return measured


def _launches_of(job: Job, rows: list[nsight.Row]) -> bool:
    """Whether `rows` are the job's launches, one per step, in order."""
    if len(rows) != len(job.symbols):
        return False
    steps = zip(rows, job.launch.steps, job.symbols, strict=True)
    return all(_names(row, step.kernel, symbol) for row, step, symbol in steps)


def _names(row: nsight.Row, kernel: str, symbol: str) -> bool:
    """Whether ncu's name for a row's kernel is a step's: its mangled symbol or, where ncu
    wrote names demangled, the lab's kernel name before the parameters."""
    return row.kernel == symbol or re.split(r"[\s:]", row.kernel.split("(", 1)[0])[-1] == kernel
