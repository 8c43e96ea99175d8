"""Each way out of the CPU backend's sandbox is tried, from a global constructor (it runs
when the module loads, before any kernel) or from a kernel, and must be blocked."""

from __future__ import annotations

import errno
import json
import os
import socket
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
from cpu_kit import integer, out

from grader import defaults
from grader.backends.cpu import CpuBackend
from grader.backends.cpu.job import MEMORY_ALLOWANCE
from grader.errors import SetupError
from grader.grading import reference_cache
from grader.model.result import Kind
from grader.toolchain import sandbox

LAYERS = sandbox.probe()
needs_isolation = pytest.mark.skipif(
    bool(LAYERS.missing()), reason=f"this machine cannot sandbox: {LAYERS.missing()}"
)

# A module whose global constructor records what it managed; the kernel reports it.
ATTEMPT = r"""
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <unistd.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <signal.h>
#include <sys/wait.h>
static float results[8];
static int attempt() {
BODY
    return 0;
}
static int done = attempt();
__global__ void report(float* P) { P[threadIdx.x] = results[threadIdx.x]; }
"""


def attempt_module(kit, body: str):
    source = ATTEMPT.replace("BODY", textwrap.indent(textwrap.dedent(body), "    "))
    return kit.built(source, name="escape.cu")


def run_report(kit, build):
    result = kit.run(build, "report", 1, 8, [out("P", 8)])
    assert result.completed, result.diagnostics
    return result, result.buffers["P"].data


def test_the_sandbox_report_names_the_active_layers(kit):
    report = kit.backend.sandbox_report()
    if not LAYERS.missing():
        assert "landlock ABI" in report and "seccomp" in report
    else:
        assert "cannot sandbox" in report


@needs_isolation
def test_writing_a_file_outside_the_scratch_folder_is_blocked(kit, tmp_path, no_nvcc):
    target = tmp_path / "escaped.txt"
    home = Path.home() / ".grader-escape-test"
    build = attempt_module(
        kit,
        f"""
        const char* paths[] = {{"{target}", "{home}", "/tmp/grader-escape-test"}};
        for (int i = 0; i < 3; ++i) {{
            FILE* f = fopen(paths[i], "w");
            results[i] = f ? 0.0f : (float)errno;
            if (f) {{ fputs("escaped", f); fclose(f); }}
        }}
        """,
    )
    _, got = run_report(kit, build)
    assert not target.exists() and not home.exists()
    assert not Path("/tmp/grader-escape-test").exists()
    assert list(got[:3]) == [errno.EACCES] * 3


@needs_isolation
def test_the_graders_cache_of_expected_outputs_is_out_of_reach(kit, no_nvcc):
    """An entry of the reference's sums (grader.grading.reference_cache) forged or
    overwritten by a kernel would raise the grade of every grading that read it next."""
    folder = defaults.cache_dir() / reference_cache.KIND
    folder.mkdir(parents=True, exist_ok=True)
    kept, forged = folder / "sandbox-test.npz", folder / "sandbox-forged.npz"
    kept.write_bytes(b"kept")
    try:
        build = attempt_module(
            kit,
            f"""
            const char* paths[] = {{"{kept}", "{forged}"}};
            for (int i = 0; i < 2; ++i) {{
                FILE* f = fopen(paths[i], "w");
                results[i] = f ? 0.0f : (float)errno;
                if (f) {{ fputs("forged", f); fclose(f); }}
            }}
            results[2] = open("{kept}", O_RDONLY) < 0 ? (float)errno : 0.0f;
            """,
        )
        _, got = run_report(kit, build)
        assert kept.read_bytes() == b"kept" and not forged.exists()
        assert list(got[:3]) == [errno.EACCES] * 3
    finally:
        kept.unlink(missing_ok=True)
        forged.unlink(missing_ok=True)


@needs_isolation
def test_reading_another_students_file_is_blocked(kit, tmp_path, no_nvcc):
    other = tmp_path / "other_student" / "kernel.cu"
    other.parent.mkdir()
    other.write_text("__global__ void matmul(/* their answer */) {}\n")
    build = attempt_module(
        kit,
        f"""
        int fd = open("{other}", O_RDONLY);
        results[0] = fd < 0 ? (float)errno : 0.0f;
        results[1] = open("{Path.home()}", O_RDONLY | O_DIRECTORY) < 0 ? (float)errno : 0.0f;
        """,
    )
    _, got = run_report(kit, build)
    assert list(got[:2]) == [errno.EACCES, errno.EACCES]


@needs_isolation
def test_connecting_to_local_sockets_is_blocked(kit, tmp_path, no_nvcc):
    tcp = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    tcp.bind(("127.0.0.1", 0))
    tcp.listen(4)
    tcp.settimeout(0.5)
    port = tcp.getsockname()[1]
    path = tmp_path / "s.sock"
    unix = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    unix.bind(str(path))
    unix.listen(4)
    unix.settimeout(0.5)
    try:
        build = attempt_module(
            kit,
            f"""
            int t = socket(AF_INET, SOCK_STREAM, 0);
            results[0] = t < 0 ? (float)errno : 0.0f;
            sockaddr_in a; memset(&a, 0, sizeof a);
            a.sin_family = AF_INET; a.sin_port = htons({port});
            a.sin_addr.s_addr = htonl(0x7f000001);
            results[1] = (t >= 0 && connect(t, (sockaddr*)&a, sizeof a) == 0) ? 0.0f : 1.0f;
            int u = socket(AF_UNIX, SOCK_STREAM, 0);
            results[2] = u < 0 ? (float)errno : 0.0f;
            sockaddr_un b; memset(&b, 0, sizeof b);
            b.sun_family = AF_UNIX; strcpy(b.sun_path, "{path}");
            results[3] = (u >= 0 && connect(u, (sockaddr*)&b, sizeof b) == 0) ? 0.0f : 1.0f;
            """,
        )
        _, got = run_report(kit, build)
        for listener in (tcp, unix):
            with pytest.raises(TimeoutError):
                listener.accept()
        assert got[0] == errno.EACCES and got[2] == errno.EACCES
        assert got[1] == 1.0 and got[3] == 1.0
    finally:
        tcp.close()
        unix.close()


SPY = r"""
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <signal.h>
#include <unistd.h>
static char found[4096];
static void look(const char* path) {
    int fd = open(path, O_RDONLY);
    if (fd < 0) { strcat(found, "[refused]"); return; }
    char buf[1024]; ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    for (ssize_t i = 0; i < n; ++i) if (!buf[i]) buf[i] = ' ';
    if (n > 0) { buf[n] = 0; strcat(found, buf); }
}
static int spy() {
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/cmdline", (int)getppid()); look(path);
    snprintf(path, sizeof path, "/proc/%d/environ", (int)getppid()); look(path);
    look("/proc/self/environ");
    const char* e = getenv("GRADER_SECRET");
    strcat(found, e ? e : "[no secret in env]");
    if (kill(getppid(), SIGKILL) != 0) strcat(found, "[kill refused]");
    return 0;
}
static int done = spy();
__global__ void report(float* P) {
    if (threadIdx.x == 0) printf("%s", found);
    P[threadIdx.x] = 1.0f;
}
"""

GRADER = r"""
import json, sys
import numpy as np
from pathlib import Path
from grader.backends.cpu import CpuBackend
from grader.model.launch import Buffer, Launch
from grader.model.source import Submission
from grader.toolchain import nvcc
nvcc.find = lambda: None
backend = CpuBackend()
build = backend.build(Submission(Path("spy.cu"), sys.stdin.read()), {}, (16, 16, 1))
outcome = backend.run(build, Launch("report", (1, 1, 1), (4, 1, 1), 0,
                       [Buffer("P", np.zeros(4, np.float32), True)], {}), 10)
print(json.dumps({"output": outcome.output, "completed": outcome.completed,
                  "diagnostics": [d.message for d in outcome.diagnostics]}))
"""


@needs_isolation
def test_the_secret_in_the_parents_cmdline_and_environment_is_out_of_reach(tmp_path):
    secret = "s3cret-" + os.urandom(6).hex()
    env = {**os.environ, "GRADER_SECRET": secret}
    env["PYTHONPATH"] = os.pathsep.join([str(Path(__file__).parents[2]), env.get("PYTHONPATH", "")])
    proc = subprocess.run(
        [sys.executable, "-c", GRADER, f"--secret={secret}"],
        input=SPY,
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr  # the grader process was not killed
    report = json.loads(proc.stdout.splitlines()[-1])
    assert report["completed"], report
    assert secret not in report["output"]
    assert report["output"].count("[refused]") == 3
    assert "[no secret in env]" in report["output"]
    assert "[kill refused]" in report["output"]


@needs_isolation
def test_a_fork_bomb_forks_nothing(kit, no_nvcc):
    build = attempt_module(
        kit,
        """
        int forked = 0;
        for (int i = 0; i < 64; ++i) {
            pid_t p = fork();
            if (p == 0) { for (;;) fork(); }
            if (p > 0) ++forked;
        }
        results[0] = forked;
        results[1] = system("echo escaped > /tmp/grader-fork-test") == 0 ? 1.0f : 0.0f;
        """,
    )
    _, got = run_report(kit, build)
    assert got[0] == 0 and got[1] == 0
    assert not Path("/tmp/grader-fork-test").exists()


@needs_isolation
def test_a_memory_hog_is_stopped_at_the_limit(kit, no_nvcc):
    source = r"""
    #include <cstdlib>
    #include <cstring>
    __global__ void hog(float* P, int chunk_mb) {
        if (threadIdx.x != 0) return;
        size_t got = 0;
        for (int i = 0; i < 256; ++i) {                 /* asks for up to 64 GB */
            char* p = (char*)malloc((size_t)chunk_mb << 20);
            if (!p) break;
            memset(p, 1, (size_t)chunk_mb << 20);
            got += chunk_mb;
        }
        P[0] = (float)got;
    }
    """
    build = kit.built(source)
    result = kit.run(build, "hog", 1, 1, [out("P", 1), integer("chunk_mb", 256)])
    assert result.completed
    got_mb = result.buffers["P"].data[0]
    assert 0 < got_mb * (1 << 20) <= MEMORY_ALLOWANCE + (512 << 20)


def test_no_isolation_is_a_setup_error_unless_allowed(monkeypatch, kit, no_nvcc):
    build = kit.built("__global__ void k(float* P) { P[threadIdx.x] = 2.0f; }")
    nothing = sandbox.Layers(error="probe says nothing works")
    monkeypatch.setattr(sandbox, "probe", lambda: nothing)
    from grader.model.launch import Launch

    launch = Launch("k", (1, 1, 1), (4, 1, 1), 0, [out("P", 4)], {})
    with pytest.raises(SetupError, match="cannot sandbox student code"):
        CpuBackend().run(build, launch, 10)
    allowed = CpuBackend(allow_unsandboxed=True)
    result = allowed.run(build, launch, 10)
    np.testing.assert_array_equal(result.buffers["P"].data, 2.0)
    assert any("incomplete sandboxing" in note for note in allowed.notes)
    assert Kind.CRASH not in [d.kind for d in result.diagnostics]


@needs_isolation
def test_the_compiler_cannot_include_the_graders_files(kit, tmp_path, no_nvcc):
    secret = "hidden-" + os.urandom(6).hex()
    cases = tmp_path / "hidden_cases.txt"
    cases.write_text(f"{secret}\n")
    for path in (cases, Path(f"/proc/{os.getpid()}/cmdline")):
        build = kit.build(f'float x =\n#include "{path}"\n;\n__global__ void k(float* p) {{}}\n')
        assert not build.ok
        assert secret not in build.compile.log
        assert "Permission denied" in build.diagnostics[0].message
        assert build.diagnostics[0].line == 2
