"""One launch as a job of the runner (runtime/runner.cpp) in a worker process: the job folder,
the process, and what it left.

The job folder is a fresh scratch directory holding job.txt, the module (a read-only link:
grader.backends.cpu.shelf), the inputs (raw elements), the __constant__ values, and empty
files for everything the worker will write (the sandbox lets it write those files and
create no others); job.txt's keys and the files' names are the contract's
(grader.backends.cpu.contract). The worker's records (grader.backends.cpu.protocol) come over a
pipe. Those before its "load" record were written before any code of the submission ran,
and are the runner's own; the rest may have been written by the submission, so they are
only evidence against it, but for those the run's token vouches for (`Report.token`,
which the runner reads and blanks before the submission's code runs). The parent reads
the outputs and the fill around them from the files itself. Turning a Report into
diagnostics is grader.backends.cpu.diagnose's job.

A kernel of a launch of several gets the values of the module's __device__ variables the
one before it left (`state`; filled as the constants are) and writes back its own: bytes
that only ever feed the submission's next kernel, read no longer than each variable's
declared size."""

from __future__ import annotations

import contextlib
import math
import os
import secrets
import subprocess
import tempfile
import threading
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import TypeVar

import numpy as np

from grader import defaults, machine, waiting
from grader.backends.cpu import elf, protocol, runner
from grader.backends.cpu.build import Artifact
from grader.backends.cpu.contract import FILES, WALL_FACTOR
from grader.backends.cpu.protocol import Record
from grader.backends.cpu.shelf import Shelf
from grader.errors import SetupError
from grader.model.launch import CANARY_BITS, Buffer, Launch, Scalar
from grader.toolchain import cxx, sandbox
from grader.toolchain import scratch as scratch_folders

PASSES = 2  # forward order, buffers ending on guards; reverse order, starting on guards
# The student's own heap and everything the module maps, past what the runner holds once
# its threads and buffers exist; less where the machine has little memory.
MEMORY_ALLOWANCE = min(1 << 30, machine.memory() // 4)
RUNNER_SLACK = 64 << 20  # the runner's own allocations once the limit is set
RECORDS_LIMIT = 1 << 20  # bytes of records kept; a flood past it is dropped
MODULE = "module.so"  # the module's name in a job folder
R = TypeVar("R", bound=Record)


@dataclass
class Pad:
    """Fill words around a buffer that were changed: before it in pass 0, after it in
    pass 1 (the other side is a guard page)."""

    changed: int
    first: int | None  # elements past the end of the first one (pass 1)


@dataclass
class Report:
    returncode: int | None  # None: killed by the parent at the deadline
    setup: list[Record] = field(default_factory=list)  # before "load": the runner's own
    records: list[Record] = field(default_factory=list)  # after it: maybe the submission's
    loaded: bool = False  # the runner reached the point where the submission's code runs
    outputs: dict[int, list[np.ndarray]] = field(default_factory=dict)  # pass -> buffers
    pads: dict[tuple[int, int], Pad] = field(default_factory=dict)  # (pass, buffer)
    unreadable: list[str] = field(default_factory=list)  # output files missing or changed
    state: dict[str, bytes] = field(default_factory=dict)  # carried variables, after pass 0
    printf: str = ""
    stderr: str = ""
    token: str = ""  # the job's: what the runner's seals and profile carry (token.txt)

    def first(self, kind: type[R]) -> R | None:
        return next((r for r in self.records if isinstance(r, kind)), None)

    def all(self, kind: type[R]) -> list[R]:
        return [r for r in self.records if isinstance(r, kind)]

    def first_setup(self, kind: type[R]) -> R | None:
        return next((r for r in self.setup if isinstance(r, kind)), None)


class Stop:
    """Workers that another thread may end: those of runs made beside other runs, which a
    grading stopped by its deadline, Ctrl-C or a kernel's hangs ends at once (a run in
    the grading's own thread ends its worker itself); and every worker of a backend
    being closed (Settings.closing). A worker started after the stop is killed at once."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._workers: set[subprocess.Popen] = set()
        self._stopped = False

    def started(self, worker: subprocess.Popen) -> None:
        with self._lock:
            if self._stopped:  # a run that went on to a worker more after the stop
                worker.kill()
            self._workers.add(worker)

    def ended(self, worker: subprocess.Popen) -> None:
        with self._lock:
            self._workers.discard(worker)

    def stop(self) -> None:
        with self._lock:
            self._stopped = True
            for worker in self._workers:
                worker.kill()


@dataclass(frozen=True)
class Settings:
    jobs: int
    require_isolation: bool  # False only with allow_unsandboxed
    hazards: bool = False  # watch the accesses that race among a block's threads
    profile: bool = False  # the first pass's memory profile (one job)
    stop: Stop | None = field(default=None, compare=False)  # None: ended by its own thread
    # every worker of the backend, which its close ends: a run in another thread (a GPU
    # grading's model run beside its cases) may still be going on then
    closing: Stop | None = field(default=None, compare=False)

    def stops(self) -> tuple[Stop, ...]:
        return tuple(s for s in (self.stop, self.closing) if s is not None)


def execute(
    artifact: Artifact,
    launch: Launch,
    timeout: float,
    settings: Settings,
    shelf: Shelf,
    state: dict[str, bytes] | None = None,
) -> Report:
    """With `state` (a kernel of a launch of several), the kernel starts from those
    __device__ values (the load-time ones where absent) and the report holds its own.
    The module comes from `shelf`."""
    program = runner.executable()
    # The worker's folder sits in one of ours: a later grader sweeps only its own user's
    # (grader.toolchain.scratch), and a worker started by root runs as another user.
    folder = Path(tempfile.mkdtemp(prefix=scratch_folders.prefix("cpu")))
    scratch = folder / "job"
    user = sandbox.worker_user()
    token = secrets.token_hex(16)  # a fresh one for each run
    try:
        scratch.mkdir()
        _write_job(scratch, artifact, launch, timeout, settings, user, state, token)
        sandbox.hand_over(scratch, user)
        shelf.place(artifact.module, scratch / MODULE)  # after: it stays the grader's
        # The worker's stderr goes to a file, which its file size limit bounds.
        with open(scratch / "stderr.txt", "wb") as stderr:
            # loading and each pass have the worker's own watchdog, which a busy machine
            # may let run WALL_FACTOR times as long; this is the parent's backstop if
            # even that fails
            backstop = WALL_FACTOR * (PASSES + 1) * timeout + 5
            returncode, records = _run([str(program), "run", str(scratch)], scratch, stderr,
                                       backstop, settings.stops())  # fmt: skip
        report = Report(returncode, token=token)
        report.stderr = _tail(scratch / "stderr.txt")
        _read_records(records, report)
        _read_outputs(scratch, launch, report)
        if state is not None:
            _read_state(scratch, artifact, report)
        return report
    finally:
        with contextlib.suppress(OSError):  # at once: a case's link is the module's last
            (scratch / MODULE).unlink()
        scratch_folders.discard(folder)  # the rest while the next case runs


def _run(
    cmd: list[str], cwd: Path, stderr, deadline: float, stops: tuple[Stop, ...]
) -> tuple[int | None, bytes]:
    """Runs the worker with the write end of a pipe for its records (its number is the
    last argument); returns its exit status (None when it had to be killed) and what it
    wrote there, up to the limit."""
    read_end, write_end = os.pipe()
    kept = bytearray()

    def drain() -> None:
        while chunk := os.read(read_end, 1 << 16):
            kept.extend(chunk[: max(0, RECORDS_LIMIT - len(kept))])

    reader = threading.Thread(target=drain, daemon=True)
    try:
        proc = subprocess.Popen(
            [*cmd, str(write_end)],
            cwd=cwd,
            env=cxx.clean_env(),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=stderr,
            pass_fds=(write_end,),
        )
    except OSError as err:
        os.close(read_end)
        raise SetupError(f"The CPU backend could not start its worker ({err}).") from None
    finally:
        os.close(write_end)
    reader.start()
    for stop in stops:
        stop.started(proc)
    try:
        returncode: int | None = waiting.wait(proc, deadline)
    except subprocess.TimeoutExpired:
        returncode = None
    finally:
        if proc.poll() is None:  # past the deadline, or the grader itself is stopping
            proc.kill()
            proc.wait()
        for stop in stops:
            stop.ended(proc)
    reader.join(timeout=5)
    os.close(read_end)
    return returncode, bytes(kept)


def _write_job(
    scratch: Path,
    artifact: Artifact,
    launch: Launch,
    timeout: float,
    settings: Settings,
    user: tuple[int, int] | None,
    state: dict[str, bytes] | None,
    token: str,
) -> None:
    buffers = launch.buffers()
    # a variable larger than the module's memory allowance could not be mapped at all
    sizes = [min(v.size, MEMORY_ALLOWANCE) for v in artifact.carried().values()]
    carried = sizes if state is not None else []
    largest = max([b.nbytes for b in buffers] + carried + [defaults.OUTPUT_LIMIT])
    lines = [
        f"module ./{MODULE}",  # from the folder it runs in: a worker switched from root
        # may have no way to it from the root of the file system
        f"kernel {launch.kernel}",
        "grid {} {} {}".format(*launch.grid),
        "block {} {} {}".format(*launch.block),
        f"shared {launch.shared_bytes}",
        f"jobs {settings.jobs}",
        f"timeout {timeout}",
        f"passes {PASSES}",
        f"hazards {int(settings.hazards)}",
        f"profile {int(settings.profile)}",
        f"apart {int(blocks_apart(artifact, launch))}",
        f"output_limit {defaults.OUTPUT_LIMIT}",
        f"memory_headroom {MEMORY_ALLOWANCE + RUNNER_SLACK}",
        f"cpu {_cpu_limit(settings.jobs, timeout)}",
        f"fsize {largest + (1 << 20)}",
        f"require_fs {int(settings.require_isolation)}",
        f"require_net {int(settings.require_isolation)}",
        f"scratch {scratch}",
        *(f"preload {p}" for p in _libraries(artifact.module)),
    ]
    if user is not None:
        lines.append("uid {} {}".format(*user))
    index = 0
    for arg in launch.args:
        if isinstance(arg, Buffer):
            data = np.ascontiguousarray(arg.data).reshape(-1)
            data.tofile(scratch / FILES["input"].format(index))
            access = 2 if arg.accumulates else int(arg.output)  # 2: blocks may add to it
            lines.append(f"arg buffer {data.size} {access} {data.itemsize} {arg.name}")
            for p in range(PASSES):
                _empty(scratch / FILES["output"].format(p, index))
            index += 1
        elif isinstance(arg, Scalar):
            lines.append(f"arg scalar {arg.ctype} {int(arg.value)}")
    for name, values in launch.constants.items():
        if name not in artifact.variables:
            continue
        data = np.ascontiguousarray(values, dtype=np.float32).reshape(-1)
        data.tofile(scratch / FILES["constant"].format(name))
        lines.append(f"constant {data.nbytes} {name}")
    if state is not None:
        lines += _state_lines(scratch, artifact, state)
    (scratch / FILES["token"]).write_text(token)
    if settings.profile:
        lines += [f"variable {name}" for name in artifact.variables if name.isidentifier()]
    _empty(scratch / FILES["printf"])
    (scratch / FILES["job"]).write_text("\n".join(lines) + "\n")


def blocks_apart(artifact: Artifact, launch: Launch) -> bool:
    """Whether the launch's blocks provably store disjoint elements of every buffer, so
    that its pool threads need not note which block stored each (runtime/stores.cpp):
    every global store at its thread's element along x (grader.toolchain.thread_stores),
    in a grid one block high whose x index stays below 2^31, each parameter stored
    through a buffer whose elements that stride covers whole."""
    strides = artifact.stores_by_thread.get(launch.kernel)
    grid, block = launch.grid, launch.block
    if strides is None or grid[1] * grid[2] != 1 or grid[0] * block[0] > 2**31:
        return False
    args = launch.args
    return all(
        p < len(args) and isinstance(args[p], Buffer) and stride % args[p].data.itemsize == 0
        for p, stride in strides.items()
    )


def _empty(path: Path) -> None:
    """A new empty file for the worker to write (Path.touch tries utime first, which
    fails on a file not there yet)."""
    os.close(os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o666))


def _state_lines(scratch: Path, artifact: Artifact, state: dict[str, bytes]) -> list[str]:
    """The job's lines for the carried variables: the values to start from, filled as
    constants are, and the empty file each is written back to."""
    lines = []
    for name, var in artifact.carried().items():
        if name in state:
            (scratch / FILES["constant"].format(name)).write_bytes(state[name])
            lines.append(f"constant {len(state[name])} {name}")
        _empty(scratch / FILES["carry"].format(name))
        lines.append(f"carry {var.size} {name}")
    return lines


def _read_state(scratch: Path, artifact: Artifact, report: Report) -> None:
    """Each carried variable's bytes, exactly its declared size, or the file's name in
    `unreadable`."""
    for name, var in artifact.carried().items():
        path = scratch / FILES["carry"].format(name)
        try:
            data = path.read_bytes() if path.stat().st_size == var.size else b""
        except OSError:
            data = b""
        if len(data) == var.size:
            report.state[name] = data
        else:
            report.unreadable.append(path.name)


def _cpu_limit(jobs: int, timeout: float) -> int:
    """RLIMIT_CPU's seconds: what the runner's watchdog lets a run work before it stops a
    phase (runner.cpp), and a margin: the module's load on one thread (timeout), each
    checked pass on the pool's threads (jobs x timeout), and the pass that learns which
    block stored what on one (timeout / 2). A kernel near its timeout in both passes whose
    passes differ is stopped by the watchdog, with its sentence, not killed by the limit."""
    return math.ceil((jobs * PASSES + 1.5) * timeout) + 5


@cache
def _libraries(module: Path) -> tuple[str, ...]:
    """What the worker loads before its sandbox closes: every library the module needs.
    One found nowhere is left to the loader, whose failure the grader then attributes."""
    found, _missing = elf.needed_libraries(module)
    return tuple(str(p) for p in found)


def _tail(path: Path, size: int = 2000) -> str:
    try:
        with open(path, "rb") as f:
            f.seek(max(0, path.stat().st_size - size))
            return f.read().decode("utf-8", "replace")
    except OSError:
        return ""


def _read_records(raw: bytes, report: Report) -> None:
    for line in raw.decode("utf-8", "replace").splitlines():
        if not line.strip():
            continue
        record, bare = protocol.parse(line)
        if report.loaded:
            report.records.append(record)
        elif isinstance(record, protocol.Other) and record.name == "load" and bare:
            report.loaded = True
        else:
            report.setup.append(record)


def _read_outputs(scratch: Path, launch: Launch, report: Report) -> None:
    """Each pass's buffers and the fill around them, from the files the worker wrote
    back. A file that is missing, unreadable or of the wrong size is the worker's doing
    (the grader made them all), so that pass has no outputs."""
    try:
        raw = (scratch / FILES["printf"]).read_bytes()[: defaults.OUTPUT_LIMIT]
        report.printf = raw.decode("utf-8", "replace")
    except OSError:
        pass
    page = os.sysconf("SC_PAGE_SIZE")
    canary = np.array([CANARY_BITS], "<u4").view(np.uint8)
    for p in range(PASSES):
        arrays = []
        for k, buffer in enumerate(launch.buffers()):
            name = FILES["output"].format(p, k)
            try:
                raw = np.fromfile(scratch / name, dtype=np.uint8)
            except (OSError, ValueError):
                raw = np.zeros(0, np.uint8)
            width, nbytes = buffer.data.dtype.itemsize, buffer.nbytes
            fill = raw.size - nbytes
            if not 0 <= fill < page or fill % width:
                report.unreadable.append(name)
                continue
            # the fill repeats the canary word from the area's first page: pass 0's file
            # starts there, pass 1's at the buffer, which starts there too
            start = 0 if p == 0 else nbytes
            data, pad = (raw[fill:], raw[:fill]) if p == 0 else (raw[:nbytes], raw[nbytes:])
            wrong = pad != canary[(start + np.arange(pad.size)) % 4]
            changed = np.flatnonzero(wrong.reshape(-1, width).any(axis=1))
            first = int(changed[0]) if p == 1 and changed.size else None
            report.pads[(p, k)] = Pad(int(changed.size), first)
            arrays.append(data.view(buffer.data.dtype))
        if len(arrays) == len(launch.buffers()):
            report.outputs[p] = arrays
