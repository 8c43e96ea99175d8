"""A lab's case, profiled: each kernel's memory profile as a backend measured it
(Backend.profile), with what the lab says the case computes, its output elements and its
useful arithmetic (the flops of Lab.work), by which a profile's measures per output
element and per byte divide."""

from __future__ import annotations

from collections.abc import Iterable

from grader.judge.launch import launch_sizes
from grader.model.interface import Interface
from grader.model.lab import Case, Lab
from grader.model.profile import KernelProfile, Profile, Source


def case_profile(
    lab: Lab,
    case: Case,
    interface: Interface,
    kernels: Iterable[KernelProfile],
    source: Source,
    note: str = "",
) -> Profile:
    """The profile of `case`, run by the module of `interface`: its outputs and flops at
    the sizes with the module's launch macros, on which some outputs' shapes depend (a
    reduction's one partial sum a block)."""
    sizes = launch_sizes(lab, case.sizes, interface)
    return Profile(
        source=source,
        case=case.name,
        sizes=case.shown_sizes,
        outputs=lab.output_elements(sizes),
        useful_flops=lab.work(sizes)[0],
        kernels=list(kernels),
        note=note,
    )
