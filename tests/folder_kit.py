"""Folders that once stopped a batch, made and removed without the recursion (or the
path length) that made them a problem."""

from __future__ import annotations

import os
from pathlib import Path


def deep(folder: Path, levels: int) -> Path:
    """`levels` folders named d, one inside the other, made without a path longer than the
    system allows."""
    path = folder
    folder.mkdir(parents=True)
    while levels:
        step = min(levels, 100)
        path = path / os.path.join(*["d"] * step)
        path.mkdir(parents=True)
        levels -= step
    return path


def remove_deep(folder: Path) -> None:
    """Remove what deep made from the top, one level at a time, each by a short path:
    shutil.rmtree recurses, and would overflow."""
    while (folder / "d").is_dir():
        for file in (folder / "d").iterdir():
            if file.name != "d":
                file.unlink()
        if (folder / "d" / "d").is_dir():
            os.rename(folder / "d" / "d", folder / "next")
            (folder / "d").rmdir()
            os.rename(folder / "next", folder / "d")
        else:
            (folder / "d").rmdir()
