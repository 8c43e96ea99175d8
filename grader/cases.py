"""Cases and their inputs, reproducible from (lab, case name, secret).

Public cases ship with the lab. Hidden cases are the lab's fixed hidden sizes plus random
sizes, and every hidden seed comes from an HMAC of the secret, so nobody without the
secret can compute the hidden inputs. Float inputs are random signed values, never zero,
unless the lab draws its own (an array's `draw`)."""

from __future__ import annotations

import hashlib
import hmac

import numpy as np

from grader.labs.model import Array, Case, Lab

PUBLIC_KEY = b"cuda-lab-grader/public"
MAGNITUDE = (0.5, 1.0)  # every input value is +-[0.5, 1.0): no zeros, no cancellation to 0


def derive_seed(key: bytes, lab: str, name: str) -> int:
    digest = hmac.new(key, f"{lab}/{name}".encode(), hashlib.sha256).digest()
    return int.from_bytes(digest[:8], "little")


def public_cases(lab: Lab) -> list[Case]:
    return [
        Case(c.name, lab.full_sizes(c.sizes), "public", derive_seed(PUBLIC_KEY, lab.name, c.name))
        for c in lab.public_cases
    ]


def hidden_cases(lab: Lab, secret: str) -> list[Case]:
    key = secret.encode()
    cases = [
        Case(c.name, lab.full_sizes(c.sizes), "hidden", derive_seed(key, lab.name, c.name))
        for c in lab.hidden_cases
    ]
    for i in range(1, lab.random_cases + 1):
        name = f"random-{i}"
        rng = np.random.default_rng(derive_seed(key, lab.name, f"{name}/sizes"))
        sizes = lab.full_sizes(lab.random_sizes(rng))
        cases.append(Case(name, sizes, "hidden", derive_seed(key, lab.name, name)))
    return cases


def hidden_count(lab: Lab) -> int:
    return len(lab.hidden_cases) + lab.random_cases


def cases_for(lab: Lab, secret: str | None) -> list[Case]:
    return public_cases(lab) + (hidden_cases(lab, secret) if secret else [])


def find_case(lab: Lab, name: str, secret: str | None) -> Case:
    for case in cases_for(lab, secret):
        if case.name == name:
            return case
    raise KeyError(name)


def timing_case(lab: Lab) -> Case:
    return Case(
        "timing",
        lab.full_sizes(lab.timing_sizes),
        "public",
        derive_seed(PUBLIC_KEY, lab.name, "timing"),
    )


def random_signed(rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
    """Values in +-[0.5, 1.0) from one float32 draw each (fast at the timing sizes)."""
    v = rng.random(shape, dtype=np.float32) * np.float32(4.0) - np.float32(2.0)
    low, high = MAGNITUDE
    magnitude = np.float32(low) + np.abs(v) * np.float32((high - low) / 2.0)
    return np.where(v < 0, -magnitude, magnitude).astype(np.float32)


def draw(rng: np.random.Generator, array: Array, sizes) -> np.ndarray:
    """An input's values: the lab's own draw, or random_signed, as the array's type."""
    shape = array.shape(sizes)
    values = array.draw(rng, shape, sizes) if array.draw else random_signed(rng, shape)
    return np.asarray(values).astype(array.dtype, copy=False).reshape(shape)


def make_inputs(lab: Lab, case: Case) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(case.seed)
    return {arr.name: draw(rng, arr, case.sizes) for arr in lab.inputs}


def timing_constants(lab: Lab, case: Case, seed: int) -> dict[str, np.ndarray]:
    """The timing inputs the host draws, from the grading's timing seed: those that are no
    kernel buffer (a mask in constant memory). The GPU draws the buffers itself, afresh
    before every timed launch (grader.backends.timed)."""
    buffers = lab.buffers
    rng = np.random.default_rng(seed)
    return {arr.name: draw(rng, arr, case.sizes) for arr in lab.inputs if arr.name not in buffers}


def widened(values: np.ndarray) -> np.ndarray:
    """Values as the reference computes with them: float64, or int64 for integers."""
    return values.astype(np.int64 if values.dtype.kind in "iu" else np.float64)


def expected_outputs(lab: Lab, case: Case, inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    return lab.reference({k: widened(v) for k, v in inputs.items()}, case.sizes)
