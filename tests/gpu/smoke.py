"""On a GPU machine: `python3 tests/gpu/smoke.py OUT_DIR`.

Keeps compute-sanitizer's raw logs for a few kernels (one broken per tool, and a correct
one), so that the log format the parser reads can be checked against what this CUDA
version prints. Prints the device, each worker reply, and the diagnostics parsed."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(1, str(Path(__file__).resolve().parents[1]))  # census_kit

import gpu_kernels as k  # noqa: E402

from grader.backends.cuda import CudaBackend, sanitizer  # noqa: E402
from grader.backends.cuda.client import WorkerProcess  # noqa: E402
from grader.backends.cuda.protocol import ArrayTable, encode_launch  # noqa: E402


def raw_log(backend: CudaBackend, text: str, tool: str, launch, log: Path) -> None:
    built = backend.build(k.submission(text), {}, (16, 16, 1))
    spec, symbol = built.artifact, built.interface.kernels[launch.kernel].symbol
    worker = WorkerProcess(prefix=sanitizer.command(sanitizer.find(), tool, log, []))
    try:
        print(f"== {log.name}: hello ok={worker.start().ok}")
        print("   load", worker.call(*spec.load_request(), timeout=120).message.header)
        table = ArrayTable()
        header = {"op": "run", "key": spec.key, "launch": encode_launch(launch, symbol, table)}
        reply = worker.call(header, table.arrays, timeout=60)
        print("   run", reply.message.header if reply.message else reply)
    finally:
        worker.stop()
    print("   stderr:", worker.stderr_tail()[-500:])
    context = sanitizer.Context("matmul", "kernel_under_test.cu", len(text.splitlines()))
    addresses = reply.message.header.get("addresses", {}) if reply.message else {}
    found = sanitizer.parse(log.read_text(), tool)
    for finding in found:
        finding.buffers = [sanitizer.BufferRange(n, a, b) for n, (a, b) in addresses.items()]
    for diag in sanitizer.diagnostics(found, context):
        print("   ->", diag.kind, diag.line, diag.thread, diag.block, diag.message)


def main(out: Path) -> None:
    with CudaBackend() as backend:
        print(backend.device(), "| compute-sanitizer:", sanitizer.find())
        barrier = k.matmul_launch(64)
        barrier.grid, barrier.block = (1, 1, 1), (64, 1, 1)
        cases = [
            (k.OUT_OF_BOUNDS_READ, "memcheck", k.matmul_launch(64), "memcheck-oob.log"),
            (k.UNGUARDED_WRITE, "memcheck", k.matmul_launch(100), "memcheck-write.log"),
            (k.TILED, "memcheck", k.matmul_launch(100), "memcheck-clean.log"),
            (k.MISSING_SYNC, "racecheck", k.matmul_launch(64), "racecheck-race.log"),
            (k.DIVERGENT_BARRIER, "synccheck", barrier, "synccheck-barrier.log"),
            (k.EARLY_EXIT_BARRIER, "synccheck", barrier, "synccheck-early-exit.log"),
        ]
        for text, tool, launch, name in cases:
            raw_log(backend, text, tool, launch, out / name)


if __name__ == "__main__":
    main(Path(sys.argv[1]))
