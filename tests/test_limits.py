"""Limits on input: a source over the size limit is refused from its size alone, before a
byte of it is read, and --timeout takes finite seconds up to its documented maximum.
(batch and the Gradescope runner refuse the same file in tests/test_staff.py and
tests/gradescope/test_gradescope_run.py.)"""

from __future__ import annotations

import json
import os
import resource
from pathlib import Path

import pytest

from grader import cli
from grader.defaults import MAX_CASE_TIMEOUT, MAX_SUBMISSION_TIMEOUT
from grader.errors import ExitCode, UsageError
from grader.model.source import MAX_BYTES, read_source, read_submission
from grader.report import json as json_report

DOCS = Path(__file__).resolve().parents[1] / "docs"
HUGE = 8 << 30


def sparse(path: Path, size: int) -> Path:
    with open(path, "wb") as f:
        f.truncate(size)
    return path


def test_a_huge_source_is_refused_without_being_read(tmp_path):
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    raw, why = read_source(sparse(tmp_path / "huge.cu", HUGE))
    after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    assert raw is None and f"huge.cu is {HUGE} bytes" in why and "not read" in why
    assert after - before < 64 * 1024  # KiB: nothing near the file's size was allocated
    sub, problems = read_submission(tmp_path / "huge.cu")
    assert sub.text == "" and [p.kind for p in problems] == ["compile_error"]


def test_the_limit_is_exact_and_documented(tmp_path):
    assert read_source(sparse(tmp_path / "at.cu", MAX_BYTES))[0] == b"\0" * MAX_BYTES
    assert read_source(sparse(tmp_path / "over.cu", MAX_BYTES + 1))[0] is None
    documented = (DOCS / "threat-model.md").read_text()
    assert f"sources over {MAX_BYTES // 1024} KiB are refused" in documented


def test_a_fifo_or_an_unreadable_file_is_never_waited_on(tmp_path):
    os.mkfifo(tmp_path / "pipe.cu")
    assert read_source(tmp_path / "pipe.cu") == (None, "pipe.cu is not a regular file.")
    with pytest.raises(UsageError, match="cannot be read"):
        read_source(tmp_path / "missing.cu")


def test_check_refuses_a_huge_source_with_a_result(capsys, tmp_path):
    sparse(tmp_path / "huge.cu", HUGE)
    code = cli.main(
        ["check", "matmul-naive", str(tmp_path / "huge.cu"), "--backend", "cpu",
         "--json", str(tmp_path / "r.json")]
    )  # fmt: skip
    assert code == ExitCode.FAILED
    report = json.loads((tmp_path / "r.json").read_text())
    assert report["status"] == "error" and report["score"] == 0
    assert "may be at most 262144 bytes" in report["diagnostics"][0]["message"]
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss < 2 << 20  # KiB: under 2 GiB


@pytest.mark.parametrize("value", ["inf", "-inf", "nan", "1e10", str(MAX_CASE_TIMEOUT + 1), "0"])
def test_timeouts_beyond_the_maximum_or_not_finite_are_usage_errors(capsys, tmp_path, value):
    code = cli.main(["check", "matmul-naive", str(tmp_path / "k.cu"), f"--timeout={value}"])
    err = capsys.readouterr().err
    assert code == ExitCode.USAGE
    assert f"at most {MAX_CASE_TIMEOUT:g}" in err and "Traceback" not in err
    out = str(tmp_path / "out")
    code = cli.main(["batch", "matmul-naive", str(tmp_path), "--out", out, f"--timeout={value}"])
    assert code == ExitCode.USAGE and not (tmp_path / "out").exists()


@pytest.mark.parametrize("value", ["inf", "nan", "1e10", str(MAX_SUBMISSION_TIMEOUT + 1)])
def test_submission_timeouts_are_finite_and_bounded(capsys, tmp_path, value):
    out = str(tmp_path / "out")
    argv = ["batch", "matmul-naive", str(tmp_path), "--out", out]
    assert cli.main([*argv, f"--submission-timeout={value}"]) == ExitCode.USAGE
    assert f"at most {MAX_SUBMISSION_TIMEOUT:g}" in capsys.readouterr().err


def test_the_maximum_timeout_is_accepted_and_documented(capsys, monkeypatch):
    seen = []

    def check(lab, path, options):
        seen.append(options)
        return json_report.read(Path(__file__).parent / "data" / "reports" / "failing.json")

    monkeypatch.setattr("grader.grading.pipeline.check", check)
    cli.main(["check", "matmul-naive", "k.cu", "--timeout", f"{MAX_CASE_TIMEOUT:g}", "-q"])
    assert seen[0].timeout == MAX_CASE_TIMEOUT
    assert f"at most {MAX_CASE_TIMEOUT:g} s" in (DOCS / "student.md").read_text()
