"""One launch in a worker process: the job folder, the process, and its records.

The job folder is a fresh scratch directory holding job.txt, the inputs (raw float32),
the __constant__ values, and empty files for everything the worker will write (the
sandbox lets it write those files and create no others). The worker's records
(result.txt, one per line, "name key=value ...") are parsed into a Report; turning a
Report into diagnostics is grader.backends.cpu.diagnose's job."""

from __future__ import annotations

import math
import shutil
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from grader import defaults
from grader.backends.base import Buffer, Launch, Scalar
from grader.backends.cpu import sandbox, toolchain
from grader.backends.cpu.build import Artifact

PASSES = 2  # forward order, buffers ending on guards; reverse order, starting on guards
EXIT_SANDBOX = 3
EXIT_LOAD = 4
MEMORY_ALLOWANCE = 1 << 30  # the student's own heap, libraries, malloc arenas
GUARDS = 32 << 20  # both guards of one buffer (16 MiB each)
STACK = (64 + 4) << 10  # one fiber's stack and its guard page


@dataclass
class Record:
    name: str
    fields: dict[str, str]

    def get(self, key: str, default: str = "") -> str:
        return self.fields.get(key, default)

    def int(self, key: str, default: int = 0) -> int:
        value = self.fields.get(key)
        if value is None:
            return default
        return int(value, 16) if value.startswith("0x") else int(value)

    def dim(self, key: str) -> tuple[int, int, int] | None:
        value = self.fields.get(key)
        if not value:
            return None
        x, y, z = (int(v) for v in value.split(","))
        return (x, y, z)

    def text(self, key: str) -> str:
        return sandbox.unhex(self.fields.get(key, ""))


@dataclass
class Report:
    returncode: int | None  # None: killed by the parent at the deadline
    records: list[Record] = field(default_factory=list)
    outputs: dict[int, list[np.ndarray]] = field(default_factory=dict)  # pass -> buffers
    printf: str = ""
    stderr: str = ""

    def first(self, name: str) -> Record | None:
        return next((r for r in self.records if r.name == name), None)

    def all(self, name: str) -> list[Record]:
        return [r for r in self.records if r.name == name]


@dataclass(frozen=True)
class Settings:
    jobs: int
    require_isolation: bool  # False only with allow_unsandboxed


def execute(artifact: Artifact, launch: Launch, timeout: float, settings: Settings) -> Report:
    runner = toolchain.runner()
    scratch = Path(tempfile.mkdtemp(prefix="grader-cpu-"))
    try:
        _write_job(scratch, artifact, launch, timeout, settings)
        # The worker's stderr goes to a file, which its file size limit bounds.
        with open(scratch / "stderr.txt", "wb") as stderr:
            try:
                proc = subprocess.run(
                    [str(runner), "run", str(scratch)],
                    cwd=scratch,
                    env=toolchain.clean_env(),
                    stdin=subprocess.DEVNULL,
                    stdout=subprocess.DEVNULL,
                    stderr=stderr,
                    # loading and each pass have the worker's own watchdog; this is the
                    # parent's backstop if even that fails
                    timeout=(PASSES + 1) * timeout + 5,
                )
                report = Report(proc.returncode)
            except subprocess.TimeoutExpired:
                report = Report(None)
        report.stderr = _tail(scratch / "stderr.txt")
        _read_results(scratch, launch, report)
        return report
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def _write_job(
    scratch: Path, artifact: Artifact, launch: Launch, timeout: float, settings: Settings
) -> None:
    buffers = launch.buffers()
    total = sum(4 * b.data.size for b in buffers)
    largest = max([4 * b.data.size for b in buffers] + [defaults.OUTPUT_LIMIT])
    threads = launch.block[0] * launch.block[1] * launch.block[2]
    memory = (
        MEMORY_ALLOWANCE
        + 2 * total
        + GUARDS * (len(buffers) + settings.jobs)
        + settings.jobs * (threads + 1) * STACK
    )
    folders, files = sandbox.read_paths(artifact.module)
    lines = [
        f"module {artifact.module}",
        f"kernel {launch.kernel}",
        "grid {} {} {}".format(*launch.grid),
        "block {} {} {}".format(*launch.block),
        f"shared {launch.shared_bytes}",
        f"jobs {settings.jobs}",
        f"timeout {timeout}",
        f"passes {PASSES}",
        f"output_limit {defaults.OUTPUT_LIMIT}",
        f"memory {memory}",
        f"cpu {math.ceil(settings.jobs * PASSES * timeout) + 5}",
        f"fsize {largest + (1 << 20)}",
        f"require_fs {int(settings.require_isolation)}",
        f"require_net {int(settings.require_isolation)}",
        f"scratch {scratch}",
        *(f"read {p}" for p in folders),
        *(f"file {p}" for p in files),
    ]
    index = 0
    for arg in launch.args:
        if isinstance(arg, Buffer):
            data = np.ascontiguousarray(arg.data, dtype=np.float32).reshape(-1)
            data.tofile(scratch / f"buf_{index}.bin")
            lines.append(f"arg buffer {data.size} {int(arg.output)} {arg.name}")
            for p in range(PASSES):
                (scratch / f"out.{p}.{index}.bin").touch()
            index += 1
        elif isinstance(arg, Scalar):
            lines.append(f"arg scalar {arg.ctype} {int(arg.value)}")
    for name, values in launch.constants.items():
        if name not in artifact.variables:
            continue
        data = np.ascontiguousarray(values, dtype=np.float32).reshape(-1)
        data.tofile(scratch / f"const_{name}.bin")
        lines.append(f"constant {data.nbytes} {name}")
    for name in ("result.txt", "printf.txt"):
        (scratch / name).touch()
    (scratch / "job.txt").write_text("\n".join(lines) + "\n")


def _tail(path: Path, size: int = 2000) -> str:
    with open(path, "rb") as f:
        f.seek(max(0, path.stat().st_size - size))
        return f.read().decode("utf-8", "replace")


def _read_results(scratch: Path, launch: Launch, report: Report) -> None:
    try:
        text = (scratch / "result.txt").read_text(errors="replace")
    except OSError:
        text = ""
    for line in text.splitlines():
        if line.strip():
            name, fields = sandbox.parse_fields(line)
            report.records.append(Record(name, fields))
    try:
        raw = (scratch / "printf.txt").read_bytes()[: defaults.OUTPUT_LIMIT]
        report.printf = raw.decode("utf-8", "replace")
    except OSError:
        pass
    sizes = [b.data.size for b in launch.buffers()]
    for p in range(PASSES):
        arrays = []
        for k in range(len(sizes)):
            path = scratch / f"out.{p}.{k}.bin"
            data = np.fromfile(path, dtype=np.float32) if path.exists() else np.zeros(0, np.float32)
            arrays.append(data)
        if all(a.size == s for a, s in zip(arrays, sizes, strict=True)):
            report.outputs[p] = arrays
