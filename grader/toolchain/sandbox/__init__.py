"""The sandbox around student code: the CPU backend's worker, and every compiler that reads
a submission (nvcc too, on a GPU machine). Its layers (sandbox.cpp, beside this module)
are linked into the CPU backend's runner, and into the sandbox executable built here
(main.cpp), which runs each compiler inside them and probes which of them work; how
`sandbox exec` ends and the options it takes are written once, in contract.py.

On the CPU backend a submission is native code, so the worker that runs it (the runner
executable, grader/backends/cpu/runtime/runner.cpp) locks itself in before it loads the
student's module: the module's global constructors run at load time, so nothing of the
student's runs outside the sandbox. First it loads every library the module needs (found
as the dynamic loader would, grader.backends.cpu.elf), so that nothing has to be read
later. Then sandbox.cpp applies, in this order:

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

import math
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from grader import defaults, waiting
from grader.errors import SetupError
from grader.toolchain import cxx, header
from grader.toolchain.sandbox import contract

FOLDER = Path(__file__).resolve().parent
# sandbox.cpp's layers and record.cpp's records, which the CPU backend's runner links too
LINKED = (FOLDER / "sandbox.cpp", FOLDER / "record.cpp")
SOURCES = (FOLDER / "main.cpp", *LINKED)
HEADERS = (FOLDER / "sandbox.h", FOLDER / "record.h", FOLDER / "keys.h")
# -Werror=switch: parse_exec's switch over the options of the contract handles each
FLAGS = ("-std=gnu++17", "-O2", "-g", "-fno-omit-frame-pointer", "-Werror=switch")
HEADER = "sandbox_contract.h"
# Who a worker started by root becomes: the overflow user ("nobody" on most systems),
# which owns no files, so its landlocked worker can change nothing outside its folder.
WORKER_UID = WORKER_GID = 65534


@dataclass(frozen=True)
class Layers:
    """What a sandbox applied to itself: the probe, or a worker before it loaded any code
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


def require_linux() -> None:
    """Raises SetupError where the sandbox cannot be built: on any system but Linux."""
    if not sys.platform.startswith("linux"):
        raise SetupError(
            "The CPU backend runs student code only on Linux, whose landlock and seccomp "
            "sandbox it; on this system, grade inside a Linux container or virtual machine."
        )


@cache
def executable() -> Path:
    """The sandbox executable, built on first use (cached under
    `defaults.cache_dir()/sandbox/sandbox-HASH/`, HASH covering its sources)."""
    require_linux()
    digest = cxx.source_hash([*SOURCES, *HEADERS], contract_header())
    folder = defaults.cache_dir() / "sandbox" / f"sandbox-{digest}"
    return cxx.built_once(folder / "sandbox", _build)


def _build(folder: Path) -> None:
    who = "The grader could not build the sandbox its compilers run in"
    flags = [*FLAGS, "-I", str(FOLDER)]  # keys.h, for the contract's header
    cxx.build_program(folder, "sandbox", SOURCES, flags, (), who, {HEADER: contract_header()})


def contract_header() -> str:
    """sandbox_contract.h: the contract's names for main.cpp."""
    return header.document(
        "GRADER_SANDBOX_CONTRACT_H",
        "grader/toolchain/sandbox/contract.py",
        ['"keys.h"'],
        [
            *header.enum("ExecExit", "EXEC", contract.Exit),
            "",
            "/* The options of `sandbox exec` (parse_exec). */",
            *header.words("ExecOption", "OPTION", contract.OPTIONS),
        ],
    )


@cache
def probe() -> Layers:
    """Which layers work here, found by a sandbox that applies them all to itself."""
    program = executable()
    user = worker_user()
    with tempfile.TemporaryDirectory(prefix="grader-probe-") as tmp:
        hand_over(Path(tmp), user)
        try:
            proc = subprocess.run(
                [str(program), "probe", tmp, *(str(v) for v in user or ())],
                capture_output=True,
                text=True,
                timeout=30,
                env=cxx.clean_env(),
                stdin=subprocess.DEVNULL,
            )
        except (OSError, subprocess.TimeoutExpired) as err:
            return Layers(error=f"the sandbox probe did not run: {err}")
    line = next((ln for ln in proc.stdout.splitlines() if ln.startswith("sandbox ")), "")
    if not line:
        return Layers(error=f"the sandbox probe printed nothing (exit {proc.returncode})")
    return Layers.from_record(parse_fields(line)[1])


# -- compilers, sandboxed ------------------------------------------------------------------

# What a compiler may read besides its build folder: the system's toolchain and headers.
COMPILER_READS = (
    "/usr", "/bin", "/lib", "/lib64", "/lib32", "/etc/ld.so.cache", "/etc/alternatives",
)  # fmt: skip
LOG_LIMIT = 256 * 1024  # bytes of a compiler's messages kept
# How compilers say that a limit stopped them, on lines of their own (a quoted source
# line starts with a space, so the submission cannot write these).
_MEMORY_WORDS = re.compile(
    r"^(\S+: out of memory|virtual memory exhausted|LLVM ERROR: out of memory"
    r"|terminate called after throwing an instance of 'std::bad_alloc'"
    r"|Loop in catastrophic error processing)",
    re.MULTILINE,
)
_CPU_WORDS = re.compile(r"^\S.*(CPU time limit exceeded|died due to signal 24\b)", re.MULTILINE)
_FSIZE_WORDS = re.compile(r"^\S.*(File size limit exceeded|died due to signal 25\b)", re.MULTILINE)


@dataclass
class CompilerRun:
    """How a sandboxed compiler run ended: its exit code and messages, and a sentence
    when a limit of the sandbox stopped it (then nothing about the file is known)."""

    code: int
    log: str
    stopped: str = ""


def compile_isolation(allow_unsandboxed: bool) -> str:
    """Whether compilers can run here with their files isolated (landlock). Raises
    SetupError when they cannot and that was not allowed; returns the note a report
    must carry when they run anyway, else ""."""
    layers = probe()
    if layers.files_isolated:
        return ""
    missing = (
        "The compilers cannot be sandboxed on this machine: it lacks file isolation "
        "(landlock, Linux 5.13 or later with CONFIG_SECURITY_LANDLOCK and landlock in the "
        "lsm= boot list), so an #include in a submission could read any file of yours."
    )
    if not allow_unsandboxed:
        raise SetupError(
            f"{missing} Run on a Linux kernel that has it, or pass --allow-unsandboxed if "
            "you trust the submissions."
        )
    network = "seccomp (no sockets)" if layers.seccomp else "no seccomp (sockets allowed)"
    return (
        "The compilers ran without file isolation (no landlock; allowed by "
        f"--allow-unsandboxed), with {network}, limits on memory, CPU time and file size, "
        "and a process group of their own killed at the deadline."
    )


def compiler_reads(program: str) -> list[str]:
    """Folders a compiler may read: the system's, and the installation of `program`,
    nvcc's CUDA toolkit and the host compiler wherever they are."""
    roots = [program, cxx.compiler().path, shutil.which("gcc"), shutil.which("g++")]
    reads = [p for p in COMPILER_READS if Path(p).exists()]
    reads += [str(Path(os.path.realpath(p)).parent.parent) for p in roots if p]
    if os.environ.get("CUDA_HOME"):
        reads.append(os.environ["CUDA_HOME"])
    return list(dict.fromkeys(reads))


def sandboxed(
    cmd: list[str],
    folder: str,
    status_fd: int | None = None,
    timeout: float | None = None,
    reads: Sequence[str] = (),
) -> list[str]:
    """`cmd` (a compiler run on student source) wrapped by `sandbox exec` (main.cpp says
    what that does): it may read only the toolchain, `reads` and `folder`, where its copy
    of the source is; it has no network, limits on memory, CPU time and file size, and a
    process group that is killed whole at the timeout (COMPILE_TIMEOUT unless given).
    `folder` may be a shell expansion the program's caller gives (see sandboxed_script)."""
    wrapped = [str(executable()), "exec", folder, *_limits(timeout or defaults.COMPILE_TIMEOUT)]
    if probe().files_isolated:
        wrapped.append("--require-files")
    if status_fd is not None:
        wrapped += ["--status", str(status_fd)]
    for path in [*compiler_reads(cmd[0]), *reads]:
        wrapped += ["--read", path]
    return [*wrapped, "--", cmd[0], *cmd[1:]]


def _limits(timeout: float) -> list[str]:
    return [
        "--timeout", f"{timeout:g}",
        "--cpu", f"{math.ceil(timeout)}",
        "--memory", str(defaults.COMPILE_MEMORY),
        "--fsize", str(defaults.COMPILE_FILE_SIZE),
    ]  # fmt: skip


def compiler_env() -> dict[str, str]:
    """The sandbox's environment: the user's PATH (nvcc finds its host compiler there) and
    nothing else; the sandbox gives the compiler PATH, LC_ALL, HOME and TMPDIR only."""
    return {**cxx.clean_env(), "PATH": os.environ.get("PATH") or cxx.clean_env()["PATH"]}


def run_compiler(
    cmd: list[str],
    folder: Path,
    stdin_text: str | None = None,
    timeout: float | None = None,
    reads: Sequence[str] = (),
) -> CompilerRun:
    """Run `cmd` sandboxed in `folder` (absolute paths only: a name that starts with "-"
    would be an option, and nvcc, ptxas and g++ know no "--"), stopped after `timeout`
    seconds (COMPILE_TIMEOUT unless given), reading besides the toolchain only `reads`."""
    timeout = timeout or defaults.COMPILE_TIMEOUT
    status_r, status_w = os.pipe()
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as stdin:
        stdin.write((stdin_text or "").encode())
        stdin.seek(0)
        try:
            with subprocess.Popen(
                sandboxed(cmd, str(folder), status_w, timeout, reads),
                cwd=folder,
                stdin=stdin if stdin_text is not None else subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                env=compiler_env(),
                pass_fds=(status_w,),
            ) as proc:
                try:  # the sandbox's own deadline comes first
                    waiting.wait(proc, timeout + 30)
                except BaseException:
                    _stop(proc)
                    raise
        except subprocess.TimeoutExpired:
            pass
        finally:
            os.close(status_w)
        status = _read_status(status_r)
        out.seek(0)
        log = out.read(LOG_LIMIT).decode("utf-8", "replace")
    return _ended(status, log)


def _stop(proc: subprocess.Popen) -> None:
    """Stop a compile no longer wanted: SIGTERM makes the sandbox kill the compiler's
    process group before it exits, so nothing writes into the folder once this returns."""
    proc.terminate()
    try:
        proc.wait(5)
    except subprocess.TimeoutExpired:
        proc.kill()  # its watcher kills the group when the sandbox's pipe closes


def _read_status(fd: int) -> dict[str, str]:
    os.set_blocking(fd, False)
    try:
        text = os.read(fd, 4096).decode("utf-8", "replace")
    except BlockingIOError:
        text = ""
    finally:
        os.close(fd)
    line = next((ln for ln in text.splitlines() if ln.startswith("exec ")), "")
    return parse_fields(line)[1]


def _ended(status: dict[str, str], log: str) -> CompilerRun:
    if not status:
        return CompilerRun(-1, log, "the compiler's sandbox did not report how it ended")
    code = int(status["code"]) if status.get("code", "-1") != "-1" else 128 + int(status["signal"])
    if code == contract.Exit.NO_FILES and status.get("landlock") == "0":
        raise SetupError(
            "The compiler's sandbox could not apply landlock, although the sandbox probe "
            f"found it works ({unhex(status.get('error', ''))}). Report this as a bug."
        )
    run = CompilerRun(code, log)
    if status.get("timeout") == "1":
        run.stopped = (
            f"compilation took longer than {defaults.COMPILE_TIMEOUT:.0f} s and was stopped"
        )
    elif code != 0:
        run.stopped = _limit_hit(status, log)
    return run


def _limit_hit(status: dict[str, str], log: str) -> str:
    """The sentence for a limit that stopped a failed compile, or ""."""
    peak = int(status.get("peak_kb", "0")) * 1024
    if _MEMORY_WORDS.search(log) or peak >= 0.9 * defaults.COMPILE_MEMORY:
        return (
            f"the compiler ran out of memory (it may use {defaults.COMPILE_MEMORY >> 30} GiB) "
            "and was stopped. A template or constexpr computation that grows without end, a "
            "large __device__ array with an initializer, or an #include of something that is "
            "not a source file, does this"
        )
    if _CPU_WORDS.search(log) or int(status.get("cpu_ms", "0")) >= 1000 * defaults.COMPILE_TIMEOUT:
        return (
            f"the compiler used more than {defaults.COMPILE_TIMEOUT:.0f} s of CPU time and "
            "was stopped"
        )
    if _FSIZE_WORDS.search(log):
        return (
            f"the compiler's output grew past {defaults.COMPILE_FILE_SIZE >> 20} MiB and was "
            "stopped. A __device__ array with an initializer is stored whole in the compiled "
            f"kernel, which may be {defaults.MODULE_BYTES >> 20} MiB: declare a large one "
            "without an initializer and fill it in a kernel"
        )
    return ""
