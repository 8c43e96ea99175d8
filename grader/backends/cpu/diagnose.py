"""From the worker's records to what the student reads: a RunOutcome with one sentence
per finding, naming the kernel, the CUDA thread and block, the buffer by its parameter
name, the element and the student's line (addr2line on the program counter).

How the worker ended is the parent's own observation (its exit status, the outputs and
their fill, read from the files); the records after "load" only say where and why, and
may be the submission's writing, so they can add a finding but never clear one, and
their text is never a setup error. Those that narrow a race to the case it showed in (an
overlap, a lost update, two threads storing one element) are believed only under the
runner's seal (`sealed`). An end that only a control run can attribute raises
blame.Unexplained; a failure before any student code ran raises SetupError."""

from __future__ import annotations

import functools
import re
import shutil
import tempfile
from dataclasses import replace
from pathlib import Path

import numpy as np

from grader.backends.cpu import blame, scan
from grader.backends.cpu.build import Artifact
from grader.backends.cpu.contract import BARRIER_CALLS, WARP_CALLS, Exit
from grader.backends.cpu.job import PASSES, Report
from grader.backends.cpu.protocol import (
    Divergence,
    Error,
    Fault,
    Hazard,
    Lost,
    Overlap,
    Pass,
    Printf,
    Record,
    Seal,
    Timeout,
    Twice,
)
from grader.backends.cpu.shelf import Shelf
from grader.errors import SetupError
from grader.judge.compare import poisoned
from grader.model.interface import Executed
from grader.model.launch import (
    SHARED_FILL_BITS,
    Buffer,
    BufferState,
    Launch,
    RunOutcome,
    as_bits,
    filled,
)
from grader.model.result import Diagnostic, Kind, RaceScope
from grader.toolchain import sandbox, scratch

LINES_TIMEOUT = 10.0  # seconds for addr2line; it answers a well-formed module at once

# Errors the runner records about the module's interface, once it is loaded.
_INTERFACE_ERRORS = ("arity", "kernel_missing", "constant_readonly", "constant_missing")


def outcome(
    report: Report,
    artifact: Artifact,
    shelf: Shelf,
    launch: Launch,
    timeout: float,
    fix: str = "",
) -> RunOutcome:
    """`fix` ends the setup error of a sandbox that could not be applied; addr2line gets
    the module from `shelf`."""
    if not report.loaded:
        raise SetupError(blame.before_loading(report, fix))
    report = _checked_passes(report)
    out = RunOutcome(output=report.printf)
    kernel = launch.kernel
    locate = Locator(artifact, shelf)
    passes = {r.n: r for r in report.all(Pass)}
    if 0 in passes:
        out.seconds = passes[0].us / 1e6
    out.blocks_read_each_other = _read_each_other(report, artifact, launch)
    code = report.returncode
    error = report.first(Error)
    fault = report.first(Fault)
    if code is None or code == Exit.TIMEOUT:
        out.timed_out = True
        out.diagnostics.append(_timeout(report.first(Timeout), kernel, timeout, locate))
    elif code == Exit.FAULT and fault is not None:
        out.crashed = True
        out.diagnostics.append(_fault(fault, launch, locate))
    elif code == Exit.LOAD and error is not None and error.what in _INTERFACE_ERRORS:
        out.crashed = True
        out.diagnostics.append(_error(error, launch))
    elif code != 0 or len(report.outputs) < PASSES or report.unreadable:
        raise blame.ending(report)
    for record in report.all(Divergence):
        out.diagnostics.append(_divergence(record, kernel, artifact.text))
        break
    printed = report.first(Printf)
    if printed is not None and printed.total > printed.kept:
        out.diagnostics.append(_flood(printed, kernel))
    if out.completed:
        out.buffers = _buffers(report, launch)
        if 0 in passes:
            out.executed[kernel] = _executed(passes[0], artifact)
        if 1 in passes and 1 in report.outputs:
            race = _blocks_race(_race(report, launch, locate), report, launch, locate)
            out.diagnostics += explained(race, report, launch, locate)
            unset = read_before_set(report, launch, locate)
            if unset:
                out.diagnostics.append(unset)
        unwritten = _uninitialised_shared(out.buffers, launch, kernel)
        if unwritten:
            out.diagnostics.append(unwritten)
    return out


def _read_each_other(report: Report, artifact: Artifact, launch: Launch) -> bool | None:
    """Whether a block loaded an output element another block stored (the pass records'
    "crossed"), where a census module's hooks watched the loads of more than one block;
    None where they did not. The submission may write such a record too: a count asks
    for the slower grading in grid order; a record can say nothing the runner's own
    record, written after it, does not say as well."""
    if any(r.crossed for r in report.all(Pass)):
        return True
    blocks = launch.grid[0] * launch.grid[1] * launch.grid[2]
    return False if artifact.census and blocks > 1 else None


def _blocks_race(
    race: Diagnostic | None, report: Report, launch: Launch, locate: Locator
) -> Diagnostic | None:
    """`race`, the outputs' own (None: they agreed), or in its place two blocks that stored
    into one element (an overlap, a lost update): under the runner's seal, the race of the
    case it showed in, where it explains every element the outputs left different. Else
    the record is the kernel's writing, or a store that launders a race of its threads,
    which only counts against it: the outputs' race, or where they agreed, the record's,
    in every case."""
    overlap, lost = report.first(Overlap), report.first(Lost)
    if overlap is not None:
        found = _overlap(overlap, launch, launch.kernel, locate)
    elif lost is not None:
        found = _lost(lost, launch, launch.kernel, locate)
    else:
        return race
    if sealed(report) and (race is None or _stored_twice_where_differ(report, launch, locate)):
        return found
    return race or replace(found, race_scope=RaceScope.EVERY_CASE)


def sealed(report: Report) -> bool:
    """Whether every record that narrows a race to one case is the runtime's own: each
    "seal" that carries the run's token (runner.cpp writes one after each pass) counts as
    many such records as the report holds before it, and none follows the last. A record
    the kernel wrote, or a seal it wrote without the token, leaves them unsealed."""
    counted, last = 0, None
    for record in report.records:
        if _narrows(record):
            counted += 1
        elif isinstance(record, Seal) and report.token and record.token == report.token:
            if record.count != counted:
                return False
            last = counted
    return last == counted


def _narrows(record: Record) -> bool:
    """A record that narrows a race to the case it showed in, or says whether those
    explain it ("twice"; runtime/output.cpp counts each one the runtime writes)."""
    return isinstance(record, (Overlap, Lost, Twice)) or (
        isinstance(record, Hazard) and record.what == "waw"
    )


def _stored_twice_where_differ(report: Report, launch: Launch, locate: Locator) -> bool:
    """Whether the two thread orders left some element different, and the runtime's
    sealed "twice" record found every such element stored twice (by two threads of a
    block, by two blocks, or updated plainly by two blocks), each order's value in it one
    that those stores left (runtime/output.cpp's twice_explains). A race elsewhere
    (threads that read what others store, with no barrier between) is not the stores'
    doing, and a genuine store twice, even into every element, must not narrow it to the
    case it showed in. The record compares bit for bit, so it finds every element
    `_differing` does."""
    twice = report.first(Twice)
    if twice is None or twice.outside != 0 or not sealed(report):
        return False
    return any(d.any() for d in _differing(report, launch, locate.artifact))


def _executed(record: Pass, artifact: Artifact) -> Executed:
    """What the first pass counted (runtime/counts.cpp says why a kernel's own record may
    be believed here); shared loads only where the module was built to count them."""
    loads = record.shared_loads if artifact.census else None
    return Executed(shared_loads=loads, atomics=record.atomics)


def _checked_passes(report: Report) -> Report:
    """The report as the checked passes left it. After them the worker may run the blocks
    once more, one at a time, to learn which block wrote what (runner.cpp); whatever stops
    that pass (its shorter deadline, the parent's) does not undo the checked passes."""
    done = {r.n for r in report.all(Pass)}
    if not all(p in done and p in report.outputs for p in range(PASSES)):
        return report
    timed = (Fault, Timeout, Divergence)  # the records that say which pass they come from
    late = {id(r) for r in report.records if isinstance(r, timed) and r.pass_ >= PASSES}
    if not late and report.returncode == 0:
        return report
    kept = [r for r in report.records if id(r) not in late]
    ended_early = any(isinstance(r, (Fault, Timeout, Error)) for r in kept)
    return replace(report, records=kept, returncode=report.returncode if ended_early else 0)


# -- lines ----------------------------------------------------------------------------


class Locator:
    """The student's line for a program counter inside the module."""

    def __init__(self, artifact: Artifact, shelf: Shelf):
        self.artifact = artifact
        self.shelf = shelf

    @functools.cached_property
    def tool(self) -> str | None:
        """addr2line, looked up where a line is first asked for: most runs ask for none,
        and every worker run makes a Locator."""
        return shutil.which("addr2line") or shutil.which("llvm-addr2line")

    def line(self, pc: int) -> int | None:
        if not pc or not self.tool:
            return None
        # Innermost inlined frame first: the first FILE:N in the student's own file is
        # the line they wrote.
        for where in self._frames(pc):
            match = re.match(r"(.*):(\d+)", where.split(" (discriminator")[0])
            if match and Path(match.group(1)).name == self.artifact.source_name:
                return int(match.group(2)) or None
        return None

    def _frames(self, pc: int) -> list[str]:
        """addr2line's lines for `pc`, or none. It runs sandboxed like a compiler, on the
        module linked into its folder: inline asm makes the module's sections and DWARF
        the student's writing."""
        with tempfile.TemporaryDirectory(prefix=scratch.prefix("lines")) as tmp:
            module = Path(tmp) / "module.so"
            try:
                self.shelf.place(self.artifact.module, module)
                cmd = [self.tool, "-e", str(module), "-i", "-f", "-C", hex(pc)]
                run = sandbox.run_compiler(cmd, Path(tmp), timeout=LINES_TIMEOUT)
            except (OSError, SetupError):
                return []
        return run.log.splitlines() if run.code == 0 else []


def _at(line: int | None) -> str:
    return f" at line {line}" if line else ""


def _who(record: Fault) -> tuple[str, tuple | None, tuple | None]:
    thread, block = record.thread, record.block
    if thread is None or block is None:
        return "A global constructor, while the module was loading,", None, None
    return f"Thread {_xyz(thread)} of block {_xyz(block)}", thread, block


def _xyz(v) -> str:
    return "({},{},{})".format(*v) if v else "(?,?,?)"  # a malformed record has none


# -- the kinds of findings ------------------------------------------------------------------


def _fault(record: Fault, launch: Launch, locate: Locator) -> Diagnostic:
    kind = record.kind
    who, thread, block = _who(record)
    line = record.line or locate.line(record.pc)
    if kind == "buffer":
        return _out_of_bounds(record, launch, who, thread, block, line)
    if kind == "shared":
        message = _shared_message(record, who, _at(line))
        return Diagnostic(
            Kind.OUT_OF_BOUNDS, message, kernel=launch.kernel, thread=thread, block=block, line=line
        )
    if kind == "static_shared":
        message = _static_shared_message(record, who, line, bool(launch.constants))
        return Diagnostic(
            Kind.OUT_OF_BOUNDS, message, kernel=launch.kernel, thread=thread, block=block, line=line
        )
    message = _crash_message(record, who, _at(line))
    return Diagnostic(
        Kind.CRASH, message, kernel=launch.kernel, thread=thread, block=block, line=line
    )


def _shared_message(record: Fault, who: str, where: str) -> str:
    offset, size = record.offset, record.bytes
    access = {"read": "read", "write": "wrote"}.get(record.access, "accessed")
    side = "past the end of" if offset >= size else "before the start of"
    return (
        f"{who} {access} byte {offset} of the dynamic shared memory (extern __shared__), "
        f"{side} the {size} bytes the launch gives each block{where}."
    )


def _static_shared_message(record: Fault, who: str, line: int | None, halo: bool) -> str:
    """An access past a static __shared__ array: the element as the student indexes it
    (tile[12][3] for element 147 of tile[12][12]), and the declaration; a tile's halo
    only in a lab with a mask (`halo`: the launch fills __constant__ memory)."""
    name = record.name or "a __shared__ array"
    access = {"read": "read", "write": "wrote"}.get(record.access, "accessed")
    element = max(1, record.element)
    index, count = record.offset // element, record.bytes // element
    dims = record.dims
    declared = record.decl_line
    array = f"__shared__ {name}{''.join(f'[{d}]' for d in dims)} ({count} elements" + (
        f", declared at line {declared})" if declared else ")"
    )
    what = _outside(index, count, array)
    if index >= count:
        what = f"{name}{_subscript(index, dims)}, {what}"
    size = "the largest tile (with its halo)" if halo else "everything the block keeps in it"
    return (
        f"{who} {access} {what}{',' if line else ''}{_at(line)}. Keep the index inside the "
        f"array (check the arithmetic on that line), or size the array for {size}."
    )


def _outside(index: int, length: int, array: str) -> str:
    """How far element `index` lies outside `array` of `length` elements: "2 elements
    past the end of A", "1 element before the start of A"."""
    if index >= length:
        count, side = index - length + 1, "past the end of"
    else:
        count, side = -index, "before the start of"
    return f"{count} element{'s' if count != 1 else ''} {side} {array}"


def _subscript(index: int, dims: tuple[int, ...]) -> str:
    """Flat element `index` as subscripts of a row-major array of shape `dims`, the first
    subscript taking what does not fit: element 147 of [12][12] is [12][3]."""
    subs = []
    for d in reversed(dims[1:]):
        subs.append(index % d)
        index //= d
    return "".join(f"[{v}]" for v in [index, *reversed(subs)])


# What a thread did, for the faults that need nothing but where it happened.
_PLAIN_CRASHES = {
    "divide": "divided an integer by zero{where}.",
    "trap": "called __trap(){where}.",
    "abort": "aborted{where} (abort(), or an exception nothing caught).",
    "float": "raised a floating-point exception{where}.",
}


def _crash_message(record: Fault, who: str, where: str) -> str:
    kind = record.kind
    if kind in _PLAIN_CRASHES:
        return f"{who} {_PLAIN_CRASHES[kind].format(where=where)}"
    if kind == "stack_overflow":
        kb = record.stack // 1024
        return (
            f"{who} overflowed its {kb} KB stack{where}: a local array that is too big, or "
            "recursion that does not end."
        )
    if kind == "address":
        addr = record.addr
        access = {"read": "read", "write": "wrote to"}.get(record.access, "accessed")
        what = "a null pointer" if addr < 4096 else "memory that is not one of the kernel's buffers"
        return f"{who} {access} address {hex(addr)}, {what}{where}."
    if kind == "assert":
        return f"{who} failed assert({blame.one_line(record.text)}){where}."
    return f"{who} executed an invalid instruction{where} (signal {record.signal})."


def _out_of_bounds(record: Fault, launch: Launch, who, thread, block, line) -> Diagnostic:
    buffer = _buffer_at(launch, record.index)
    name = buffer.name if buffer else "a buffer"
    width = buffer.data.dtype.itemsize if buffer else 4
    length = buffer.data.size if buffer else record.bytes // width
    element = record.offset // width  # floor: byte -1 is element -1
    access = {"read": "read", "write": "wrote"}.get(record.access, "accessed")
    side = _outside(element, length, name)
    at = f", at line {line}" if line else ""
    message = f"{who} {access} {name}[{element}], {side} ({length} elements){at}."
    return Diagnostic(
        Kind.OUT_OF_BOUNDS, message, kernel=launch.kernel, thread=thread, block=block, line=line
    )


def _buffer_at(launch: Launch, index: int) -> Buffer | None:
    """The launch's buffer with ordinal `index`, or None where a record names none."""
    buffers = launch.buffers()
    return buffers[index] if 0 <= index < len(buffers) else None


def _timeout(record: Timeout | None, kernel: str, timeout: float, locate: Locator) -> Diagnostic:
    if record is None:
        return Diagnostic(
            Kind.TIMEOUT,
            f"{kernel} did not finish within {timeout:g} s and was stopped. Look for a loop "
            "whose condition never becomes false, or a thread waiting for another forever.",
            kernel=kernel,
        )
    line = locate.line(record.pc)
    thread, block = record.thread, record.block
    # the probes found the block at several places: its loop, by the first line
    lines = [locate.line(pc) for pc in dict.fromkeys(record.pcs)]
    line = min((n for n in lines if n), default=line)
    if record.phase == "load":
        return Diagnostic(
            Kind.TIMEOUT,
            f"Loading the module took longer than {timeout:g} s: a global constructor"
            f"{_at(line)} never finished.",
            kernel=kernel,
            line=line,
        )
    barriers = sorted(set(record.barriers))
    if block is not None and barriers:
        # threads that keep meeting at barriers: the loop around them, whoever ran last
        lines = " and ".join(str(n) for n in barriers)
        plural = "s" if len(barriers) > 1 else ""
        line = barriers[0]
        running = (
            f": the threads of block {_xyz(block)} kept meeting at the __syncthreads() at "
            f"line{plural} {lines}, so a loop around {'them' if plural else 'it'} never ended"
        )
    elif thread is not None and block is not None:
        running = f": thread {_xyz(thread)} of block {_xyz(block)} was still running{_at(line)}"
    elif block is not None:
        running = f": the threads of block {_xyz(block)} were still running{_at(line)}"
    else:
        running = ""
    return Diagnostic(
        Kind.TIMEOUT,
        f"{kernel} did not finish within {timeout:g} s{running}. Look for a loop whose "
        "condition never becomes false, or a thread waiting for another forever.",
        kernel=kernel,
        thread=thread,
        block=block,
        line=line,
    )


def _divergence(record: Divergence, kernel: str, source: str) -> Diagnostic:
    what = record.what
    block = record.block
    thread, other = record.thread, record.other
    line, other_line = record.line or None, record.other_line or None
    op = record.op
    if what == "shared_tail":
        return Diagnostic(
            Kind.OUT_OF_BOUNDS,
            f"A thread of block {_xyz(block)} wrote past the end of the dynamic shared memory "
            f"(extern __shared__): byte {record.line} changed, but the launch gives each "
            "block only the bytes passed as the third <<<>>> argument.",
            kernel=kernel,
            block=block,
        )
    if what == "warp":
        name = WARP_CALLS.get(op, "a warp operation")
        waits = f"Thread {_xyz(thread)} of block {_xyz(block)} waits in {name}{_at(line)}"
        if record.other_state == 0:
            why = _why_not_there(source, line, other, name, "Every lane named in the mask")
        else:
            why = (
                f" for thread {_xyz(other)}, which waits at __syncthreads(){_at(other_line)}. "
                f"Every lane named in the mask must reach the same {name}."
            )
        return Diagnostic(
            Kind.BARRIER_DIVERGENCE,
            waits + why,
            kernel=kernel,
            thread=thread,
            block=block,
            line=line,
        )
    barrier = BARRIER_CALLS.get(op, "__syncthreads()")
    if what == "lines":
        return Diagnostic(
            Kind.BARRIER_DIVERGENCE,
            f"Threads of block {_xyz(block)} wait at different barriers: thread {_xyz(thread)} "
            f"at {barrier}{_at(line)}, thread {_xyz(other)} at line {other_line}. Every "
            "thread of a block must reach the same __syncthreads(); one inside an if that not "
            "all threads take hangs or corrupts results on a GPU.",
            kernel=kernel,
            thread=thread,
            block=block,
            line=line,
        )
    message = f"Thread {_xyz(thread)} of block {_xyz(block)} waits at {barrier}{_at(line)}"
    return Diagnostic(
        Kind.BARRIER_DIVERGENCE,
        message + _why_not_there(source, line, other, barrier, "Every thread of a block"),
        kernel=kernel,
        thread=thread,
        block=block,
        line=line,
    )


def _why_not_there(source: str, line: int | None, other, call: str, who: str) -> str:
    """How thread `other` finished without reaching `call` (a barrier or a warp operation)
    on `line`, as far as the source shows: it sits in a branch the thread skipped, or the
    thread returned early. `who` must reach it: every thread of a block, or every lane a
    mask names."""
    context = scan.barrier_context(source, line) if line else scan.BarrierContext(None, None)
    gone = f"thread {_xyz(other)} of the same block"
    every = f"{who} must reach each {call}"
    if context.branch_line:
        also = (
            f" (the return at line {context.return_line} may skip it too)"
            if context.return_line
            else ""
        )
        tile = "threads" in call and " (threads with nothing to load can store 0 into the tile)"
        return (
            f", which is inside the {context.branch} at line {context.branch_line}; {gone} "
            f"did not take that branch and finished without reaching it{also}. {every}: put "
            f"the {call} outside the {context.branch} and keep only the work inside it{tile or ''}."
        )
    if context.return_line:
        return (
            f", while {gone} had already returned (the return at line "
            f"{context.return_line}). {every}: move the early return after the last "
            f"{call}, or put the work inside an if instead of returning."
        )
    return (
        f", while {gone} finished the kernel without reaching it: a condition or a loop let "
        f"it skip the {call}. {every}, the same number of times."
    )


def _error(record: Error, launch: Launch) -> Diagnostic:
    """An interface error the runner found in the loaded module. The constant's name is
    taken only if it is one the grader fills: the record may be the submission's."""
    what, kernel = record.what, launch.kernel
    name = record.detail
    name = name if name in launch.constants else "a __constant__ variable the lab fills"
    if what == "arity":
        params = record.params
        message = (
            f"{kernel} takes {params} parameter{'s' if params != 1 else ''}, but the grader "
            f"passes {len(launch.args)}."
        )
    elif what == "constant_readonly":
        message = (
            f"{name} is declared const, so the grader cannot fill it; declare it "
            f"`__constant__ float {name}[...]` without const."
        )
    elif what == "constant_missing":
        message = f"The compiled module does not define {name} where the grader can fill it."
    else:
        message = (
            f"The compiled module has no kernel named {kernel} that the CPU backend can launch."
        )
    return Diagnostic(Kind.INTERFACE, message, kernel=kernel)


def _flood(record: Printf, kernel: str) -> Diagnostic:
    total, kept = record.total, record.kept
    return Diagnostic(
        Kind.OUTPUT,
        f"{kernel} printed {total:,} bytes with printf; the first {kept:,} are kept and "
        f"{total - kept:,} were dropped. Printing from every thread floods the output and "
        "slows the kernel down: print from one thread, or remove the printf.",
        kernel=kernel,
    )


# -- comparing the two passes --------------------------------------------------------------


def _buffers(report: Report, launch: Launch) -> dict[str, BufferState]:
    out: dict[str, BufferState] = {}
    for k, buffer in enumerate(launch.buffers()):
        state = BufferState(data=report.outputs[0][k])
        before, after = report.pads.get((0, k)), report.pads.get((1, k))
        if before is not None:
            state.written_before = before.changed
        if after is not None and after.changed:
            state.written_after = after.changed
            state.first_after = after.first
        out[buffer.name] = state
    return out


def _same(a: np.ndarray, b: np.ndarray, tolerant: bool) -> np.ndarray:
    if a.dtype.kind != "f":
        return a == b
    both_nan = np.isnan(a) & np.isnan(b)
    if tolerant:
        scale = max(float(np.nanmax(np.abs(a), initial=0.0)), 1.0)
        close = np.isclose(a, b, rtol=1e-4, atol=1e-5 * scale)
        return close | both_nan
    return (as_bits(a) == as_bits(b)) | both_nan


def _differing(report: Report, launch: Launch, artifact: Artifact) -> list[np.ndarray]:
    """For each buffer of the launch, the elements the two thread orders left different
    (none where a pass's outputs are missing); sums of floats that atomics add in another
    order differ within a tolerance without a mistake."""
    if not all(p in report.outputs for p in (0, 1)):
        return [np.zeros(0, dtype=bool) for _ in launch.buffers()]
    # a "pass" record may be the submission's: pass 0's is not there for certain
    passes = {r.n: r for r in report.all(Pass)}
    said = any(passes[p].float_atomics for p in (0, 1) if p in passes)
    atomics = said and artifact.float_atomics
    forward, reverse = report.outputs[0], report.outputs[1]
    return [~_same(forward[k], reverse[k], atomics) for k in range(len(launch.buffers()))]


def _race(report: Report, launch: Launch, locate: Locator) -> Diagnostic | None:
    """The two thread orders left an output different: what differs, and the two ways
    threads of a block can make it so, until a hazard record says which (explained)."""
    forward, reverse = report.outputs[0], report.outputs[1]
    differing = _differing(report, launch, locate.artifact)
    for k, buffer in enumerate(launch.buffers()):
        a, b, differs = forward[k], reverse[k], differing[k]
        if not differs.any():
            continue
        index = int(np.argmax(differs))
        count = int(differs.sum())
        return Diagnostic(
            Kind.RACE,
            f"{buffer.name}[{index}] differs between two runs that ran the threads of each "
            f"block, and the blocks, in different orders ({_value(a[index])} in one, "
            f"{_value(b[index])} in the other; {count:,} element{'s' if count != 1 else ''} "
            f"differ). {_ORDERS}",
            kernel=launch.kernel,
            race_scope=RaceScope.EVERY_CASE,
        )
    return None


# What threads do for their order to matter, where no record says which.
_ORDERS = (
    "Threads of a block depend on the order they run in: one reads what another writes "
    "with no __syncthreads() between the write and the read, or several store into the "
    "same element. Or a block reads what another block writes, while a GPU runs a "
    "grid's blocks in no set order, and __syncthreads() waits for no other block."
)


def explained(race: Diagnostic | None, report: Report, launch: Launch, locate: Locator):
    """The race findings of a run whose accesses were watched (runtime/hazards.cpp's
    "hazard" records), from `race`, what its two passes showed (None: nothing). A shared
    access that races is a finding even where the orders agreed: a GPU's warps need
    not. Two threads storing into one element only explain outputs that differed
    (storing the same value is harmless), and only under the runner's seal, where every
    element that differs is one stored twice: they narrow the race to the case it
    showed in."""
    records = {r.what: r for r in reversed(report.all(Hazard))}
    shared = records.get("raw") or records.get("war")
    if race is None or race.race_scope != RaceScope.EVERY_CASE:
        alone = _hazard(shared, launch, locate, "") if shared else None
        return [d for d in (race, alone) if d]
    seen = race.message.removesuffix(_ORDERS)
    if shared:
        return [_hazard(shared, launch, locate, seen)]
    if "waw" in records and _stored_twice_where_differ(report, launch, locate):
        return [_stored_twice(records["waw"], launch, locate, seen)]
    return [race]


def _hazard(record: Hazard, launch: Launch, locate: Locator, seen: str) -> Diagnostic:
    """A thread read a shared element another thread of its block wrote since the last
    barrier, or wrote one another had read since then; `seen`, the outputs it left
    different, where the two thread orders showed it."""
    thread, other, block = record.thread, record.other, record.block
    line, other_line = locate.line(record.pc), locate.line(record.other_pc)
    element = _shared_element(record)
    who = f"thread {_xyz(thread)} of block {_xyz(block)}"
    if record.what == "war":
        what = (
            f"{who} wrote {element}{_at(line)} after thread {_xyz(other)} of the same block "
            f"had read it{_at(other_line)}"
        )
        read_line, fix = other_line, "after the last read of it, before the next write"
    else:
        what = (
            f"{who} read {element}{_at(line)} after thread {_xyz(other)} of the same block "
            f"had written it{_at(other_line)}"
        )
        read_line = line
        fix = (
            "between the write and the other threads' reads, wherever they are: after a "
            "loop's last step too, not only between its steps"
        )
    shown = f"{seen}The first such access: {what}" if seen else f"{what[0].upper()}{what[1:]}"
    luck = (
        ""
        if seen
        else " The orders the CPU backend ran the threads in happened to give the same "
        "output; a GPU's warps need not, and the reader may see the value from before the "
        "write or after it."
    )
    return Diagnostic(
        Kind.RACE,
        f"{shown}, with no __syncthreads() between them, so what the reader sees depends on "
        f"which thread runs first.{luck} Put a __syncthreads() {fix}.",
        kernel=launch.kernel,
        thread=thread,
        block=block,
        line=read_line,
        race_scope=RaceScope.EVERY_CASE,
    )


def _stored_twice(record: Hazard, launch: Launch, locate: Locator, seen: str) -> Diagnostic:
    """Two threads of one block stored different values into one output element, with no
    barrier between: what is left is whichever store came last. Where the stores collide,
    the two thread orders leave the element different, so each case's own run finds it
    (RaceScope.STORES): a case it leaves alone was not right by luck."""
    thread, other, block = record.thread, record.other, record.block
    line, other_line = locate.line(record.pc), locate.line(record.other_pc)
    buffer = _buffer_at(launch, record.index)
    name = buffer.name if buffer else "an output"
    element = record.offset // (buffer.data.itemsize if buffer else 4)
    lines = _at(line) if line == other_line else f"{_at(other_line)} and{_at(line)}"
    return Diagnostic(
        Kind.RACE,
        f"{seen}Threads {_xyz(other)} and {_xyz(thread)} of block {_xyz(block)} both stored "
        f"into {name}[{element}]{lines}, with no barrier between them, so the value left is "
        "whichever store runs last. Only one thread should store each element: where the "
        "block's threads compute one result together, the thread that holds it stores it "
        "(if (threadIdx.x == 0) ...), after the others' work is done.",
        kernel=launch.kernel,
        thread=thread,
        block=block,
        line=line,
        race_scope=RaceScope.STORES,
    )


def read_before_set(report: Report, launch: Launch, locate: Locator) -> Diagnostic | None:
    """An output element a thread read before any thread stored into it, where it still
    held the grader's poison when the kernel started (a later kernel of a launch reads
    what an earlier one stored)."""
    record = next((r for r in report.all(Hazard) if r.what == "unset"), None)
    buffer = _buffer_at(launch, record.index) if record else None
    if record is None or buffer is None or not buffer.output:
        return None
    data = buffer.data.reshape(-1)
    element = record.offset // data.itemsize
    if not 0 <= element < data.size or not poisoned(data[element : element + 1]).all():
        return None
    line = locate.line(record.pc)
    return Diagnostic(
        Kind.UNWRITTEN_OUTPUT,
        f"Thread {_xyz(record.thread)} of block {_xyz(record.block)} read "
        f"{buffer.name}[{element}]{_at(line)} before any thread had stored into it. Outputs "
        "arrive holding the NaN the grader fills them with, not 0, so a value computed from "
        f"{buffer.name}[{element}] (as {buffer.name}[i] += ... computes) is that NaN too. Add "
        "into a register and store the result once, or set the element before adding to it.",
        kernel=launch.kernel,
        thread=record.thread,
        block=record.block,
        line=line,
    )


def _shared_element(record: Hazard) -> str:
    """A shared element as the student indexes it (Ms[0][3]), or its byte."""
    name, dims = record.name, record.dims
    if record.kind == "static_shared" and name:
        index = record.offset // max(1, record.element)
        return f"__shared__ {name}{_subscript(index, dims) if dims else f'[{index}]'}"
    return f"byte {record.offset} of the shared memory"


def _overlap(record: Overlap, launch: Launch, kernel: str, locate: Locator) -> Diagnostic:
    """Two blocks stored different values into the same element (runner.cpp's third pass),
    the second by the store at the record's program counter."""
    buffer = _buffer_at(launch, record.index)
    name = buffer.name if buffer else "an output"
    dtype = buffer.data.dtype if buffer else np.dtype(np.float32)
    element = record.element
    first, second = record.first, record.second
    # the fill words are 32 bits; a forged record may give any number
    before, after = (_value(filled(v & 0xFFFFFFFF, dtype)) for v in (record.before, record.after))
    count = record.count
    others = f"; {count:,} elements were written by more than one block" if count > 1 else ""
    line = locate.line(record.pc)
    store = f" by the store at line {line}" if line else ""
    return Diagnostic(
        Kind.RACE,
        f"Blocks {_xyz(first)} and {_xyz(second)} both wrote {name}[{element}]: block "
        f"{_xyz(first)} stored {before}, then block {_xyz(second)} stored {after}{store}"
        f"{others}. "
        "Blocks run in any order, so which value is left differs from run to run. Each "
        "output element must be stored by exactly one thread of one block: check the index "
        "each thread stores to (every size in its place, the block offset stepping by the "
        "tile each block covers, TILE, not by the block size)"
        + (
            ", and that threads which only load a tile's halo store nothing."
            if launch.constants
            else "."
        ),
        kernel=kernel,
        block=second,
        line=line,
        race_scope=RaceScope.CASE,
    )


def _lost(record: Lost, launch: Launch, kernel: str, locate: Locator) -> Diagnostic:
    """A second block updated an element of an output that blocks add to (a histogram's
    bins) with a plain store, where an atomic was needed (runtime/stores.cpp)."""
    buffer = _buffer_at(launch, record.index)
    name = buffer.name if buffer else "an output"
    first, second = record.first, record.second
    line = locate.line(record.pc)
    return Diagnostic(
        Kind.RACE,
        f"Blocks {_xyz(first)} and {_xyz(second)} both updated {name}[{record.element}] "
        f"with a plain store{_at(line)}, not an atomic. Blocks run at the same time on a GPU, "
        "so two such updates of one element collide and one of them is lost: use "
        "atomicAdd for every element other blocks may update too.",
        kernel=kernel,
        block=second,
        line=line,
        race_scope=RaceScope.CASE,
    )


def _value(v: np.generic) -> str:
    if v.dtype.kind != "f":
        return str(int(v))
    return "NaN" if np.isnan(v) else f"{float(v):.6g}"


def _uninitialised_shared(buffers: dict[str, BufferState], launch: Launch, kernel: str):
    for buffer in launch.buffers():
        if not buffer.output or buffer.data.dtype != np.float32:
            continue
        data = buffers[buffer.name].data
        marked = np.flatnonzero(as_bits(data) == SHARED_FILL_BITS)
        if marked.size:
            index = int(marked[0])
            return Diagnostic(
                Kind.NAN,
                f"{buffer.name}[{index}] is NaN: it was computed from shared memory that no "
                "thread wrote (the grader fills shared memory with NaN at the start of every "
                "block). Check that every element a thread reads from a __shared__ array is "
                "written first, with a __syncthreads() between the writes and the reads.",
                kernel=kernel,
            )
    return None
