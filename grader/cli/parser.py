"""argparse with the usage errors users know from git and pip: a mistyped command, choice
or option gets the closest real one ("Did you mean 'check'?") instead of the whole list,
and an option a command does not know is reported with that command's own usage."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from typing import Any

from grader.suggest import closest, did_you_mean


class Formatter(argparse.HelpFormatter):
    """argparse's wrapping, except for an examples section, whose lines stay as written."""

    def _fill_text(self, text: str, width: int, indent: str) -> str:
        if text.startswith("examples:"):
            return "".join(indent + line for line in text.splitlines(keepends=True))
        return super()._fill_text(text, width, indent)


class Parser(argparse.ArgumentParser):
    """The grader's parser and each command's (add_subparsers makes them of this class)."""

    def parse_args(self, args: Sequence[str] | None = None, namespace: Any = None) -> Any:
        parsed, extra = self.parse_known_args(args, namespace)
        if extra:
            # unknown options travel up from the command's parser; say them with its usage
            owner = getattr(parsed, "parser", self)
            owner.error(_unrecognized(extra, owner))
        return parsed

    def _check_value(self, action: argparse.Action, value: Any) -> None:
        # argparse's own check lists every choice; a typo deserves the one it meant
        if action.choices is None or value in action.choices:
            return
        names = [str(choice) for choice in action.choices]
        guess = did_you_mean(str(value), names)
        if isinstance(action, argparse._SubParsersAction):
            message = f"{value!r} is not a command.{guess} `{self.prog} --help` lists them."
        else:
            listed = ", ".join(repr(name) for name in names)
            message = f"invalid choice: {value!r}.{guess or f' Choose from {listed}.'}"
        raise argparse.ArgumentError(action, message)


def _unrecognized(extra: list[str], parser: argparse.ArgumentParser) -> str:
    options = [name for action in parser._actions for name in action.option_strings]
    typed = [word.split("=", 1)[0] for word in extra if word.startswith("-")]
    guesses = [(word, closest(word, options)) for word in typed]
    guesses = [(word, guess) for word, guess in guesses if guess]
    message = f"unrecognized arguments: {' '.join(extra)}."
    if len(guesses) == 1:
        return f"{message} Did you mean {guesses[0][1]!r}?"
    meant = ", ".join(f"{guess!r} for {word!r}" for word, guess in guesses)
    return f"{message} Did you mean {meant}?" if guesses else message
