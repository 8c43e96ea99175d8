"""A kernel's memory profile on the CPU backend, as the grader reads it: the runner's
"profile" record (runtime/profile.cpp forms the warp-level requests from the addresses
each thread touched) decoded into a grader.model.profile.KernelProfile.

The record comes from the process that ran the submission, after its code ran. It is
believed only with the token the job gave (`Report.token`, the one the run's seals carry
too: grader.backends.cpu.diagnose.sealed), which the runner read and blanked before
loading the module (runtime/runner.cpp), and only where exactly one record carries it:
a kernel that wrote its own record would have to find the token in the runner's memory
and keep the runner from writing the true one."""

from __future__ import annotations

from dataclasses import fields, replace

from grader import defaults
from grader.backends.cpu import build, protocol, runner, shim
from grader.backends.cpu.job import Report
from grader.model.profile import WARP, KernelProfile, Traffic
from grader.toolchain import cxx, nvcc

# The kinds of access with traffic: KernelProfile's fields and the record's, by one name.
TRAFFIC = tuple(f.name for f in fields(KernelProfile) if f.type == "Traffic")


def read(report: Report, kernel: str, threads: int) -> KernelProfile | None:
    """`kernel`'s profile from its run's records, `threads` threads launched: None where no
    record carries the run's token (the first pass did not end), or more than one does,
    or the one that does is not a profile any run makes."""
    found = [r for r in report.all(protocol.Profile) if r.token == report.token]
    if not report.token or len(found) != 1:
        return None
    record = found[0]
    traffic = {name: _traffic(getattr(record, name)) for name in TRAFFIC}
    if any(t is None for t in traffic.values()):
        return None
    return KernelProfile(
        kernel,
        **traffic,
        global_atomics=record.global_atomics,
        shared_atomics=record.shared_atomics,
        threads=threads,
        busiest_thread_loads=record.busiest,
        busiest_block_loads=record.busiest_block,
        blocks=record.blocks,
    )


def _traffic(numbers: protocol.Numbers) -> Traffic | None:
    """Requests, sectors, bytes and lanes; None unless a request has 1 to 32 lanes."""
    if len(numbers) != 4:
        return None
    found = Traffic(*numbers)
    if not found.requests <= found.lanes <= WARP * found.requests:
        return None
    return found


def merged(profiles: list[KernelProfile]) -> list[KernelProfile]:
    """One profile per kernel, in the order the kernels first ran: a kernel launched more
    than once adds its launches up (its busiest thread and block are the busiest of any launch)."""
    out: dict[str, KernelProfile] = {}
    for p in profiles:
        seen = out.get(p.kernel)
        if seen is None:
            out[p.kernel] = p
            continue
        out[p.kernel] = replace(
            seen,
            **{name: getattr(seen, name).plus(getattr(p, name)) for name in TRAFFIC},
            global_atomics=seen.global_atomics + p.global_atomics,
            shared_atomics=seen.shared_atomics + p.shared_atomics,
            threads=seen.threads + p.threads,
            busiest_thread_loads=max(seen.busiest_thread_loads, p.busiest_thread_loads),
            busiest_block_loads=max(seen.busiest_block_loads, p.busiest_block_loads),
            blocks=seen.blocks + p.blocks,
        )
    return list(out.values())


def decided_by() -> list[object]:
    """What decides a census module's profile beside its source, its macros and the launch
    (a cache of profiles keys on it: grader.grading.profiles.lab_kernel): the build's
    format, the runtime that runs and counts it, the C++ compiler and the census build's
    flags, and nvcc, whose ptxas figures decide the occupancy (without nvcc the registers
    are not counted)."""
    found = nvcc.find()
    return [
        build.CACHE_VERSION,
        runner.runtime_hash(),
        cxx.compiler().version,
        list(shim.module_flags(census=True)),
        defaults.ARCH,
        found,
        nvcc.version() if found else None,
        nvcc.CACHE_VERSION,
    ]
