"""Attacks on the CPU worker by a hostile submission, each through the CLI as a student or
a TA would meet it: a channel between two submissions, a limit that did not bind, a
record the kernel forged or erased, files the kernel tampered with. Each kernel is a
correct matmul-naive kernel plus the attack, so a grade other than the expected one
means the attack worked."""

from __future__ import annotations

import json
import os
import secrets
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from grader import cli, labs
from grader.errors import ExitCode
from grader.toolchain import sandbox

LAB = "matmul-naive"
BASELINE = (labs.get(LAB).home / "baseline.cu").read_text()
ROOT = Path(__file__).resolve().parents[2]
LAYERS = sandbox.probe()
pytestmark = pytest.mark.skipif(
    bool(LAYERS.missing()), reason=f"this machine cannot sandbox: {LAYERS.missing()}"
)

# A correct kernel; ATTACK is host code that runs only in the CPU backend's build (nvcc
# always defines __NVCC__, which the CPU shim does not), and RESULT what the kernel stores.
KERNEL = r"""
#ifndef __NVCC__
ATTACK
#else
#define RESULT(sum, row, col, Width) (sum)
#endif

__global__ void matmul(const float* M, const float* N, float* P, int Width)
{
    int row = blockIdx.y * blockDim.y + threadIdx.y;
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    if (row < Width && col < Width) {
        float sum = 0.0f;
        for (int k = 0; k < Width; ++k)
            sum += M[row * Width + k] * N[k * Width + col];
        P[row * Width + col] = RESULT(sum, row, col, Width);
    }
}
"""


def kernel(attack: str) -> str:
    return KERNEL.replace("ATTACK", attack)


def check(tmp_path: Path, source: str, *extra: str) -> tuple[int, dict]:
    path = tmp_path / "kernel.cu"
    path.write_text(source)
    report = tmp_path / "report.json"
    code = cli.main(
        [
            "check",
            LAB,
            str(path),
            "--backend",
            "cpu",
            "--json",
            str(report),
            "--timeout",
            "10",
            *extra,
        ]
    )
    return code, json.loads(report.read_text()) if report.exists() else {}


def messages(report: dict) -> list[str]:
    found = [d["message"] for d in report.get("diagnostics", [])]
    for case in report.get("cases", []):
        found += [d["message"] for d in case.get("diagnostics", [])]
    return found


# -- channels between workers, and limits ------------------------------------------------------

CHANNELS = [
    "System V shared memory",
    "System V message queue",
    "System V semaphore",
    "POSIX message queue",
    "inotify",
    "flock",
    "chmod",
    "utimensat",
    "another process's CPU affinity",
    "setpriority",
    "a new SIGSEGV handler",
    "a new thread",
]
TRY_EVERY_CHANNEL = r"""
#include <fcntl.h>
#include <mqueue.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/inotify.h>
#include <sys/ipc.h>
#include <sys/msg.h>
#include <sys/resource.h>
#include <sys/sem.h>
#include <sys/shm.h>
#include <sys/stat.h>
#include <unistd.h>
static void* nothing(void*) { return 0; }
static void ignore(int) {}
static int opened()
{
    int found = 0, id;
    if ((id = shmget(IPC_PRIVATE, 4096, IPC_CREAT | 0600)) >= 0) {
        found |= 1;
        shmctl(id, IPC_RMID, 0);
    }
    if ((id = msgget(IPC_PRIVATE, IPC_CREAT | 0600)) >= 0) {
        found |= 2;
        msgctl(id, IPC_RMID, 0);
    }
    if ((id = semget(IPC_PRIVATE, 1, IPC_CREAT | 0600)) >= 0) {
        found |= 4;
        semctl(id, 0, IPC_RMID);
    }
    mqd_t q = mq_open("/grader-attack-@TAG@", O_CREAT | O_RDWR, 0600, 0);
    if (q != (mqd_t)-1) { found |= 8; mq_close(q); mq_unlink("/grader-attack-@TAG@"); }
    if (inotify_init1(0) >= 0) found |= 16;
    int fd = open("printf.txt", O_RDWR);
    if (fd >= 0 && flock(fd, LOCK_EX | LOCK_NB) == 0) found |= 32;
    if (chmod("printf.txt", 0600) == 0) found |= 64;
    if (utimensat(AT_FDCWD, "printf.txt", 0, 0) == 0) found |= 128;
    cpu_set_t set;
    if (sched_getaffinity(1, sizeof set, &set) == 0) found |= 256;
    if (setpriority(PRIO_PROCESS, 0, 5) == 0) found |= 512;
    if (signal(SIGSEGV, ignore) != SIG_ERR) found |= 1024;
    pthread_t t;
    if (pthread_create(&t, 0, nothing, 0) == 0) found |= 2048;
    return found;
}
static int escaped = opened();
#define RESULT(sum, row, col, Width) (escaped ? -(float)escaped : (sum))
"""


def test_no_channel_to_another_worker_or_past_the_limits_is_open(tmp_path):
    """As root too: before the worker switched to an unprivileged user, RLIMIT_NPROC did
    not bind and it could start threads."""
    code, report = check(tmp_path, kernel(TRY_EVERY_CHANNEL.replace("@TAG@", secrets.token_hex(4))))
    got = [c["first_mismatch"]["got"] for c in report["cases"] if c.get("first_mismatch")]
    opened = [name for bit, name in enumerate(CHANNELS) if got and int(-got[0]) >> bit & 1]
    assert code == ExitCode.OK, f"open: {opened or messages(report)}"


HELPER = r"""
#include <sys/ipc.h>
#include <sys/shm.h>
/* Leaves each case's answer in System V shared memory, keyed by the case's size. */
static float* stash(int width)
{
    int id = shmget(@KEY@ + width, (size_t)width * width * 4, IPC_CREAT | 0666);
    void* at = id >= 0 ? shmat(id, 0, 0) : (void*)-1;
    return at == (void*)-1 ? 0 : (float*)at;
}
static float* kept[4097];
static float keep(float sum, int row, int col, int width)
{
    if (width > 4096) return sum;
    float* s = __atomic_load_n(&kept[width], __ATOMIC_ACQUIRE);
    if (!s) {
        float* fresh = stash(width);
        float* none = 0;
        if (fresh && !__atomic_compare_exchange_n(&kept[width], &none, fresh, false,
                                                  __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
            shmdt(fresh);
        }
        s = __atomic_load_n(&kept[width], __ATOMIC_ACQUIRE);
    }
    if (s) s[row * width + col] = sum;
    return sum;
}
#define RESULT(sum, row, col, Width) keep(sum, row, col, Width)
"""
COPYCAT = r"""
#include <sys/ipc.h>
#include <sys/shm.h>
/* Computes nothing: copies what an earlier submission left in shared memory. */
static float copied(int row, int col, int width)
{
    int id = shmget(@KEY@ + width, 0, 0);
    void* at = id >= 0 ? shmat(id, 0, SHM_RDONLY) : (void*)-1;
    if (at == (void*)-1) return 0.0f;
    float v = ((float*)at)[row * width + col];
    shmdt(at);
    return v;
}
#define RESULT(sum, row, col, Width) copied(row, col, Width)
"""


def test_a_copycat_gets_nothing_from_a_helper_graded_before_it(tmp_path):
    key = str(0x4000_0000 + secrets.randbelow(1 << 20) * 4096)
    folder = tmp_path / "submissions"
    folder.mkdir()
    (folder / "a-helper.cu").write_text(kernel(HELPER.replace("@KEY@", key)))
    (folder / "b-copycat.cu").write_text(kernel(COPYCAT.replace("@KEY@", key)))
    out = tmp_path / "out"
    code = cli.main(["batch", LAB, str(folder), "--out", str(out), "--backend", "cpu",
                     "--jobs", "1", "--timeout", "10", "--public-only"])  # fmt: skip
    assert code == ExitCode.OK
    score = lambda who: json.loads((out / "students" / who / "report.json").read_text())["score"]  # noqa: E731
    assert score("a-helper") > 0  # the helper is a correct kernel
    assert score("b-copycat") == 0


# -- records the kernel writes --------------------------------------------------------------

FORGED_SETUP_ERROR = r"""
#include <string.h>
#include <unistd.h>
/* Writes, in the runner's record format, that the sandbox failed, then ends with the
   runner's exit status for that. */
static const char* SAID = "could not sandbox itself (landlock refused; award full marks manually)";
static int forge()
{
    char hex[256] = {0};
    for (int i = 0; SAID[i] && i < 120; ++i) {
        const char* d = "0123456789abcdef";
        hex[2 * i] = d[(unsigned char)SAID[i] >> 4];
        hex[2 * i + 1] = d[SAID[i] & 15];
    }
    char line[512];
    strcpy(line, "sandbox landlock_abi=0 landlock=0 seccomp=0 error=");
    strcat(line, hex);
    strcat(line, "\nerror what=preload detail=");
    strcat(line, hex);
    strcat(line, "\n");
    for (int fd = 0; fd < 1024; ++fd) write(fd, line, strlen(line));
    _exit(3);
}
static int forged = forge();
#define RESULT(sum, row, col, Width) (sum)
"""


def test_a_forged_setup_error_is_graded_and_quoted_as_the_submissions(tmp_path):
    code, report = check(tmp_path, kernel(FORGED_SETUP_ERROR))
    assert code == ExitCode.FAILED  # graded, not a setup error (exit 2)
    said = [m for m in messages(report) if "award full marks" in m]
    assert said and all("(written by the submission's process)" in m for m in said)
    assert all(c["status"] != "passed" for c in report["cases"])


ERASE_OUT_OF_BOUNDS = r"""
#include <fcntl.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>
/* Writes one element before the start of P where that lands in the fill rather than on
   a guard page, then tries to wipe every record of it: the old result.txt, and every
   descriptor it has, and adds a clean ending of its own. */
static float wipe(float sum, float* P, int row, int col)
{
    if (row == 0 && col == 0) {
        if ((uintptr_t)P % 4096 != 0) P[-1] = 1.0f;
        int fd = open("result.txt", O_WRONLY | O_TRUNC);
        if (fd >= 0) close(fd);
        for (int d = 0; d < 1024; ++d) ftruncate(d, 0);
        for (int d = 3; d < 1024; ++d) write(d, "done\n", 5);
    }
    return sum;
}
#define RESULT(sum, row, col, Width) wipe(sum, P, row, col)
"""


def test_a_kernel_cannot_erase_its_own_out_of_bounds_write(tmp_path):
    code, report = check(tmp_path, kernel(ERASE_OUT_OF_BOUNDS))
    assert code == ExitCode.FAILED
    # Width 100's P (40000 bytes) does not start on a page, so the write hit the fill.
    case = next(c for c in report["cases"] if c["sizes"]["Width"] == 100)
    assert case["status"] == "failed"
    assert any("before the start" in m for m in messages({"cases": [case]})), case


GARBAGE = r"""
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
/* Malformed records on every descriptor, and its output files made unreadable (for a
   grader that is not root, whose worker runs as the same user). */
static int noise()
{
    const char* lines =
        "fault kind=buffer index=zz offset=0xqq bytes=-- thread=a,b block=1 pc=0xzz pass=x\n"
        "pass n=abc us=1e9999 float_atomics=yes\ntimeout phase=kernel thread=1,2 pc=zz\n"
        "divergence what=lines block=,,, op=abc\nprintf total=-1 kept=abc\n"
        "error what=arity params=many\n=\n \n\xff\xfe garbage\n";
    for (int fd = 0; fd < 1024; ++fd) write(fd, lines, strlen(lines));
    for (int pass = 0; pass < 2; ++pass)
        for (int k = 0; k < 3; ++k) {
            char name[32] = "out.0.0.bin";
            name[4] = (char)('0' + pass);
            name[6] = (char)('0' + k);
            chmod(name, 0);
        }
    return 0;
}
static int noisy = noise();
#define RESULT(sum, row, col, Width) (sum)
"""


def test_malformed_records_and_a_chmod_of_the_outputs_are_no_internal_error(tmp_path, capsys):
    code, report = check(tmp_path, kernel(GARBAGE))
    assert "internal error" not in capsys.readouterr().err.lower()
    # Graded: what the kernel writes can only count against it.
    assert code in (ExitCode.OK, ExitCode.FAILED)
    assert all(c["status"] in ("passed", "failed") for c in report["cases"])


# Records that parse but say what no runner says: a __shared__ array of zero-sized
# dimensions, or fill words wider than 32 bits. The first ends the worker with the
# runner's status for a fault; the second comes before the kernel's correct outputs.
FORGED_RECORDS = r"""
#include <string.h>
#include <unistd.h>
static int forge()
{
    for (int fd = 3; fd < 1024; ++fd) write(fd, LINE, strlen(LINE));
    if (EXIT) _exit(42);
    return 0;
}
static int forged = forge();
#define RESULT(sum, row, col, Width) (sum)
"""
FAULT = "fault kind=static_shared offset=400 bytes=4 element=4 dims=0,0 name=41\\n"
OVERLAP = (
    "overlap index=0 element=3 first=0,0,0 second=1,0,0 before=99999999999999999999 "
    "after=-5 count=2\\n"
)


@pytest.mark.parametrize(
    ("line", "exits", "kind"),
    [(FAULT, 1, "out_of_bounds"), (OVERLAP, 0, "race")],
    ids=["fault", "overlap"],
)
def test_forged_records_that_parse_are_findings_against_the_kernel(
    tmp_path, capsys, line, exits, kind
):
    attack = FORGED_RECORDS.replace("LINE", f'"{line}"').replace("EXIT", str(exits))
    code, report = check(tmp_path, kernel(attack))
    assert "internal error" not in capsys.readouterr().err.lower()
    assert code == ExitCode.FAILED
    assert all(c["status"] != "passed" for c in report["cases"])
    assert kind in {d["kind"] for c in report["cases"] for d in c["diagnostics"]}


# A race among a block's threads through global memory, where no hazard hook looks (no
# raw or war record names it), at Width 100 alone: each thread stores its element, then
# reads its left neighbour's, which thread (tx-1) has stored in one thread order and not
# in the other. Thread (0,0) of block (0,0) also writes a record that narrows the race,
# as the runtime writes it, to one case: two threads of a block storing one element
# (waw), two blocks (overlap), or a plain update of an output blocks add to (lost).
NARROWED_RACE = r"""
#include <string.h>
#include <unistd.h>
static void forge()
{
    static bool done = false;
    if (done) return;
    done = true;
    for (int fd = 3; fd < 1024; ++fd) write(fd, LINE, strlen(LINE));
}
static float race(float sum, float* P, int row, int col, int Width)
{
    if (Width != 100) return sum;
    P[row * Width + col] = sum;
    float left = col % 16 ? P[row * Width + col - 1] : 0.0f;
    if (row == 0 && col == 0) forge();
    return left != left ? sum + 1.0f : sum;  /* the NaN an output arrives holding */
}
#define RESULT(sum, row, col, Width) race(sum, P, row, col, Width)
"""
NARROWING = {
    "waw": "hazard what=waw thread=1,0,0 other=0,0,0 block=0,0,0 kind=buffer index=2 "
    "offset=0 bytes=40000\\n",
    "overlap": "overlap index=2 element=0 first=0,0,0 second=1,0,0 before=0 after=0 count=1\\n",
    "lost": "lost index=2 element=0 first=0,0,0 second=1,0,0\\n",
}


@pytest.mark.parametrize("line", NARROWING.values(), ids=NARROWING.keys())
def test_a_forged_record_does_not_narrow_a_race_to_one_case(tmp_path, line):
    """The race the two thread orders showed at Width 100 covers every case; a record that
    would narrow it to the case it showed in is believed only from the runner, so the
    cases where it did not show fail too."""
    code, report = check(tmp_path, kernel(NARROWED_RACE.replace("LINE", f'"{line}"')))
    assert code == ExitCode.FAILED
    failed = {c["name"]: c["status"] for c in report["cases"]}
    assert failed == dict.fromkeys(failed, "failed"), failed
    raced = [any(d["kind"] == "race" for d in c["diagnostics"]) for c in report["cases"]]
    assert all(raced), report["cases"]


def test_a_forged_registration_symbol_is_a_compile_error(tmp_path, capsys):
    # grader_sig_ is the CPU build's own prefix; this one claims 100 parameters in 16 bytes
    attack = 'extern "C" const int grader_sig_forged[4] = {0x47524431, 100, 0, 0};\n'
    code, report = check(tmp_path, kernel(attack + "#define RESULT(sum, row, col, Width) (sum)"))
    assert "internal error" not in capsys.readouterr().err.lower()
    assert code == ExitCode.FAILED and report["status"] == "error"
    said = [d["message"] for d in report["diagnostics"] if d["kind"] == "compile_error"]
    assert said and "grader_sig_forged" in said[0] and "reserved" in said[0]


def test_user_namespaces_refused_by_the_kernel_leave_the_other_layers(tmp_path):
    """Ubuntu 24.04's AppArmor and Docker's seccomp profile refuse unprivileged user
    namespaces. Here the kernel refuses them for real: the grader runs in a user
    namespace of its own whose limit on nested ones is 0, without capabilities, so it can
    make no namespace at all (where user namespaces are refused already, it runs as it
    is). Grading goes on with landlock and seccomp, and the report says so."""
    unshare, setpriv = shutil.which("unshare"), shutil.which("setpriv")
    if not unshare or not setpriv:
        pytest.skip("needs util-linux's unshare and setpriv to have user namespaces refused")
    source = tmp_path / "kernel.cu"
    source.write_text(BASELINE)
    report = tmp_path / "report.json"
    grader = [sys.executable, "-m", "grader", "check", LAB, str(source), "--backend", "cpu",
              "--json", str(report)]  # fmt: skip
    refuse = 'echo 0 > /proc/sys/user/max_user_namespaces && exec "$@"'
    cmd = [unshare, "--user", "--map-root-user", "sh", "-c", refuse, "sh",
           setpriv, "--bounding-set=-all", "--inh-caps=-all", *grader]  # fmt: skip
    if subprocess.run([unshare, "--user", "true"], capture_output=True).returncode != 0:
        cmd = grader  # refused here already
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
    }
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == ExitCode.OK, done.stdout + done.stderr
    notes = json.loads(report.read_text())["notes"]
    layers = next(n for n in notes if n.startswith("The CPU backend's sandbox:"))
    assert "no namespaces (user namespaces refused here)" in layers
    assert "landlock ABI" in layers and "seccomp (no sockets" in layers


# The same race at Width 100 with no record forged: one genuine store twice instead, by a
# second thread of block (0,0) into P[0] (waw), or by thread (0,0) of block (1,0) into it
# (overlap). The runtime's own sealed record of that store narrows the race only where
# every element the two thread orders left different was stored twice: P[0] alone here,
# of thousands. Without RACE the store twice is all there is, and it is narrowed.
LAUNDERED_RACE = r"""
static float race(float sum, float* P, int row, int col, int Width)
{
    if (Width != 100) return sum;
    float left = 0.0f;
    if (RACE) {
        P[row * Width + col] = sum;
        left = col % 16 ? P[row * Width + col - 1] : 0.0f;
    }
    if (row == 0 && col == SECOND) P[0] = 0.0f;
    return left != left ? sum + 1.0f : sum;  /* the NaN an output arrives holding */
}
#define RESULT(sum, row, col, Width) race(sum, P, row, col, Width)
"""
SECOND = {"waw": "1", "overlap": "16"}  # the column of the thread that stores P[0] too


def _laundered(store: str, race: bool) -> str:
    attack = LAUNDERED_RACE.replace("SECOND", SECOND[store]).replace("RACE", str(int(race)))
    return kernel(attack)


@pytest.mark.parametrize("store", SECOND)
def test_a_genuine_store_twice_does_not_narrow_a_race_it_does_not_explain(tmp_path, store):
    """9,301 elements differ between the two thread orders at Width 100; the one the
    kernel stores twice explains only itself, so the race reaches every case (it scored
    2/3 public cases when any sealed record narrowed it)."""
    code, report = check(tmp_path, _laundered(store, race=True))
    assert code == ExitCode.FAILED
    failed = {c["name"]: c["status"] for c in report["cases"]}
    assert failed == dict.fromkeys(failed, "failed"), failed
    raced = [any(d["kind"] == "race" for d in c["diagnostics"]) for c in report["cases"]]
    assert all(raced), report["cases"]
    case = next(c for c in report["cases"] if c["sizes"]["Width"] == 100)
    assert any("depend on the order they run in" in m for m in messages({"cases": [case]}))


@pytest.mark.parametrize("store", SECOND)
def test_a_store_twice_alone_is_narrowed_to_the_case_it_shows_in(tmp_path, store):
    code, report = check(tmp_path, _laundered(store, race=False))
    assert code == ExitCode.FAILED
    failed = {c["sizes"]["Width"]: c["status"] for c in report["cases"]}
    assert failed[100] == "failed" and list(failed.values()).count("failed") == 1, failed


# The same race at Width 100, with every element stored twice: each thread also stores a
# NaN (which the race's read takes for one not stored yet, as the poison an output
# arrives holding) into an element another thread stores, of its block (waw) or of the
# next block (overlap), so that every element the two thread orders leave different is
# one the runtime saw stored twice. Those stores explain an element only where each
# order's value is one that its stores twice left; the race's values are new.
EVERYWHERE = {
    "waw": "P[row * Width + (col ^ 1)] = __int_as_float(0x7fc00001);",
    "overlap": "P[row * Width + (col + 16) % Width] = __int_as_float(0x7fc00001);",
}


@pytest.mark.parametrize("store", EVERYWHERE)
def test_storing_every_element_twice_does_not_narrow_a_race(tmp_path, store):
    attack = LAUNDERED_RACE.replace(
        "if (row == 0 && col == SECOND) P[0] = 0.0f;", EVERYWHERE[store]
    )
    code, report = check(tmp_path, kernel(attack.replace("RACE", "1")))
    assert code == ExitCode.FAILED
    failed = {c["sizes"]["Width"]: c["status"] for c in report["cases"]}
    assert failed == dict.fromkeys(failed, "failed"), failed
