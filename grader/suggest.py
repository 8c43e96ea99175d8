"""Did-you-mean: the name a user most likely meant, when they typed one that does not exist
(a lab, a command, an option, a setting), as difflib ranks the names that do."""

from __future__ import annotations

import difflib
from collections.abc import Iterable


def closest(word: str, names: Iterable[str]) -> str | None:
    """The name most like `word`, or None when none is close enough to be a typo of it."""
    found = difflib.get_close_matches(word, list(names), n=1, cutoff=0.6)
    return found[0] if found else None


def did_you_mean(word: str, names: Iterable[str]) -> str:
    """The sentence " Did you mean 'NAME'?" for the closest name, or "" when none is close."""
    name = closest(word, names)
    return f" Did you mean {name!r}?" if name else ""
