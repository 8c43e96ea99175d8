"""The sandbox around student code on the CPU backend.

On the CPU backend a submission is native code, so the worker that runs it (the runner
executable, runtime/runner.cpp) locks itself in before it loads the student's module:
the module's global constructors run at load time, so nothing of the student's runs
outside the sandbox. First it loads every library the module needs (found as the
dynamic loader would, grader.backends.cpu.elf), so that nothing has to be read later.
Then runtime/sandbox.cpp applies, in this order:

1. `no_new_privs` (prctl): exec and setuid binaries grant nothing.
2. New network and IPC namespaces: the worker sees no network interface but a loopback
   that is down, its abstract unix sockets are its own, and so are its System V IPC
   objects. Started as root, it makes them directly and then switches to an
   unprivileged user (uid 65534 unless that user is not mapped here), since root is
   exempt from the limit on processes and threads. Otherwise it makes them inside a new
   user namespace, where the kernel allows unprivileged ones (Ubuntu 24.04's AppArmor
   and Docker's default seccomp profile refuse them; then the worker has neither, and
   seccomp below still blocks sockets and IPC). Then every capability is dropped.
3. Landlock (Linux 5.13+, no privileges needed): files can be written only in the
   worker's scratch folder, and read only there (the module is linked in; the libraries
   it needs are loaded already). The grader's secret, hidden case definitions, other
   submissions and other processes' /proc/PID/cmdline and environ are therefore out of
   reach. With landlock ABI 4 (Linux 6.7) TCP bind and connect are refused too; with
   ABI 6 (6.12), abstract unix sockets and signals to processes outside the sandbox. The
   scratch folder allows writing the files the grader created in it, not creating new
   ones.
4. Resource limits (setrlimit, no privileges needed): address space (what the runner
   holds once its threads and buffers exist, plus the student's allowance), CPU seconds,
   the size of each file, 64 open files, no new processes or threads, no core dumps.
5. A seccomp filter on every thread (Linux 3.17+, no privileges needed after step 1):
   no sockets of any family (so neither TCP nor unix sockets), no fork (threads only),
   no exec, no ptrace or reading other processes' memory, no signals to other processes,
   no namespaces, mounts, BPF, io_uring, keyrings or kernel modules, no raising a
   resource limit, no TIOCSTI; nothing another worker could read back (System V and
   POSIX IPC, inotify, dnotify and fanotify, file locks, a file's mode, owner, times
   and extended attributes, another process's scheduling settings); and no new handler
   for the signals that report a fault.

The worker's environment holds only PATH (never GRADER_SECRET), its stdin is
/dev/null, and the parent kills it when a launch overruns its time.

Where a layer is unavailable the others still apply, and `CpuBackend.sandbox_report()`
says which are active; every report names the layers its worker applied. Student code
never runs without isolation of both files (landlock) and network (seccomp or a network
namespace) unless the backend was created with `allow_unsandboxed=True`; `run` raises
SetupError otherwise, with a sentence saying what is missing. bubblewrap is not
needed."""

from __future__ import annotations

import os
import subprocess
import tempfile
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from grader.backends.cpu import toolchain

# Who a worker started by root becomes: the overflow user ("nobody" on most systems),
# which owns no files, so its landlocked worker can change nothing outside its folder.
WORKER_UID = WORKER_GID = 65534


@dataclass(frozen=True)
class Layers:
    """What a runner applied to itself: the probe, or a worker before it loaded any code
    of the submission."""

    landlock_abi: int = 0
    landlock: bool = False
    seccomp: bool = False
    userns: bool = False
    netns: bool = False
    ipcns: bool = False
    uid: int = -1  # the unprivileged user it switched to from root, -1 if none
    caps_dropped: bool = False
    files_blocked: bool = False
    sockets_blocked: bool = False
    context: str = ""
    error: str = ""

    @classmethod
    def from_record(cls, f: dict[str, str]) -> Layers:
        flag = lambda key: f.get(key) == "1"  # noqa: E731 - a local shorthand
        number = lambda key: int(f[key]) if f.get(key, "").lstrip("-").isdigit() else -1  # noqa: E731
        return cls(
            landlock_abi=max(0, number("landlock_abi")),
            landlock=flag("landlock"),
            seccomp=flag("seccomp"),
            userns=flag("userns"),
            netns=flag("netns"),
            ipcns=flag("ipcns"),
            uid=number("uid"),
            caps_dropped=flag("caps_dropped"),
            files_blocked=flag("files_blocked"),
            sockets_blocked=flag("sockets_blocked") and flag("ipc_blocked"),
            context=unhex(f.get("context", "")),
            error=unhex(f.get("error", "")),
        )

    @property
    def files_isolated(self) -> bool:
        return self.landlock and self.files_blocked

    @property
    def network_isolated(self) -> bool:
        return (self.seccomp and self.sockets_blocked) or self.netns

    def missing(self) -> str:
        """A sentence naming what is missing, or "" when both isolations work."""
        gaps = []
        if not self.files_isolated:
            gaps.append(
                "file isolation (landlock, Linux 5.13 or later with CONFIG_SECURITY_LANDLOCK "
                "and landlock in the lsm= boot list)"
            )
        if not self.network_isolated:
            gaps.append("network isolation (seccomp, or unprivileged user namespaces)")
        if not gaps:
            return ""
        return (
            f"The CPU backend cannot sandbox student code on this machine: it lacks "
            f"{' and '.join(gaps)}. Run on a Linux kernel that has them, or pass "
            "--allow-unsandboxed if you trust the submissions."
        )

    def describe(self) -> str:
        parts = []
        if self.landlock:
            parts.append(
                f"landlock ABI {self.landlock_abi} (reads and writes only a scratch folder)"
            )
        else:
            parts.append("no landlock (files NOT isolated)")
        parts.append(
            "seccomp (no sockets, IPC, new processes, exec or ptrace)"
            if self.seccomp
            else "no seccomp"
        )
        if self.netns:
            spaces = "network and IPC namespaces" if self.ipcns else "a network namespace"
            parts.append(spaces + (" in a user namespace" if self.userns else ""))
        else:
            parts.append("no namespaces (user namespaces refused here)")
        if self.uid >= 0:
            parts.append(f"switched from root to uid {self.uid}")
        if self.caps_dropped:
            parts.append("capabilities dropped")
        parts.append("rlimits (memory, CPU time, file size, open files, processes)")
        return "; ".join(parts)


def parse_fields(line: str) -> tuple[str, dict[str, str]]:
    name, *pairs = line.split() or [""]
    fields = {}
    for pair in pairs:
        key, _, value = pair.partition("=")
        fields[key] = value
    return name, fields


def unhex(value: str) -> str:
    if value in ("", "-"):
        return ""
    try:
        return bytes.fromhex(value).decode("utf-8", "replace")
    except ValueError:
        return value


def worker_user() -> tuple[int, int] | None:
    """The user a worker switches to: WORKER_UID when this process is root (root is
    exempt from the limit on threads), None otherwise. Root inside a user namespace that
    maps it to an ordinary user outside is not root to those limits; and a user the
    namespace does not map cannot be switched to."""
    if os.geteuid() != 0:
        return None
    try:
        lines = Path("/proc/self/uid_map").read_text().splitlines()
        maps = [[int(v) for v in ln.split()] for ln in lines]
    except (OSError, ValueError):
        return (WORKER_UID, WORKER_GID)
    outside = next((o - i for i, o, n in maps if i <= 0 < i + n), 0)
    mapped = any(i <= WORKER_UID < i + n for i, _, n in maps)
    return (WORKER_UID, WORKER_GID) if outside == 0 and mapped else None


def hand_over(folder: Path, user: tuple[int, int] | None) -> None:
    """Give `folder` and what is in it to the worker's user, when it switches to one."""
    if user is None:
        return
    for path in [folder, *folder.iterdir()]:
        os.chown(path, *user)


@cache
def probe() -> Layers:
    """Which layers work here, found by a runner that applies them all to itself."""
    runner = toolchain.runner()
    user = worker_user()
    with tempfile.TemporaryDirectory(prefix="grader-probe-") as tmp:
        hand_over(Path(tmp), user)
        try:
            proc = subprocess.run(
                [str(runner), "probe", tmp, *(str(v) for v in user or ())],
                capture_output=True,
                text=True,
                timeout=30,
                env=toolchain.clean_env(),
                stdin=subprocess.DEVNULL,
            )
        except (OSError, subprocess.TimeoutExpired) as err:
            return Layers(error=f"the sandbox probe did not run: {err}")
    line = next((ln for ln in proc.stdout.splitlines() if ln.startswith("sandbox ")), "")
    if not line:
        return Layers(error=f"the sandbox probe printed nothing (exit {proc.returncode})")
    return Layers.from_record(parse_fields(line)[1])
