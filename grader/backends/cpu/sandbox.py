"""The sandbox around student code on the CPU backend.

On the CPU backend a submission is native code, so the worker that runs it (the runner
executable, runtime/runner.cpp) locks itself in before it loads the student's module:
the module's global constructors run at load time, so nothing of the student's runs
outside the sandbox. runtime/sandbox.cpp applies, in this order:

1. `no_new_privs` (prctl): exec and setuid binaries grant nothing.
2. A new user namespace holding a new network namespace (`unshare(CLONE_NEWUSER |
   CLONE_NEWNET)`): the worker sees no network interface but a loopback that is down,
   and its abstract unix sockets are its own. Needs unprivileged user namespaces
   (on by default in most distributions; Ubuntu 24.04's AppArmor and some containers
   refuse them). As root without them, a network namespace alone. Then every capability
   is dropped.
3. Landlock (Linux 5.13+, no privileges needed): files can be written only in the
   worker's scratch folder, and read only there and in the compiled module itself (the
   libraries the module needs are loaded already). The grader's secret, hidden case
   definitions, other submissions and other processes' /proc/PID/cmdline and environ are
   therefore out of reach. With landlock ABI 4 (Linux 6.7) TCP bind and connect are
   refused too; with ABI 6 (6.12), abstract unix sockets and signals to processes outside
   the sandbox. The scratch folder allows writing the files the grader created in it,
   not creating new ones.
4. Resource limits (setrlimit, no privileges needed): address space, CPU seconds, the
   size of each file, 64 open files, no new processes, no core dumps.
5. A seccomp filter on every thread (Linux 3.17+, no privileges needed after step 1):
   no sockets of any family (so neither TCP nor unix sockets), no fork (threads only),
   no exec, no ptrace or reading other processes' memory, no signals to other processes,
   no namespaces, mounts, BPF, io_uring, keyrings or kernel modules, no raising a
   resource limit, no TIOCSTI.

The worker's environment holds only PATH (never GRADER_SECRET), its stdin is
/dev/null, and the parent kills it when a launch overruns its time.

Where a layer is unavailable the others still apply, and `CpuBackend.sandbox_report()`
says which are active. Student code never runs without isolation of both files
(landlock) and network (seccomp or a network namespace) unless the backend was created
with `allow_unsandboxed=True`; `run` raises SetupError otherwise, with a sentence saying
what is missing. bubblewrap is not needed."""

from __future__ import annotations

import subprocess
import tempfile
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from grader.backends.cpu import toolchain

# Folders the worker may read besides its scratch folder and its module: none. The C++
# runtime the module links against is loaded before the sandbox closes.
READ_PATHS: tuple[str, ...] = ()


@dataclass(frozen=True)
class Layers:
    """What the probe found it could apply."""

    landlock_abi: int = 0
    landlock: bool = False
    seccomp: bool = False
    userns: bool = False
    netns: bool = False
    caps_dropped: bool = False
    files_blocked: bool = False
    sockets_blocked: bool = False
    context: str = ""
    error: str = ""

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
                f"landlock ABI {self.landlock_abi} (reads and writes only a scratch folder, "
                "reads the module)"
            )
        else:
            parts.append("no landlock (files NOT isolated)")
        parts.append(
            "seccomp (no sockets, no new processes, no exec, no ptrace)"
            if self.seccomp
            else "no seccomp"
        )
        if self.netns:
            parts.append("network namespace" + (" in a user namespace" if self.userns else ""))
        if self.caps_dropped:
            parts.append("capabilities dropped")
        parts.append("rlimits (memory, CPU time, file size, open files, processes)")
        return "; ".join(parts)


def parse_fields(line: str) -> tuple[str, dict[str, str]]:
    name, *pairs = line.split()
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


@cache
def probe() -> Layers:
    """Which layers work here, found by a runner that applies them all to itself."""
    runner = toolchain.runner()
    with tempfile.TemporaryDirectory(prefix="grader-probe-") as tmp:
        try:
            proc = subprocess.run(
                [str(runner), "probe", tmp],
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
    _, f = parse_fields(line)
    flag = lambda key: f.get(key) == "1"  # noqa: E731 - a local shorthand
    return Layers(
        landlock_abi=int(f.get("landlock_abi", "0")),
        landlock=flag("landlock"),
        seccomp=flag("seccomp"),
        userns=flag("userns"),
        netns=flag("netns"),
        caps_dropped=flag("caps_dropped"),
        files_blocked=flag("files_blocked"),
        sockets_blocked=flag("sockets_blocked"),
        context=unhex(f.get("context", "")),
        error=unhex(f.get("error", "")),
    )


def read_paths(module: Path) -> tuple[list[str], list[str]]:
    """(folders to read, single files to read) for a worker running `module`."""
    return [p for p in READ_PATHS if Path(p).exists()], [str(module)]
