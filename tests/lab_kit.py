"""Launch macros for tests that need a module's interface without compiling one."""

from __future__ import annotations

import re

from grader.model.interface import LAUNCH_MACROS, Interface


def interface(block=(16, 16, 1), tile=None) -> Interface:
    tile = tile or block
    return Interface(launch=dict(zip(LAUNCH_MACROS, (*block, *tile), strict=True)))


def default_interface(lab) -> Interface:
    """The launch macros a file that defines none gets: the lab's defaults, with its TILE
    expressions (plain arithmetic on BLOCK_*) worked out here."""
    block = dict(zip(("BLOCK_X", "BLOCK_Y", "BLOCK_Z"), lab.default_block, strict=True))
    tile = []
    for expression in lab.launch_defaults.tile:
        text = re.sub(r"BLOCK_[XYZ]", lambda m: str(block[m.group(0)]), expression)
        if not re.fullmatch(r"[\d\s+*/()-]+", text):
            raise ValueError(f"{lab.name}: cannot work out TILE = {expression}")
        tile.append(int(eval(text.replace("/", "//"))))  # noqa: S307 - digits and operators
    return interface(lab.default_block, tuple(tile))
