"""The GPU worker process: `python -m grader.backends.cuda.worker --socket PATH --cache DIR`.

It connects to the grader's Unix socket at PATH, reads requests and answers on it (see
protocol). Its stdout is the
student's printf output, which the grader captures to a file, so nothing else is ever
printed there. Requests:

    load  {key, arch, nvcc, variables,      load the build's cubin (the one array), once
           census}                          per distinct build; keep the named __device__
                                            variables' load-time bytes; with census
                                            {ptx, name}, load its PTX too
    run   {key, launch, sides, census}      one launch (its kernels in order), from those
                                            bytes, each buffer flush against unmapped
                                            memory on its side (vmm.START, END, ROOMY);
                                            buffers back with their canaries (without
                                            sides: exact sizes, apart, for the sanitizer);
                                            with census, on the census module, and what
                                            each kernel executed ("executed")
    time  {student, reference, budget,      interleaved timing of two loaded launches, the
           check, helpers, gate}            student's checked (grader.backends.timing);
                                            with the machine's ceilings, and where its
                                            seconds went (grader.backends.window)
    exit

A run or time request that names a batch's GPU gate ("gate") gets {"gate taken": true}
first, once the worker holds the gate: the grader's deadline for the request starts again
there (protocol.receive_reply), so a wait behind another process's hung kernel is never
taken for this one's.

After a sticky CUDA error the worker answers and exits, so no dead context is reused.
It exits too when the grader goes away (the connection closes), even mid-kernel."""

from __future__ import annotations

import argparse
import ctypes
import os
import select
import socket
import sys
import time
import traceback

from grader.backends import gate
from grader.backends import window as phases
from grader.backends.cuda import census, checked, timing, vmm
from grader.backends.cuda.gpu import CudaFailure, Gpu
from grader.backends.cuda.protocol import (
    GATE_TAKEN,
    ChannelClosed,
    Message,
    decode_launch,
    receive,
    send,
)
from grader.backends.timing import Plan, TimingCheck
from grader.backends.window import Window

EXIT_STICKY = 3


class Worker:
    def __init__(self, gpu: Gpu, fd: int | None = None) -> None:
        self.gpu = gpu
        self.fd = fd  # the grader's connection
        self.libc = ctypes.CDLL(None)
        self.rig: timing.Rig | None = None  # made at the first timing

    def handle(self, message: Message) -> Message:
        op = message.header["op"]
        handler = getattr(self, f"op_{op}", None)
        if handler is None:
            raise ValueError(f"unknown request {op!r}")
        return handler(message)

    def op_load(self, message: Message) -> Message:
        started = time.monotonic()
        head = message.header
        self.gpu.load(head["key"], message.arrays[0].tobytes())
        self.gpu.snapshot(head["key"], head["variables"])
        if head.get("census"):
            counted = census.module_key(head["key"])
            self.gpu.load_ptx(counted, head["census"]["ptx"])
            self.gpu.snapshot(counted, head["variables"])
        checked.helper_module(self.gpu, head["nvcc"], head["arch"])  # for fill_shared
        return Message({"ok": True, "seconds": time.monotonic() - started})

    def op_run(self, message: Message) -> Message:
        head = message.header
        launch, symbols = decode_launch(head["launch"], message.arrays)
        counted = head.get("census")  # the counters' name: run the census module
        key = census.module_key(head["key"]) if counted else head["key"]
        functions = [self.gpu.function(key, symbol) for symbol in symbols]
        # Alone on the GPU, where a batch shares it, for all of the case's GPU work: the
        # fill and the kernel must meet no other process's kernel (another's would leave
        # its own shared memory), and another process's timed runs none of this case's
        # copies, allocations and frees (grader.backends.gate).
        window = Window(phases.CASE_PHASES)
        lap = time.perf_counter()
        with gate.alone_at(head.get("gate"), self.gate_taken):
            held = window.lap(phases.CASE_GATE, lap)
            reply = self.run_case(launch, key, functions, counted, head.get("sides"), window)
            window.lap(phases.CASE_HELD, held)
        reply.header["window"] = window.to_json()
        return reply

    def run_case(
        self, launch, key: str, functions: list, counted, sides, window: Window
    ) -> Message:
        # A case never sees what earlier runs left in the module, as on the CPU. Timed
        # launches are not reset: checked timing catches a kernel that remembers results.
        lap = time.perf_counter()
        self.gpu.restore(key)
        self.gpu.set_constants(key, launch.constants)
        counters = self.gpu.counters(key, counted) if counted else None
        if counters is not None:
            self.gpu.take_counters(counters)  # from 0
        executed: dict[str, list[int]] = {}
        placed = self.place(launch, sides)
        addresses = {p.name: [p.address, p.nbytes] for p in placed}
        by_name = {p.name: p for p in placed}
        step = launch
        lap = window.lap(phases.CASE_PLACE, lap)
        try:
            self.gpu.fill_shared()  # reads of shared memory no thread wrote see NaN
            started = lap = window.lap(phases.CASE_FILL, lap)
            for step, function in zip(launch.steps, functions, strict=True):
                self.gpu.launch(function, step, self.gpu.arguments(step, by_name))
                self.gpu.finish()  # after each kernel, so that a failure names its own
                if counters is not None:
                    counts = self.gpu.take_counters(counters)
                    before = executed.get(step.kernel, [0, 0])
                    executed[step.kernel] = [a + b for a, b in zip(before, counts, strict=True)]
            lap = window.lap(phases.CASE_KERNELS, lap)
            seconds = lap - started
            states = [self.gpu.download(p) for p in placed]
            lap = window.lap(phases.CASE_READ, lap)
        except CudaFailure as failure:
            failure.extra["addresses"] = addresses
            failure.extra["kernel"] = step.kernel
            if not failure.sticky:
                self.gpu.free(placed)
            raise
        self.gpu.free(placed)
        window.lap(phases.CASE_FREE, lap)
        self.flush_output()
        header = {
            "ok": True,
            "seconds": seconds,
            "addresses": addresses,
            "buffers": [{k: v for k, v in s.items() if k != "data"} for s in states],
            "executed": executed,
        }
        return Message(header, [s["data"] for s in states])

    def place(self, launch, sides: dict[str, str] | None) -> list:
        if sides is None:
            return list(self.gpu.allocate_apart(launch.buffers()).values())
        placed = []
        try:
            for buffer in launch.buffers():
                placed.append(self.gpu.place(buffer, sides[buffer.name]))
        except CudaFailure as failure:
            if not failure.sticky:
                self.gpu.free(placed)
            raise
        return placed

    def op_time(self, message: Message) -> Message:
        head = message.header
        module = checked.helper_module(self.gpu, head["helpers"]["nvcc"], head["helpers"]["arch"])
        window = Window()
        lap = time.perf_counter()
        # Alone on the GPU, where a batch shares it, from the first buffer placed to the
        # last one freed: another process's copies, allocations and frees beside the timed
        # runs made them vary so that a batch timed 3 times the rounds a check did
        # (bench/batch.py, H100: 9.3 rounds of the naive matmul against 3.3 so held).
        with gate.alone_at(head.get("gate"), self.gate_taken):
            held = window.lap(phases.GATE, lap)
            result, arrays = self.time_held(message, module, window)
            window.lap(phases.HELD, held)
        self.flush_output()
        return Message({"ok": True, **result, "window": window.to_json()}, arrays)

    def time_held(self, message: Message, module, window: Window) -> tuple[dict, list]:
        """The timing, with what its checker found, and the arrays that go back."""
        head = message.header
        check = TimingCheck.from_json(head["check"])
        runs, placed, checker = [], {}, None
        lap = time.perf_counter()
        try:
            for role in ("student", "reference"):
                launch, symbols = decode_launch(head[role]["launch"], message.arrays)
                key = head[role]["key"]
                self.gpu.set_constants(key, launch.constants)
                for buffer in launch.buffers():  # the same name is the same device buffer
                    if buffer.name not in placed:
                        placed[buffer.name] = self.gpu.place(buffer, vmm.END)
                runs.append(
                    [
                        (self.gpu.function(key, symbol), step, self.gpu.arguments(step, placed))
                        for step, symbol in zip(launch.steps, symbols, strict=True)
                    ]
                )
            checker = checked.Checker(self.gpu, module, check, placed)
            if self.rig is None:
                self.rig = timing.Rig(self.gpu)
            lap = window.lap(phases.PLACE, lap)
            plan = Plan(head["budget"], max_rounds=check.rounds, scored=check.scored)
            result = timing.time_pair(self.gpu, self.rig, runs, plan, checker, window)
            lap = time.perf_counter()
            result["ceilings"] = checked.ceilings(self.gpu, module)
            checker.seconds += window.lap(phases.CEILINGS, lap) - lap
            found, arrays = checker.result()
        except CudaFailure as failure:
            if not failure.sticky:
                self.gpu.free(list(placed.values()))
                if checker is not None:
                    checker.free()
            raise
        lap = time.perf_counter()
        self.gpu.free(list(placed.values()))
        checker.free()
        window.lap(phases.FREE, lap)
        return {**result, **found}, arrays

    def gate_taken(self) -> None:
        """Tell the grader, mid-request, that the batch's gate is held: the request's
        deadline starts again there (protocol.receive_reply)."""
        if self.fd is not None:
            send(self.fd, Message({GATE_TAKEN: True}))

    def flush_output(self) -> None:
        """Device printf goes through C stdio, which buffers a file fully."""
        self.libc.fflush(None)


def hangup_check(fd: int):
    """True once the grader is gone: mid-run, nothing else makes the connection
    readable, since the grader sends nothing while it waits for an answer."""

    def gone() -> bool:
        return bool(select.select([fd], [], [], 0)[0])

    return gone


def serve(fd: int, cache_dir: str) -> int:
    try:
        gpu = Gpu.open(hangup_check(fd), cache_dir)
        send(fd, Message({"ok": True, "device": gpu.info()}))
    except CudaFailure as failure:
        send(fd, Message({"ok": False, "error": failure.to_json()}))
        return 1
    worker = Worker(gpu, fd)
    while True:
        try:
            message = receive(fd)
        except ChannelClosed:
            return 0
        if message.header.get("op") == "exit":
            return 0
        try:
            reply = worker.handle(message)
        except CudaFailure as failure:
            worker.flush_output()
            send(fd, Message({"ok": False, "error": failure.to_json(), **failure.extra}))
            if failure.sticky:
                return EXIT_STICKY
            continue
        except Exception as err:  # a grader bug: say so rather than die silently
            traceback.print_exc()
            error = {"phase": "internal", "message": f"{err!r}", "sticky": True}
            send(fd, Message({"ok": False, "error": error}))
            return 1
        send(fd, reply)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--socket", required=True)
    parser.add_argument("--cache", required=True)
    args = parser.parse_args(argv)
    sys.stdout = sys.stderr  # fd 1 belongs to the kernel's printf
    connection = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        connection.connect(args.socket)
        code = serve(connection.fileno(), args.cache)
    except (ChannelClosed, OSError):
        code = 1
    sys.stderr.flush()
    os._exit(code)  # skip PyCUDA's teardown: a dead context would only print errors


if __name__ == "__main__":
    main()
