"""The cuda backend: nvcc for the compile report, a PyCUDA worker process for running,
timing and sanitizing. The grader process itself never imports PyCUDA.

Every case runs twice: once with each buffer's start flush against unmapped memory, once
with its end (see vmm). An access just outside a buffer stops the kernel in one of the
two runs; further runs with one buffer at a time against unmapped memory then name it,
and compute-sanitizer, where installed, names the thread and the line. Two runs that
both finish give the grader two results to compare: results that differ point to a race."""

from __future__ import annotations

import hashlib
import json
import tempfile
import threading
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from grader import defaults
from grader.backends import window
from grader.backends.base import Backend, BackendUnavailable
from grader.backends.cuda import census as counting
from grader.backends.cuda import errors, profiler, sanitizer, vmm
from grader.backends.cuda.client import Reply, WorkerProcess, first_worker
from grader.backends.cuda.probe import describe, device_info, forget
from grader.backends.cuda.profiler import Measured
from grader.backends.cuda.protocol import ArrayTable, encode_launch
from grader.backends.timing import TimingCheck
from grader.model.interface import Executed, LaunchDefaults
from grader.model.launch import BufferState, Build, Launch, RunOutcome, Timing
from grader.model.result import Diagnostic, Kind
from grader.model.source import Submission
from grader.toolchain import nvcc, sandbox

SANITIZE_TIMEOUT = 60.0  # seconds for one launch under memcheck, to name a fault's line
SANITIZE_PARALLEL = 3  # sanitized workers at once
UNGUARDED = (
    "This GPU's driver offers no virtual memory management, so buffers are not placed "
    "against unmapped memory: a read just outside a buffer goes unseen without --sanitize."
)
# Failures in these phases under compute-sanitizer, unless they are a kernel's own error
# surfacing late, mean that the tool, not the kernel, failed.
_SETUP_PHASES = ("init", "load", "alloc", "constant", "copy")
# What the driver says when a kernel touches unmapped memory.
_FAULT = "CUDA_ERROR_ILLEGAL_ADDRESS"
# The side of a buffer a run's placement leaves flush against unmapped memory.
_EDGE = {vmm.START: "before the start of", vmm.END: "past the end of"}


@dataclass(frozen=True)
class ModuleSpec:
    """What the worker loads: the cubin nvcc.inspect made of the build, as it saw it."""

    key: str
    cubin: bytes
    arch: str
    nvcc: str  # for the grader's helpers, which PyCUDA compiles: nvcc.sandboxed_nvcc()
    variables: tuple[str, ...] = ()  # __device__ symbols every run starts from as loaded
    census: tuple[str, str] | None = None  # the counters' name and the instrumented PTX

    def load_request(self) -> tuple[dict, list[np.ndarray]]:
        """The load request's header and its one array, the cubin's bytes."""
        request = {
            "op": "load",
            "key": self.key,
            "arch": self.arch,
            "nvcc": self.nvcc,
            "variables": list(self.variables),
        }
        if self.census is not None:
            request["census"] = {"name": self.census[0], "ptx": self.census[1]}
        return request, [np.frombuffer(self.cubin, np.uint8)]


def sanitizer_available() -> bool:
    """Whether compute-sanitizer is installed (sanitize() says it is unavailable without it)."""
    return sanitizer.find() is not None


class CudaBackend(Backend):
    name = "cuda"

    def __init__(self, allow_unsandboxed: bool = False) -> None:
        super().__init__()
        self.allow_unsandboxed = allow_unsandboxed  # compilers without landlock
        self.info = device_info()
        if not self.info["ok"]:
            raise BackendUnavailable(self.info["reason"])
        # started now (or by start_early, sooner), so that its CUDA start-up overlaps
        # the compiles and inputs
        self._worker: WorkerProcess | None = first_worker()
        self._lock = threading.Lock()
        self._guarded = True  # the worker places buffers against unmapped memory
        self._blamed: list[str] = []  # buffers found out of bounds, most recent first
        # (build, side) -> the buffer found there, or None for an access far from all:
        # later cases of the build that stop on that side are not located again, since
        # each run that stops costs a worker
        self._located: dict[tuple[str, str], str | None] = {}
        self._sanitized: set[tuple[str, str, str]] = set()  # (build, buffer, side) explained
        # A batch's GPU gate (grader.backends.gate.paths), which the worker holds alone
        # for a case's or a timing's GPU work, from its buffers placed to their freeing;
        # None: no other process shares it.
        self.launch_gate: tuple[str, str] | None = None
        # the run requests' phases (grader.backends.window.CASE_PHASES), summed per run()
        self._window: Counter[str] = Counter()

    def device(self) -> str:
        return describe(self.info)

    def measures_speed(self) -> bool:
        return True

    # -- build ----------------------------------------------------------------------------

    def build(
        self,
        submission: Submission,
        macros: dict[str, int],
        launch_defaults: LaunchDefaults,
        census: bool = False,
    ) -> Build:
        arch = self.info["arch"]
        self.note(sandbox.compile_isolation(self.allow_unsandboxed))
        inspection = nvcc.inspect(submission, macros, launch_defaults, arch=arch)
        spec = None
        if inspection.compile.ok and inspection.interface is not None:
            options = ("-lineinfo", *nvcc.macro_flags(macros))
            # with a census, the PTX nvcc.inspect made (the same compile) with counters
            counted = None
            if census:
                name = counting.symbol()
                counted = (name, counting.instrument(inspection.ptx, name))
            compiler = nvcc.sandboxed_nvcc()  # its name tells nvcc's version
            blob = json.dumps([inspection.source, options, arch, counted, compiler])
            key = hashlib.sha256(blob.encode()).hexdigest()
            variables = tuple(inspection.interface.device_variables())
            spec = ModuleSpec(key, inspection.cubin, arch, compiler, variables, counted)
        return Build(
            submission,
            dict(macros),
            inspection.compile,
            inspection.interface,
            list(inspection.diagnostics),
            artifact=spec,
        )

    # -- run ------------------------------------------------------------------------------

    def run(self, build: Build, launch: Launch, timeout: float) -> RunOutcome:
        spec, symbols = _prepared(build, launch)
        started = time.monotonic()
        names = [b.name for b in launch.buffers()]
        with self._lock:
            self._window.clear()
            first, fault = self._once(spec, symbols, launch, timeout, vmm.START)
            if first.completed:
                second, fault = self._once(spec, symbols, launch, timeout, vmm.END)
                outcome = _merged(first, second) if second.completed else second
                if fault and any(s.written_after for s in first.buffers.values()):
                    outcome, fault = first, False  # the judge names the writes past the end
            else:
                outcome = first
            if spec.census is not None and outcome.completed:
                outcome.executed = self._census(spec, symbols, launch, timeout)
            if fault and self._guarded:
                side = vmm.START if not first.completed else vmm.END
                if (spec.key, side) not in self._located:
                    found = self._locate(spec, symbols, launch, timeout, side, names)
                    self._located[(spec.key, side)] = found
                name = self._located[(spec.key, side)]
                if name is not None:
                    found = self._explain(build, spec, symbols, outcome, launch, name, side)
                else:  # shared memory, or an address far from every buffer
                    key = (spec.key, "", side)
                    found = self._memcheck(build, spec, symbols, launch, key, launch.kernel)
                if found:
                    others = [d for d in outcome.diagnostics if d.kind != Kind.CRASH]
                    outcome.diagnostics = [*found, *others]
            outcome.window = dict(self._window)
        outcome.seconds = time.monotonic() - started
        return outcome

    def _once(
        self, spec: ModuleSpec, symbols: list[str], launch: Launch, timeout: float, sides
    ) -> tuple[RunOutcome, bool]:
        """One run with every buffer at `sides` (one side for all, or one per buffer), and
        whether it stopped at unmapped memory."""
        if isinstance(sides, str):
            sides = {b.name: sides for b in launch.buffers()}
        worker, failure = self._ready(spec, launch.kernel)
        if failure is not None:
            return failure, False
        table = ArrayTable()
        header = {
            "op": "run",
            "key": spec.key,
            "launch": encode_launch(launch, symbols, table),
            "sides": sides,
            "gate": self.launch_gate,
        }
        reply = self._call(worker, header, table.arrays, timeout)
        outcome = self._outcome(worker, reply, launch, timeout)
        known = errors.lookup(reply.error.get("message", "")) if reply.message else None
        return outcome, known is not None and known.name == _FAULT

    def _call(self, worker: WorkerProcess, header: dict, arrays: list, timeout: float) -> Reply:
        """A run request, its phases added to this run's (only bench/batch.py reads them)."""
        reply = worker.call(header, arrays, timeout)
        if reply.ok:
            sent = reply.message.header.get("window")
            self._window.update(window.read(sent, window.CASE_PHASES))
        return reply

    def _census(
        self, spec: ModuleSpec, symbols: list[str], launch: Launch, timeout: float
    ) -> dict[str, Executed]:
        """What each kernel executed, counted by one more run of the launch on the census
        module (census.py), with room around every buffer; nothing where that run fails,
        and then the module's instructions decide the rules (grader.judge.rules)."""
        worker, failure = self._ready(spec, launch.kernel)
        if failure is not None:
            return {}
        table = ArrayTable()
        header = {
            "op": "run",
            "key": spec.key,
            "launch": encode_launch(launch, symbols, table),
            "sides": {b.name: vmm.ROOMY for b in launch.buffers()},
            "census": spec.census[0],
            "gate": self.launch_gate,
        }
        reply = self._call(worker, header, table.arrays, timeout)
        worker.take_output()  # the case's own run showed its printf
        if not reply.ok:
            if reply.timed_out or reply.died or reply.error.get("sticky", True):
                self._discard()
            return {}
        counted = reply.message.header.get("executed", {})
        return {k: Executed(shared_loads=v[0], atomics=v[1]) for k, v in counted.items()}

    def _locate(
        self,
        spec: ModuleSpec,
        symbols: list[str],
        launch: Launch,
        timeout: float,
        side: str,
        names,
    ) -> str | None:
        """The buffer whose `side` the kernel strays past: the one that, alone flush
        against unmapped memory there, stops the kernel. None when the kernel stops even
        with room around every buffer (an access far from all of them)."""
        roomy = dict.fromkeys(names, vmm.ROOMY)
        outcome, fault = self._once(spec, symbols, launch, timeout, roomy)
        if fault or not outcome.completed:
            return None
        for name in sorted(names, key=self._suspicion):
            _, fault = self._once(spec, symbols, launch, timeout, {**roomy, name: side})
            if fault:
                self._blamed = [name, *(n for n in self._blamed if n != name)]
                return name
        return None

    def _suspicion(self, name: str) -> int:
        """Buffers found straying before come first, most recent first."""
        return self._blamed.index(name) if name in self._blamed else len(self._blamed)

    def _explain(
        self,
        build: Build,
        spec: ModuleSpec,
        symbols: list[str],
        outcome: RunOutcome,
        launch: Launch,
        name: str,
        side: str,
    ) -> list[Diagnostic]:
        """The out_of_bounds finding for `name`; compute-sanitizer's, naming the thread
        and the line, where it is installed (once per build, buffer and side)."""
        size = next(b.data.size for b in launch.buffers() if b.name == name)
        where = _EDGE[side]
        kernel = next(
            (d.kernel for d in outcome.diagnostics if d.kind == Kind.CRASH and d.kernel),
            launch.kernel,
        )
        located = Diagnostic(
            Kind.OUT_OF_BOUNDS,
            f"{kernel} read or wrote {where} {name} ({size} elements): the GPU stopped "
            f"it at the first access outside the buffer, which the grader puts flush against "
            f"unmapped memory. {errors.SANITIZE_HINT}",
            kernel=kernel,
        )
        key = (spec.key, name, side)
        return self._memcheck(build, spec, symbols, launch, key, kernel) or [located]

    def _memcheck(
        self,
        build: Build,
        spec: ModuleSpec,
        symbols: list[str],
        launch: Launch,
        key: tuple[str, str, str],
        kernel: str,
    ) -> list[Diagnostic]:
        """compute-sanitizer memcheck's out_of_bounds findings for the launch, naming the
        buffer, the __shared__ memory or the address, the thread and the line; none where
        it is not installed, fails, or `key` (build, buffer or "" for none, side) was
        explained already: each costs a run under the tool."""
        executable = sanitizer.find()
        if executable is None or key in self._sanitized:
            return []
        self._sanitized.add(key)
        try:
            found = _sanitize_one(executable, "memcheck", spec, launch, symbols, SANITIZE_TIMEOUT)
        except BackendUnavailable:
            return []
        context = sanitizer.Context(
            kernel=kernel,
            submission=build.submission.name,
            student_lines=len(build.submission.text.splitlines()),
            sizes=tuple(launch.sizes()),
        )
        return [d for d in sanitizer.diagnostics(found, context) if d.kind == Kind.OUT_OF_BOUNDS]

    def load(self, build: Build) -> None:
        if build.ok and isinstance(build.artifact, ModuleSpec):
            with self._lock:
                self._ready(build.artifact, "")  # a failure is run's to report

    def _ready(self, spec: ModuleSpec, kernel: str) -> tuple[WorkerProcess, RunOutcome | None]:
        """A live worker with `spec` loaded, or the outcome that says why there is none."""
        worker = self._worker
        if worker is None or (worker.connected and not worker.alive):
            worker = self._worker = WorkerProcess()
        if not worker.connected:
            hello = worker.start()
            if not hello.ok:
                self._discard()
                forget()  # the device said yes before: the next grading asks it again
                return worker, _crash(kernel, f"The GPU worker could not start: {hello.reason}")
            self._guarded = bool(hello.message.header["device"].get("guarded"))
            if not self._guarded:
                self.note(UNGUARDED)
        if spec.key not in worker.loaded:
            reply = worker.call(*spec.load_request(), timeout=defaults.COMPILE_TIMEOUT)
            if not reply.ok:
                self._discard()
                return worker, _crash(
                    kernel, f"The module could not be loaded on the GPU: {reply.reason}"
                )
            worker.loaded.add(spec.key)
        return worker, None

    def _discard(self) -> None:
        if self._worker is not None:
            self._worker.kill()
            self._worker = None

    def _outcome(
        self, worker: WorkerProcess, reply: Reply, launch: Launch, timeout: float
    ) -> RunOutcome:
        text, size = worker.take_output()
        outcome = RunOutcome(output=text)
        if size > defaults.OUTPUT_LIMIT:
            outcome.diagnostics.append(_flood(launch.kernel, size))
        if reply.ok:
            outcome.buffers = _states(reply)
            return outcome
        if reply.timed_out:
            self._discard()
            outcome.timed_out = True
            outcome.diagnostics.append(_timeout(_kernels(launch), timeout))
            return outcome
        outcome.crashed = True
        error = reply.error
        if reply.died or error.get("sticky", True):
            self._discard()
        step = _failed_step(reply, launch)
        if reply.died or error.get("phase") == "internal":
            outcome.diagnostics.append(
                Diagnostic(
                    Kind.CRASH,
                    f"{_kernels(launch)} could not be run: {reply.reason}",
                    kernel=launch.kernel,
                )
            )
        else:
            outcome.diagnostics.append(
                errors.diagnostic(
                    error["message"], step.kernel, _shape(step), error["phase"] == "launch"
                )
            )
        return outcome

    # -- time -----------------------------------------------------------------------------

    def time(
        self,
        student: Build,
        reference: Build,
        launches: tuple[Launch, Launch],
        budget: float,
        check: TimingCheck | None = None,
    ) -> Timing:
        check = check or TimingCheck(seed=0)
        s_spec, s_symbols = _prepared(student, launches[0])
        r_spec, r_symbols = _prepared(reference, launches[1])
        with self._lock:
            for spec, launch in ((s_spec, launches[0]), (r_spec, launches[1])):
                worker, failure = self._ready(spec, launch.kernel)
                if failure is not None:
                    return Timing([], [], note=failure.diagnostics[0].message)
            table = ArrayTable()
            header = {
                "op": "time",
                "student": {
                    "key": s_spec.key,
                    "launch": encode_launch(launches[0], s_symbols, table),
                },
                "reference": {
                    "key": r_spec.key,
                    "launch": encode_launch(launches[1], r_symbols, table),
                },
                "budget": budget,
                "check": check.to_json(),
                "helpers": {"nvcc": s_spec.nvcc, "arch": s_spec.arch},
                "gate": self.launch_gate,
            }
            reply = worker.call(header, table.arrays, budget + defaults.TIMING_GRACE)
            worker.take_output()  # printf during timing is not shown
            if reply.ok:
                return _timing(reply)
            if reply.timed_out or reply.died or reply.error.get("sticky", True):
                self._discard()
        if reply.timed_out:
            return Timing(
                [],
                [],
                note=f"Timing was stopped: the kernels ran past the "
                f"{budget + defaults.TIMING_GRACE:g} s allowed for timing.",
            )
        return Timing([], [], note=f"Timing failed: {reply.reason}")

    # -- profile --------------------------------------------------------------------------

    def nsight(self, runs: list[tuple[Build, Launch]], timeout: float) -> list[Measured]:
        """What Nsight Compute counted in each launch of its build, by kernel (summed
        over its launches), from the cache where this device counted it before. Where ncu
        is not installed, may not run here, or the kernel fails under it, that launch's
        Measured says why in a note, and the caller takes the CPU model's profile. Each
        request to a worker under ncu may take `timeout` seconds."""
        jobs = []
        for build, launch in runs:
            spec, symbols = _prepared(build, launch)
            jobs.append(profiler.Job(spec, launch, tuple(symbols)))
        return profiler.measure(jobs, describe(self.info), timeout, self._compiled)

    def _compiled(self, job: profiler.Job) -> None:
        """The job's module loaded here first, so that a module that does not load fails
        outside ncu and the worker under ncu finds the helpers' cached cubin (as a
        sanitized worker does); a failure is the run's to report."""
        with self._lock:
            self._ready(job.spec, job.launch.kernel)

    # -- sanitize -------------------------------------------------------------------------

    def sanitize(
        self, build: Build, launches: list[Launch], timeout: float
    ) -> list[list[Diagnostic]]:
        executable = sanitizer.find()
        if executable is None:
            raise BackendUnavailable(
                "compute-sanitizer is not installed; it comes with the CUDA toolkit."
            )
        nothing: list[list[Diagnostic]] = [[] for _ in launches]
        if not launches:
            return nothing
        prepared = [(launch, *_prepared(build, launch)) for launch in launches]
        spec = prepared[0][1]
        with self._lock:  # load once here, so that sanitized workers find the helpers' cubin
            _, failure = self._ready(spec, launches[0].kernel)
        if failure is not None:
            return nothing
        context = sanitizer.Context(
            kernel=launches[0].kernel,
            submission=build.submission.name,
            student_lines=len(build.submission.text.splitlines()),
            sizes=tuple(launches[0].sizes()),
        )
        jobs = [
            (index, tool)
            for tool in sanitizer.TOOLS
            for index in range(1 if tool in sanitizer.FIRST_LAUNCH_ONLY else len(prepared))
        ]

        def one(job: tuple[int, str]) -> list[sanitizer.Finding]:
            launch, _, symbols = prepared[job[0]]
            return _sanitize_one(executable, job[1], spec, launch, symbols, timeout)

        # Each tool and launch in a process of its own; a few at once, as most of their
        # time is the sanitizer's start-up, not the GPU.
        findings: list[list[sanitizer.Finding]] = [[] for _ in launches]
        with ThreadPoolExecutor(max_workers=min(len(jobs), SANITIZE_PARALLEL)) as pool:
            for (index, _), found in zip(jobs, pool.map(one, jobs), strict=True):
                findings[index] += found
        return [sanitizer.diagnostics(found, context) for found in findings]

    def close(self) -> None:
        with self._lock:
            if self._worker is not None:
                self._worker.release()
                self._worker = None


# -- helpers ------------------------------------------------------------------------------


def _prepared(build: Build, launch: Launch) -> tuple[ModuleSpec, list[str]]:
    """The build's module and each step's kernel symbol. A build that did not compile, or
    a launch the interface check should have refused, is the caller's bug."""
    if not build.ok or not isinstance(build.artifact, ModuleSpec):
        raise ValueError(f"{build.submission.name} did not compile for this backend")
    symbols = []
    for step in launch.steps:
        sig = build.interface.kernels.get(step.kernel)
        if sig is None:
            raise ValueError(f"{build.submission.name} has no kernel {step.kernel!r}")
        symbols.append(sig.symbol)
    for name, values in launch.constants.items():
        const = build.interface.constants.get(name)
        if const is None or const.size != 4 * np.asarray(values).size:
            have = "no such symbol" if const is None else f"{const.size} bytes"
            raise ValueError(
                f"__constant__ {name}: the launch sends {4 * np.asarray(values).size} bytes, "
                f"the module has {have}"
            )
    return build.artifact, symbols


def _failed_step(reply: Reply, launch: Launch) -> Launch:
    """The step the worker says failed (the first, where it does not say)."""
    kernel = reply.message.header.get("kernel") if reply.message else None
    return next((step for step in launch.steps if step.kernel == kernel), launch)


def _kernels(launch: Launch) -> str:
    """The launch's kernels, as a sentence names them: "scan, scan_sums or add_sums"."""
    names = [step.kernel for step in launch.steps]
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} or {names[-1]}"


def _sanitize_one(
    executable: str,
    tool: str,
    spec: ModuleSpec,
    launch: Launch,
    symbols: list[str],
    timeout: float,
) -> list[sanitizer.Finding]:
    """Run one launch under `tool` in a worker of its own (so every address in the log
    belongs to this launch's buffers), and return the findings with those buffers."""
    with tempfile.TemporaryDirectory(prefix="grader-sanitizer-") as tmp:
        log = Path(tmp, f"{tool}.log")
        worker = WorkerProcess(prefix=sanitizer.command(executable, tool, log, []))
        try:
            reply = worker.start()
            if reply.ok:
                reply = worker.call(*spec.load_request(), timeout=defaults.COMPILE_TIMEOUT)
            if not reply.ok:
                _refuse(tool, reply, log, worker)
            table = ArrayTable()
            header = {"op": "run", "key": spec.key, "launch": encode_launch(launch, symbols, table)}
            reply = worker.call(header, table.arrays, timeout)
            if _sanitizer_failed(reply):
                _refuse(tool, reply, log, worker)
        finally:
            worker.stop()
        text = log.read_text(errors="replace") if log.exists() else ""
    addresses = reply.message.header.get("addresses", {}) if reply.message else {}
    ranges = [sanitizer.BufferRange(n, a, b) for n, (a, b) in addresses.items()]
    found = sanitizer.parse(text, tool)
    for finding in found:
        finding.buffers = ranges
    return found


def _sanitizer_failed(reply: Reply) -> bool:
    error = reply.error
    if error.get("phase") == "internal":  # the worker's own bug: no findings to trust
        return True
    if error.get("phase") not in _SETUP_PHASES:
        return False
    known = errors.lookup(error.get("message", ""))
    return known is None or not known.sticky


def _refuse(tool: str, reply: Reply, log: Path, worker: WorkerProcess) -> None:
    worker.stop()
    text = log.read_text(errors="replace") if log.exists() else ""
    printed, _ = worker.take_output()
    why = sanitizer.refusal(text, "\n".join([worker.stderr_tail(), printed, reply.reason]))
    raise BackendUnavailable(
        f"compute-sanitizer --tool {tool} cannot check kernels on this machine: {why}"
    )


def _merged(first: RunOutcome, second: RunOutcome) -> RunOutcome:
    """The first run, with what the second saw before each buffer's start (only the
    second has slack there), and the second's buffers to compare with the first's."""
    for name, state in first.buffers.items():
        state.written_before = second.buffers[name].written_before
    known = {(d.kind, d.message) for d in first.diagnostics}
    first.diagnostics += [d for d in second.diagnostics if (d.kind, d.message) not in known]
    first.again = {name: state.data for name, state in second.buffers.items()}
    return first


def _timing(reply: Reply) -> Timing:
    head = reply.message.header
    return Timing(
        list(head["student_ms"]),
        list(head["reference_ms"]),
        head["note"],
        checked=int(head["checked"]),
        samples=dict(zip(head["sampled"], reply.message.arrays, strict=True)),
        ceilings={k: float(v) for k, v in head["ceilings"].items()},
        check_seconds=float(head["check_seconds"]),
        window=window.read(head.get("window")),
    )


def _states(reply: Reply) -> dict[str, BufferState]:
    head = reply.message.header
    return {
        info["name"]: BufferState(
            data=data,
            written_before=info["written_before"],
            written_after=info["written_after"],
            first_after=info["first_after"],
        )
        for info, data in zip(head["buffers"], reply.message.arrays, strict=True)
    }


def _shape(launch: Launch) -> str:
    grid = ",".join(str(v) for v in launch.grid)
    block = ",".join(str(v) for v in launch.block)
    return (
        f"grid ({grid}), block ({block}) and {launch.shared_bytes} bytes of dynamic shared memory"
    )


def _crash(kernel: str, message: str) -> RunOutcome:
    return RunOutcome(crashed=True, diagnostics=[Diagnostic(Kind.CRASH, message, kernel=kernel)])


def _timeout(kernel: str, timeout: float) -> Diagnostic:
    return Diagnostic(
        Kind.TIMEOUT,
        f"{kernel} did not finish within {timeout:g} s: look for a loop whose condition never "
        "changes (a counter that is not incremented, or a bound that is read from the wrong "
        "variable), or a __syncthreads() that some threads of a block never reach.",
        kernel=kernel,
    )


def _flood(kernel: str, size: int) -> Diagnostic:
    return Diagnostic(
        Kind.OUTPUT,
        f"{kernel} printed {size} bytes; only the first {defaults.OUTPUT_LIMIT} are kept. "
        "Remove printf calls from the kernel before submitting: they slow it down.",
        kernel=kernel,
    )
