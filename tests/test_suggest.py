"""Did-you-mean: a mistyped lab, command, choice or option gets the closest real one, and an
option a command does not know is reported with that command's usage, not the grader's."""

from __future__ import annotations

import pytest

from grader import cli
from grader.errors import ExitCode
from grader.suggest import closest, did_you_mean


def run(capsys, *argv: str) -> tuple[int, str, str]:
    code = cli.main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_the_closest_name_or_none():
    assert closest("matmul-tiles", ["matmul-naive", "matmul-tiled", "conv2d"]) == "matmul-tiled"
    assert closest("fft", ["matmul-naive", "matmul-tiled", "conv2d"]) is None
    assert did_you_mean("chekc", ["labs", "check", "batch"]) == " Did you mean 'check'?"
    assert did_you_mean("zzz", ["labs", "check"]) == ""


def test_a_mistyped_lab_names_the_lab_it_meant_and_not_every_lab(capsys, tmp_path):
    code, out, err = run(capsys, "check", "matmul-tiles", str(tmp_path / "k.cu"))
    assert code == ExitCode.USAGE and out == ""
    assert err == (
        "grader: There is no lab named 'matmul-tiles'. Did you mean 'matmul-tiled'? "
        "`grader labs` lists them all.\n"
    )


def test_a_mistyped_command_names_the_command_it_meant(capsys):
    code, _, err = run(capsys, "chekc", "matmul-naive", "k.cu")
    assert code == ExitCode.USAGE
    assert "'chekc' is not a command. Did you mean 'check'?" in err
    assert "choose from" not in err and "'init-ci'" not in err


def test_a_mistyped_choice_names_the_choice_it_meant(capsys):
    code, _, err = run(capsys, "check", "matmul-naive", "k.cu", "--backend", "cpy")
    assert code == ExitCode.USAGE
    assert "invalid choice: 'cpy'. Did you mean 'cpu'?" in err
    code, _, err = run(capsys, "check", "matmul-naive", "k.cu", "--backend", "opencl")
    assert "Choose from 'auto', 'cuda', 'cpu'." in err


@pytest.mark.parametrize(
    ("argv", "usage", "hint"),
    [
        (["check", "matmul-naive", "k.cu", "--colour", "never"], "grader check", "'--color'"),
        (["batch", "matmul-naive", "s", "--out", "o", "--jbos", "2"], "grader batch", "'--jobs'"),
        (["labs", "--markdwn"], "grader labs", "'--markdown'"),
    ],
)
def test_an_unknown_option_gets_its_commands_usage_and_the_closest_option(
    capsys, argv, usage, hint
):
    code, _, err = run(capsys, *argv)
    unknown = next(word for word in argv if word.startswith("--") and word != "--out")
    assert code == ExitCode.USAGE
    assert err.startswith(f"usage: {usage} "), err
    assert f"{usage}: error: unrecognized arguments: {unknown}" in err
    assert f"Did you mean {hint}?" in err


def test_an_unknown_argument_with_no_close_option_is_named_alone(capsys):
    code, _, err = run(capsys, "labs", "--zzzzzz")
    assert code == ExitCode.USAGE
    assert err.rstrip().endswith("grader labs: error: unrecognized arguments: --zzzzzz.")
