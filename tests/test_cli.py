"""The `grader` command: each verb, its exit codes, and its sentences. Grading itself is
replaced by a stub where the test is about the CLI's adapting; one end-to-end test grades
a real template on the CPU backend."""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import stat
from pathlib import Path

import pytest

from grader import cli, labs
from grader.errors import ExitCode, SetupError, UsageError
from grader.labs import all_labs
from grader.model.result import Status
from grader.report import json as json_report

DATA = Path(__file__).parent / "data" / "reports"


def run(capsys, *argv: str) -> tuple[int, str, str]:
    code = cli.main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def kernel_file(tmp_path) -> Path:
    path = tmp_path / "kernel.cu"
    path.write_text("__global__ void matmul(const float* M, const float* N, float* P, int W) {}\n")
    return path


@pytest.fixture
def graded(monkeypatch):
    """Replace grading by a stub that records its call and returns the fixture report."""
    calls = []

    def check(lab, path, options):
        calls.append((lab, path, options))
        return json_report.read(DATA / "failing.json")

    monkeypatch.setattr("grader.grading.pipeline.check", check)
    monkeypatch.delenv("GRADER_SECRET", raising=False)
    return calls


# -- labs and template ------------------------------------------------------------------


def test_labs_lists_every_lab(capsys):
    code, out, _ = run(capsys, "labs")
    assert code == ExitCode.OK
    for lab in all_labs().values():
        assert f"{lab.name}: {lab.title}" in out
        assert all(k.signature() in out for k in lab.kernels)
    assert "constants: __constant__ float Mc[MASK_WIDTH*MASK_WIDTH]" in out
    assert "cases: 3 public, 13 hidden" in out


@pytest.fixture
def fake_template() -> Path:
    return labs.get("matmul-naive").template_home


def test_template_copies_and_says_what_next(capsys, tmp_path, fake_template):
    target = tmp_path / "work"
    code, out, _ = run(capsys, "template", "matmul-naive", str(target))
    assert code == ExitCode.OK
    assert (target / "kernel.cu").read_text() == (fake_template / "kernel.cu").read_text()
    assert (target / "README.md").exists()
    assert f"grader check matmul-naive {target / 'kernel.cu'}" in out


def test_template_refuses_to_overwrite(capsys, tmp_path, fake_template):
    target = tmp_path / "work"
    target.mkdir()
    (target / "kernel.cu").write_text("my work\n")
    code, _, err = run(capsys, "template", "matmul-naive", str(target))
    assert code == ExitCode.USAGE
    assert "already exists" in err and "--force" in err
    assert (target / "kernel.cu").read_text() == "my work\n"
    assert not (target / "README.md").exists()  # nothing copied at all
    code, _, _ = run(capsys, "template", "matmul-naive", str(target), "--force")
    assert code == ExitCode.OK
    assert (target / "kernel.cu").read_text() == (fake_template / "kernel.cu").read_text()


def test_template_unknown_lab(capsys, tmp_path):
    code, _, err = run(capsys, "template", "matmul-fast", str(tmp_path))
    assert code == ExitCode.USAGE
    assert "There is no lab named 'matmul-fast'" in err


def _templates_present() -> bool:
    try:
        return all(labs.get(lab).template_home.is_dir() for lab in all_labs())
    except SetupError:
        return False


@pytest.mark.skipif(not _templates_present(), reason="the student templates are not written yet")
def test_every_real_template_copies(capsys, tmp_path):
    for lab in all_labs():
        code, _, err = run(capsys, "template", lab, str(tmp_path / lab))
        assert code == ExitCode.OK, err
        assert (tmp_path / lab / "kernel.cu").is_file()
        assert (tmp_path / lab / "README.md").is_file()


# -- usage and setup errors -------------------------------------------------------------


def test_unknown_lab_is_a_usage_error(capsys, kernel_file):
    code, out, err = run(capsys, "check", "fft", str(kernel_file), "--backend", "cpu")
    assert code == ExitCode.USAGE == 2
    assert err.startswith("grader: There is no lab named 'fft'. Labs: conv2d,")
    assert "Traceback" not in err and out == ""


def test_missing_file_is_a_usage_error(capsys, tmp_path):
    code, _, err = run(capsys, "check", "matmul-naive", str(tmp_path / "nope.cu"))
    assert code == ExitCode.USAGE
    assert "nope.cu" in err and "Traceback" not in err


def _gpu_usable() -> bool | None:
    """Whether this machine has a usable GPU; None while the CUDA probe is not written."""
    try:
        from grader.backends import gpu_status

        return gpu_status()[0]
    except ImportError:
        return None


@pytest.mark.skipif(_gpu_usable() is not False, reason="needs a machine without a usable GPU")
def test_cuda_backend_without_gpu_says_so(capsys, kernel_file):
    code, out, err = run(capsys, "check", "matmul-naive", str(kernel_file), "--backend", "cuda")
    assert code == ExitCode.USAGE
    assert "--backend cuda needs a usable NVIDIA GPU" in err
    assert "Traceback" not in err and out == ""


def test_argparse_errors_exit_2(capsys, kernel_file):
    assert cli.main([]) == ExitCode.USAGE
    assert cli.main(["check", "matmul-naive", str(kernel_file), "--backend", "opencl"]) == 2
    assert cli.main(["check", "matmul-naive", str(kernel_file), "--timeout", "-1"]) == 2
    _, err = capsys.readouterr()
    assert "not a number of seconds above 0" in err
    assert cli.main(["--help"]) == ExitCode.OK


def test_grader_error_is_its_sentence(capsys, kernel_file, monkeypatch):
    def check(lab, path, options):
        raise SetupError("No C++ compiler was found: install g++ or clang++.")

    monkeypatch.setattr("grader.grading.pipeline.check", check)
    code, _, err = run(capsys, "check", "matmul-naive", str(kernel_file))
    assert code == ExitCode.USAGE
    assert err == "grader: No C++ compiler was found: install g++ or clang++.\n"


def test_internal_error_is_one_line(capsys, kernel_file, monkeypatch):
    def check(lab, path, options):
        raise ZeroDivisionError("division by zero")

    monkeypatch.setattr("grader.grading.pipeline.check", check)
    monkeypatch.delenv("GRADER_DEBUG", raising=False)
    code, _, err = run(capsys, "check", "matmul-naive", str(kernel_file))
    assert code == ExitCode.USAGE
    assert err.count("\n") == 1 and "Traceback" not in err
    assert err.startswith("grader: internal error (ZeroDivisionError: division by zero).")
    assert "GRADER_DEBUG=1" in err
    monkeypatch.setenv("GRADER_DEBUG", "1")
    code, _, err = run(capsys, "check", "matmul-naive", str(kernel_file))
    assert code == ExitCode.USAGE and "Traceback" in err and "internal error" in err


@pytest.mark.parametrize("filename", ["/root/x", None])
def test_a_path_the_user_may_not_open_is_said_and_any_other_denial_is_a_bug(
    capsys, monkeypatch, filename
):
    """Run as a user, `grader template LAB /root/x` or `batch --out /root/o` raised
    PermissionError as an internal error; a denial with no path stays one."""

    def denied(*args, **kwargs):
        raise PermissionError(13, "Permission denied", *([filename] if filename else []))

    monkeypatch.setattr("grader.templates.copy_template", denied)
    monkeypatch.delenv("GRADER_DEBUG", raising=False)
    code, _, err = run(capsys, "template", "matmul-naive", "/root/x")
    assert code == ExitCode.USAGE
    if filename:
        assert err == (
            "grader: /root/x: permission denied: you may not open it, or a folder on its "
            "way. Give a path of your own.\n"
        )
    else:
        assert err.startswith("grader: internal error (PermissionError")


def test_v_shows_an_internal_errors_traceback(capsys, kernel_file, monkeypatch):
    def check(lab, path, options):
        raise ZeroDivisionError("division by zero")

    monkeypatch.setattr("grader.grading.pipeline.check", check)
    monkeypatch.delenv("GRADER_DEBUG", raising=False)
    code, _, err = run(capsys, "check", "-v", "matmul-naive", str(kernel_file))
    assert code == ExitCode.USAGE and "Traceback" in err and "internal error" in err


def test_every_command_takes_v():
    parser = cli.build_parser()
    for name, verb in parser._subparsers._group_actions[0].choices.items():
        flags = {flag for action in verb._actions for flag in action.option_strings}
        assert {"-v", "--verbose"} <= flags, name


def test_check_v_says_each_step_and_its_seconds(capsys, kernel_file, graded):
    code, out, err = run(capsys, "check", "-v", "matmul-tiled", str(kernel_file))
    assert code == ExitCode.FAILED
    assert err.startswith("grader: loading the grader, ")  # plain lines off a terminal
    assert out.splitlines()[-1].startswith("Steps: loading ")


# -- check, with grading stubbed --------------------------------------------------------


def test_check_prints_writes_and_exits_with_the_result(capsys, tmp_path, kernel_file, graded):
    out_dir = tmp_path / "reports"
    argv = ["check", "matmul-tiled", str(kernel_file), "--color", "never"]
    for fmt, name in (
        ("json", "r.json"),
        ("html", "r.html"),
        ("junit", "r.xml"),
        ("markdown", "r.md"),
    ):
        argv += [f"--{fmt}", str(out_dir / name)]
    code, out, err = run(capsys, *argv)
    assert code == ExitCode.FAILED == 1
    assert err == ""
    assert "Score 1.5/10" in out and "\x1b" not in out
    assert f"Reports: {out_dir / 'r.json'}, {out_dir / 'r.html'}" in out
    assert sorted(p.name for p in out_dir.iterdir()) == ["r.html", "r.json", "r.md", "r.xml"]
    assert json.loads((out_dir / "r.json").read_text()) == json.loads(
        (DATA / "failing.json").read_text()
    )
    ((lab, path, options),) = graded
    assert (lab, path) == ("matmul-tiled", kernel_file)
    assert (options.backend, options.secret, options.timing, options.sanitize) == (
        "auto", None, True, False
    )  # fmt: skip


def test_check_passes_options_through(capsys, kernel_file, graded, monkeypatch):
    monkeypatch.setenv("GRADER_SECRET", "from-env")
    argv = ["check", "matmul-tiled", str(kernel_file), "--backend", "cpu", "--timeout", "2.5"]
    run(capsys, *argv, "--no-timing", "--sanitize", "--allow-unsandboxed")
    run(capsys, *argv, "--secret", "from-flag")
    first, second = (options for _, _, options in graded)
    assert (first.backend, first.timeout, first.timing) == ("cpu", 2.5, False)
    assert first.sanitize and first.allow_unsandboxed
    assert first.secret == "from-env" and second.secret == "from-flag"


def test_check_exit_0_when_passed(capsys, kernel_file, monkeypatch):
    passed = json_report.read(DATA / "failing.json")
    passed.cases = [c for c in passed.cases if c.passed]
    passed.diagnostics, passed.status = [], Status.PASSED
    monkeypatch.setattr("grader.grading.pipeline.check", lambda lab, path, options: passed)
    code, _, _ = run(capsys, "check", "matmul-tiled", str(kernel_file))
    assert code == ExitCode.OK == 0


def test_check_quiet_prints_the_score_line(capsys, kernel_file, graded):
    code, out, _ = run(capsys, "check", "matmul-tiled", str(kernel_file), "--quiet")
    assert code == ExitCode.FAILED
    assert out == "Score 1.5/10\n"


def test_check_color_always(capsys, kernel_file, graded):
    _, out, _ = run(capsys, "check", "matmul-tiled", str(kernel_file), "--color", "always")
    assert "\x1b[" in out


def test_check_report_that_cannot_be_written(capsys, tmp_path, kernel_file, graded):
    blocker = tmp_path / "file"
    blocker.write_text("")
    code, out, err = run(
        capsys, "check", "matmul-tiled", str(kernel_file), "--junit", str(blocker / "r.xml")
    )
    assert code == ExitCode.USAGE
    assert out == "" and not graded  # refused before grading
    assert "--junit report" in err and "is a file, not a folder" in err


# -- report paths: the user's files are safe ---------------------------------------------


def _unchanged(path: Path, text: str) -> bool:
    return path.read_text() == text and not path.is_symlink()


@pytest.mark.parametrize("option", ["--json", "--html", "--junit", "--markdown"])
def test_a_report_never_replaces_the_kernel(capsys, kernel_file, graded, option):
    text = kernel_file.read_text()
    hard = kernel_file.with_name("hard.json")
    hard.hardlink_to(kernel_file)
    for target in (kernel_file, hard, kernel_file.parent / "." / kernel_file.name):
        code, out, err = run(capsys, "check", "matmul-tiled", str(kernel_file), option, str(target))
        assert code == ExitCode.USAGE
        assert "the file being graded" in err and out == ""
    assert _unchanged(kernel_file, text) and not graded  # refused before grading


def test_a_report_never_goes_through_a_link_or_into_a_device_or_fifo(
    capsys, tmp_path, kernel_file, graded
):
    precious = tmp_path / "notes.txt"
    precious.write_text("mine")
    link = tmp_path / "r.json"
    link.symlink_to(precious)
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    for target, why in (
        (link, "symbolic link"),
        (fifo, "FIFO"),
        (Path("/dev/null"), "device"),
        (tmp_path, "folder"),
    ):
        code, _, err = run(capsys, "check", "matmul-tiled", str(kernel_file), "--json", str(target))
        assert code == ExitCode.USAGE and why in err, err
    assert link.is_symlink() and precious.read_text() == "mine"
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode) and not graded


def test_two_reports_never_share_a_path(capsys, tmp_path, kernel_file, graded):
    target = str(tmp_path / "r.out")
    code, _, err = run(
        capsys, "check", "matmul-tiled", str(kernel_file), "--json", target, "--html", target
    )
    assert code == ExitCode.USAGE and "both write" in err
    code, _, err = run(
        capsys, "check", "matmul-tiled", str(kernel_file), "--json", "-", "--junit", "-"
    )
    assert code == ExitCode.USAGE and "only one report" in err


def test_a_dash_writes_the_report_to_standard_output(capsys, kernel_file, graded):
    code, out, err = run(capsys, "check", "matmul-tiled", str(kernel_file), "--json", "-")
    assert code == ExitCode.FAILED
    assert json.loads(out) == json.loads((DATA / "failing.json").read_text())
    assert "Score 1.5/10" in err  # the summary moves to standard error
    assert not Path("-").exists()
    code, out, _ = run(capsys, "check", "matmul-tiled", str(kernel_file), "--junit", "-", "-q")
    assert out.startswith("<?xml")


def test_batch_out_is_a_folder_apart_from_the_submissions(capsys, tmp_path):
    subs = tmp_path / "subs"
    subs.mkdir()
    (tmp_path / "file").write_text("")
    (tmp_path / "link").symlink_to(subs)
    for out, why in (
        ("-", "cannot be -"),
        (str(subs), "inside"),
        (str(subs / "grades"), "inside"),
        (str(tmp_path / "file"), "not a folder"),
        (str(tmp_path / "link"), "symbolic link"),
    ):
        code, _, err = run(capsys, "batch", "matmul-naive", str(subs), "--out", out)
        assert code == ExitCode.USAGE and why in err, err
    assert list(subs.iterdir()) == []
    code, _, err = run(capsys, "merge", str(subs), "--out", str(subs))
    assert code == ExitCode.USAGE and "inside" in err


def test_check_a_folder_says_it_is_a_folder(capsys, tmp_path):
    (tmp_path / "mine.cu").write_text("")
    code, _, err = run(capsys, "check", "matmul-naive", str(tmp_path))
    assert code == ExitCode.USAGE
    assert f"{tmp_path} is a folder" in err and str(tmp_path / "mine.cu") in err


def test_check_a_file_the_user_may_not_reach_says_so(capsys, tmp_path, monkeypatch):
    """As a user, a file in another's folder raised PermissionError out of Path.is_dir:
    an internal error. (Root reads everything, so the denial is made here.)"""
    shut = tmp_path / "shut" / "k.cu"
    stat_of = Path.stat

    def denied(self, **kwargs):
        if self == shut:
            raise PermissionError(13, "Permission denied", str(self))
        return stat_of(self, **kwargs)

    monkeypatch.setattr(Path, "stat", denied)
    code, _, err = run(capsys, "check", "matmul-naive", str(shut))
    assert code == ExitCode.USAGE
    assert f"{shut} cannot be read: you may not open it, or a folder on its way" in err


def test_a_cache_the_user_may_not_write_is_a_setup_error(capsys, tmp_path, monkeypatch):
    """A file where the cache's folder would be, as a folder the user may not write:
    each use of the cache raised out of the grading (an internal error)."""
    blocked = tmp_path / "a-file"
    blocked.write_text("")
    monkeypatch.setenv("GRADER_CACHE", str(blocked))
    kernel = str(labs.get("matmul-naive").home / "reference.cu")
    code, _, err = run(capsys, "check", "matmul-naive", kernel, "--backend", "cpu")
    assert code == ExitCode.USAGE
    assert f"The grader's cache, {blocked}, is not a folder you may write" in err
    assert "set GRADER_CACHE to a folder of your own" in err


PRIVATE = "private notes of the TA: hidden widths 517 and 131"


@pytest.mark.parametrize("how", ["file", "folder", "relative"])
def test_check_refuses_a_kernel_reached_through_a_link(capsys, tmp_path, monkeypatch, how):
    private = tmp_path / "private"
    private.mkdir()
    (private / "kernel.cu").write_text(f'#include "{PRIVATE}"\n')
    repo = tmp_path / "repo"
    repo.mkdir()
    if how == "file":
        os.symlink(private / "kernel.cu", repo / "kernel.cu")
        target, link = repo / "kernel.cu", repo / "kernel.cu"
    else:
        os.symlink(private, repo / "src")
        target, link = repo / "src" / "kernel.cu", repo / "src"
    if how == "relative":
        monkeypatch.chdir(repo)
        target, link = Path("src/kernel.cu"), Path("src")
    reports = {"json": tmp_path / "report.json", "html": tmp_path / "report.html"}
    options = [arg for fmt, path in reports.items() for arg in (f"--{fmt}", str(path))]
    code, out, err = run(capsys, "check", "matmul-naive", str(target), *options)
    assert code == ExitCode.USAGE
    if how == "file":
        assert (
            err
            == f"grader: {target} is a symbolic link; grade the file itself, not a link to it.\n"
        )
    else:
        assert err == (
            f"grader: {target} is reached through {link}, a symbolic link; grade the file by "
            "a path with no link in it.\n"
        )
    assert out == "" and not any(path.exists() for path in reports.values())
    # the same file by its own path is graded, and its text is in both reports
    code, _, _ = run(capsys, "check", "matmul-naive", str(private / "kernel.cu"), *options)
    assert code == ExitCode.FAILED
    assert all(PRIVATE in path.read_text() for path in reports.values())


@pytest.mark.parametrize("variable", ["HOME", "PWD"])
def test_check_follows_links_above_the_users_own_folders(capsys, tmp_path, monkeypatch, variable):
    """A cluster's /home that links to /gpfs/home is the system's, not the submission's."""
    real = tmp_path / "gpfs" / "ta"
    real.mkdir(parents=True)
    (real / "kernel.cu").write_text("")
    os.symlink(tmp_path / "gpfs", tmp_path / "home")
    monkeypatch.setenv(variable, str(tmp_path / "home" / "ta"))
    code, _, err = run(capsys, "check", "matmul-naive", str(tmp_path / "home" / "ta" / "kernel.cu"))
    assert code == ExitCode.FAILED, err


def test_usage_error_class_is_exit_2():
    assert UsageError("x").exit_code == SetupError("x").exit_code == ExitCode.USAGE


# -- end to end -------------------------------------------------------------------------


def _cpu_grading_missing() -> str | None:
    """Why the end-to-end check cannot run here, or None when it can."""
    if importlib.util.find_spec("grader.grading.pipeline") is None:
        return "grader.grading.pipeline is not written yet"
    try:
        from grader.backends.cpu import CpuBackend  # noqa: F401
    except ImportError:
        return "the CPU backend is not written yet"
    if not shutil.which("g++") and not shutil.which("clang++"):
        return "no C++ compiler for the CPU backend"
    try:
        if not labs.get("matmul-naive").template_home.is_dir():
            return "the matmul-naive template is not written yet"
    except SetupError as error:
        return str(error)
    return None


CPU_GRADING_MISSING = _cpu_grading_missing()


@pytest.mark.slow
@pytest.mark.skipif(CPU_GRADING_MISSING is not None, reason=str(CPU_GRADING_MISSING))
def test_check_a_template_on_the_cpu_writes_all_four_reports(capsys, tmp_path, monkeypatch):
    monkeypatch.delenv("GRADER_SECRET", raising=False)
    assert run(capsys, "template", "matmul-naive", str(tmp_path / "work"))[0] == ExitCode.OK
    kernel = tmp_path / "work" / "kernel.cu"
    formats = (("json", "json"), ("html", "html"), ("junit", "xml"), ("markdown", "md"))
    reports = {fmt: tmp_path / f"report.{ext}" for fmt, ext in formats}
    # the template is our own code, so this test needs no sandbox; the CPU backend's own
    # tests cover sandboxing
    argv = ["check", "matmul-naive", str(kernel), "--backend", "cpu", "--allow-unsandboxed"]
    argv += ["--color", "never"]
    for fmt, path in reports.items():
        argv += [f"--{fmt}", str(path)]
    code, out, err = run(capsys, *argv)
    assert code == ExitCode.FAILED, err  # a template compiles, runs and fails
    assert "matmul-naive  kernel.cu" in out and "Score " in out
    assert all(path.is_file() for path in reports.values())
    result = json_report.read(reports["json"])
    assert result.backend == "cpu" and result.cases
    assert not all(case.passed for case in result.cases)
