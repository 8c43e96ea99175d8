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
from lxml import html as lxml_html

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


@pytest.fixture(autouse=True)
def no_secret(monkeypatch):
    """Each test gives the secret it grades with, or none: never the shell's."""
    monkeypatch.delenv("GRADER_SECRET", raising=False)


def batch(capsys, course: Path, out: Path, *extra: str) -> tuple[int, str, str]:
    """`grader batch` on the CPU; public cases only, unless `extra` gives a secret."""
    public = () if "--secret" in extra else ("--public-only",)
    return run(capsys, "batch", LAB, str(course), "--out", str(out), "--backend", "cpu",
               "--jobs", "2", "--timeout", "5", *public, *extra)  # fmt: skip


def gradebook(out: Path) -> dict[str, dict[str, str]]:
    with open(out / "gradebook.csv", newline="", encoding="utf-8") as f:
        return {r["student"]: r for r in csv.DictReader(f)}


def test_batch_grades_a_folder_then_resumes(capsys, course, tmp_path):
    code, out, err = batch(capsys, course, tmp_path / "out")
    # dee's kernel does not compile: a graded failure, as grader check says (exit 1), so
    # every submission was graded
    assert code == ExitCode.OK, err
    statuses = "2 passed, 3 failed, 1 did not compile, 0 could not be graded"
    assert f"6 submissions (plain layout): {statuses}." in out
    assert "This run graded 6, kept 0 graded before." in out
    assert "Not submissions, left alone: README.txt" in out
    assert f"Gradebook: {tmp_path / 'out' / 'gradebook.csv'}" in out
    assert "[6/6]" in err  # plain progress lines off a terminal
    assert "] ada: 3/3 passed (" in err and "] dee: 0/3 compile_error (" in err
    assert "Finished 6 submissions" in err and "could not be graded" not in err
    page = (tmp_path / "out" / "summary.html").read_text()
    assert "6 submissions &middot;" in page
    counted = ((2, "passed"), (3, "failed"), (1, "did not compile"), (0, "could not be graded"))
    assert all(f">{n} {what}<" in page for n, what in counted)
    rows = gradebook(tmp_path / "out")
    assert Counter(r["status"] for r in rows.values()) == {
        "passed": 2, "failed": 3, "compile_error": 1}  # fmt: skip
    assert rows["dee"]["status"] == "compile_error" and rows["dee"]["reason"]
    # public cases only, as asked: said at the start and the end, atop the summary, and in
    # the gradebook, whose max leaves the hidden cases' points out
    assert err.startswith(LEFT_OUT + "\nGrading 6 submissions.")
    assert out.rstrip().endswith(LEFT_OUT)
    (banner,) = lxml_html.fromstring(page).xpath("//p[@class='banner']")
    assert banner.text_content() == LEFT_OUT
    assert {(r["cases"], r["max"]) for r in rows.values()} == {("public only", "3")}
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


LEFT_OUT = (
    "Only public cases run (--public-only): the 4 points of matmul-naive's 13 hidden cases "
    "are in no score and no max."
)


def test_a_batch_without_the_secret_is_refused_unless_public_only(capsys, course, tmp_path):
    """A TA who forgot the secret would publish grades out of 3 points instead of 7."""
    argv = ("batch", LAB, str(course), "--out", str(tmp_path / "out"), "--backend", "cpu")
    code, out, err = run(capsys, *argv)
    assert code == ExitCode.USAGE and out == ""
    assert err == (
        "grader: No secret was given (--secret or GRADER_SECRET). Only public cases run "
        "without it: the 4 points of matmul-naive's 13 hidden cases are in no score and no "
        "max. Give the secret, or add --public-only to grade the public cases alone.\n"
    )
    assert not (tmp_path / "out").exists()
    code, _, err = run(capsys, *argv, "--public-only", "--secret", "s")
    assert code == ExitCode.USAGE and "--public-only grades without the secret" in err


def test_with_the_secret_the_gradebook_counts_every_case(capsys, tmp_path):
    subs = tmp_path / "subs"
    subs.mkdir()
    (subs / "ada.cu").write_text(KERNELS["ada"])
    code, out, err = batch(capsys, subs, tmp_path / "out", "--secret", "s")
    assert code == ExitCode.OK, err
    assert "Only public cases" not in out + err
    assert 'class="banner"' not in (tmp_path / "out" / "summary.html").read_text()
    ada = gradebook(tmp_path / "out")["ada"]
    assert (ada["cases"], ada["score"], ada["max"]) == ("all", "7", "7")


def test_a_gradescope_export_reaches_the_gradebook_with_its_names(capsys, tmp_path):
    export = tmp_path / "export"
    (export / "submission_7").mkdir(parents=True)
    (export / "submission_7" / "kernel.cu").write_text(KERNELS["ada"])
    (export / "submission_metadata.yml").write_text(
        'submission_7:\n  :submitters:\n  - :name: "Zo\\xEB Ad\\xE9la\\xEFde"\n'
        "    :sid: '2024007'\n    :email: zoe@example.edu\n"
    )
    code, out, err = batch(capsys, export, tmp_path / "out")
    assert code == ExitCode.OK, err
    zoe = gradebook(tmp_path / "out")["2024007"]
    assert (zoe["name"], zoe["email"], zoe["status"]) == (
        "Zoë Adélaïde",
        "zoe@example.edu",
        "passed",
    )


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
    assert (
        "4 submissions (plain layout): 1 passed, 0 failed, 0 did not compile, 3 could not be "
        "graded." in out
    )
    assert "This run graded 2, kept 0 graded before, and found no one .cu file to grade in 2" in out
    assert "no .cu file in" not in out
    with open(tmp_path / "out" / "gradebook.csv", newline="") as f:
        rows = {r["student"]: r for r in csv.DictReader(f)}
    assert rows["two"]["reason"].startswith("two holds several .cu files (a.cu, b.cu)")
    huge = rows["huge"]
    assert huge["status"] == "not_graded"
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
    assert (
        "8 submissions (plain layout): 4 passed, 0 failed, 0 did not compile, 4 could not "
        "be graded." in out
    )
    with open(tmp_path / "out" / "gradebook.csv", newline="", encoding="utf-8") as f:
        rows = {r["student"]: r for r in csv.DictReader(f)}
    graded = ("ann", "bob~smith", "bob_smith", "dee")
    assert {s: rows[s]["status"] for s in graded} == dict.fromkeys(graded, "passed")
    assert rows["caf\\xe9"]["reason"] == "There is no .cu file in caf\\xe9."
    assert rows["bob~smith"]["submission"] == "bob%7Esmith"
    assert "deep has folders nested more than 32 deep" in rows["deep"]["reason"]
    assert f"crowd holds more than {MAX_ENTRIES} files and folders" in rows["crowd"]["reason"]
    assert rows["loop"]["reason"] == "loop is a symbolic link; submit the file itself."


def test_three_shards_graded_apart_merge_into_one_run(capsys, course, tmp_path):
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
    assert (
        "2 submissions (plain layout): 1 passed, 1 failed, 0 did not compile, 0 could not "
        "be graded." in out
    )


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
    monkeypatch.delenv("GRADER_SECRET")
    code, out, _ = run(capsys, "gradescope", "conv2d", "--out", str(tmp_path / "public.zip"))
    assert code == ExitCode.OK
    assert out.splitlines()[-1] == (
        "Only public cases run: the 4 points of conv2d's 11 hidden cases are in no score and "
        "no max. Give --secret or GRADER_SECRET to run them."
    )  # the batch's words


def test_init_ci_writes_a_workflow_once(capsys, tmp_path):
    out = tmp_path / ".github" / "workflows" / "grader.yml"
    code, _, err = run(capsys, "init-ci", LAB, "--gpu-runner", "h100", "--out", str(out))
    assert code == ExitCode.USAGE and "state it with --runner-is-ephemeral" in err
    assert not out.exists()
    code, printed, _ = run(
        capsys, "init-ci", LAB, "--gpu-runner", "h100", "--runner-is-ephemeral", "--out", str(out)
    )
    assert code == ExitCode.OK and "the runner labelled h100" in printed
    assert printed.splitlines()[-1] == (
        "Only public cases run there: the 4 points of matmul-naive's 13 hidden cases are in no "
        "score and no max. A student's repository cannot keep a secret."
    )
    assert yaml.safe_load(out.read_text())["jobs"]["grade"]["runs-on"] == "h100"
    code, _, err = run(capsys, "init-ci", LAB, "--out", str(out))
    assert code == ExitCode.USAGE and "already exists" in err
