"""`sandbox exec`, the sandbox every compiler runs in (nvcc, cicc, ptxas, g++, c++filt,
addr2line): each of its promises tried with ordinary programs standing in for a
compiler."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from grader import defaults
from grader.backends.cpu import diagnose
from grader.backends.cpu.build import Artifact
from grader.backends.cpu.shelf import Shelf
from grader.errors import SetupError
from grader.toolchain import sandbox

LAYERS = sandbox.probe()
needs_landlock = pytest.mark.skipif(
    not LAYERS.files_isolated, reason=f"this machine has no landlock: {LAYERS.missing()}"
)
needs_seccomp = pytest.mark.skipif(not LAYERS.seccomp, reason="this machine has no seccomp")
PYTHON = "/usr/bin/python3"
needs_python = pytest.mark.skipif(not Path(PYTHON).exists(), reason=f"no {PYTHON}")


def running(command: str) -> list[int]:
    """Processes whose command line is `command`."""
    out = []
    for entry in Path("/proc").iterdir():
        try:
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            continue
        if cmdline.strip() == command and state not in ("Z", "X"):
            out.append(int(entry.name))
    return out


def gone(command: str, seconds: float = 5) -> bool:
    deadline = time.monotonic() + seconds
    while running(command) and time.monotonic() < deadline:
        time.sleep(0.05)
    return not running(command)


@needs_landlock
def test_a_compiler_reads_only_the_toolchain_and_its_own_folder(tmp_path):
    secret = tmp_path / "hidden_cases.txt"
    secret.write_text("hidden-" + os.urandom(6).hex())
    folder = tmp_path / "build"
    folder.mkdir()
    (folder / "kernel.cu").write_text("mine\n")
    run = sandbox.run_compiler(["/bin/sh", "-c", f"cat {folder}/kernel.cu {secret}"], folder)
    assert "mine" in run.log
    assert secret.read_text() not in run.log and "Permission denied" in run.log
    assert run.code != 0


def test_a_compiler_gets_no_secret_in_its_environment(tmp_path, monkeypatch):
    monkeypatch.setenv("GRADER_SECRET", "s3cret-" + os.urandom(4).hex())
    run = sandbox.run_compiler(["/usr/bin/env"], tmp_path)
    assert run.code == 0, run.log
    variables = dict(line.split("=", 1) for line in run.log.splitlines())
    assert set(variables) == {"PATH", "LC_ALL", "HOME", "TMPDIR"}
    assert variables["TMPDIR"] == str(tmp_path)  # nvcc's tmpxft_* files go there


@needs_python
@needs_seccomp
def test_a_compiler_has_no_sockets_and_cannot_leave_its_process_group(tmp_path):
    script = (
        "import os, socket\n"
        "for make in (lambda: socket.socket(), lambda: socket.socket(socket.AF_UNIX)):\n"
        "    try: make(); print('socket made')\n"
        "    except OSError as e: print('socket refused', e.errno)\n"
        "try: os.setsid(); print('left the group')\n"
        "except OSError: print('stayed in the group')\n"
    )
    run = sandbox.run_compiler([PYTHON, "-c", script], tmp_path)
    assert run.log.count("socket refused") == 2, run.log
    assert "stayed in the group" in run.log


@needs_python
def test_memory_and_file_size_are_limited(tmp_path, monkeypatch):
    monkeypatch.setattr(defaults, "COMPILE_MEMORY", 512 << 20)
    monkeypatch.setattr(defaults, "COMPILE_FILE_SIZE", 1 << 20)
    grab = "x = bytearray(1 << 30); print('got a GiB')"
    run = sandbox.run_compiler([PYTHON, "-c", grab], tmp_path)
    assert "MemoryError" in run.log and "got a GiB" not in run.log
    write = "open('big', 'wb').write(b'x' * (2 << 20)); print('wrote 2 MiB')"
    run = sandbox.run_compiler([PYTHON, "-c", write], tmp_path)
    assert "File too large" in run.log and "wrote 2 MiB" not in run.log
    assert (tmp_path / "big").stat().st_size <= 1 << 20


def test_the_timeout_kills_the_whole_process_group(tmp_path, monkeypatch):
    monkeypatch.setattr(defaults, "COMPILE_TIMEOUT", 1.0)
    marker = f"3{os.getpid() % 1000}"  # a sleep nobody else runs
    started = time.monotonic()
    run = sandbox.run_compiler(["/bin/sh", "-c", f"sleep {marker} & sleep {marker}"], tmp_path)
    assert time.monotonic() - started < 10
    assert run.stopped == "compilation took longer than 1 s and was stopped"
    assert gone(f"sleep {marker}"), "a compiler process outlived the timeout"


def test_a_killed_runner_takes_its_compiler_with_it(tmp_path):
    marker = f"4{os.getpid() % 1000}"
    cmd = sandbox.sandboxed(["/bin/sh", "-c", f"sleep {marker} & sleep {marker}"], str(tmp_path))
    runner = subprocess.Popen(cmd, cwd=tmp_path, env=sandbox.compiler_env())
    deadline = time.monotonic() + 10
    while len(running(f"sleep {marker}")) < 2 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert len(running(f"sleep {marker}")) == 2
    runner.send_signal(signal.SIGKILL)  # no chance to clean up: its watcher does
    runner.wait()
    assert gone(f"sleep {marker}"), "the compiler outlived its runner"


def test_a_landlock_failure_is_reported_in_the_runners_own_words():
    # the status line as exec_status writes it: its error field hex-encoded (kvbytes)
    why = "landlock is not available in this kernel; "
    fields = "code=125 signal=0 timeout=0 landlock=0 peak_kb=0 cpu_ms=0"
    line = f"exec {fields} error={why.encode().hex()}\n"
    read, write = os.pipe()
    os.write(write, line.encode())
    os.close(write)
    status = sandbox._read_status(read)
    with pytest.raises(SetupError, match=f"probe found it works \\({why}\\)"):
        sandbox._ended(status, "")


def fake_addr2line(tmp_path, monkeypatch, script: str) -> diagnose.Locator:
    """A locator whose addr2line (found first on PATH) is `script`, for a module of no
    importance: what the sandbox lets the tool do is what is tried."""
    tool = tmp_path / "tool" / "bin" / "addr2line"
    tool.parent.mkdir(parents=True)
    tool.write_text("#!/bin/sh\n" + script)
    tool.chmod(0o755)
    monkeypatch.setenv("PATH", f"{tool.parent}{os.pathsep}{os.environ['PATH']}")
    module = tmp_path / "mod-0" / "module.so"
    module.parent.mkdir()
    module.write_bytes(os.urandom(64))
    return diagnose.Locator(Artifact(module, "kernel.cu"), Shelf())


@needs_landlock
def test_addr2line_reads_its_copy_of_the_module_and_nothing_else(tmp_path, monkeypatch):
    secret = tmp_path / "hidden_cases.txt"
    secret.write_text("hidden")
    # the line it names says what it could read: 1, +1 for the module, +10 for the secret
    locate = fake_addr2line(
        tmp_path,
        monkeypatch,
        "line=1\n"
        'cat "$2" >/dev/null 2>&1 && line=$((line + 1))\n'
        f"cat {secret} >/dev/null 2>&1 && line=$((line + 10))\n"
        'echo "kernel(float*)"; echo "/build/kernel.cu:$line"\n',
    )
    assert locate.line(0x1234) == 2


def test_a_hung_or_failing_addr2line_gives_no_line(tmp_path, monkeypatch):
    monkeypatch.setattr(diagnose, "LINES_TIMEOUT", 1.0)
    marker = f"5{os.getpid() % 1000}"
    hung = fake_addr2line(tmp_path / "hung", monkeypatch, f"sleep {marker} & sleep {marker}\n")
    started = time.monotonic()
    assert hung.line(0x1234) is None
    assert time.monotonic() - started < 10
    assert gone(f"sleep {marker}"), "addr2line outlived its deadline"
    failing = fake_addr2line(tmp_path / "failing", monkeypatch, "echo /b/kernel.cu:3; exit 1\n")
    assert failing.line(0x1234) is None
