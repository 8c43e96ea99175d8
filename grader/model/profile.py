"""A kernel's memory profile on one case: what the course's performance lectures measure
(coalescing, shared-memory bank conflicts, global traffic per output element, how the
work is spread over threads and lanes, occupancy), as plain data that each backend fills
and that the rules, the "why this speed" advice and every report read.

Warp-level requests are formed as the GPU forms them: within a block, the lanes of one
warp (linear thread id // 32) that executed the same load or store instruction for the
same time make one request; the warp's other lanes are idle in it. A global request's
sectors are the 32-byte segments its lanes touch. A shared request's wavefronts are the
most distinct 4-byte words that any one of the 32 banks holds among its lanes' addresses
(lanes reading the same word share it), so a request has wavefronts - 1 bank conflicts,
the count Nsight Compute reports. `Profile.source` says who measured."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

WARP = 32
SECTOR_BYTES = 32
BANKS = 32
BANK_BYTES = 4


class Source(StrEnum):
    """Who measured a profile."""

    CPU_MODEL = "cpu-model"  # the CPU backend's runtime, from each thread's addresses
    NSIGHT_COMPUTE = "nsight-compute"  # ncu's counters, on a GPU


@dataclass
class Traffic:
    """The warp-level requests of one kind of access (global loads, say), over every
    launch of a kernel in the case."""

    requests: int = 0
    sectors: int = 0  # global: 32-byte segments touched; shared: wavefronts
    bytes: int = 0  # the bytes the lanes asked for
    lanes: int = 0  # lanes that took part, summed over the requests (32 per request at most)

    @property
    def per_request(self) -> float | None:
        """Sectors (global) or wavefronts (shared) per request; None without requests."""
        return self.sectors / self.requests if self.requests else None

    @property
    def conflicts_per_request(self) -> float | None:
        """Shared memory: bank conflicts per request (wavefronts beyond the first)."""
        return (self.sectors - self.requests) / self.requests if self.requests else None

    def plus(self, other: Traffic) -> Traffic:
        return Traffic(
            self.requests + other.requests,
            self.sectors + other.sectors,
            self.bytes + other.bytes,
            self.lanes + other.lanes,
        )

    def to_json(self) -> dict[str, Any]:
        return {"requests": self.requests, "sectors": self.sectors, "bytes": self.bytes,
                "lanes": self.lanes}  # fmt: skip


@dataclass
class Occupancy:
    """Resident blocks and warps per SM on the target GPU, from the block size and what
    ptxas reports, by the CUDA occupancy calculator's rules. Without ptxas (no nvcc) the
    registers are not counted: the most the other limits allow."""

    blocks_per_sm: int
    warps_per_sm: int
    max_warps_per_sm: int
    limiter: str  # "registers", "shared memory", "threads" or "blocks"
    gpu: str  # whose limits: "sm_90 (H100, H200)"
    registers_counted: bool = True  # False: an upper bound, registers unknown

    @property
    def fraction(self) -> float:
        return self.warps_per_sm / self.max_warps_per_sm

    def to_json(self) -> dict[str, Any]:
        return {"blocks_per_sm": self.blocks_per_sm, "warps_per_sm": self.warps_per_sm,
                "max_warps_per_sm": self.max_warps_per_sm, "limiter": self.limiter,
                "gpu": self.gpu, "registers_counted": self.registers_counted}  # fmt: skip


@dataclass
class KernelProfile:
    """One kernel's accesses, over every launch of it in the case."""

    kernel: str
    global_loads: Traffic = field(default_factory=Traffic)
    global_stores: Traffic = field(default_factory=Traffic)
    shared_loads: Traffic = field(default_factory=Traffic)
    shared_stores: Traffic = field(default_factory=Traffic)
    constant_loads: Traffic = field(default_factory=Traffic)  # sectors: distinct addresses
    global_atomics: int = 0
    shared_atomics: int = 0
    threads: int = 0  # threads launched
    busiest_thread_loads: int = 0  # the global loads and atomics of the busiest thread
    busiest_block_loads: int = 0  # the global loads and atomics of the busiest block
    blocks: int = 0  # blocks launched (0: not counted)
    occupancy: Occupancy | None = None

    @property
    def reads(self) -> int:
        """Its global loads and atomics, one per thread each (the CPU model counts atomics
        by thread): what the busiest thread's and block's shares are of."""
        return self.global_loads.lanes + self.global_atomics

    def even_block_share(self, sms: int) -> float | None:
        """A block's even share of its global loads and atomics on a GPU of `sms` SMs: the
        mean block's where the blocks are no more than the SMs (each has one to itself),
        else one SM's share of all of them (None where blocks were not counted)."""
        if not self.blocks or not self.reads:
            return None
        return self.reads / min(self.blocks, sms)

    def block_imbalance(self, sms: int) -> float | None:
        """How many times an even share (even_block_share) its busiest block made: a
        kernel waits for its busiest block, which runs on one SM."""
        even = self.even_block_share(sms)
        return None if even is None else self.busiest_block_loads / even

    def to_json(self) -> dict[str, Any]:
        return {
            "kernel": self.kernel,
            **{name: getattr(self, name).to_json() for name in _TRAFFIC},
            "global_atomics": self.global_atomics,
            "shared_atomics": self.shared_atomics,
            "threads": self.threads,
            "busiest_thread_loads": self.busiest_thread_loads,
            "busiest_block_loads": self.busiest_block_loads,
            "blocks": self.blocks,
            "occupancy": self.occupancy.to_json() if self.occupancy else None,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> KernelProfile:
        occupancy = data["occupancy"]
        return cls(
            kernel=data["kernel"],
            **{kind: Traffic(**data[kind]) for kind in _TRAFFIC},
            **{count: data[count] for count in _COUNTS},
            occupancy=Occupancy(**occupancy) if occupancy else None,
        )


_TRAFFIC = ("global_loads", "global_stores", "shared_loads", "shared_stores", "constant_loads")
_COUNTS = (
    "global_atomics",
    "shared_atomics",
    "threads",
    "busiest_thread_loads",
    "busiest_block_loads",
    "blocks",
)


@dataclass
class Profile:
    """A kernel's profile (every kernel the lab launches) on the lab's profile case."""

    source: Source
    case: str
    sizes: dict[str, int]
    outputs: int  # elements of the lab's output in this case
    useful_flops: float  # the lab's count of the arithmetic the output needs, this case
    kernels: list[KernelProfile] = field(default_factory=list)
    note: str = ""  # what could not be measured, and why
    dram_bytes: float | None = None  # read and written at DRAM, where Nsight Compute counted

    def total(self, kind: str) -> Traffic:
        """One kind of access (a KernelProfile field name) over every kernel."""
        found = Traffic()
        for kernel in self.kernels:
            found = found.plus(getattr(kernel, kind))
        return found

    @property
    def global_bytes_read_per_output(self) -> float | None:
        loads = self.total("global_loads")
        return loads.bytes / self.outputs if self.outputs and loads.requests else None

    @property
    def global_bytes_per_output(self) -> float | None:
        moved = self.total("global_loads").bytes + self.total("global_stores").bytes
        return moved / self.outputs if self.outputs else None

    @property
    def flops_per_byte(self) -> float | None:
        """The lecture's compute-to-global-memory-access ratio, per byte asked for."""
        moved = self.total("global_loads").bytes + self.total("global_stores").bytes
        return self.useful_flops / moved if moved else None

    @property
    def global_reads(self) -> int:
        """KernelProfile.reads over every kernel."""
        return sum(k.reads for k in self.kernels)

    @property
    def busiest_thread_reads(self) -> int:
        """The most global loads and atomics one thread made (0: not counted, by ncu)."""
        return max((k.busiest_thread_loads for k in self.kernels), default=0)

    @property
    def busiest_thread_share(self) -> float | None:
        """The largest share of all global loads and atomics that one thread made."""
        reads, busiest = self.global_reads, self.busiest_thread_reads
        return busiest / reads if reads and busiest else None

    def block_imbalance(self, sms: int) -> float | None:
        """KernelProfile.block_imbalance in the kernel where it is most."""
        found = [i for k in self.kernels if (i := k.block_imbalance(sms)) is not None]
        return max(found, default=None)

    @property
    def idle_lane_share(self) -> float | None:
        """The share of lanes idle in the global and shared requests (divergence)."""
        kinds = [self.total(kind) for kind in _TRAFFIC[:4]]
        if any(t.requests and not t.lanes for t in kinds):
            return None  # a request has a lane at least: its lanes were not counted
        requests = sum(t.requests for t in kinds)
        return 1 - sum(t.lanes for t in kinds) / (WARP * requests) if requests else None

    def to_json(self) -> dict[str, Any]:
        return {
            "source": str(self.source),
            "case": self.case,
            "sizes": dict(self.sizes),
            "outputs": self.outputs,
            "useful_flops": self.useful_flops,
            "kernels": [k.to_json() for k in self.kernels],
            "note": self.note,
            "dram_bytes": self.dram_bytes,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Profile:
        """The profile `to_json` wrote (a JSON report's, a cache entry's)."""
        return cls(
            source=Source(data["source"]),
            case=data["case"],
            sizes=dict(data["sizes"]),
            outputs=data["outputs"],
            useful_flops=data["useful_flops"],
            kernels=[KernelProfile.from_json(k) for k in data["kernels"]],
            note=data["note"],
            dram_bytes=data["dram_bytes"],
        )


class Counted(StrEnum):
    """Which global-memory bytes a roofline point counts."""

    DRAM = "dram"  # read and written at DRAM, as Nsight Compute counted them
    REQUESTED = "requested"  # the loads' and stores' bytes (CPU model): at least DRAM's
    LEAST = "least"  # the lab's least: each input read once, each output written once


@dataclass
class RooflinePoint:
    """A timed kernel's rates: the lab's useful FLOPs and the global-memory bytes
    (`counted`, estimated at the timed size) of one launch, over its median time."""

    ms: float
    flops: float
    bytes: float
    counted: Counted

    @property
    def flops_per_second(self) -> float:
        return self.flops / (self.ms / 1e3) if self.ms > 0 else 0.0

    @property
    def bytes_per_second(self) -> float:
        return self.bytes / (self.ms / 1e3) if self.ms > 0 else 0.0

    @property
    def intensity(self) -> float | None:
        """FLOPs per byte, the roofline's x."""
        return self.flops / self.bytes if self.bytes > 0 else None

    @property
    def gflops(self) -> float:
        """The rate reports show: GFLOP/s."""
        return self.flops_per_second / 1e9

    @property
    def gbps(self) -> float:
        """The rate reports show: GB/s."""
        return self.bytes_per_second / 1e9

    def to_json(self) -> dict[str, Any]:
        return {"ms": self.ms, "flops": self.flops, "bytes": self.bytes,
                "counted": str(self.counted)}  # fmt: skip


@dataclass
class Roofline:
    """The timed run against the GPU's ceilings, both measured by the grader once per
    device (the best so far): the fp32 peak of a fused multiply-add loop and the
    bandwidth of a large device-to-device copy."""

    peak_flops: float  # per second
    peak_bytes: float  # per second, read plus written
    student: RooflinePoint
    reference: RooflinePoint

    @property
    def peak_gflops(self) -> float:
        return self.peak_flops / 1e9

    @property
    def peak_gbps(self) -> float:
        return self.peak_bytes / 1e9

    @property
    def ridge(self) -> float:
        """The intensity (FLOPs per byte) where the two ceilings meet."""
        return self.peak_flops / self.peak_bytes if self.peak_bytes > 0 else 0.0

    def to_json(self) -> dict[str, Any]:
        return {
            "peak_flops": self.peak_flops,
            "peak_bytes": self.peak_bytes,
            "student": self.student.to_json(),
            "reference": self.reference.to_json(),
        }
