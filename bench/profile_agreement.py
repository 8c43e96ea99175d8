"""Does the CPU model measure what Nsight Compute measures? (issue 31, item 4)

    python3 bench/profile_agreement.py [--labs LAB,LAB] [--json PATH] [--parallel N]

Profiles every lab's reference, baseline, variants and slow-but-right kernels, and the
known-wrong kernels that run to their end (wrong/EXPECTED.toml: passed or failed on both
backends, with no crash, hang, access out of bounds or divergent barrier), at the lab's
profile case (the lab's own where its model names one, else its smallest public case,
the census case's rule), twice: by the CPU model (the CPU backend's `profile`, in a pool
of processes) and by Nsight Compute on the GPU (one ncu session per lab, whose rows are
printed as it ends: ncu profiles one kernel at a time, so every module is compiled
beforehand, in several GPU workers at once). Prints one row per kernel of each file:
global-load and global-store sectors per request and shared-memory bank conflicts per
request (loads, stores), each as CPU model, ncu and the model's error against ncu; and a
verdict: "agrees" (every measure within 10% of ncu's, conflicts also within 0.1 per
request), "explained: ..." where the kernel's SASS (cuobjdump -sass) shows why the GPU
counts otherwise (accesses the compiler widened, read-only loads, __constant__ reads, or
ncu's own bank-conflict counter agreeing), or "differs: ...". Then how many rows each
verdict has, and the time it all took.

Needs a GPU where ncu may run (as root) for the ncu columns, and the CPU backend's
profile (issue 31) for the CPU model's; where either is missing, the rows say why."""

from __future__ import annotations

import argparse
import json
import multiprocessing
import re
import subprocess
import sys
import tempfile
import time
from collections import Counter
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from grader import machine  # noqa: E402
from grader.judge import cases as casegen  # noqa: E402
from grader.judge import rules  # noqa: E402
from grader.judge.launch import make_launch  # noqa: E402
from grader.labs import all_labs  # noqa: E402
from grader.model.lab import Case, Lab  # noqa: E402
from grader.model.profile import KernelProfile, Traffic  # noqa: E402
from grader.model.result import Kind  # noqa: E402
from grader.model.source import read_submission  # noqa: E402
from grader.toolchain import nvcc  # noqa: E402
from grader.validate import BACKENDS, CRASHES, checks  # noqa: E402

TOLERANCE = 0.10  # relative difference within which a measure agrees
CONFLICT_SLACK = 0.1  # conflicts per request within which they agree however few
TIMEOUT = 120.0  # seconds for one kernel's run under either profiler
ROLES = ("reference", "baseline", "variant", "slow", "wrong")
# What a known-wrong kernel must not be found doing to be profiled: stop, hang, stray, or
# wait at a barrier its block does not all reach (undefined: it may hang on a GPU).
UNFINISHED = {*CRASHES, Kind.BARRIER_DIVERGENCE}
# The table's measures: (the KernelProfile field, the Traffic property).
MEASURES = {
    "ld sectors/req": ("global_loads", "per_request"),
    "st sectors/req": ("global_stores", "per_request"),
    "sh-ld conflicts/req": ("shared_loads", "conflicts_per_request"),
    "sh-st conflicts/req": ("shared_stores", "conflicts_per_request"),
}
# What the SASS shows, by the measure it explains a difference in.
WIDE_LOADS = re.compile(r"\bLDG(?:\.\w+)*\.(?:64|128)\b")
READ_ONLY = re.compile(r"\bLDG(?:\.\w+)*\.CONSTANT\b")
WIDE_STORES = re.compile(r"\bSTG(?:\.\w+)*\.(?:64|128)\b")
ANY_SHARED = {
    "shared_loads": re.compile(r"\bLDS\b"),
    "shared_stores": re.compile(r"\bSTS\b"),
}
WIDE_SHARED = {
    "shared_loads": re.compile(r"\bLDS(?:\.\w+)*\.(?:64|128)\b"),
    "shared_stores": re.compile(r"\bSTS(?:\.\w+)*\.(?:64|128)\b"),
}
# A read of __constant__ memory (bank 3); every kernel's LDC of bank 0 is its parameters.
CONSTANT_CACHE = re.compile(r"\bc\[0x3\]")


@dataclass(frozen=True)
class Kernel:
    """One file of a lab's own kernels."""

    lab: str
    path: Path

    @property
    def file(self) -> str:
        return str(self.path.relative_to(all_labs()[self.lab].home))


@dataclass
class Side:
    """One profiler's KernelProfiles of a file, by kernel, or why there are none."""

    kernels: dict[str, KernelProfile] = field(default_factory=dict)
    note: str = ""
    counters: dict[str, dict[str, float]] = field(default_factory=dict)  # ncu's, raw
    symbols: dict[str, str] = field(default_factory=dict)  # kernel -> module symbol
    sass: str = ""


@dataclass
class Row:
    lab: str
    file: str
    kernel: str
    cpu: dict[str, float | None]
    ncu: dict[str, float | None]
    verdict: str
    requests: dict[str, list[int]] = field(default_factory=dict)  # measure -> [cpu, ncu]


# -- which kernels, at which case -----------------------------------------------------------


def kernels(labs: list[str]) -> list[Kernel]:
    found = []
    for name in labs:
        for check in checks(all_labs()[name]):
            if check.role in ROLES and check.path.is_file() and _runs_to_its_end(check):
                found.append(Kernel(name, check.path))
    return found


def _runs_to_its_end(check) -> bool:
    """A known-wrong kernel whose EXPECTED.toml entry, on both backends, gives a verdict
    with none of UNFINISHED; every other kernel passes."""
    if check.role != "wrong":
        return True
    for backend in BACKENDS:
        wanted = check.expected.get(backend, check.expected)
        if wanted.get("verdict") not in ("passed", "failed"):
            return False
        if UNFINISHED & set(wanted.get("kinds", [])):
            return False
    return True


def profile_case(lab: Lab) -> Case:
    """The lab's profile case, as a grading takes it (grader.judge.rules.profile_case)."""
    public = casegen.public_cases(lab)
    name = rules.profile_case(lab, public)
    return next(case for case in public if case.name == name)


def _prepared(backend, kernel: Kernel):
    """The kernel's build on `backend` at its lab's profile case, and the launch; or the
    build alone where it did not compile."""
    lab = all_labs()[kernel.lab]
    case = profile_case(lab)
    submission, _ = read_submission(kernel.path)
    build = backend.build(submission, lab.macro_values(case.sizes), lab.launch_defaults)
    if not build.ok:
        return build, None
    return build, make_launch(lab, case, casegen.make_inputs(lab, case), build.interface)[0]


# -- the CPU model, in a pool of processes ----------------------------------------------------

_cpu = None  # each pool process's CPU backend


def cpu_model(kernel: Kernel) -> Side:
    """The CPU model's profile of the kernel. The call is the CPU backend's profile entry
    (issue 31: backends/base.py's contract, `profile(build, launch, timeout)` ->
    (RunOutcome, list[KernelProfile])); where this checkout has none, a row says so."""
    global _cpu
    from grader.backends.cpu import CpuBackend

    try:
        _cpu = _cpu or CpuBackend(jobs=1)
        profile = getattr(_cpu, "profile", None)
        if profile is None:
            return Side(note="the CPU backend has no profile entry in this checkout")
        build, launch = _prepared(_cpu, kernel)
        if launch is None:
            return Side(note="it does not compile on the CPU backend")
        outcome, found = profile(build, launch, TIMEOUT)
    except Exception as err:  # a bench row, never a stopped table
        return Side(note=f"the CPU model failed: {err!r}")
    if not outcome.completed:
        return Side(note="it did not run to its end on the CPU backend")
    return Side({k.kernel: k for k in found})


# -- Nsight Compute ---------------------------------------------------------------------------


class Gpu:
    """Nsight Compute's side: every kernel built with nvcc and its module compiled at the
    start, several at once; then one ncu session per call of `profiles` (a lab's)."""

    def __init__(self, chosen: list[Kernel], parallel: int) -> None:
        from grader.backends.base import BackendUnavailable
        from grader.backends.cuda import CudaBackend, nsight

        self.pool = ThreadPoolExecutor(parallel)
        self.cuda, self.prepared = None, {}
        try:
            self.cuda = CudaBackend()
        except BackendUnavailable as why:
            self.about = f"no GPU: {why}"
            return
        found = nsight.tool()
        self.about = (
            f"ncu {found.version} ({found.executable}); not asked for here: "
            f"{', '.join(found.missing()) or 'none'}"
            if found.ok
            else f"ncu cannot profile here: {found.why_not}"
        )
        built = self.pool.map(lambda k: _prepared(self.cuda, k), chosen)
        self.prepared = dict(zip(chosen, built, strict=True))

    def profiles(self, chosen: list[Kernel]) -> list[Side]:
        """Each kernel's profile by ncu, in one session, with its SASS."""
        if self.cuda is None:
            return [Side(note=self.about) for _ in chosen]
        prepared = [self.prepared[kernel] for kernel in chosen]
        runs = [(b, launch) for b, launch in prepared if launch is not None]
        measured = iter(self.cuda.nsight(runs, TIMEOUT))
        sides = [_side(b, launch, measured) for b, launch in prepared]
        listings = [self.pool.submit(sass, b) if s.kernels else None
                    for s, (b, _) in zip(sides, prepared, strict=True)]  # fmt: skip
        for side, listing in zip(sides, listings, strict=True):
            side.sass = listing.result() if listing else ""
        return sides

    def close(self) -> None:
        self.pool.shutdown()
        if self.cuda is not None:
            self.cuda.close()


def _side(build, launch, measured) -> Side:
    if launch is None:
        return Side(note="it does not compile with nvcc")
    result = next(measured)
    if not result.ok:
        return Side(note=result.note)
    symbols = {name: sig.symbol for name, sig in build.interface.kernels.items()}
    kernels = {k.kernel: k for k in result.kernels()}
    return Side(kernels, counters=result.counters, symbols=symbols)


def sass(build) -> str:
    """The SASS of the cubin the worker loads, read by cuobjdump; "" where it fails."""
    with tempfile.TemporaryDirectory() as folder:
        cubin = Path(folder, "kernel.cubin")
        cubin.write_bytes(build.artifact.cubin)
        dump = Path(nvcc.find()).with_name("cuobjdump")
        done = subprocess.run([str(dump), "-sass", str(cubin)], capture_output=True, text=True)
    return done.stdout if done.returncode == 0 else ""


def function_sass(text: str, symbol: str) -> str:
    """One kernel's part of cuobjdump's listing."""
    parts = re.split(r"^\s*Function : ", text, flags=re.MULTILINE)
    return next((part for part in parts if part.split(None, 1)[:1] == [symbol]), "")


# -- the verdict ------------------------------------------------------------------------------


def value(profile: KernelProfile | None, measure: str) -> float | None:
    if profile is None:
        return None
    kind, how = MEASURES[measure]
    return getattr(getattr(profile, kind), how)


def agrees(measure: str, cpu: float | None, ncu: float | None) -> bool:
    """Whether the CPU model's value is within TOLERANCE of ncu's, the ground truth
    (conflicts also within CONFLICT_SLACK per request)."""
    if cpu is None or ncu is None:
        return cpu is None and ncu is None
    if "conflicts" in measure and abs(cpu - ncu) <= CONFLICT_SLACK:
        return True
    return abs(cpu - ncu) <= TOLERANCE * abs(ncu)


def explained(
    off: list[str], code: str, counters: dict[str, float], cpu: KernelProfile, ncu: KernelProfile
) -> dict[str, list[str]]:
    """What the kernel's SASS (and ncu's own bank-conflict counter) says about each
    measure that differs: a measure with no reason is unexplained."""
    from grader.backends.cuda.nsight import BANK_CONFLICTS

    why: dict[str, list[str]] = {measure: [] for measure in off}
    if "ld sectors/req" in off:
        if WIDE_LOADS.search(code):
            why["ld sectors/req"].append(
                "the compiler widened loads (LDG.64/128): fewer requests, more sectors each"
            )
        if READ_ONLY.search(code):
            why["ld sectors/req"].append("read-only loads (ld.global.nc: LDG.CONSTANT)")
        if CONSTANT_CACHE.search(code):
            why["ld sectors/req"].append(
                "reads of __constant__ memory (c[0x3]) go through the constant cache"
            )
    if "ld sectors/req" in off and _split(cpu.global_loads, ncu.global_loads):
        why["ld sectors/req"].append(
            "the same sectors in more requests: nvcc unrolled a loop whose trip count "
            "differs by lane, so lanes at different trips use different copies of a load"
        )
    if "ld sectors/req" in off and _reloaded(cpu.global_loads, ncu.global_loads):
        why["ld sectors/req"].append(
            "the CPU model's extra requests are coalesced reloads: the census build reads "
            "again, after a copy through the grader's hooks (a call g++ cannot see into), "
            "what nvcc kept in a register"
        )
    if "st sectors/req" in off and WIDE_STORES.search(code):
        why["st sectors/req"].append("the compiler widened stores (STG.64/128)")
    for measure, kind in (("sh-ld conflicts/req", "shared_loads"),
                          ("sh-st conflicts/req", "shared_stores")):  # fmt: skip
        if measure not in off:
            continue
        if WIDE_SHARED[kind].search(code):
            why[measure].append(
                "8- or 16-byte shared accesses (LDS/STS.64/128) take several wavefronts"
            )
        if not getattr(ncu, kind).requests and not ANY_SHARED[kind].search(code):
            why[measure].append(
                "nvcc removed the shared accesses, which change nothing (no LDS/STS in SASS)"
            )
        counted, requests = counters.get(BANK_CONFLICTS[kind]), getattr(ncu, kind).requests
        mine = getattr(cpu, kind).conflicts_per_request
        if counted is not None and requests and agrees(measure, mine, counted / requests):
            ratio = counted / requests
            why[measure].append(f"ncu's bank-conflict counter agrees ({ratio:.2f}/req)")
    return why


def _split(cpu: Traffic, ncu: Traffic) -> bool:
    """Whether ncu saw the sectors the CPU model did (within TOLERANCE) in more requests."""
    same = abs(cpu.sectors - ncu.sectors) <= TOLERANCE * ncu.sectors
    return same and ncu.requests > (1 + TOLERANCE) * cpu.requests


def _reloaded(cpu: Traffic, ncu: Traffic) -> bool:
    """Whether the CPU model saw ncu's requests and more, each extra one a coalesced
    warp's load (1 to 4 sectors, within TOLERANCE), the others taking ncu's sectors."""
    extra = cpu.requests - ncu.requests
    if extra <= 0:
        return False
    rest = cpu.sectors - ncu.sectors
    return (1 - TOLERANCE) * extra <= rest <= (1 + TOLERANCE) * 4 * extra


def verdict_of(why: dict[str, list[str]]) -> str:
    """ "agrees" where no measure differs; "explained" where every one that does has a
    reason of its own; else "differs", naming those without one."""
    if not why:
        return "agrees"
    unexplained = [measure for measure, reasons in why.items() if not reasons]
    if unexplained:
        return f"differs: {', '.join(unexplained)}"
    reasons = dict.fromkeys(r for found in why.values() for r in found)
    return f"explained: {'; '.join(reasons)}"


def rows_of(kernel: Kernel, cpu: Side, gpu: Side) -> list[Row]:
    names = list(dict.fromkeys([*cpu.kernels, *gpu.kernels])) or ["-"]
    found = []
    for name in names:
        mine, theirs = cpu.kernels.get(name), gpu.kernels.get(name)
        cpu_values = {m: value(mine, m) for m in MEASURES}
        ncu_values = {m: value(theirs, m) for m in MEASURES}
        requests = {
            m: [getattr(p, MEASURES[m][0]).requests if p else 0 for p in (mine, theirs)]
            for m in MEASURES
        }
        if mine is None or theirs is None:
            verdict = "; ".join(
                f"no {who}: {side.note or 'no such kernel'}"
                for who, side, p in (("CPU model", cpu, mine), ("ncu", gpu, theirs))
                if p is None
            )
        else:
            off = [m for m in MEASURES if not agrees(m, cpu_values[m], ncu_values[m])]
            code = function_sass(gpu.sass, gpu.symbols.get(name, ""))
            verdict = verdict_of(explained(off, code, gpu.counters.get(name, {}), mine, theirs))
        found.append(Row(kernel.lab, kernel.file, name, cpu_values, ncu_values, verdict, requests))
    return found


# -- the table --------------------------------------------------------------------------------


def _number(x: float | None) -> str:
    return "-" if x is None else f"{x:.2f}"


def _difference(cpu: float | None, ncu: float | None) -> str:
    """The CPU model's error against ncu's value."""
    if cpu is None or ncu is None:
        return "-"
    if cpu == ncu:
        return "0%"
    return f"{100 * (cpu - ncu) / ncu:+.0f}%" if ncu else "+inf"


def print_header() -> None:
    print(f"{'':<71}" + "".join(f" | {measure:^20}" for measure in MEASURES))
    head = f"{'lab':<15} {'file':<42} {'kernel':<12}"
    print(head + f" | {'cpu':>6} {'ncu':>6} {'diff':>6}" * len(MEASURES) + " | verdict")


def print_rows(rows: list[Row]) -> None:
    for row in rows:
        line = f"{row.lab:<15} {row.file:<42} {row.kernel:<12}"
        for m in MEASURES:
            cpu, ncu = row.cpu[m], row.ncu[m]
            line += f" | {_number(cpu):>6} {_number(ncu):>6} {_difference(cpu, ncu):>6}"
        print(f"{line} | {row.verdict}", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--labs", help="comma-separated labs (default: all)")
    parser.add_argument("--json", type=Path, help="write the rows here, after each lab")
    parser.add_argument("--parallel", type=int, default=max(1, machine.cores() - 2))
    args = parser.parse_args()
    labs = args.labs.split(",") if args.labs else sorted(all_labs())
    unknown = [lab for lab in labs if lab not in all_labs()]
    if unknown:
        parser.error(f"no such lab: {', '.join(unknown)}")
    started = time.monotonic()
    chosen = kernels(labs)
    print(f"{len(chosen)} kernels of {len(labs)} labs; {args.parallel} at once", flush=True)
    rows: list[Row] = []
    spawn = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(args.parallel, mp_context=spawn) as pool:
        modelled = {kernel: pool.submit(cpu_model, kernel) for kernel in chosen}
        gpu = Gpu(chosen, args.parallel)
        print(f"{gpu.about}; built after {time.monotonic() - started:.0f} s\n", flush=True)
        print_header()
        try:
            for lab in labs:
                mine = [kernel for kernel in chosen if kernel.lab == lab]
                for kernel, side in zip(mine, gpu.profiles(mine), strict=True):
                    found = rows_of(kernel, modelled[kernel].result(), side)
                    print_rows(found)
                    rows += found
                if args.json:
                    args.json.write_text(json.dumps([asdict(row) for row in rows], indent=1))
        finally:
            gpu.close()
    counts = Counter(row.verdict.split(":")[0] for row in rows)
    print(f"\n{len(rows)} rows: " + ", ".join(f"{n} {verdict}" for verdict, n in counts.items()))
    print(f"all done after {time.monotonic() - started:.0f} s")


if __name__ == "__main__":
    main()
