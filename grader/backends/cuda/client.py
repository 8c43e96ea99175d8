"""The grader's side of one worker process: start it in its own process group, talk to
it with deadlines, capture its printf output, and kill the whole group when it hangs,
dies or is no longer wanted. Workers never outlive the grader: each watches its
connection, which closes when the grader exits, and the grader kills live ones at exit.
The protocol, and numpy with it, is imported where a worker is talked to, not where one
starts: `grader check` starts its worker before its own imports (start_early)."""

from __future__ import annotations

import contextlib
import os
import select
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time
import weakref
from dataclasses import dataclass
from typing import TYPE_CHECKING

from grader import defaults, spawn
from grader.backends.cuda import errors

if TYPE_CHECKING:
    from grader.backends.cuda.protocol import Message

START_TIMEOUT = 120.0  # seconds for a worker to import PyCUDA and create its context
EXIT_TIMEOUT = 30.0  # seconds for a worker (and a sanitizer around it) to finish writing


@dataclass
class Reply:
    """An answer, or why there is none: `timed_out`, or `died` with `why`."""

    message: Message | None = None
    timed_out: bool = False
    died: bool = False
    why: str = ""

    @property
    def ok(self) -> bool:
        return self.message is not None and bool(self.message.header.get("ok"))

    @property
    def error(self) -> dict:
        return self.message.header.get("error", {}) if self.message else {}

    @property
    def reason(self) -> str:
        """Why the call failed, as a clause."""
        if self.timed_out:
            return "it did not answer in time"
        if self.died:
            return self.why
        return errors.driver_text(self.error.get("message", "no reason given"))


class WorkerProcess:
    """One worker. `prefix` runs it under another program (compute-sanitizer).

    The worker connects back to a Unix socket in a private folder rather than inheriting
    pipe descriptors, so a program in between (the sanitizer) cannot lose them, and the
    connection closes the moment either side dies."""

    def __init__(self, prefix: list[str] | None = None) -> None:
        self.output = _capture_file("grader-printf-")
        self.errors = _capture_file("grader-worker-")
        self._folder = tempfile.mkdtemp(prefix="grader-worker-")
        address = os.path.join(self._folder, "socket")
        self._listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._listener.bind(address)
        self._listener.listen(1)
        self._connection: socket.socket | None = None
        cache = str(defaults.cache_dir() / "pycuda")
        argv = spawn.python_module(
            "grader.backends.cuda.worker", "--socket", address, "--cache", cache
        )
        self.process = subprocess.Popen(
            [*(prefix or []), *argv],
            stdin=subprocess.DEVNULL,
            stdout=self.output,
            stderr=self.errors,
            start_new_session=True,  # its own process group, killed as one
            env=spawn.helper_env(),
        )
        self.loaded: set[str] = set()
        # runs at garbage collection or at the grader's exit, whichever comes first
        self._finalizer = weakref.finalize(self, _kill_group, self.process)

    def start(self, timeout: float = START_TIMEOUT) -> Reply:
        """Wait for the worker to connect and say hello (its device works)."""
        deadline = time.monotonic() + timeout
        while self._connection is None:
            if not self.alive:
                return self._died()
            if time.monotonic() > deadline:
                self.kill()
                return Reply(timed_out=True)
            if select.select([self._listener], [], [], 0.1)[0]:
                self._connection, _ = self._listener.accept()
        self._close_listener()
        return self._receive(deadline - time.monotonic())

    @property
    def alive(self) -> bool:
        return self.process.poll() is None

    def call(self, header: dict, arrays: list | None = None, timeout: float | None = None) -> Reply:
        from grader.backends.cuda import protocol  # numpy: not before the worker starts

        try:
            protocol.send(self._fd(), protocol.Message(header, arrays or []))
        except protocol.ChannelClosed:
            return self._died()
        return self._receive(timeout, gated=bool(header.get("gate")))

    def _fd(self) -> int:
        if self._connection is None:
            from grader.backends.cuda.protocol import ChannelClosed

            raise ChannelClosed("the worker is not connected")
        return self._connection.fileno()

    def _receive(self, timeout: float | None, gated: bool = False) -> Reply:
        from grader.backends.cuda import protocol

        try:
            return Reply(protocol.receive_reply(self._fd(), timeout, gated))
        except protocol.ChannelTimeout:
            self.kill()
            return Reply(timed_out=True)
        except protocol.ChannelClosed:
            return self._died()

    def _died(self) -> Reply:
        try:
            code = self.process.wait(timeout=EXIT_TIMEOUT)
        except subprocess.TimeoutExpired:
            self.kill()
            code = self.process.returncode
        return Reply(died=True, why=_exit_reason(code, self.stderr_tail()))

    def take_output(self) -> tuple[str, int]:
        """The printf output since the last call, capped, and its full size in bytes."""
        self.output.flush()
        size = os.fstat(self.output.fileno()).st_size
        self.output.seek(0)
        text = self.output.read(defaults.OUTPUT_LIMIT).decode("utf-8", "replace")
        self.output.truncate(0)
        return text, size

    def stderr_tail(self, limit: int = 2000) -> str:
        size = os.fstat(self.errors.fileno()).st_size
        self.errors.seek(max(0, size - limit))
        return self.errors.read().decode("utf-8", "replace").strip()

    def stop(self) -> None:
        """Ask the worker to exit and wait for it (a sanitizer writes its log then)."""
        from grader.backends.cuda import protocol

        if self.alive:
            try:
                protocol.send(self._fd(), protocol.Message({"op": "exit"}))
                self.process.wait(timeout=EXIT_TIMEOUT)
            except (protocol.ChannelClosed, subprocess.TimeoutExpired):
                pass
        self.kill()

    def release(self) -> None:
        """Ask the worker to exit without waiting for it: a CUDA context takes up to a
        second to tear down, and nothing more is read from a worker after its last reply
        (a sanitizer's log is: use stop). A thread reaps it, or kills its group if it
        has not exited in EXIT_TIMEOUT."""
        from grader.backends.cuda import protocol

        if self.alive:
            with contextlib.suppress(protocol.ChannelClosed):
                protocol.send(self._fd(), protocol.Message({"op": "exit"}))
        threading.Thread(target=_reap, args=(self.process,), daemon=True).start()
        self._let_go()

    @property
    def connected(self) -> bool:
        """Whether the worker has connected (start() was called and it answered)."""
        return self._connection is not None

    def kill(self) -> None:
        _kill_group(self.process)
        self._let_go()

    def _let_go(self) -> None:
        """Close this side of the worker, which is dead or left to exit by itself."""
        if self._connection is not None:
            self._connection.close()
            self._connection = None
        self._close_listener()
        self._finalizer.detach()

    def _close_listener(self) -> None:
        if self._listener is not None:
            self._listener.close()
            self._listener = None
            shutil.rmtree(self._folder, ignore_errors=True)


_early: list[WorkerProcess] = []  # start_early's worker, until a CudaBackend takes it


def start_early() -> None:
    """Start the worker the next CudaBackend of this process takes (first_worker) now:
    its Python, PyCUDA import and CUDA context (about half a second on an H200) then
    overlap the grader's own imports, lab loading and compile-cache look-ups, where
    they followed them. One not taken is killed at exit, as any worker."""
    if not _early:
        _early.append(WorkerProcess())


def first_worker() -> WorkerProcess:
    """The worker start_early started, or a new one."""
    return _early.pop() if _early else WorkerProcess()


def _kill_group(process: subprocess.Popen) -> None:
    if process.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
    with contextlib.suppress(subprocess.TimeoutExpired):
        process.wait(timeout=EXIT_TIMEOUT)


def _reap(process: subprocess.Popen) -> None:
    try:
        process.wait(timeout=EXIT_TIMEOUT)
    except subprocess.TimeoutExpired:
        _kill_group(process)


def _capture_file(prefix: str):
    """An anonymous file opened for appending, so the worker always writes at its end
    while the grader reads and truncates it between requests."""
    fd, path = tempfile.mkstemp(prefix=prefix)
    os.close(fd)
    handle = open(path, "a+b")  # noqa: SIM115 - lives as long as the worker
    os.unlink(path)
    return handle


def _exit_reason(code: int | None, stderr: str) -> str:
    if code is None:
        what = "did not exit"
    elif code < 0:
        try:
            what = f"was killed by {signal.Signals(-code).name}"
        except ValueError:
            what = f"was killed by signal {-code}"
    else:
        what = f"exited with status {code}"
    last = stderr.strip().splitlines()[-1] if stderr.strip() else ""
    return f"the GPU worker process {what}" + (f" ({last})" if last else "")
