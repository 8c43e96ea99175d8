"""The staff verbs of the `grader` command: batch (with shards graded from scratch and
merged), merge, gradescope and init-ci, their output and their exit codes."""

from __future__ import annotations

import csv
import os
import zipfile
from collections import Counter
from pathlib import Path

import pytest
import yaml
from folder_kit import deep, remove_deep

from grader import cli, labs
from grader.course.discover import MAX_ENTRIES
from grader.errors import ExitCode

LAB = "matmul-naive"
BASELINE = (labs.get(LAB).home / "baseline.cu").read_text()
KERNELS = {
    "ada": BASELINE,
    "bob": BASELINE.replace("if (row < Width && col < Width) {", "{"),
    "cy": BASELINE.replace("P[row * Width + col]", "P[col * Width + row]"),
    "dee": BASELINE.replace("float sum = 0.0f;", "float sum = 0.0f"),
    "eve": (labs.get(LAB).home / "reference.cu").read_text(),
    "fay": BASELINE.replace("k < Width;", "k < Width - 1;"),
}


def run(capsys, *argv: str) -> tuple[int, str, str]:
    code = cli.main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture(scope="module")
def course(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("course")
    for name, text in KERNELS.items():
        (folder / f"{name}.cu").write_text(text)
    (folder / "README.txt").write_text("not a submission")
    return folder


def batch(capsys, course: Path, out: Path, *extra: str) -> tuple[int, str, str]:
    return run(capsys, "batch", LAB, str(course), "--out", str(out), "--backend", "cpu",
               "--jobs", "2", "--timeout", "5", *extra)  # fmt: skip


def test_batch_grades_a_folder_then_resumes(capsys, course, tmp_path, monkeypatch):
    monkeypatch.delenv("GRADER_SECRET", raising=False)
    code, out, err = batch(capsys, course, tmp_path / "out")
    # dee's kernel does not compile: a graded failure, as grader check says (exit 1), so
    # every submission was graded
    assert code == ExitCode.OK, err
    statuses = "2 passed, 4 failed, 0 could not be graded"
    assert f"6 submissions (plain layout): {statuses}." in out
    assert "This run graded 6, kept 0 graded before." in out
    assert "Not submissions, left alone: README.txt" in out
    assert f"Gradebook: {tmp_path / 'out' / 'gradebook.csv'}" in out
    assert "[6/6]" in err  # plain progress lines off a terminal
    assert "Finished 6 submissions" in err and "could not be graded" not in err
    page = (tmp_path / "out" / "summary.html").read_text()
    assert "6 submissions &middot;" in page
    assert all(f">{n} {what}<" in page for n, what in (
        (2, "passed"), (4, "failed"), (0, "could not be graded")))  # fmt: skip
    with open(tmp_path / "out" / "gradebook.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    assert Counter(r["status"] for r in rows) == {"passed": 2, "failed": 3, "error": 1}
    code, out, err = batch(capsys, course, tmp_path / "out")
    assert code == ExitCode.OK
    assert f"6 submissions (plain layout): {statuses}." in out
    assert "This run graded 0, kept 6 graded before." in out
    assert "6 submissions already graded" in err
    # a secret now, where there was none: every row would quietly be graded again
    before = (tmp_path / "out" / "gradebook.csv").read_text()
    code, out, err = batch(capsys, course, tmp_path / "out", "--secret", "s")
    assert code == ExitCode.USAGE and "was graded without a secret" in err and "--regrade" in err
    assert (tmp_path / "out" / "gradebook.csv").read_text() == before


def test_regrade_grades_into_a_folder_graded_with_another_secret(capsys, tmp_path):
    subs, out = tmp_path / "subs", tmp_path / "out"
    subs.mkdir()
    code, _, err = batch(capsys, subs, out, "--secret", "first")
    assert code == ExitCode.OK, err
    code, _, err = batch(capsys, subs, out, "--secret", "second")
    assert code == ExitCode.USAGE and "was graded with another secret" in err
    code, _, err = batch(capsys, subs, out, "--secret", "second", "--regrade")
    assert code == ExitCode.OK, err
    code, _, err = batch(capsys, subs, out, "--secret", "second")  # the record says second now
    assert code == ExitCode.OK, err


def test_a_source_over_the_limit_is_refused_from_its_size(capsys, tmp_path):
    subs = tmp_path / "subs"
    subs.mkdir()
    (subs / "ann.cu").write_text(BASELINE)
    with open(subs / "huge.cu", "wb") as f:
        f.truncate(8 << 30)  # sparse: 8 GiB that a read would have to allocate
    (subs / "empty").mkdir()
    (subs / "two").mkdir()  # two files and no kernel.cu: a folder with .cu files, not none
    (subs / "two" / "a.cu").write_text(BASELINE)
    (subs / "two" / "b.cu").write_text(BASELINE)
    code, out, err = batch(capsys, subs, tmp_path / "out")
    assert code == ExitCode.FAILED, err
    assert "4 submissions (plain layout): 1 passed, 0 failed, 3 could not be graded." in out
    assert "This run graded 2, kept 0 graded before, and found no one .cu file to grade in 2" in out
    assert "no .cu file in" not in out
    with open(tmp_path / "out" / "gradebook.csv", newline="") as f:
        rows = {r["student"]: r for r in csv.DictReader(f)}
    assert rows["two"]["reason"].startswith("two holds several .cu files (a.cu, b.cu)")
    huge = rows["huge"]
    assert huge["status"] == "error"
    assert f"huge.cu is {8 << 30} bytes; a submission may be at most 262144" in huge["reason"]


def test_folders_that_once_stopped_a_batch_are_their_students_rows(capsys, tmp_path):
    subs = tmp_path / "subs"
    (subs / "ann").mkdir(parents=True)
    (subs / "ann" / "kernel.cu").write_text(BASELINE)
    (deep(subs / "deep", 1100) / "kernel.cu").write_text(BASELINE)
    crowd = subs / "crowd"
    crowd.mkdir()
    (crowd / "kernel.cu").write_text(BASELINE)
    for i in range(MAX_ENTRIES):
        os.link(crowd / "kernel.cu", crowd / f"copy{i}")
    os.symlink("loop", subs / "loop")
    for name in ("bob~smith", "bob_smith"):  # two students, not one submitted twice
        (subs / f"{name}.cu").write_text(BASELINE)
    (subs / "dee").mkdir()
    (subs / "dee" / "ker\udcffnel.cu").write_text(BASELINE)  # a name that is not UTF-8
    (subs / "caf\udce9").mkdir()
    try:
        code, out, err = batch(capsys, subs, tmp_path / "out")
    finally:
        remove_deep(subs / "deep")
    assert code == ExitCode.FAILED, err
    assert "8 submissions (plain layout): 4 passed, 0 failed, 4 could not be graded." in out
    with open(tmp_path / "out" / "gradebook.csv", newline="", encoding="utf-8") as f:
        rows = {r["student"]: r for r in csv.DictReader(f)}
    graded = ("ann", "bob~smith", "bob_smith", "dee")
    assert {s: rows[s]["status"] for s in graded} == dict.fromkeys(graded, "passed")
    assert rows["caf\\xe9"]["reason"] == "There is no .cu file in caf\\xe9."
    assert rows["bob~smith"]["submission"] == "bob%7Esmith"
    assert "deep has folders nested more than 32 deep" in rows["deep"]["reason"]
    assert f"crowd holds more than {MAX_ENTRIES} files and folders" in rows["crowd"]["reason"]
    assert rows["loop"]["reason"] == "loop is a symbolic link; submit the file itself."


def test_three_shards_graded_apart_merge_into_one_run(capsys, course, tmp_path, monkeypatch):
    monkeypatch.delenv("GRADER_SECRET", raising=False)
    assert batch(capsys, course, tmp_path / "whole")[0] == ExitCode.OK  # dee did not compile
    shards = [str(tmp_path / f"shard-{i}") for i in (1, 2, 3)]
    for i, shard in enumerate(shards, start=1):
        code, out, err = batch(capsys, course, Path(shard), "--shard", f"{i}/3")
        ungraded = " 0 could not be graded." not in out
        assert code == (ExitCode.FAILED if ungraded else ExitCode.OK), out + err
        assert f"shard {i}/3" in out
    code, out, _ = run(capsys, "merge", *shards, "--out", str(tmp_path / "merged"))
    assert code == ExitCode.OK
    assert "Merged 3 shards: 6 students." in out
    whole = (tmp_path / "whole" / "gradebook.csv").read_bytes()
    assert (tmp_path / "merged" / "gradebook.csv").read_bytes() == whole


def test_a_batch_exits_0_when_every_submission_got_a_verdict(capsys, tmp_path):
    subs = tmp_path / "subs"
    subs.mkdir()
    for name in ("ada", "cy"):  # one passes, one fails: both graded
        (subs / f"{name}.cu").write_text(KERNELS[name])
    code, out, err = batch(capsys, subs, tmp_path / "out")
    assert code == ExitCode.OK, err
    assert "2 submissions (plain layout): 1 passed, 1 failed, 0 could not be graded." in out


def test_merge_without_every_shard_is_a_usage_error(capsys, course, tmp_path):
    assert batch(capsys, course, tmp_path / "s1", "--shard", "1/2")[0] in (0, 1)
    code, _, err = run(capsys, "merge", str(tmp_path / "s1"), "--out", str(tmp_path / "m"))
    assert code == ExitCode.USAGE
    assert "grader: Shard 2/2 is missing; merge all 2 shards." in err


@pytest.mark.parametrize(
    ("extra", "sentence"),
    [
        (("--shard", "4/3"), "--shard takes I/N"),
        (("--gpus", "0,0"), "--gpus takes distinct GPU numbers"),
    ],
)
def test_odd_options_are_usage_errors(capsys, course, tmp_path, extra, sentence):
    code, _, err = batch(capsys, course, tmp_path / "out", *extra)
    assert code == ExitCode.USAGE and sentence in err


def test_an_unknown_lab_or_folder_is_a_usage_error(capsys, course, tmp_path):
    code, _, err = run(capsys, "batch", "matmul-huge", str(course), "--out", str(tmp_path))
    assert code == ExitCode.USAGE and "There is no lab named 'matmul-huge'" in err
    code, _, err = run(capsys, "batch", LAB, str(tmp_path / "nowhere"), "--out", str(tmp_path))
    assert code == ExitCode.USAGE and "is not a folder of submissions" in err


def test_slurm_writes_the_script_and_grades_nothing(capsys, course, tmp_path):
    code, out, _ = run(
        capsys, "batch", LAB, str(course), "--out", str(tmp_path / "o"), "--slurm", "--shard", "1/4"
    )
    assert code == ExitCode.OK
    script = tmp_path / "o" / "grader-batch.sbatch"
    assert f"Wrote {script}. Nothing was graded." in out
    assert "#SBATCH --array=1-4" in script.read_text()
    assert "--backend cuda" in script.read_text()
    assert not (tmp_path / "o" / "gradebook.csv").exists()


def test_gradescope_builds_the_zip(capsys, tmp_path, monkeypatch):
    monkeypatch.setenv("GRADER_SECRET", "from-the-environment")
    code, out, _ = run(capsys, "gradescope", "conv2d", "--out", str(tmp_path / "ag.zip"))
    assert code == ExitCode.OK
    assert "share it with course staff only" in out
    with zipfile.ZipFile(tmp_path / "ag.zip") as archive:
        assert archive.read("secret") == b"from-the-environment"
        assert {"setup.sh", "run_autograder"} <= set(archive.namelist())


def test_init_ci_writes_a_workflow_once(capsys, tmp_path):
    out = tmp_path / ".github" / "workflows" / "grader.yml"
    code, _, err = run(capsys, "init-ci", LAB, "--gpu-runner", "h100", "--out", str(out))
    assert code == ExitCode.USAGE and "state it with --runner-is-ephemeral" in err
    assert not out.exists()
    code, printed, _ = run(
        capsys, "init-ci", LAB, "--gpu-runner", "h100", "--runner-is-ephemeral", "--out", str(out)
    )
    assert code == ExitCode.OK and "the runner labelled h100" in printed
    assert yaml.safe_load(out.read_text())["jobs"]["grade"]["runs-on"] == "h100"
    code, _, err = run(capsys, "init-ci", LAB, "--out", str(out))
    assert code == ExitCode.USAGE and "already exists" in err
