"""Ways a submission can make a compiler read a file other than itself, for the attack
tests of both backends. SECRET in a trick stands for that file's path."""

from __future__ import annotations

import os
from pathlib import Path

TRICKS = {
    "digraph": '%:include "SECRET"\n',
    "line splice": '#\\\ninclude "SECRET"\n',
    "macro argument": '#define ID(x) x\nint a = ID(1 +\n#include "SECRET"\n);\n',
    "quoted": '#include "SECRET"\n',
}


def plant_secret(folder: Path) -> Path:
    """A file whose one line holds a word no compiler message could make up."""
    path = folder / "hidden_cases.txt"
    path.write_text(f"TOPSECRET{os.urandom(6).hex()} line\n")
    return path
