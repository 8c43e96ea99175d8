"""The CPU worker where machines differ: many cores and malloc arenas, libraries the
runner never loaded, and whose fault a failure is (the machine's, a setup error with
exit 2, or the submission's, a graded failure)."""

from __future__ import annotations

import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import pytest
from cpu_kit import Kit, inp, integer, out

from grader import cli, labs
from grader.backends.cpu import CpuBackend, elf, job, runner, shim
from grader.backends.cpu.shelf import Shelf
from grader.errors import ExitCode
from grader.model.result import Kind
from grader.toolchain import cxx, sandbox

LAYERS = sandbox.probe()
needs_isolation = pytest.mark.skipif(
    bool(LAYERS.missing()), reason=f"this machine cannot sandbox: {LAYERS.missing()}"
)
NAIVE = (labs.get("matmul-naive").home / "baseline.cu").read_text()


def matmul_args(width: int) -> list:
    m = np.random.default_rng(7).random(width * width, dtype=np.float32)
    return [inp("M", m), inp("N", m), out("P", width * width), integer("Width", width)], m


@needs_isolation
def test_sixteen_threads_with_an_arena_each_run_a_correct_kernel(monkeypatch, no_nvcc):
    """On a 16-core machine glibc gives each pool thread a malloc arena of 64 MiB of
    address space. They used to be made after the memory limit, which they then
    exhausted, and a thread ran its blocks on a fiber stack that was never mapped: "Thread
    (0,0,0) wrote to address 0x10f98". Here 64 arenas are allowed on any machine."""
    clean = cxx.clean_env
    tunable = {"GLIBC_TUNABLES": "glibc.malloc.arena_max=64"}
    monkeypatch.setattr(cxx, "clean_env", lambda: {**clean(), **tunable})
    sixteen = Kit(CpuBackend(jobs=16))
    args, m = matmul_args(256)
    result = sixteen.run(sixteen.built(NAIVE), "matmul", (16, 16), (16, 16), args)
    assert result.completed, result.diagnostics
    expected = m.reshape(256, 256).astype(np.float64) @ m.reshape(256, 256)
    np.testing.assert_allclose(result.buffers["P"].data.reshape(256, 256), expected, rtol=1e-4)


def ldd(path: Path) -> dict[str, str]:
    """name -> path as the system's loader resolves them (ldd runs ld.so, not the file)."""
    found = {}
    for line in subprocess.run(
        ["ldd", str(path)], capture_output=True, text=True
    ).stdout.splitlines():
        name, _, where = line.strip().partition(" => ")
        if where and not where.startswith("not found"):
            found[name] = str(Path(where.split(" (")[0]).resolve())
    return found


@pytest.mark.skipif(not shutil.which("ldd"), reason="needs ldd to compare with the loader")
def test_the_libraries_found_are_the_ones_the_loader_finds():
    system = [p for name in ("libstdc++.so.6", "libz.so.1") for p in elf._ld_cache().get(name, [])]
    for path in (runner.executable(), *system[:2]):
        found, missing = elf.needed_libraries(path)
        assert not missing
        ours = {p.name: str(p.resolve()) for p in found}
        for name, where in ldd(path).items():
            assert ours.get(name) == where, (path, name, where, ours)


def test_runpath_and_origin_are_followed_for_libraries_and_not_for_the_module(tmp_path):
    """A library's RUNPATH with $ORIGIN is followed, as the loader does; the module's own
    RUNPATH is not, since the grader never sets one."""
    cc = cxx.compiler().path
    (tmp_path / "sub").mkdir()
    leaf, mid = tmp_path / "sub" / "libleaf.so", tmp_path / "libmid.so"
    (tmp_path / "leaf.c").write_text("int leaf(void) { return 1; }\n")
    (tmp_path / "mid.c").write_text("int leaf(void); int mid(void) { return leaf(); }\n")
    (tmp_path / "top.c").write_text("int mid(void); int top(void) { return mid(); }\n")

    def compile_so(source: str, *flags: str) -> None:
        cmd = [cc, "-shared", "-fPIC", "-x", "c", str(tmp_path / source), "-x", "none", *flags]
        subprocess.run(cmd, check=True)

    compile_so("leaf.c", "-Wl,-soname,libleaf.so", "-o", str(leaf))
    runpath = "-Wl,--enable-new-dtags,-rpath,$ORIGIN/sub"
    compile_so("mid.c", f"-L{leaf.parent}", "-lleaf", runpath, "-o", str(mid))
    module = tmp_path / "module.so"
    compile_so("top.c", str(mid), "-o", str(module))  # DT_NEEDED: mid's path
    found, missing = elf.needed_libraries(module)
    assert leaf in found and mid in found and not missing
    assert found.index(leaf) < found.index(mid)  # what a library needs is loaded first
    own = tmp_path / "own.so"
    compile_so("mid.c", f"-L{leaf.parent}", "-lleaf", runpath, "-o", str(own))
    found, missing = elf.needed_libraries(own)
    assert missing == ["libleaf.so"] and leaf not in found


@needs_isolation
def test_a_module_that_needs_a_library_the_runner_never_loads_still_loads(
    kit, monkeypatch, no_nvcc
):
    """On Ubuntu nothing had loaded libm before the sandbox closed, and every module that
    needed it failed to load. Here the module needs libresolv, which the runner never
    loads, and it is loaded for it before the sandbox closes."""
    library = next(iter(elf._ld_cache().get("libresolv.so.2", [])), None)
    if library is None:
        pytest.skip("this system has no libresolv.so.2 in ld.so.cache")
    flags = (*shim.MODULE_FLAGS, "-Wl,--no-as-needed", str(library))
    monkeypatch.setattr(shim, "MODULE_FLAGS", flags)
    build = kit.built("__global__ void k(float* P) { P[threadIdx.x] = 3.0f; }")
    assert "libresolv.so.2" in elf.dynamic(build.artifact.module).needed
    result = kit.run(build, "k", 1, 4, [out("P", 4)])
    assert result.completed, result.diagnostics
    np.testing.assert_array_equal(result.buffers["P"].data, 3.0)


# -- whose fault ---------------------------------------------------------------------------


def grade(tmp_path: Path, capsys, *extra: str) -> tuple[int, str, dict]:
    """The exit code, what was printed (standard error, then output) and the JSON report."""
    path = tmp_path / "kernel.cu"
    path.write_text(NAIVE)
    report = tmp_path / "report.json"
    argv = ["check", "matmul-naive", str(path), "--backend", "cpu", "--json", str(report)]
    code = cli.main([*argv, *extra])
    out, err = capsys.readouterr()
    return code, err + out, json.loads(report.read_text()) if report.exists() else {}


@needs_isolation
def test_a_worker_that_fails_before_the_submission_ran_is_a_setup_error(
    tmp_path, capsys, monkeypatch
):
    monkeypatch.setattr(job, "_libraries", lambda module: ("/nonexistent/libgrader-gone.so.1",))
    code, err, _ = grade(tmp_path, capsys)
    assert code == ExitCode.USAGE
    assert "cannot run kernels on this machine" in err
    assert "could not load a library the compiled module needs" in err and "libgrader-gone" in err


@needs_isolation
@pytest.mark.skipif(not shim.inline_checks(), reason="no module here reads the stores' shadow")
def test_a_runner_that_cannot_reserve_the_stores_shadow_is_a_setup_error(
    tmp_path, capsys, monkeypatch
):
    """A worker under an address-space limit the grader itself did not run under (which
    would have built its modules to call before each store: shim.py) stops before any
    code of the submission runs, and the error says what to lift."""
    started = subprocess.Popen
    # built before Popen is replaced, everywhere (job.subprocess is the module): a build
    # of the runner from inside the replacement, which its own compiles call, waits for
    # the lock the build holds (it hung on a cold cache)
    program = str(runner.executable())

    def limited(cmd, *args, **kwargs):
        if cmd[0] == program:
            limit = (64 << 30, 64 << 30)  # far below the shadow's 16 TiB
            kwargs["preexec_fn"] = lambda: resource.setrlimit(resource.RLIMIT_AS, limit)
        return started(cmd, *args, **kwargs)

    monkeypatch.setattr(job.subprocess, "Popen", limited)
    code, err, _ = grade(tmp_path, capsys)
    assert code == ExitCode.USAGE
    assert "could not reserve the address space its stores' checks read" in err
    assert "ulimit -v" in err


@needs_isolation
def test_a_module_that_no_module_can_load_is_a_setup_error(tmp_path, capsys, monkeypatch):
    """The failure is not the submission's when the grader's own module, in the same
    sandbox, fails the same way."""

    def broken_module(shelf, module, target):
        target.write_bytes(b"")  # what a full or broken disk leaves

    monkeypatch.setattr(Shelf, "place", broken_module)
    code, err, _ = grade(tmp_path, capsys)
    assert code == ExitCode.USAGE
    assert "cannot load even the grader's own compiled module" in err


@needs_isolation
def test_outputs_gone_after_the_run_are_the_kernels_failure(tmp_path, capsys, monkeypatch):
    read = job._read_outputs

    def gone(scratch, *args):
        if "kernel matmul" in (scratch / "job.txt").read_text():  # not the control run
            (scratch / "out.1.2.bin").unlink()
        read(scratch, *args)

    monkeypatch.setattr(job, "_read_outputs", gone)
    code, err, report = grade(tmp_path, capsys)
    assert code == ExitCode.FAILED, err
    found = [d for c in report["cases"] for d in c["diagnostics"]]
    assert found and all(d["kind"] == Kind.CRASH.value for d in found)
    assert "out.1.2.bin was missing, unreadable or resized" in found[0]["message"]


def test_the_device_line_says_how_many_cores_grading_used():
    total = os.cpu_count() or 1
    used = f"1 of {total} cores" if total > 1 else "1 core"
    assert CpuBackend(jobs=1).device().startswith(f"CPU: {used} used (")


@needs_isolation
@pytest.mark.skipif(sandbox.worker_user() is None, reason="only a grader run as root switches user")
@pytest.mark.skipif(not shutil.which("setpriv"), reason="needs util-linux's setpriv")
def test_root_that_cannot_change_user_is_a_setup_error_naming_the_fix(tmp_path):
    """Root without CAP_SETUID (a container that dropped it) cannot make its worker an
    ordinary user, and a root worker is not bound by the limit on threads."""
    source = tmp_path / "kernel.cu"
    source.write_text(NAIVE)
    root = str(Path(__file__).resolve().parents[2])
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([root, os.environ.get("PYTHONPATH", "")])}
    cmd = ["setpriv", "--bounding-set=-setuid,-setgid", sys.executable, "-m", "grader", "check",
           "matmul-naive", str(source), "--backend", "cpu"]  # fmt: skip
    done = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=600)
    assert done.returncode == ExitCode.USAGE, done.stdout + done.stderr
    assert "could not switch from root to uid 65534" in done.stderr
    assert "Grade as an ordinary user" in done.stderr


@needs_isolation
@pytest.mark.skipif(sandbox.worker_user() is None, reason="only a grader run as root switches user")
def test_a_worker_switched_from_root_works_in_a_tmpdir_only_root_may_enter(
    tmp_path, capsys, monkeypatch
):
    """As root, the worker runs as uid 65534, which cannot enter a TMPDIR below a private
    folder (pytest's own, here, like /root/tmp): it is given its folder before it switches."""
    private = tmp_path / "private-tmp"
    private.mkdir(mode=0o700)
    monkeypatch.setattr(tempfile, "tempdir", str(private))
    code, printed, _ = grade(tmp_path, capsys, "-v")  # the sandbox's layers, whole here
    assert code == ExitCode.OK, printed
    assert "switched from root to uid 65534" in printed
