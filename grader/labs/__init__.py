"""The registry of labs: every module in this package that defines `LAB`."""

from __future__ import annotations

import importlib
import pkgutil
from functools import cache

from grader.errors import UsageError
from grader.labs.model import Lab


@cache
def all_labs() -> dict[str, Lab]:
    labs: dict[str, Lab] = {}
    for info in pkgutil.iter_modules(__path__):
        module = importlib.import_module(f"{__name__}.{info.name}")
        lab = getattr(module, "LAB", None)
        if isinstance(lab, Lab):
            labs[lab.name] = lab
    return dict(sorted(labs.items()))


def get(name: str) -> Lab:
    labs = all_labs()
    if name not in labs:
        raise UsageError(f"There is no lab named {name!r}. Labs: {', '.join(labs)}.")
    return labs[name]
