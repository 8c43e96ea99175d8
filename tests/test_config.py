"""The course config: the file named with --config or GRADER_CONFIG, else `[tool.grader]`
in the nearest pyproject.toml, or grader.toml, with flags over the environment over the
file over the defaults; a file found rather than named decides no grade unless it lies
outside what is graded (tests/test_trust.py); `grader config` says which file it read,
what it ignored and why, and where each setting came from; the secret never comes from a
file nor is printed."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from grader import cli, labs
from grader.cli import config
from grader.errors import ExitCode
from grader.labroot import new_lab

SECRET = "the-course-secret-0123"
HOSTILE = 'labs = ["x"]\ntimeout = 3600\nbackend = "cpu"\ncolor = "never"\njobs = 3\n'
ENV = ("GRADER_SECRET", "GRADER_LABS", "GRADER_TIMEOUT", "GRADER_BACKEND", "GRADER_JOBS",
       "GRADER_OUT", "GRADER_SUBMISSION_TIMEOUT", "GRADER_CONFIG", "NO_COLOR",
       "FORCE_COLOR")  # fmt: skip


@pytest.fixture(autouse=True)
def clean(monkeypatch, tmp_path):
    """Run in an empty folder, with none of the settings' variables and no course roots."""
    for name in ENV:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(labs, "_added", [])


def run(capsys, *argv: str) -> tuple[int, str, str]:
    code = cli.main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def rows(out: str) -> dict[str, tuple[str, str]]:
    """`grader config`'s lines of settings as {setting: (value, source)}."""
    found = {}
    for line in out.split("Settings (flags > environment > file > default):\n")[1].splitlines():
        name, value, source = line.split(maxsplit=2) if "  " in line else (line, "", "")
        found[name] = (value, source)
    return found


@pytest.fixture
def graded(monkeypatch):
    """`grader check` with grading replaced by a stub that keeps the options it got."""
    from grader.report import json as json_report

    calls = []
    data = Path(__file__).parent / "data" / "reports" / "failing.json"

    def check(lab, path, options):
        calls.append(options)
        return json_report.read(data)

    monkeypatch.setattr("grader.grading.pipeline.check", check)
    return calls


def test_flags_beat_the_environment_which_beats_the_file(capsys, tmp_path, monkeypatch, graded):
    course, subs = tmp_path / "course", tmp_path / "subs"  # a TA's folder, and a student's
    course.mkdir()
    subs.mkdir()
    monkeypatch.chdir(course)
    (course / "grader.toml").write_text('timeout = 30\nbackend = "cpu"\n')
    (subs / "k.cu").write_text("x")
    check = ["check", "matmul-naive", "../subs/k.cu", "--quiet"]
    run(capsys, *check)
    assert (graded[-1].timeout, graded[-1].backend) == (30.0, "cpu")  # the file
    monkeypatch.setenv("GRADER_TIMEOUT", "20")
    run(capsys, *check)
    assert (graded[-1].timeout, graded[-1].backend) == (20.0, "cpu")  # environment over file
    run(capsys, *check, "--timeout", "5", "--backend", "auto")
    assert (graded[-1].timeout, graded[-1].backend) == (5.0, "auto")  # flags over both
    run(capsys, *check, "--no-config")
    assert (graded[-1].timeout, graded[-1].backend) == (20.0, "auto")  # the file ignored
    monkeypatch.delenv("GRADER_TIMEOUT")
    (course / "grader.toml").unlink()
    run(capsys, *check)
    assert (graded[-1].timeout, graded[-1].backend) == (10.0, "auto")  # the defaults


def test_config_prints_each_setting_and_where_it_came_from(capsys, tmp_path, monkeypatch):
    course = tmp_path / "course"
    new_lab("mylab", "matmul-naive", course / "labs")
    (course / "pyproject.toml").write_text(
        '[project]\nname = "course"\n\n[tool.grader]\njobs = 4\nout = "grades"\n'
        'labs = ["labs"]\ntimeout = 30\n'
    )
    (course / "week1").mkdir()
    monkeypatch.chdir(course / "week1")
    monkeypatch.setenv("GRADER_CONFIG", "../pyproject.toml")  # the course names its file
    monkeypatch.setenv("GRADER_TIMEOUT", "12.5")
    monkeypatch.setenv("GRADER_SECRET", SECRET)
    code, out, err = run(capsys, "config")
    assert code == ExitCode.OK, err
    assert out.splitlines()[:2] == [
        f"Config file: {course / 'pyproject.toml'} (named by GRADER_CONFIG)",
        "  read: jobs, out, labs, timeout",
    ]
    found = rows(out)
    assert found["jobs"] == ("4", str(course / "pyproject.toml"))
    assert found["out"] == (str(course / "grades"), str(course / "pyproject.toml"))
    assert found["labs"] == (str(course / "labs"), str(course / "pyproject.toml"))
    assert found["timeout"] == ("12.5", "GRADER_TIMEOUT")
    assert found["backend"] == ("auto", "default")
    assert found["secret"][0] == "set," and SECRET not in out + err
    code, out, _ = run(capsys, "labs")  # the file's lab root is in use
    assert "mylab: " in out


def test_grader_toml_comes_before_pyproject_and_a_pyproject_without_a_table_is_passed(
    tmp_path,
):
    (tmp_path / "pyproject.toml").write_text("[tool.grader]\njobs = 2\n")
    inner = tmp_path / "a" / "b"
    inner.mkdir(parents=True)
    (inner / "pyproject.toml").write_text('[project]\nname = "x"\n')  # no [tool.grader]
    assert config.find(inner) == tmp_path / "pyproject.toml"
    (tmp_path / "grader.toml").write_text("jobs = 3\n")
    assert config.find(inner) == tmp_path / "grader.toml"
    assert config.load(config.find(inner)).values == {"jobs": 3}


@pytest.mark.parametrize(
    ("text", "sentence"),
    [
        ('secret = "abc"\n', "sets secret: the secret is never read from a file"),
        ('GRADER_SECRET = "abc"\n', "the secret is never read from a file"),
        ("job = 3\n", "there is no setting 'job'. Did you mean 'jobs'?"),
        ("timeout = -1\n", "timeout = -1: '-1' is not a number of seconds above 0"),
        ('backend = "gpu"\n', "backend = 'gpu': 'gpu' is not one of auto, cuda, cpu"),
        ("jobs = true\n", "jobs = True is not a value jobs takes"),
        ("labs = 3\n", "labs is a folder or a list of folders"),
        ("jobs = \n", "is not valid TOML"),
    ],
)
def test_a_bad_file_is_a_usage_error_naming_the_file_and_the_key(capsys, tmp_path, text, sentence):
    (tmp_path / "grader.toml").write_text(text)
    code, out, err = run(capsys, "labs")
    assert code == ExitCode.USAGE and out == ""
    assert err.startswith(f"grader: {tmp_path / 'grader.toml'}") and sentence in err, err
    assert "abc" not in err


def test_a_bad_environment_value_names_the_variable(capsys, monkeypatch):
    monkeypatch.setenv("GRADER_JOBS", "many")
    code, _, err = run(capsys, "config")
    assert code == ExitCode.USAGE and "GRADER_JOBS=many: 'many' is not a positive" in err


def test_grader_labs_overrides_the_files_roots_and_flags_add_to_either(tmp_path, monkeypatch):
    new_lab("filelab", "matmul-naive", tmp_path / "file-root")
    new_lab("envlab", "matmul-naive", tmp_path / "env-root")
    (tmp_path / "grader.toml").write_text('labs = "file-root"\n')
    file = config.load(tmp_path / "grader.toml")
    assert config.file_roots({}, file) == [str(tmp_path / "file-root")]
    assert config.file_roots({"GRADER_LABS": str(tmp_path / "env-root")}, file) == []


def test_batch_takes_its_out_folder_from_the_file(capsys, tmp_path):
    (tmp_path / "subs").mkdir()
    code, _, err = run(capsys, "batch", "matmul-naive", "subs", "--backend", "cpu")
    assert code == ExitCode.USAGE and "--out OUT, GRADER_OUT=OUT, or out" in err
    (tmp_path / "grader.toml").write_text('out = "grades"\n')
    argv = ("batch", "matmul-naive", "subs", "--backend", "cpu", "--public-only")
    code, out, err = run(capsys, *argv)
    assert code == ExitCode.OK, err
    assert (tmp_path / "grades" / "gradebook.csv").is_file()
    assert "0 submissions" in out


@pytest.mark.parametrize(
    ("file", "env", "flag", "colored"),
    [
        ('color = "always"\n', {}, [], True),
        ('color = "always"\n', {"NO_COLOR": "1"}, [], False),  # environment over file
        ("", {"FORCE_COLOR": "1"}, [], True),  # a pipe, coloured on request
        ("", {"FORCE_COLOR": "1", "NO_COLOR": "1"}, [], False),  # NO_COLOR wins
        ("", {"NO_COLOR": "1"}, ["--color", "always"], True),  # the flag over both
        ("", {}, [], False),  # not a terminal
    ],
)
def test_color_follows_the_flag_then_no_color_and_force_color_then_the_file(
    capsys, tmp_path, monkeypatch, file, env, flag, colored
):
    (tmp_path / "grader.toml").write_text(file)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    for argv in (["labs", *flag], ["config", *flag]):
        code, out, _ = run(capsys, *argv)
        assert code == ExitCode.OK and ("\x1b[" in out) == colored, argv


def test_a_closed_pipe_ends_quietly_with_141(tmp_path):
    env = {k: v for k, v in os.environ.items() if k not in ENV}
    process = subprocess.Popen(
        [sys.executable, "-m", "grader", "labs"],
        cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )  # fmt: skip
    process.stdout.close()  # the reader is gone before the first line
    err = process.stderr.read().decode()
    assert process.wait(timeout=60) == ExitCode.PIPE_CLOSED == 141
    assert err == ""


def test_config_says_what_a_refused_file_sets_and_what_it_ignored(capsys, tmp_path, monkeypatch):
    clone = tmp_path / "clone"
    for folder in (".git", "x/reference_kernels", "src"):
        (clone / folder).mkdir(parents=True)
    (clone / "src" / "kernel.cu").write_text("")
    (clone / "grader.toml").write_text(HOSTILE)
    monkeypatch.chdir(clone / "src")
    code, out, err = run(capsys, "config", "kernel.cu")
    assert code == ExitCode.OK and err == ""  # config says it on standard output
    assert out.startswith(f"Config file: {clone / 'grader.toml'} (found looking up from here)")
    assert (
        "  read: color\n  ignored: labs, timeout, backend, jobs, since its folder holds "
        f"{clone / 'src' / 'kernel.cu'}, the kernel graded\n"
    ) in out
    assert "--config PATH or GRADER_CONFIG=PATH" in out
    assert str(clone / "x") not in out  # its lab roots are never listed
    assert re.search(rf"\n  color +never +{re.escape(str(clone / 'grader.toml'))}\n", out)
    code, out, err = run(capsys, "config", "--config", "../grader.toml")
    assert code == ExitCode.OK and err == ""  # named: read, its labs too
    assert "(named with --config)\n  read: labs, timeout, backend, color, jobs\n" in out
    assert labs.course_roots() == [clone / "x"]


def test_the_note_names_the_file_the_keys_and_the_way_to_name_a_course_file(capsys, tmp_path):
    (tmp_path / "x" / "reference_kernels").mkdir(parents=True)
    (tmp_path / "grader.toml").write_text(HOSTILE)
    code, out, err = run(capsys, "labs")
    assert code == ExitCode.OK and "matmul-naive" in out
    assert err.count("\n") == 1 and err.startswith(f"grader: {tmp_path / 'grader.toml'} sets ")
    assert (
        "labs, timeout, backend, jobs, which were not used: `grader labs` grades no submission"
        in (err)
    )
    assert labs.course_roots() == []  # its lab root was never added
    (tmp_path / "grader.toml").write_text('color = "never"\n')
    assert run(capsys, "labs")[2] == ""  # nothing ignored, nothing said


def test_a_named_file_must_exist_and_cannot_be_named_with_no_config(capsys, tmp_path):
    code, _, err = run(capsys, "labs", "--config", "nowhere.toml")
    assert code == ExitCode.USAGE and "The config file named with --config, nowhere.toml" in err
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "x"\n')
    code, _, err = run(capsys, "labs", "--config", "pyproject.toml")
    assert code == ExitCode.USAGE and "has no [tool.grader] table" in err
    code, _, err = run(capsys, "labs", "--config", "pyproject.toml", "--no-config")
    assert code == ExitCode.USAGE and "not allowed with argument" in err
