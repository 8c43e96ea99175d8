"""compute-sanitizer: where it is, how the worker runs under it, and what its log says.

The worker runs the launches under one tool at a time (memcheck, racecheck, synccheck)
with exact-size buffers, so an access one element past the end is caught. The log names
each access's kind, size, thread, block and `file:line` (the module is nvcc.inspect's
cubin, built with -lineinfo from the file nvcc.safe_name names). `parse` turns the log
into findings, and `diagnostics` turns findings into one sentence for each distinct
problem and line, naming the buffer by the kernel's parameter name when an address falls
next to one."""

from __future__ import annotations

import glob
import os
import re
import shutil
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from grader.model.result import Diagnostic, Dim3, Kind, RaceScope
from grader.toolchain import nvcc

TOOLS = ("memcheck", "racecheck", "synccheck")
# Racecheck slows a kernel most, and a missing barrier races at any size, so it checks
# only the first (smallest) launch. Accesses out of bounds and divergent barriers often
# appear only where the size is not a multiple of the tile, so the others check them all.
FIRST_LAUNCH_ONLY = ("racecheck",)
PRINT_LIMIT = 200  # errors each tool prints; counts above it are lower bounds
NEAR_BYTES = 1 << 16  # an address this close to a buffer is reported against it

_TOOL_OPTIONS = {
    "memcheck": [],
    "racecheck": ["--racecheck-report", "analysis"],
    "synccheck": [],
}


def find() -> str | None:
    """The compute-sanitizer executable: on PATH, or in a CUDA toolkit folder."""
    found = shutil.which("compute-sanitizer")
    if found:
        return found
    roots = [os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH"), "/usr/local/cuda"]
    roots += sorted(glob.glob("/usr/local/cuda-*"), reverse=True)
    for root in filter(None, roots):
        for rel in ("bin/compute-sanitizer", "compute-sanitizer/compute-sanitizer"):
            path = Path(root, rel)
            if path.is_file() and os.access(path, os.X_OK):
                return str(path)
    return None


def command(executable: str, tool: str, log_file: Path, target: list[str]) -> list[str]:
    return [
        executable,
        "--tool",
        tool,
        "--log-file",
        str(log_file),
        "--print-limit",
        str(PRINT_LIMIT),
        "--target-processes",
        "application-only",
        "--show-backtrace",
        "no",
        *_TOOL_OPTIONS[tool],
        *target,
    ]


# -- the log ------------------------------------------------------------------------------


@dataclass(frozen=True)
class BufferRange:
    """Where the worker put one kernel parameter's buffer (bytes)."""

    name: str
    start: int
    nbytes: int

    @property
    def end(self) -> int:
        return self.start + self.nbytes


@dataclass
class Access:
    kind: str  # "read" | "write"
    file: str | None
    line: int | None


@dataclass
class Finding:
    kind: Kind
    headline: str
    accesses: list[Access] = field(default_factory=list)
    space: str | None = None  # "global", "shared", "local"
    size: int | None = None  # bytes of one access
    thread: Dim3 | None = None
    block: Dim3 | None = None
    address: int | None = None
    nearest: int | None = None  # start of the nearest allocation, as the tool saw it
    hazards: int = 1
    buffers: list[BufferRange] = field(default_factory=list)  # of the process it ran in

    @property
    def location(self) -> Access | None:
        return self.accesses[0] if self.accesses else None


_PREFIX = re.compile(r"^=+(?P<rest>.*)$")
_CONTINUATION = re.compile(
    r"^(at |by thread|Address |Access to |and |in |Device Frame|Host Frame|Saved host)"
)
# Numbers of at most 9 digits (counts with commas, 20): the log names the student's
# kernel, and int() refuses thousands of digits.
_LOCATION = re.compile(r"\bin\s+(?P<file>\S+?\.(?:cu|cuh|h|hpp|cpp|cc|c|inl)):(?P<line>\d{1,9})")
_DIM = r"\(\s*(\d{1,9})\s*,\s*(\d{1,9})\s*,\s*(\d{1,9})\s*\)"
_THREAD_BLOCK = re.compile(rf"by thread {_DIM} in block {_DIM}")
_ADDRESS = re.compile(r"(?:Address|Access to) (0x[0-9a-fA-F]{1,16})")
_NEAREST = re.compile(r"nearest allocation at (0x[0-9a-fA-F]{1,16})")
_INVALID = re.compile(
    r"^Invalid __(?P<space>\w+?)__ (?P<access>read|write) of size (?P<size>[\d,]{1,20})"
)
_RACE = re.compile(r"^(?:Error|Warning): Race reported between (?P<access>Read|Write) access")
_AND = re.compile(r"^and (?P<access>Read|Write) access(?P<rest>.*)$")
_HAZARDS = re.compile(r"\[([\d,]{1,20}) hazards?\]")
_BARRIER = re.compile(r"^Barrier error detected\.?\s*(?P<why>.*)$")
# Headlines that only echo a consequence or a total.
_IGNORED = re.compile(
    r"^(Program hit|ERROR SUMMARY|RACECHECK SUMMARY|LEAK SUMMARY|Target application|"
    r"COMPUTE-SANITIZER|Leaked|Saved host)"
)


def records(log: str) -> list[list[str]]:
    """The log's reports: each a headline and its detail lines, prefixes stripped."""
    out: list[list[str]] = []
    for raw in log.splitlines():
        match = _PREFIX.match(raw)
        if not match:
            continue  # the application's own output
        rest = match["rest"]
        text = rest.strip()
        if not text:
            continue
        indented = len(rest) - len(rest.lstrip(" ")) >= 2
        if out and (indented or _CONTINUATION.match(text)):
            out[-1].append(text)
        else:
            out.append([text])
    return out


def parse(log: str, tool: str) -> list[Finding]:
    findings = []
    for record in records(log):
        finding = _finding(record, tool)
        if finding is not None:
            findings.append(finding)
    return findings


def _number(text: str) -> int:
    return int(text.replace(",", "") or 0)


def _dim(groups: Iterable[str]) -> Dim3:
    x, y, z = (int(g) for g in groups)
    return (x, y, z)


def _location(text: str) -> tuple[str | None, int | None]:
    match = _LOCATION.search(text)
    return (match["file"], int(match["line"])) if match else (None, None)


def _finding(record: list[str], tool: str) -> Finding | None:
    head = record[0]
    if _IGNORED.match(head):
        return None
    details = [line for line in record[1:] if not line.startswith(("Host Frame", "Saved host"))]
    if match := _INVALID.match(head):
        return _memory_finding(head, details, match)
    if _RACE.match(head):
        return _race_finding(head, details)
    if match := _BARRIER.match(head):
        finding = Finding(Kind.BARRIER_DIVERGENCE, head)
        _fill_common(finding, details, "sync")
        return finding
    if tool == "memcheck" and not head.startswith(("Error:", "Warning:")):
        finding = Finding(Kind.OUT_OF_BOUNDS, head)  # misaligned, hardware exception
        _fill_common(finding, details, "access")
        return finding
    return None


def _fill_common(finding: Finding, details: list[str], access: str) -> None:
    joined = " ".join(details)
    file, line = _location(" ".join(d for d in details if d.startswith(("at ", "in "))))
    finding.accesses.append(Access(access, file, line))
    if match := _THREAD_BLOCK.search(joined):
        finding.thread = _dim(match.groups()[:3])
        finding.block = _dim(match.groups()[3:])
    if match := _ADDRESS.search(joined):
        finding.address = int(match[1], 16)
    if match := _NEAREST.search(joined):
        finding.nearest = int(match[1], 16)


def _memory_finding(head: str, details: list[str], match: re.Match) -> Finding:
    finding = Finding(
        Kind.OUT_OF_BOUNDS,
        head,
        space=match["space"],
        size=_number(match["size"]),
    )
    _fill_common(finding, details, match["access"])
    return finding


def _race_finding(head: str, details: list[str]) -> Finding:
    first = _RACE.match(head)
    finding = Finding(Kind.RACE, head, space="shared", hazards=0)
    finding.accesses.append(Access(first["access"].lower(), *_location(head)))
    for line in details:
        if match := _AND.match(line):
            finding.accesses.append(Access(match["access"].lower(), *_location(match["rest"])))
            if count := _HAZARDS.search(line):
                finding.hazards += _number(count[1])
    finding.hazards = max(finding.hazards, 1)
    return finding


# -- findings as diagnostics --------------------------------------------------------------


@dataclass
class Context:
    kernel: str
    submission: str  # the student's file name (the module's is nvcc.safe_name of it)
    student_lines: int  # lines past this are the grader's footer
    sizes: tuple[str, ...] = ()  # the kernel's size parameters, as the lab names them


def diagnostics(findings: list[Finding], context: Context) -> list[Diagnostic]:
    """One diagnostic per distinct problem and line, in the order first seen, with a count."""
    groups: dict[tuple, list[Finding]] = {}
    for finding in findings:
        groups.setdefault(_key(finding), []).append(finding)
    return [_diagnostic(group, context) for group in groups.values()]


def _student_line(access: Access | None, context: Context) -> int | None:
    if access is None or access.line is None or access.file is None:
        return None
    compiled = nvcc.safe_name(context.submission)  # the name nvcc.inspect compiled
    if Path(access.file).name != compiled or access.line > context.student_lines:
        return None
    return access.line


def _key(finding: Finding) -> tuple:
    """Findings with equal keys are one diagnostic: the same problem at the same lines
    (and, for memory, the same buffer). A race's order matters: write-then-read and
    read-then-write need different barriers."""
    first, *others = [(a.kind, a.line) for a in finding.accesses] or [(None, None)]
    buffer = _place(finding)[0] if finding.kind == Kind.OUT_OF_BOUNDS else None
    return (finding.kind, finding.space, first, frozenset(others), buffer)


def _where(line: int | None, context: Context) -> str:
    return f"line {line} of {context.submission}" if line else "your kernel"


def _who(finding: Finding) -> str:
    if finding.thread is None or finding.block is None:
        return ""
    return f" by thread {_fmt(finding.thread)} of block {_fmt(finding.block)}"


def _fmt(dim: Dim3) -> str:
    return "(" + ",".join(str(v) for v in dim) + ")"


def _times(count: int, noun: str) -> str:
    if count <= 1:
        return ""
    more = "+" if count >= PRINT_LIMIT else ""
    return f" The sanitizer saw {count}{more} {noun} like it."


def _diagnostic(group: list[Finding], context: Context) -> Diagnostic:
    first = group[0]
    if first.kind == Kind.RACE:
        return _race_diagnostic(group, context)
    line = _student_line(first.location, context)
    if first.kind == Kind.BARRIER_DIVERGENCE:
        message = _barrier_message(first, line, context, len(group))
    else:
        message = _memory_message(first, line, context, len(group))
    return Diagnostic(
        first.kind,
        message,
        kernel=context.kernel,
        thread=first.thread,
        block=first.block,
        line=line,
    )


def _place(finding: Finding) -> tuple[str | None, str]:
    """(parameter name, phrase) for the finding's address, e.g. ('P', 'P[267289], just
    past the end of P (P holds 267289 floats, P[0] to P[267288])')."""
    if finding.address is None or finding.space not in (None, "global"):
        return None, ""
    buffer = _buffer_for(finding, finding.buffers)
    if buffer is None:
        return None, f"address {finding.address:#x}, outside every buffer the grader passed"
    elements = buffer.nbytes // 4
    index = (finding.address - buffer.start) // 4
    holds = (
        f"{buffer.name} holds {elements} floats, {buffer.name}[0] to {buffer.name}[{elements - 1}]"
    )
    if index < 0:
        where = "before the start"
    elif index >= elements:
        where = "just past the end" if index == elements else "past the end"
    else:
        where = "inside"
    return buffer.name, f"{buffer.name}[{index}], {where} of {buffer.name} ({holds})"


def _buffer_for(finding: Finding, buffers: list[BufferRange]) -> BufferRange | None:
    for buffer in buffers:
        if finding.nearest == buffer.start:
            return buffer
    address = finding.address

    def distance(b: BufferRange) -> int:
        if address < b.start:
            return b.start - address
        return max(0, address - b.end + 1)

    near = [b for b in buffers if distance(b) <= NEAR_BYTES]
    return min(near, key=distance) if near else None


def _memory_message(finding: Finding, line: int | None, context: Context, count: int) -> str:
    access = finding.location.kind if finding.location else "access"
    if finding.size is None:
        return (
            f"{finding.headline}{_who(finding)} at {_where(line, context)}. "
            f"{_times(count, 'errors').strip()}"
        ).strip()
    verb = {"read": "read", "write": "wrote"}.get(access, "accessed")
    space = finding.space or "global"
    if space == "global":
        _, place = _place(finding)
        target = place or "memory outside the buffers"
        against = f" ({', '.join(context.sizes)})" if context.sizes else ""
        advice = f"Check every index against the sizes{against} before the access."
    elif space == "shared":
        at = f"__shared__ address {finding.address:#x}, " if finding.address is not None else ""
        target = f"{at}outside the __shared__ memory of its block"
        advice = "Check the index into the shared tile against its declared size."
    else:
        target = f"outside the thread's {space} memory"
        advice = "Check the index into the local array against its size."
    return (
        f"Out-of-bounds {access}: {context.kernel}{_who(finding)} {verb} {finding.size} bytes "
        f"at {target}, at {_where(line, context)}. {advice}{_times(count, f'{access}s')}"
    )


def _barrier_message(finding: Finding, line: int | None, context: Context, count: int) -> str:
    why = _BARRIER.match(finding.headline)["why"].rstrip(".") or "a barrier error"
    where = f"The __syncthreads() at {_where(line, context)}" if line else "A __syncthreads()"
    return (
        f"{where} is not reached by every thread of its block ({why}, seen{_who(finding)}). "
        "A barrier inside an `if` whose condition differs between threads of a block, or "
        "after an early `return`, is undefined and can hang the block: keep every "
        f"__syncthreads() where all threads of the block reach it.{_times(count, 'errors')}"
    )


def _race_diagnostic(group: list[Finding], context: Context) -> Diagnostic:
    first = group[0]
    hazards = sum(f.hazards for f in group)
    unique = dict.fromkeys((a.kind, _student_line(a, context)) for a in first.accesses)
    kinds = [kind for kind, _ in unique]
    lines = [line for _, line in unique]
    described = " and ".join(
        f"a {kind} at {_where(line, context)}" for kind, line in zip(kinds, lines, strict=True)
    )
    if kinds[:2] == ["write", "read"]:
        advice = (
            "A thread reads a __shared__ element before the thread that writes it is "
            "guaranteed to have done so: put __syncthreads() after the tile is written and "
            "before it is read."
        )
    elif kinds[:2] == ["read", "write"]:
        advice = (
            "A thread overwrites __shared__ memory that other threads may still be reading: "
            "put __syncthreads() after the last read of a tile, before the next tile is "
            "loaded into it."
        )
    else:
        advice = "Two threads write the same __shared__ element without a barrier between them."
    message = (
        f"Shared-memory race in {context.kernel}: {described} touch the same __shared__ "
        f"element with no __syncthreads() between them ({hazards} hazard"
        f"{'s' if hazards != 1 else ''}). {advice}"
    )
    return Diagnostic(
        Kind.RACE,
        message,
        kernel=context.kernel,
        thread=first.thread,
        block=first.block,
        line=next((line for line in lines if line), None),
        race_scope=RaceScope.EVERY_CASE,
    )


# -- the tool refusing to run ---------------------------------------------------------------

_REFUSALS = ("Device not supported", "not supported on this", "Unable to", "Error:", "error")


def refusal(log: str, stderr: str) -> str:
    """The first line of the sanitizer's own output that says why it could not run."""
    for text in (log, stderr):
        for raw in text.splitlines():
            line = _PREFIX.sub(lambda m: m["rest"], raw).strip()
            if line and any(word in line for word in _REFUSALS) and "SUMMARY" not in line:
                return line
    tail = (stderr or log).strip().splitlines()
    return tail[-1].strip() if tail else "it printed nothing"
