"""Submissions that attack the compile, each through `grader check` on the CPU backend
(with nvcc where CI has it): files outside the submission never reach a report, limits
stop runaway compilers with a clear compile_error, nothing runs or stays behind, and a
file name is never an option. The friendly text check is bypassed where the sandbox
alone must hold."""

from __future__ import annotations

import csv
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
from include_tricks import TRICKS, plant_secret

from grader import cli, defaults
from grader.backends.cpu import CpuBackend
from grader.model.source import OTHER_FILE, QUOTED_INCLUDE
from grader.toolchain import sandbox

ROOT = Path(__file__).resolve().parents[2]
LAYERS = sandbox.probe()
needs_landlock = pytest.mark.skipif(
    not LAYERS.files_isolated, reason=f"this machine has no landlock: {LAYERS.missing()}"
)
KERNEL = "__global__ void matmul(const float* M, const float* N, float* P, int Width) {}\n"


@pytest.fixture
def secret(tmp_path) -> Path:
    return plant_secret(tmp_path)


@pytest.fixture
def no_text_check(monkeypatch):
    """Grade as if the text check had missed the trick."""
    monkeypatch.setattr("grader.grading.pipeline.static_checks", lambda text, forbidden: [])


def grade(
    tmp_path, capsys, text: str, name: str = "kernel.cu", *extra: str
) -> tuple[int, dict, str]:
    """`grader check matmul-naive` with every report written; (exit code, the JSON
    report, every report's text)."""
    path = tmp_path / name
    path.write_text(text)
    out = tmp_path / "out"
    out.mkdir(exist_ok=True)
    reports = [out / "r.json", out / "r.html", out / "r.xml", out / "r.md"]
    argv = ["check", "matmul-naive", str(path), "--backend", "cpu", "--json", str(reports[0])]
    argv += ["--html", str(reports[1]), "--junit", str(reports[2]), "--markdown", str(reports[3])]
    code = cli.main([*argv, *extra])
    printed = "".join(capsys.readouterr())
    every = printed + "".join(p.read_text() for p in reports if p.exists())
    return code, json.loads(reports[0].read_text()), every


def messages(report: dict) -> list[str]:
    return [d["message"] for d in report["diagnostics"]]


@pytest.mark.parametrize("trick", TRICKS)
def test_the_text_check_names_each_include_trick(tmp_path, capsys, secret, trick):
    code, report, every = grade(
        tmp_path, capsys, TRICKS[trick].replace("SECRET", str(secret)) + KERNEL
    )
    assert code == 1 and messages(report) == [QUOTED_INCLUDE]
    assert secret.read_text().split()[0] not in every


@needs_landlock
@pytest.mark.parametrize("trick", TRICKS)
def test_an_include_trick_leaks_nothing_past_the_text_check(
    tmp_path, capsys, secret, trick, no_text_check
):
    code, report, every = grade(
        tmp_path, capsys, TRICKS[trick].replace("SECRET", str(secret)) + KERNEL
    )
    assert code == 1 and report["compile"]["ok"] is False
    assert secret.read_text().split()[0] not in every
    assert "Permission denied" in report["compile"]["log"]


INCBIN = r"""#define CAT(a, b) a##b
CAT(as, m)(".section .rodata\n.globl leaked\nleaked:\n.INCBIN \"SECRET\"\n.previous");
extern "C" const char leaked[];
__global__ void matmul(const float* M, const float* N, float* P, int Width) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < Width * Width) P[i] = leaked[i % 16];
}
"""


def test_the_text_check_names_incbin_in_any_case(tmp_path, capsys, secret):
    code, report, _ = grade(tmp_path, capsys, INCBIN.replace("SECRET", str(secret)))
    assert code == 1 and OTHER_FILE in messages(report)


@needs_landlock
def test_incbin_leaks_nothing_past_the_text_check(tmp_path, capsys, secret, no_text_check, no_nvcc):
    code, report, every = grade(tmp_path, capsys, INCBIN.replace("SECRET", str(secret)))
    assert code == 1 and report["compile"]["ok"] is False, report["cases"]
    assert secret.read_text().split()[0] not in every
    assert str(ord("T")) + ".0" not in json.dumps(report["cases"])  # no byte of it as output


@needs_landlock
def test_including_dev_zero_is_a_compile_error_at_once(tmp_path, capsys, no_text_check):
    started = time.monotonic()
    code, report, _ = grade(tmp_path, capsys, "#include </dev/zero>\n" + KERNEL)
    assert code == 1 and report["diagnostics"][0]["kind"] == "compile_error"
    assert "/dev/zero" in messages(report)[0] and "Permission denied" in messages(report)[0]
    assert time.monotonic() - started < 30


def test_a_template_bomb_is_stopped_by_the_memory_limit(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(defaults, "COMPILE_MEMORY", 1 << 30)
    bomb = (
        "template <int N, class... Ts> struct Grow "
        "{ using type = typename Grow<N - 1, Ts..., Ts...>::type; };\n"
        "template <class... Ts> struct Grow<0, Ts...> { using type = int; };\n"
        "using Boom = Grow<40, int>::type;\n"
    )
    code, report, _ = grade(tmp_path, capsys, bomb + KERNEL)
    assert code == 1 and report["diagnostics"][0]["kind"] == "compile_error"
    assert "ran out of memory (it may use 1 GiB)" in messages(report)[0]


# A preprocessor loop: 2^40 includes of itself, little memory, no end.
ENDLESS = "#if __INCLUDE_LEVEL__ < 40\n#include __FILE__\n#include __FILE__\n#endif\n" + KERNEL


def compilers_of(name: str) -> list[int]:
    """Processes whose command line names the file `name`."""
    out = []
    for entry in Path("/proc").iterdir():
        try:
            cmdline = (entry / "cmdline").read_bytes().decode("utf-8", "replace")
        except OSError:
            continue
        if name in cmdline and entry.name.isdigit() and int(entry.name) != os.getpid():
            out.append(int(entry.name))
    return out


def _private_tmp(tmp_path: Path, monkeypatch) -> Path:
    """A temporary folder of the test's own, for the grader and its compilers."""
    private_tmp = tmp_path / "tmp"
    private_tmp.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(private_tmp))
    monkeypatch.setenv("TMPDIR", str(private_tmp))
    return private_tmp


def _nothing_left(name: str, private_tmp: Path) -> None:
    """Within a second, no compiler of the file `name` runs, and `private_tmp` is empty
    (no tmpxft_*, no grader-* folder)."""
    ended = time.monotonic() + 1.0
    while (compilers_of(name) or any(private_tmp.iterdir())) and time.monotonic() < ended:
        time.sleep(0.1)
    assert compilers_of(name) == []
    assert list(private_tmp.iterdir()) == []


def test_a_compile_timeout_leaves_no_compiler_and_no_temporaries(
    tmp_path, capsys, monkeypatch, no_text_check
):
    monkeypatch.setattr(defaults, "COMPILE_TIMEOUT", 3.0)
    private_tmp = _private_tmp(tmp_path, monkeypatch)
    name = f"endless_{os.urandom(4).hex()}.cu"
    started = time.monotonic()
    code, report, _ = grade(tmp_path, capsys, ENDLESS, name)
    assert time.monotonic() - started < 30
    assert code == 1 and "took longer than 3 s and was stopped" in messages(report)[0]
    # a build started ahead (another macro set, the census build) is stopped as the
    # grading ends (grader.ahead), not left to reach its own deadline
    _nothing_left(name, private_tmp)


def test_a_deadline_during_the_compiles_stops_every_compiler(
    tmp_path, capsys, monkeypatch, no_text_check
):
    """--submission-timeout ends a grading whose compiles would run for a minute: the
    builds made ahead are stopped with it (grader.ahead), not left to their deadline."""
    monkeypatch.setattr(defaults, "COMPILE_TIMEOUT", 60.0)
    private_tmp = _private_tmp(tmp_path, monkeypatch)
    name = f"endless_{os.urandom(4).hex()}.cu"
    started = time.monotonic()
    code, report, _ = grade(tmp_path, capsys, ENDLESS, name, "--submission-timeout", "4")
    assert time.monotonic() - started < 30
    assert code == 1 and [d["kind"] for d in report["diagnostics"]] == ["timeout"]
    _nothing_left(name, private_tmp)


def test_a_file_named_like_an_option_is_graded(tmp_path, capsys):
    reference = (ROOT / "reference_kernels" / "matmul-naive" / "reference.cu").read_text()
    code, report, _ = grade(tmp_path, capsys, reference, "-rf.cu")
    assert code == 0 and report["score"] == report["max_score"] > 0
    assert report["submission"] == "-rf.cu"


@pytest.mark.parametrize(("name", "shown"), [("a\\x.cu", "a\\x.cu"), ("k\udcff.cu", "k\\xff.cu")])
def test_a_file_name_with_a_backslash_or_bytes_not_utf8_is_graded(
    tmp_path, capsys, no_nvcc, name, shown
):
    code, report, every = grade(tmp_path, capsys, KERNEL.replace("{}", "{ oops }"), name)
    assert code == 1 and report["submission"] == shown
    assert messages(report)[0].startswith(f"{shown}:1: ")


# `grader ARGS...` with the text check off, so that ENDLESS reaches the compiler.
WITHOUT_TEXT_CHECK = (
    "import sys, grader.grading.pipeline\n"
    "grader.grading.pipeline.static_checks = lambda text, forbidden: []\n"
    "from grader import cli\n"
    "raise SystemExit(cli.main(sys.argv[1:]))\n"
)


def start_check(tmp_path: Path, what: str, text: str) -> tuple[subprocess.Popen, Path, str]:
    """`grader check` of `text` in a process of its own whose TMPDIR is a new folder:
    (the process, that folder, the submission's file name)."""
    private_tmp = tmp_path / what
    private_tmp.mkdir()
    name = f"{what}_{os.urandom(4).hex()}.cu"
    (tmp_path / name).write_text(text)
    env = {**os.environ, "TMPDIR": str(private_tmp), "GRADER_SECRET": "s"}
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")])
    argv = ["check", "matmul-naive", str(tmp_path / name), "--backend", "cpu"]
    grader = subprocess.Popen(
        [sys.executable, "-c", WITHOUT_TEXT_CHECK, *argv],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    return grader, private_tmp, name


def busy(private_tmp: Path, limit: float = 60.0) -> None:
    """Wait until the check has written to its TMPDIR (its start is slow on a busy machine)."""
    end = time.monotonic() + limit
    while not any(private_tmp.iterdir()):
        assert time.monotonic() < end, "nothing was written to TMPDIR"
        time.sleep(0.1)


def slow_kernel() -> str:
    """The naive reference, slow enough that its cases run for many seconds."""
    slow = (ROOT / "reference_kernels" / "matmul-naive" / "reference.cu").read_text()
    return slow.replace("{", "{ for (volatile int spin = 0; spin < 200000; ++spin) {}", 1)


@pytest.mark.parametrize("stop", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_an_interrupted_check_leaves_nothing_in_tmp(tmp_path, stop):
    """Ctrl-C or kill during the compile and during the cases: no folder, no case input,
    no compiler temporary stays in TMPDIR, and no compiler or worker keeps running."""
    cases = {"compile": (ENDLESS, 2.0), "cases": (slow_kernel(), 6.0)}
    for what, (text, delay) in cases.items():
        grader, private_tmp, name = start_check(tmp_path, what, text)
        busy(private_tmp)
        time.sleep(delay)
        grader.send_signal(stop)
        _, err = grader.communicate(timeout=60)
        assert "interrupted" in err, err
        time.sleep(0.5)
        assert list(private_tmp.iterdir()) == [], what
        assert compilers_of(name) == [], what
        assert compilers_of(str(private_tmp)) == [], f"a worker outlived the {what}"


def test_a_killed_checks_folder_is_swept_by_the_next_cpu_run(tmp_path, monkeypatch):
    """SIGKILL leaves a check no chance to clean up: the next CPU backend does it."""
    grader, private_tmp, _ = start_check(tmp_path, "cases", slow_kernel())
    busy(private_tmp)
    time.sleep(6.0)
    grader.send_signal(signal.SIGKILL)
    grader.communicate(timeout=60)
    left = [p.name for p in private_tmp.iterdir()]
    assert any(n.startswith("grader-cpu-") for n in left), left
    for pid in compilers_of(str(private_tmp)):  # its worker, whose own deadline is far
        os.kill(pid, signal.SIGKILL)
    monkeypatch.setattr(tempfile, "tempdir", str(private_tmp))
    CpuBackend()
    assert list(private_tmp.iterdir()) == []


def test_a_batch_grades_an_option_named_file_and_leaks_nothing(tmp_path, capsys, secret):
    course = tmp_path / "course"
    course.mkdir()
    reference = (ROOT / "reference_kernels" / "matmul-naive" / "reference.cu").read_text()
    (course / "-rf.cu").write_text(reference)
    for trick, text in TRICKS.items():
        (course / f"{trick.replace(' ', '_')}.cu").write_text(
            text.replace("SECRET", str(secret)) + KERNEL
        )
    out = tmp_path / "out"
    argv = ["batch", "matmul-naive", str(course), "--out", str(out), "--backend", "cpu"]
    cli.main([*argv, "--jobs", "2", "--timeout", "5", "--public-only"])
    capsys.readouterr()
    written = [p for p in out.rglob("*") if p.is_file()]
    assert written and not [p for p in written if secret.read_text().split()[0] in p.read_text()]
    with open(out / "gradebook.csv", newline="") as f:
        rows = {row["submission"]: row for row in csv.DictReader(f)}
    assert rows["'-rf"]["score"] == rows["'-rf"]["max"] == "3"  # quoted against spreadsheets


@pytest.mark.parametrize("toolkit", ["nvcc", "no nvcc"])
def test_a_string_that_spells_shared_is_not_shared_memory(tmp_path, capsys, request, toolkit):
    if toolkit == "no nvcc":
        request.getfixturevalue("no_nvcc")
    naive = (ROOT / "reference_kernels" / "matmul-naive" / "reference.cu").read_text()
    text = 'static const char* s = "__shared__";\n' + naive
    path = tmp_path / "kernel.cu"
    path.write_text(text)
    cli.main(
        ["check", "matmul-tiled", str(path), "--backend", "cpu", "--json", str(tmp_path / "r.json")]
    )
    capsys.readouterr()
    report = json.loads((tmp_path / "r.json").read_text())
    assert all(case["status"] == "passed" for case in report["cases"])
    assert [d["kind"] for d in report["diagnostics"]] == ["requirement"]
    assert report["score"] < report["max_score"]
    tiled = (ROOT / "reference_kernels" / "matmul-tiled" / "reference.cu").read_text()
    path.write_text(tiled)
    assert cli.main(["check", "matmul-tiled", str(path), "--backend", "cpu"]) == 0


def test_compilers_without_landlock_stop_grading_unless_allowed(tmp_path, capsys, monkeypatch):
    no_landlock = sandbox.Layers(seccomp=True, sockets_blocked=True, error="no landlock here")
    monkeypatch.setattr(sandbox, "probe", lambda: no_landlock)
    reference = (ROOT / "reference_kernels" / "matmul-naive" / "reference.cu").read_text()
    path = tmp_path / "kernel.cu"
    path.write_text(reference)
    assert cli.main(["check", "matmul-naive", str(path), "--backend", "cpu"]) == 2
    assert "The compilers cannot be sandboxed on this machine" in capsys.readouterr().err
    code, report, _ = grade(tmp_path, capsys, reference, "kernel.cu", "--allow-unsandboxed")
    assert code == 0
    assert any("The compilers ran without file isolation" in note for note in report["notes"])


# -- bounded time -------------------------------------------------------------------------


def test_a_check_past_its_deadline_is_a_timeout_and_leaves_nothing(tmp_path, capsys, monkeypatch):
    """`grader check` stops itself at --submission-timeout, as a batch stops a worker: a
    timeout finding, every case an error, and no worker or folder left behind."""
    private_tmp = _private_tmp(tmp_path, monkeypatch)
    started = time.monotonic()
    code, report, _ = grade(
        tmp_path, capsys, slow_kernel(), "kernel.cu", "--submission-timeout", "4"
    )
    assert time.monotonic() - started < 60
    assert code == 1 and report["status"] == "error" and report["score"] == 0
    assert [d["kind"] for d in report["diagnostics"]] == ["timeout"]
    assert "took longer than 4 s (--submission-timeout)" in messages(report)[0]
    assert {c["status"] for c in report["cases"]} == {"error"}
    time.sleep(0.5)
    assert list(private_tmp.iterdir()) == []
    assert compilers_of(str(private_tmp)) == [], "a worker outlived the deadline"


# The texts that made the scanners quadratic, each before a kernel that needs them read:
# 23k `__global__` words took 387 s to scan, and 100k open braces 88 s for each case
# whose barrier divergence was explained. Graded well inside a deadline that cut them.
BARRIER_IN_AN_IF = (ROOT / "reference_kernels" / "matmul-naive" / "baseline.cu").read_text()
BARRIER_IN_AN_IF = BARRIER_IN_AN_IF.replace(
    "float sum = 0.0f;", "float sum = 0.0f;\n__syncthreads();"
)
SCANNED = {
    "kernel words": (
        "__global__ " * 23_000,
        (ROOT / "reference_kernels" / "matmul-naive" / "reference.cu").read_text(),
        "passed",
    ),
    "open braces": ("{" * 100_000, BARRIER_IN_AN_IF, "failed"),
}


@pytest.mark.parametrize("attack", SCANNED)
def test_a_kernel_after_a_quadratic_scanners_worst_text_is_graded_in_time(tmp_path, capsys, attack):
    block, kernel, status = SCANNED[attack]
    text = f"#if 0\n{block}\n#endif\n{kernel}"
    assert len(text.encode()) <= 256 * 1024
    code, report, _ = grade(tmp_path, capsys, text, "kernel.cu", "--submission-timeout", "60")
    assert report["status"] == status, messages(report)
    kinds = {d["kind"] for c in report["cases"] for d in c["diagnostics"]}
    assert "timeout" not in kinds and ("barrier_divergence" in kinds) == (status == "failed")
