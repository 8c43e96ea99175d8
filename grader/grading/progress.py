"""What a grading tells whoever shows its progress (a status line): the step it starts
now. The grading never prints."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True)
class Step:
    """What a grading starts now: "backend" (started, its runtime built on first use),
    "compile", "case" (`index` of `total`, from 1), "sanitize" or "timing"; from
    "compile" on, `speed` says whether it scores speed. The grading never prints;
    whoever passed Options.progress shows it."""

    stage: str
    index: int = 0
    total: int = 0
    speed: bool | None = None  # None: not known yet


def tell(
    progress: Callable[[Step], None] | None,
    stage: str,
    index: int = 0,
    total: int = 0,
    speed: bool | None = None,
) -> None:
    """Tell `progress`, where there is one, that the grading starts `stage`."""
    if progress is not None:
        progress(Step(stage, index, total, speed))
