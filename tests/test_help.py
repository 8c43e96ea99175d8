"""Help as users read it: every argument of every command says what it is, and every
command's --help ends with examples of the command itself."""

from __future__ import annotations

import argparse

import pytest

from grader import cli

PARSER = cli.build_parser()
VERBS = next(a for a in PARSER._actions if isinstance(a, argparse._SubParsersAction)).choices


@pytest.mark.parametrize("verb", sorted(VERBS))
def test_every_argument_has_help(verb):
    missing = [
        action.option_strings[0] if action.option_strings else action.metavar or action.dest
        for action in VERBS[verb]._actions
        if not action.help or action.help == argparse.SUPPRESS
    ]
    assert missing == [], f"grader {verb}: no help for {', '.join(missing)}"


@pytest.mark.parametrize("verb", sorted(VERBS))
def test_every_command_ends_its_help_with_examples_of_itself(verb, capsys):
    assert cli.main([verb, "--help"]) == 0
    out = capsys.readouterr().out
    examples = out.split("\nexamples:\n", 1)[1].splitlines()
    assert examples and all(line.startswith("  ") for line in examples)
    assert any(f"grader {verb}" in line for line in examples), examples
    assert "--color" in out and "--no-config" in out  # on every command


def test_the_graders_own_help_has_examples_and_lists_every_command(capsys):
    assert cli.main(["--help"]) == 0
    out = capsys.readouterr().out
    assert "\nexamples:\n  grader labs" in out
    assert all(verb in out for verb in VERBS)
