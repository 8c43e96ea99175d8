"""Nsight Compute (ncu), the tool: where it is, whether this user may read the GPU's
performance counters, the command line that runs the GPU worker under it, and what its
log says, turned into grader.model.profile's numbers.

ncu runs the worker (`command` is the worker's prefix, as compute-sanitizer's is) and
counts, for each launch of the lab's kernels only, the counters in TRAFFIC and the rest
below. It writes them to a log file of its own as CSV (`--page raw`: a header of metric
names, a row of units, a row per launch), so the kernel's printf, which goes to the
worker's stdout, can never pass for a counter. The counters map onto the CPU model's
measures as the Kernel Profiling Guide defines them: a global request is one warp's
load or store instruction and its sectors the 32-byte segments it touched; a shared
request's wavefronts are the passes the banks needed, so wavefronts - requests are its
bank conflicts; lanes are the threads that executed the instruction.

Whether ncu may run: as root, with CAP_SYS_ADMIN, or where the driver lets every user
read the counters (RmProfilingAdminOnly: 0). What costs time (its version, the metrics
this GPU offers) is asked once and remembered per machine, with a refusal that a run met
(ERR_NVGPUCTRPERM), until the driver, the boot, the user or ncu changes."""

from __future__ import annotations

import contextlib
import csv
import glob
import hashlib
import json
import os
import re
import shutil
import subprocess
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

from grader import defaults, spawn
from grader.files import write_atomically
from grader.model.profile import KernelProfile, Occupancy, Traffic
from grader.toolchain import nvcc

ASK_TIMEOUT = 60.0  # seconds for `ncu --version` or `ncu --query-metrics`
PARAMS = Path("/proc/driver/nvidia/params")  # the driver's settings, RmProfilingAdminOnly
STATUS = Path("/proc/self/status")  # this process's capabilities, CapEff
CAP_SYS_ADMIN = 21
PERMISSION = "ERR_NVGPUCTRPERM"

# Traffic's fields by kind of access, and the counters that fill requests, sectors
# (wavefronts in shared memory), bytes and lanes.
TRAFFIC = {
    "global_loads": (
        "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum",
        "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum",
        "sm__sass_data_bytes_mem_global_op_ld.sum",
        "smsp__sass_thread_inst_executed_op_global_ld.sum",
    ),
    "global_stores": (
        "l1tex__t_requests_pipe_lsu_mem_global_op_st.sum",
        "l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum",
        "sm__sass_data_bytes_mem_global_op_st.sum",
        "smsp__sass_thread_inst_executed_op_global_st.sum",
    ),
    "shared_loads": (
        "smsp__sass_inst_executed_op_shared_ld.sum",
        "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum",
        "sm__sass_data_bytes_mem_shared_op_ld.sum",
        "smsp__sass_thread_inst_executed_op_shared_ld.sum",
    ),
    "shared_stores": (
        "smsp__sass_inst_executed_op_shared_st.sum",
        "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum",
        "sm__sass_data_bytes_mem_shared_op_st.sum",
        "smsp__sass_thread_inst_executed_op_shared_st.sum",
    ),
}
# ncu's own count of bank conflicts, beside wavefronts - requests: the two differ for 8-
# and 16-byte accesses, which take more than one wavefront without a conflict.
BANK_CONFLICTS = {
    "shared_loads": "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum",
    "shared_stores": "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum",
}
# Atomics are counted by warp-level instruction (the CPU model counts them by thread).
GLOBAL_ATOMICS = (
    "l1tex__t_requests_pipe_lsu_mem_global_op_atom.sum",
    "l1tex__t_requests_pipe_lsu_mem_global_op_red.sum",
)
SHARED_ATOMICS = ("smsp__inst_executed_op_shared_atom.sum",)
DRAM_BYTES = ("dram__bytes_read.sum", "dram__bytes_write.sum")
THREADS = "launch__thread_count"
# Resident blocks per SM that each resource allows, by the name Occupancy.limiter uses.
LIMITS = {
    "registers": "launch__occupancy_limit_registers",
    "shared memory": "launch__occupancy_limit_shared_mem",
    "threads": "launch__occupancy_limit_warps",
    "blocks": "launch__occupancy_limit_blocks",
}
BLOCK_SIZE = "launch__block_size"
MAX_WARPS = "device__attribute_max_warps_per_multiprocessor"
ACHIEVED = "sm__warps_active.avg.pct_of_peak_sustained_active"
# What describes one launch rather than counts its work: kept from a kernel's first
# launch where it ran more than once, where counts add up.
ONE_LAUNCH = frozenset({*LIMITS.values(), BLOCK_SIZE, MAX_WARPS, ACHIEVED})
METRICS = tuple(
    dict.fromkeys(
        [
            *(m for counters in TRAFFIC.values() for m in counters),
            *BANK_CONFLICTS.values(),
            *GLOBAL_ATOMICS,
            *SHARED_ATOMICS,
            *DRAM_BYTES,
            THREADS,
            *LIMITS.values(),
            BLOCK_SIZE,
            MAX_WARPS,
            ACHIEVED,
        ]
    )
)
# Attributes of the launch and the device, which --query-metrics does not list.
_ATTRIBUTES = ("launch__", "device__")


# -- the tool -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Tool:
    """ncu as this machine has it: `why_not` says, as a clause, why it may not run here
    (empty when it may); `offered` the base names of the metrics this GPU offers (empty
    where ncu would not say: every metric is asked for); `unknown` the metrics a run was
    refused for (ncu's error named them), never asked for again."""

    executable: str | None
    version: str = ""
    why_not: str = ""
    offered: frozenset[str] = field(default_factory=frozenset)
    unknown: frozenset[str] = field(default_factory=frozenset)

    @property
    def ok(self) -> bool:
        return self.executable is not None and not self.why_not

    def metrics(self) -> tuple[str, ...]:
        """The metrics to ask for: those this GPU offers, none a run was refused for."""
        return tuple(m for m in METRICS if m not in self.unknown and self._offers(m))

    def _offers(self, metric: str) -> bool:
        """Whether the GPU offers `metric`, where ncu's list reads as expected (it names
        most counters of the table): attributes of the launch and the device count as
        offered where it lists none of them."""
        counters = [base(m) for m in METRICS if not m.startswith(_ATTRIBUTES)]
        if sum(name in self.offered for name in counters) < len(counters) / 2:
            return True  # no list, or one in a form this grader does not read
        if base(metric) in self.offered:
            return True
        attributes = any(name.startswith(_ATTRIBUTES) for name in self.offered)
        return metric.startswith(_ATTRIBUTES) and not attributes

    def missing(self) -> tuple[str, ...]:
        """The metrics not asked for here, whose measures stay 0."""
        kept = set(self.metrics())
        return tuple(m for m in METRICS if m not in kept)


def find() -> str | None:
    """The ncu executable: on PATH, in CUDA_HOME, or in a CUDA toolkit folder (the one of
    the nvcc in use first)."""
    found = shutil.which("ncu")
    if found:
        return found
    compiler = nvcc.find()
    roots = [str(Path(compiler).resolve().parents[1])] if compiler else []
    roots += [os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH"), "/usr/local/cuda"]
    roots += sorted(glob.glob("/usr/local/cuda-*"), reverse=True)
    for root in filter(None, roots):
        path = Path(root, "bin", "ncu")
        if path.is_file() and os.access(path, os.X_OK):
            return str(path)
    return None


@cache
def tool() -> Tool:
    """ncu here, and whether it may run; asked of ncu once per machine."""
    executable = find()
    if executable is None:
        return Tool(None, why_not="Nsight Compute (ncu) is not installed; it comes with the "
                    "CUDA toolkit")  # fmt: skip
    why = forbidden()
    if why:
        return Tool(executable, why_not=why)
    memory = _memory(executable)
    record = _remembered(memory)
    if record is None:
        record = {"version": _version(executable), "offered": _offered(executable),
                  "refused": "", "unknown": []}  # fmt: skip
        _remember(memory, record)
    return Tool(
        executable,
        record["version"],
        record["refused"],
        frozenset(record["offered"]),
        frozenset(record["unknown"]),
    )


def refuse(why: str = "", metrics: Iterable[str] = ()) -> None:
    """Remember that a run was refused: for `why` (the next grading does not pay seconds
    of ncu's start-up to hear it again), or for asking for `metrics` (never asked again)."""
    found = tool()
    if found.executable is None:
        return
    memory = _memory(found.executable)
    record = _remembered(memory) or {"version": found.version, "offered": sorted(found.offered),
                                     "refused": "", "unknown": []}  # fmt: skip
    record["refused"] = why or record["refused"]
    record["unknown"] = sorted({*record["unknown"], *metrics})
    _remember(memory, record)
    tool.cache_clear()


def forbidden() -> str:
    """Why this user may not read the GPU's performance counters, or "" where it may (or
    where the driver does not say: ncu will)."""
    if os.geteuid() == 0 or _capable():
        return ""
    try:
        text = PARAMS.read_text()
    except OSError:
        return ""
    match = re.search(r"RmProfilingAdminOnly:\s*(\d+)", text)
    if match is None or match[1] == "0":
        return ""
    return ADMINS_ONLY


PERMITTING = (
    "run the grader as root, or have an administrator load the driver with "
    "NVreg_RestrictProfilingToAdminUsers=0 (https://developer.nvidia.com/ERR_NVGPUCTRPERM)"
)
ADMINS_ONLY = (
    "only administrators may read this GPU's performance counters (the driver's "
    f"RmProfilingAdminOnly is 1): {PERMITTING}"
)


def _capable() -> bool:
    """Whether this process has CAP_SYS_ADMIN, which reads the counters as root does."""
    try:
        match = re.search(r"^CapEff:\s*([0-9a-fA-F]+)", STATUS.read_text(), re.MULTILINE)
    except OSError:
        return False
    return bool(match) and bool(int(match[1], 16) >> CAP_SYS_ADMIN & 1)


def _memory(executable: str) -> Path:
    """Where this machine's answers are kept, named for what they depend on: a refusal
    lasts until the driver's settings change."""
    seen = [os.path.realpath(executable), str(os.geteuid()),
            os.environ.get("CUDA_VISIBLE_DEVICES", "*")]  # fmt: skip
    for source in (Path("/proc/sys/kernel/random/boot_id"), Path("/proc/driver/nvidia/version"),
                   PARAMS):  # fmt: skip
        with contextlib.suppress(OSError):
            seen.append(source.read_text())
    with contextlib.suppress(OSError):
        seen.append(str(os.stat(executable).st_mtime_ns))
    digest = hashlib.sha256("\0".join(seen).encode()).hexdigest()[:32]
    return defaults.cache_dir() / "nsight-tool" / f"{digest}.json"


def _remembered(path: Path) -> dict | None:
    try:
        record = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    kinds = {"version": str, "offered": list, "refused": str, "unknown": list}
    if not isinstance(record, dict) or any(
        not isinstance(record.get(k), t) for k, t in kinds.items()
    ):
        return None
    return record


def _remember(path: Path, record: dict) -> None:
    with contextlib.suppress(OSError):
        write_atomically(path, json.dumps(record))


def _ask(executable: str, *args: str) -> str:
    """What ncu prints for `args`; "" where it fails or does not answer in time."""
    try:
        done = subprocess.run(
            [executable, *args],
            capture_output=True,
            text=True,
            errors="replace",
            timeout=ASK_TIMEOUT,
            env=spawn.helper_env({"LC_ALL": "C"}),
            start_new_session=True,
        )
    except (OSError, subprocess.TimeoutExpired):
        return ""
    return done.stdout if done.returncode == 0 else ""


def _version(executable: str) -> str:
    """ncu's version, "2025.3.1.0"; its whole first line where it is not in that form."""
    text = _ask(executable, "--version")
    match = re.search(r"Version\s+(\S+)", text)
    return match[1] if match else (text.strip().splitlines() or ["unknown"])[-1]


def _offered(executable: str) -> list[str]:
    """The base names of the metrics device 0 offers; none where ncu does not list them."""
    text = _ask(executable, "--query-metrics")
    return sorted(set(re.findall(r"^\s*([a-z0-9]+__\w+)", text, re.MULTILINE)))


def base(metric: str) -> str:
    """A metric's base name: dram__bytes_read.sum -> dram__bytes_read."""
    return metric.split(".", 1)[0]


# -- the command line -----------------------------------------------------------------------


def command(found: Tool, symbols: Iterable[str], launches: int, log: Path) -> list[str]:
    """The prefix that runs the GPU worker under ncu: the launches of the kernels named
    `symbols` (mangled, as the module has them), at most `launches` of them, each replayed
    until every counter is read, its CSV written to `log`. Numbers are written in the C
    locale, where a comma only groups thousands."""
    names = "|".join(re.escape(s) for s in sorted(set(symbols)))
    return [
        shutil.which("env") or "/usr/bin/env",
        "LC_ALL=C",
        str(found.executable),
        "--metrics",
        ",".join(found.metrics()),
        "--csv",
        "--page",
        "raw",
        "--print-units",
        "base",
        "--kernel-name-base",
        "mangled",
        "--print-kernel-base",
        "mangled",
        "--kernel-name",
        f"regex:^({names})$",
        "--launch-count",
        str(max(launches, 1)),
        "--target-processes",
        "application-only",
        "--replay-mode",
        "kernel",
        "--cache-control",
        "all",
        "--clock-control",
        "none",
        "--log-file",
        str(log),
    ]


# -- the log --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Row:
    """One profiled launch: its number in the session, the kernel as ncu names it (the
    mangled symbol), its GPU ("sm_90") and each counter read."""

    launch: int
    kernel: str
    arch: str
    values: dict[str, float]


def rows(log: str) -> list[Row]:
    """The launches in ncu's raw CSV, in the order they ran. Lines that are not CSV
    (==PROF== and the like) and the units row are skipped; a counter ncu could not read
    ("n/a") is left out of its row."""
    header: list[str] | None = None
    found = []
    for fields in csv.reader(line for line in log.splitlines() if line.startswith('"')):
        if fields[:1] == ["ID"]:
            header = fields
            continue
        if header is None or not fields or not fields[0].isdigit():
            continue  # the units
        record = dict(zip(header, fields, strict=False))
        values = {
            name: number
            for name, text in record.items()
            if "__" in name and (number := _number(text)) is not None
        }
        found.append(Row(int(fields[0]), record.get("Kernel Name", ""), _arch(record), values))
    return sorted(found, key=lambda r: r.launch)


def _number(text: str) -> float | None:
    try:
        return float(text.replace(",", "").strip())
    except ValueError:  # n/a, or a value that is not a number
        return None


def _arch(record: Mapping[str, str]) -> str:
    match = re.fullmatch(r"(\d{1,2})\.(\d)", record.get("CC", "").strip())
    return f"sm_{match[1]}{match[2]}" if match else ""


def error(log: str) -> str:
    """Why ncu could not count, as a clause, from its first ==ERROR== line; "" where it
    wrote none."""
    for line in log.splitlines():
        match = re.match(r"==ERROR==\s*(.*)", line.strip())
        if match:
            text = match[1].strip().rstrip(".")
            if PERMISSION in text:
                return f"this user may not read the GPU's performance counters: {PERMITTING}"
            return text[:500]
    return ""


def unknown(log: str, asked: Iterable[str]) -> list[str]:
    """The metrics asked for that an ==ERROR== line about metrics names (by full or base
    name): ncu refuses a whole run for one it does not know."""
    lines = [line for line in log.splitlines() if line.startswith("==ERROR==")]
    lines = [line for line in lines if "metric" in line.lower()]
    return [m for m in asked if any(m in line or base(m) in line for line in lines)]


def summed(launches: Iterable[Row]) -> dict[str, float]:
    """The counters of a kernel's launches: counts added up, what describes one launch
    (its occupancy) from the first."""
    total: dict[str, float] = {}
    for row in launches:
        for name, value in row.values.items():
            if name in ONE_LAUNCH:
                total.setdefault(name, value)
            else:
                total[name] = total.get(name, 0.0) + value
    return total


# -- counters as a profile ------------------------------------------------------------------


def kernel_profile(kernel: str, counters: Mapping[str, float], arch: str) -> KernelProfile:
    """A kernel's KernelProfile from its summed counters. ncu does not count loads per
    thread or block: busiest_thread_loads and busiest_block_loads stay 0 (the CPU model's
    say them). Constant-memory reads are operands of other instructions, not requests it
    counts: constant_loads stays empty."""

    def count(*names: str) -> int:
        return int(sum(counters.get(name, 0.0) for name in names))

    traffic = {kind: Traffic(*(count(name) for name in names)) for kind, names in TRAFFIC.items()}
    return KernelProfile(
        kernel,
        **traffic,
        global_atomics=count(*GLOBAL_ATOMICS),
        shared_atomics=count(*SHARED_ATOMICS),
        threads=count(THREADS),
        occupancy=occupancy(counters, arch),
    )


def occupancy(counters: Mapping[str, float], arch: str) -> Occupancy | None:
    """Theoretical occupancy from ncu's per-resource limits on resident blocks; None
    where it did not give them all."""
    limits = {name: counters.get(metric) for name, metric in LIMITS.items()}
    block, most = counters.get(BLOCK_SIZE), counters.get(MAX_WARPS)
    if None in limits.values() or not block or not most:
        return None
    limiter = min(limits, key=lambda name: limits[name])
    blocks = int(limits[limiter])
    warps = blocks * -(-int(block) // 32)
    return Occupancy(blocks, warps, int(most), limiter, f"{arch} (Nsight Compute)")


def dram_bytes(counters: Mapping[str, float]) -> float | None:
    """Bytes read from and written to DRAM; None where ncu did not count them."""
    found = [counters[name] for name in DRAM_BYTES if name in counters]
    return sum(found) if found else None
