"""Exit codes as shells and CI read them: 130 after Ctrl-C (143 after SIGTERM), once the
run has cleaned up, with the way to resume where the verb resumes; a batch exits 1 when a
submission could not be graded; `--gpus` that no GPU backs is an error that says the fix."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from grader import cli, labs
from grader.cli import Terminated
from grader.errors import ExitCode

LAB = "matmul-naive"
ROOT = Path(__file__).resolve().parents[1]


def run(capsys, *argv: str) -> tuple[int, str, str]:
    code = cli.main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize(
    ("stop", "code"), [(KeyboardInterrupt, ExitCode.INTERRUPTED), (Terminated, 143)]
)
def test_a_stopped_check_exits_128_plus_the_signal(capsys, tmp_path, monkeypatch, stop, code):
    def check(lab, path, options):
        raise stop

    monkeypatch.setattr("grader.grading.pipeline.check", check)
    kernel = tmp_path / "kernel.cu"
    kernel.write_text("__global__ void matmul(const float*, const float*, float*, int) {}\n")
    got, out, err = run(capsys, "check", LAB, str(kernel))
    assert got == code and int(ExitCode.INTERRUPTED) == 130
    assert err == "grader: interrupted.\n" and out == ""  # check does not resume


def _gpu_usable() -> bool:
    from grader.backends import gpu_status

    return gpu_status()[0]


@pytest.mark.skipif(_gpu_usable(), reason="needs a machine without a usable GPU")
def test_gpus_without_a_gpu_is_an_error_that_says_the_fix(capsys, tmp_path):
    subs = tmp_path / "subs"
    subs.mkdir()
    argv = ["batch", LAB, str(subs), "--out", str(tmp_path / "out"), "--gpus", "0"]
    code, out, err = run(capsys, *argv)
    assert code == ExitCode.USAGE
    assert err.startswith("grader: --gpus 0 asks for GPUs, but this machine has no usable")
    assert "Leave out --gpus to grade on the CPU" in err
    assert not (tmp_path / "out").exists()  # refused before anything is written
    code, _, err = run(capsys, *argv, "--backend", "cpu")
    assert code == ExitCode.USAGE and "--backend cpu grades without a GPU" in err


def test_gpus_are_refused_with_the_cpu_backend_even_where_there_is_one(capsys, tmp_path):
    (tmp_path / "subs").mkdir()
    argv = ["batch", LAB, str(tmp_path / "subs"), "--out", str(tmp_path / "o"), "--gpus", "0,1"]
    code, _, err = run(capsys, *argv, "--backend", "cpu")
    assert code == ExitCode.USAGE
    assert "--gpus 0,1 is for the cuda backend" in err


@pytest.mark.gpu
@pytest.mark.skipif(not _gpu_usable(), reason="needs a usable NVIDIA GPU")
def test_gpus_on_a_gpu_machine_grade_there_and_exit_0(capsys, tmp_path, monkeypatch):
    monkeypatch.delenv("GRADER_SECRET", raising=False)
    subs = tmp_path / "subs"
    subs.mkdir()
    (subs / "ann.cu").write_bytes((labs.get(LAB).home / "reference.cu").read_bytes())
    argv = ["batch", LAB, str(subs), "--out", str(tmp_path / "out"), "--gpus", "0"]
    code, out, err = run(capsys, *argv, "--jobs", "1", "--public-only")
    assert code == ExitCode.OK, out + err
    assert "1 passed, 0 failed, 0 did not compile, 0 could not be graded" in out
    report = (tmp_path / "out" / "students" / "ann" / "report.json").read_text()
    assert '"backend": "cuda"' in report


def test_a_slurm_script_may_name_gpus_on_a_machine_without_any(capsys, tmp_path):
    """A login node writes the script for GPU nodes: nothing is graded here."""
    subs = tmp_path / "subs"
    subs.mkdir()
    (subs / "ann.cu").write_text("x")
    code, out, err = run(
        capsys, "batch", LAB, str(subs), "--out", str(tmp_path / "o"), "--gpus", "0", "--slurm"
    )
    assert code == ExitCode.OK, err
    assert "Nothing was graded" in out


def test_a_cpu_slurm_script_naming_gpus_is_refused(capsys, tmp_path):
    """Its tasks would refuse --gpus on the cpu backend, so the script is not written."""
    (tmp_path / "subs").mkdir()
    argv = ["batch", LAB, str(tmp_path / "subs"), "--out", str(tmp_path / "o"), "--slurm"]
    code, _, err = run(capsys, *argv, "--backend", "cpu", "--gpus", "0")
    assert code == ExitCode.USAGE and "--gpus 0 is for the cuda backend" in err
    assert not (tmp_path / "o" / "grader-batch.sbatch").exists()


def _wait_for(stream_path: Path, text: str, process: subprocess.Popen, seconds: float) -> None:
    deadline = time.monotonic() + seconds
    while text not in stream_path.read_text():
        assert process.poll() is None, stream_path.read_text()
        assert time.monotonic() < deadline, f"no {text!r} in {stream_path.read_text()!r}"
        time.sleep(0.2)


@contextlib.contextmanager
def _sigint_ignored() -> Iterator[None]:
    """As `nohup pytest` or `pytest &` start the tests: SIGINT ignored, which every
    process they start inherits."""
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


def _as_from_a_terminal() -> None:
    """In the child before exec: SIGINT back to its default, which a shell's Ctrl-C
    meets, also where the tests run with it ignored (`nohup pytest`, `pytest &`), which
    the child would inherit and so never see the signal."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


@pytest.mark.parametrize("ignored", [False, True], ids=["pytest-as-is", "pytest-ignores-SIGINT"])
def test_ctrl_c_stops_a_batch_with_130_cleans_up_and_says_how_to_resume(tmp_path, ignored):
    subs = tmp_path / "subs"
    subs.mkdir()
    hang = labs.get(LAB).home / "wrong" / "infinite_loop.cu"
    (subs / "hangs.cu").write_bytes(hang.read_bytes())
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    err = tmp_path / "stderr"
    env = {**os.environ, "TMPDIR": str(scratch)}
    env.pop("GRADER_SECRET", None)
    argv = [sys.executable, "-m", "grader", "batch", LAB, str(subs), "--out", str(tmp_path / "o"),
            "--backend", "cpu", "--jobs", "1", "--timeout", "120", "--public-only"]  # fmt: skip
    with open(err, "w") as stderr:
        # a session of its own, so that the signal goes to its group, as Ctrl-C does
        with _sigint_ignored() if ignored else contextlib.nullcontext():
            process = subprocess.Popen(
                argv,
                stdout=subprocess.DEVNULL,
                stderr=stderr,
                env=env,
                start_new_session=True,
                preexec_fn=_as_from_a_terminal,
            )
        try:
            _wait_for(err, "Grading 1 submissions.", process, 120)
            time.sleep(2)  # inside the hung case
            os.killpg(process.pid, signal.SIGINT)
            code = process.wait(timeout=120)
        finally:
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGKILL)
    text = err.read_text()
    assert code == ExitCode.INTERRUPTED, text
    assert text.rstrip().endswith("grader: interrupted; run the same command again to resume.")
    assert "Traceback" not in text
    assert [p.name for p in scratch.iterdir() if p.name.startswith("grader-")] == []


def _ctrl_c_allowed() -> None:
    """In the child: Ctrl-C as a terminal delivers it, even where pytest itself was
    started with SIGINT ignored (nohup, `cmd &`), which a child would inherit."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


# The grader's entry point, with SIGINT sent by the import of grader.cli itself: the
# moment numpy and the labs load, when no handler of the grader's own has run yet.
_INTERRUPTED_WHILE_LOADING = """
import builtins, os, signal, sys
real = builtins.__import__
def interrupting(name, *args, **kwargs):
    if name == "grader.cli" or (name == "grader" and args[2] and "cli" in args[2]):
        os.kill(os.getpid(), signal.SIGINT)
    return real(name, *args, **kwargs)
builtins.__import__ = interrupting
from grader.__main__ import main
sys.argv = ["grader", "labs"]
raise SystemExit(main())
"""


def test_ctrl_c_while_the_grader_loads_exits_130_without_a_traceback():
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
    }
    done = subprocess.run(
        [sys.executable, "-c", _INTERRUPTED_WHILE_LOADING],
        capture_output=True, text=True, env=env, timeout=120, preexec_fn=_ctrl_c_allowed,
    )  # fmt: skip
    assert (done.returncode, done.stderr, done.stdout) == (130, "grader: interrupted.\n", "")


# The entry point, run as `python -m`, where the verb's code catches a Ctrl-C that left an
# exec() of a string (a dataclass being made as a module loads, found at 0.1-0.3 s).
_INTERRUPTED_IN_EXEC = """
import grader.cli
from grader.__main__ import main
def interrupted_while_a_dataclass_is_made():
    try:
        exec("raise KeyboardInterrupt")
    except KeyboardInterrupt:
        return 130
grader.cli.main = interrupted_while_a_dataclass_is_made
raise SystemExit(main())
"""


def test_a_ctrl_c_caught_after_it_left_an_exec_still_exits_130(tmp_path):
    (tmp_path / "interrupted_in_exec.py").write_text(_INTERRUPTED_IN_EXEC)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), str(ROOT)])}
    done = subprocess.run(
        [sys.executable, "-m", "interrupted_in_exec"], capture_output=True, env=env, timeout=120
    )  # fmt: skip
    assert done.returncode == ExitCode.INTERRUPTED, done.stderr


@pytest.mark.parametrize("after", [0.3, 0.8, 1.5])
def test_ctrl_c_at_any_moment_of_a_check_exits_130_without_a_traceback(tmp_path, after):
    kernel = tmp_path / "kernel.cu"
    kernel.write_bytes((labs.get(LAB).home / "wrong" / "infinite_loop.cu").read_bytes())
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
    }
    argv = [sys.executable, "-m", "grader", "check", LAB, str(kernel), "--backend", "cpu"]
    process = subprocess.Popen(
        argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
        start_new_session=True, preexec_fn=_ctrl_c_allowed,
    )  # fmt: skip
    try:
        time.sleep(after)
        os.killpg(process.pid, signal.SIGINT)  # the whole group, as a terminal's Ctrl-C
        out, err = process.communicate(timeout=120)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
    assert process.returncode == ExitCode.INTERRUPTED, err
    assert err.endswith("grader: interrupted.\n") and "Traceback" not in err, err
