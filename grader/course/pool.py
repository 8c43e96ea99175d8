"""Running grading workers in parallel, with a deadline per submission enforced from
outside.

One loop in the batch's own process hands submissions to workers (grader.course.grading_worker),
reads their answers and watches the clock. A worker that passes its submission's deadline,
dies, or sends anything but the answer it was asked for is killed with everything it
started; its submission gets a failure naming why, and a fresh worker takes the slot. The
deadline starts when the submission is handed over, so a worker's start-up (importing
PyCUDA, creating a context, building what the machine builds once: Backend.prepare) is
never charged to a submission."""

from __future__ import annotations

import contextlib
import json
import os
import selectors
import signal
import subprocess
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from grader import labs, spawn
from grader.course import isolation, stages
from grader.course.gpus import DEVICES_ENV, gate_name, physical_device
from grader.errors import SetupError
from grader.model.result import Kind
from grader.toolchain import scratch

START_TIMEOUT = 180.0  # seconds for a worker to open its backend
EXIT_TIMEOUT = 30.0  # seconds for a worker that closed its answers to exit
START_ATTEMPTS = 3  # workers in a row that die before they are ready: the machine is broken
MAX_MESSAGE = 64 * 1024 * 1024  # bytes in one answer; more is not the grader talking
STDERR_TAIL = 4096  # bytes of a worker's stderr kept to explain its death


@dataclass(frozen=True)
class Job:
    id: str
    path: Path


@dataclass
class Outcome:
    """A job's report (the JSON contract as a dict), or why there is none."""

    job: Job
    report: dict[str, Any] | None = None
    failure: str = ""
    kind: Kind = Kind.CRASH
    seconds: float = 0.0
    stages: dict[str, float] = field(default_factory=dict)  # grader.course.stages


@dataclass(frozen=True)
class WorkerSpec:
    """What every worker grades with. `secret` goes over the pipe, never into argv or env."""

    lab: str
    backend: str
    backend_jobs: int
    timeout: float
    timing: bool
    secret: str | None
    gates: Path
    submission_timeout: float
    profile: bool = False  # on a GPU, Nsight Compute's profiles for why this speed


@dataclass
class BackendInfo:
    """What the workers said about their backend once ready."""

    name: str = ""
    device: str = ""
    speed: bool = False


@dataclass
class _Worker:
    slot: int
    process: subprocess.Popen
    inbox: int  # our write end
    outbox: int  # our read end of its answers
    errors: int  # our read end of its stderr
    started: float
    ready: bool = False
    leaving: bool = False  # it said its last answer: it takes no more jobs
    job: Job | None = None
    nonce: str = ""
    deadline: float = 0.0
    sent_at: float = 0.0
    buffer: bytearray = field(default_factory=bytearray)
    tail: bytearray = field(default_factory=bytearray)

    def stderr_tail(self) -> str:
        text = self.tail.decode("utf-8", errors="replace").strip()
        return text.splitlines()[-1] if text else ""


class Pool:
    """`slots` workers, worker i on GPU gpus[i % len(gpus)] when GPUs are given."""

    def __init__(self, spec: WorkerSpec, slots: int, gpus: list[int]) -> None:
        self.spec = spec
        self.slots = [(i, gpus[i % len(gpus)] if gpus else None) for i in range(slots)]
        self.workers: dict[int, _Worker] = {}
        self.selector = selectors.DefaultSelector()
        self.backend = BackendInfo()
        self.start_failures = 0
        self.graded = 0  # submissions handed to a worker
        self.start_seconds = 0.0  # from each worker's start to its being ready, summed

    # -- workers ---------------------------------------------------------------------------

    def _spawn(self, slot: int, gpu: int | None) -> _Worker:
        to_worker_r, to_worker_w = os.pipe()
        from_worker_r, from_worker_w = os.pipe()
        errors_r, errors_w = os.pipe()
        extra = {DEVICES_ENV: physical_device(gpu)} if gpu is not None else {}
        try:
            process = subprocess.Popen(
                spawn.python_module(
                    "grader.course.grading_worker",
                    str(os.getpid()),
                    str(to_worker_r),
                    str(from_worker_w),
                ),
                stdin=subprocess.DEVNULL,
                stdout=errors_w,
                stderr=errors_w,
                pass_fds=(to_worker_r, from_worker_w),
                start_new_session=True,  # its own process group, killed as one
                env=spawn.helper_env(extra),
            )
        finally:
            for fd in (to_worker_r, from_worker_w, errors_w):
                os.close(fd)
        worker = _Worker(slot, process, to_worker_w, from_worker_r, errors_r, time.monotonic())
        os.set_blocking(from_worker_r, False)
        os.set_blocking(errors_r, False)
        self.selector.register(from_worker_r, selectors.EVENT_READ, (worker, "outbox"))
        self.selector.register(errors_r, selectors.EVENT_READ, (worker, "errors"))
        start = {
            "lab": self.spec.lab,
            "lab_roots": [str(root) for root in labs.course_roots()],
            "backend": self.spec.backend,
            "backend_jobs": self.spec.backend_jobs,
            "timeout": self.spec.timeout,
            "timing": self.spec.timing,
            "profile": self.spec.profile,
            "secret": self.spec.secret,
            "gates": str(self.spec.gates),
            "gate": gate_name(gpu),
        }
        self._write(worker, start)
        self.workers[slot] = worker
        return worker

    def _write(self, worker: _Worker, message: dict[str, Any]) -> None:
        data = (json.dumps(message) + "\n").encode()
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(worker.inbox, view) :]
        except BrokenPipeError:
            pass  # it died; its end of the outbox will say so

    def _retire(self, worker: _Worker) -> None:
        """Kill the worker and all it started, and forget it."""
        if worker.process.poll() is None:
            isolation.kill_tree(worker.process.pid)
        # if it outlasts this, init reaps it: it was sent SIGKILL and cannot run again
        with contextlib.suppress(subprocess.TimeoutExpired):
            worker.process.wait(timeout=10)
        for fd in (worker.outbox, worker.errors):
            self.selector.unregister(fd)
            os.close(fd)
        os.close(worker.inbox)
        self.workers.pop(worker.slot, None)

    def close(self) -> None:
        for worker in list(self.workers.values()):
            self._retire(worker)
        self.selector.close()
        scratch.sweep()  # the killed workers could not remove their scratch folders

    # -- the loop --------------------------------------------------------------------------

    def run(self, jobs: list[Job], done: Callable[[Outcome], None]) -> None:
        """Grade every job; `done` gets each outcome as it comes, in completion order."""
        pending = deque(jobs)
        while pending or any(w.job for w in self.workers.values()):
            for slot, gpu in self.slots:
                if slot not in self.workers and pending:
                    self._spawn(slot, gpu)
            for worker in list(self.workers.values()):
                if worker.ready and not worker.leaving and worker.job is None and pending:
                    self._hand_over(worker, pending.popleft())
            self._wait(done)
            self._enforce_deadlines(done)

    def _hand_over(self, worker: _Worker, job: Job) -> None:
        worker.job, worker.nonce = job, os.urandom(16).hex()
        worker.sent_at = time.monotonic()
        worker.deadline = worker.sent_at + self.spec.submission_timeout
        self.graded += 1
        self._write(worker, {"nonce": worker.nonce, "path": str(job.path)})

    def _next_deadline(self) -> float:
        now = time.monotonic()
        ends = [
            w.deadline if w.job or w.leaving else w.started + START_TIMEOUT
            for w in self.workers.values()
            if w.job or w.leaving or not w.ready
        ]
        return max(0.0, min(ends) - now) if ends else 1.0

    def _wait(self, done: Callable[[Outcome], None]) -> None:
        for key, _ in self.selector.select(self._next_deadline()):
            worker, stream = key.data
            if worker.slot not in self.workers or self.workers[worker.slot] is not worker:
                continue  # retired earlier in this round
            if stream == "errors":
                self._read_errors(worker)
            else:
                self._read_answers(worker, done)

    def _read_errors(self, worker: _Worker) -> None:
        """Keep the end of what the worker wrote to stderr, reading all there is now."""
        while True:
            try:
                chunk = os.read(worker.errors, 65536)
            except BlockingIOError:
                return
            if not chunk:
                return
            worker.tail = (worker.tail + chunk)[-STDERR_TAIL:]

    def _read_answers(self, worker: _Worker, done: Callable[[Outcome], None]) -> None:
        try:
            chunk = os.read(worker.outbox, 1 << 20)
        except BlockingIOError:
            return
        if not chunk:
            self._died(worker, done)
            return
        worker.buffer += chunk
        if len(worker.buffer) > MAX_MESSAGE:
            self._tampered(worker, done, "an answer too large to be the grader's")
            return
        while b"\n" in worker.buffer and worker.slot in self.workers:
            line, _, rest = worker.buffer.partition(b"\n")
            worker.buffer = bytearray(rest)
            self._answer(worker, line, done)

    def _answer(self, worker: _Worker, line: bytes, done: Callable[[Outcome], None]) -> None:
        try:
            message = json.loads(line)
            kind = message["type"]
        except (ValueError, TypeError, KeyError):
            self._tampered(worker, done, "a line that is not the grader's")
            return
        if kind == "setup_error":
            self._retire(worker)
            raise SetupError(message.get("message", "A grading worker could not start."))
        if kind == "ready":
            worker.ready = True
            self.start_seconds += time.monotonic() - worker.started
            self.start_failures = 0
            self.backend = BackendInfo(message["backend"], message["device"], message["speed"])
            return
        if worker.job is None or message.get("nonce") != worker.nonce:
            self._tampered(worker, done, "an answer to a question it was not asked")
            return
        job, seconds = worker.job, time.monotonic() - worker.sent_at
        worker.job = None
        worker.leaving = bool(message.get("last"))
        worker.deadline = time.monotonic() + EXIT_TIMEOUT  # for leaving: to be gone by then
        if kind == "result":
            spent = stages.read(message.get("stages"))
            done(Outcome(job, report=message["result"], seconds=seconds, stages=spent))
        else:  # "failed": on the file itself (said: unreadable), or the grader broke
            said, detail = message.get("said") is True, message.get("message", "")
            reason = str(detail) if said else f"The grader failed on this submission: {detail}"
            kind = Kind.COMPILE_ERROR if said else Kind.CRASH
            done(Outcome(job, failure=reason, kind=kind, seconds=seconds))
            self._retire(worker)

    def _tampered(self, worker: _Worker, done: Callable[[Outcome], None], what: str) -> None:
        job = worker.job
        self._retire(worker)
        if job is not None:
            reason = (
                f"The grading channel received {what}: the submission tried to forge its "
                "result. It was not graded."
            )
            done(Outcome(job, failure=reason, kind=Kind.CRASH))

    def _died(self, worker: _Worker, done: Callable[[Outcome], None]) -> None:
        job, ready = worker.job, worker.ready
        try:
            code = worker.process.wait(timeout=EXIT_TIMEOUT)
        except subprocess.TimeoutExpired:  # it closed its end but lingers: end it
            isolation.kill_tree(worker.process.pid)
            code = worker.process.wait()
        self._read_errors(worker)  # its last words come after it closed its answers
        self._retire(worker)
        ended, tail = _how_it_ended(code), worker.stderr_tail()
        detail = f": {tail}" if tail else ""
        if job is not None:
            reason = f"The grading process {ended} while grading this submission{detail}."
            done(Outcome(job, failure=reason, kind=Kind.CRASH))
        elif not ready:
            self._start_failed(f"one {ended}{detail}.")

    def _start_failed(self, why: str) -> None:
        self.start_failures += 1
        if self.start_failures >= START_ATTEMPTS:
            raise SetupError(f"Grading workers could not start: {why}")

    def _enforce_deadlines(self, done: Callable[[Outcome], None]) -> None:
        now = time.monotonic()
        for worker in list(self.workers.values()):
            if worker.job is not None and now >= worker.deadline:
                job = worker.job
                self._retire(worker)
                reason = (
                    f"Grading took longer than {self.spec.submission_timeout:g} s and was "
                    "stopped; the cases that ran are lost."
                )
                done(Outcome(job, failure=reason, kind=Kind.TIMEOUT, seconds=now - worker.sent_at))
            elif worker.leaving and now >= worker.deadline:
                self._retire(worker)  # it said it would exit and did not
            elif not worker.ready and now >= worker.started + START_TIMEOUT:
                self._retire(worker)
                self._start_failed(f"none was ready within {START_TIMEOUT:g} s")


def _how_it_ended(code: int) -> str:
    if code >= 0:
        return f"exited with status {code}"
    try:
        return f"was killed by {signal.Signals(-code).name}"
    except ValueError:
        return f"was killed by signal {-code}"
