"""Hint families: every detector a lab lists has a stable identifier, the one the class
view counts and the JSON report carries as `hint_kind`."""

from __future__ import annotations

import re

import numpy as np

from grader.judge import hints
from grader.judge.compare import compare
from grader.labs import all_labs, get


def test_every_detector_of_every_lab_has_an_identifier_for_its_family():
    kinds = {hints.kind_of(d) for lab in all_labs() for d in get(lab).hints}
    assert all(re.fullmatch(r"[a-z][a-z0-9_]*", kind) for kind in kinds)
    assert {"last_partial_tile", "ghost_border", "transposed", "truncated_sum"} <= kinds


def test_a_factory_made_detector_belongs_to_its_factory_family():
    assert hints.kind_of(hints.ghost_border("zero")) == "ghost_border"
    assert hints.kind_of(hints.ghost_border("clamp")) == hints.kind_of(hints.ghost_border("x"))


def never(ctx):
    return None


def always(ctx):
    return "A sentence."


def test_first_match_gives_the_family_with_the_sentence():
    want = np.ones((4, 4))
    got = np.full((4, 4), 2.0, np.float32)
    cmp = compare("P", want, got, np.full(want.shape, 1e-3))
    ctx = hints.Context(None, {}, {}, cmp, np.full(want.shape, 1e-3), (16, 16, 1))
    assert hints.first_match([never, always], ctx) == ("always", "A sentence.")
    assert hints.first_hint([never, always], ctx) == "A sentence."
    assert hints.first_match([never], ctx) is None
