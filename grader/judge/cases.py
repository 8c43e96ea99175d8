"""Cases and their inputs, reproducible from (lab, case name, secret).

Public cases ship with the lab; their values are fixed, except in a grading with the
secret, which draws them from it and the submission's text (the same sizes). Hidden
cases are the lab's fixed hidden sizes plus random sizes, and every hidden seed comes
from an HMAC of the secret, so nobody without the secret can compute the hidden inputs.
Float inputs are random signed values, never zero, unless the lab draws its own (an
array's `draw`). A lab's own `Lab.draw` gives inputs that must agree with one another
(a sparse matrix's structure) and the sizes they define: a case made here has drawn
them once to know its sizes."""

from __future__ import annotations

import hashlib
import hmac
from dataclasses import replace

import numpy as np

from grader.errors import SetupError
from grader.model.lab import Array, Case, Lab
from grader.model.result import Visibility

PUBLIC_KEY = b"cuda-lab-grader/public"
MAGNITUDE = (0.5, 1.0)  # every input value is +-[0.5, 1.0): no zeros, no cancellation to 0


def derive_seed(key: bytes, lab: str, name: str) -> int:
    digest = hmac.new(key, f"{lab}/{name}".encode(), hashlib.sha256).digest()
    return int.from_bytes(digest[:8], "little")


def public_cases(lab: Lab, secret: str | None = None, text: str | None = None) -> list[Case]:
    """The lab's public cases. With a secret (a grading that counts), their values come
    from it and from the submission's `text`: the same names and sizes, other numbers.
    Values everybody can compute would let a file hold the answers, and values one
    grading's printf showed would let the next file hold them; the same file always
    gets the same values."""
    key = public_key(secret, text)
    return [
        _case(lab, c.name, c.sizes, Visibility.PUBLIC, derive_seed(key, lab.name, c.name))
        for c in lab.public_cases
    ]


def public_key(secret: str | None, text: str | None = None) -> bytes:
    """The key of the public cases' values: fixed, or drawn from the secret and the text."""
    if not secret:
        return PUBLIC_KEY
    salt = hashlib.sha256((text or "").encode()).digest()
    return hmac.new(secret.encode(), PUBLIC_KEY + salt, hashlib.sha256).digest()


def hidden_cases(lab: Lab, secret: str) -> list[Case]:
    key = secret.encode()
    cases = [
        _case(lab, c.name, c.sizes, Visibility.HIDDEN, derive_seed(key, lab.name, c.name))
        for c in lab.hidden_cases
    ]
    for i in range(1, lab.random_cases + 1):
        name = f"random-{i}"
        rng = np.random.default_rng(derive_seed(key, lab.name, f"{name}/sizes"))
        sizes = lab.random_sizes(rng)
        cases.append(_case(lab, name, sizes, Visibility.HIDDEN, derive_seed(key, lab.name, name)))
    return cases


def _case(lab: Lab, name: str, sizes, visibility: Visibility, seed: int) -> Case:
    """A case with its full sizes, those the lab's own draw defines included."""
    case = Case(name, lab.full_sizes(sizes), visibility, seed)
    if lab.draw is None:
        return case
    return with_drawn(lab, case, given(lab, np.random.default_rng(seed), case)[1])


def with_drawn(lab: Lab, case: Case, drawn) -> Case:
    """`case` with the sizes the lab's draw defined among its sizes."""
    sizes = lab.full_sizes({**case.sizes, **drawn})
    return replace(case, sizes=sizes, drawn=tuple(dict.fromkeys((*case.drawn, *drawn))))


def given(lab: Lab, rng: np.random.Generator, case: Case) -> tuple[dict[str, np.ndarray], dict]:
    """The inputs the lab's own draw gives for `case` (none without one), each as its
    array's type, and the sizes they define. A draw that gives what the lab does not
    declare is the lab's error, said in a sentence."""
    if lab.draw is None:
        return {}, {}
    arrays, drawn = lab.draw(rng, case.sizes)
    sizes = lab.full_sizes({**case.sizes, **drawn})
    out = {}
    for name, values in arrays.items():
        if not lab.is_input(name):
            raise SetupError(f"Lab {lab.name}'s draw gives {name!r}, which is no input of it.")
        shape, values = lab.array_shape(name, sizes), np.asarray(values)
        if values.shape != shape:
            raise SetupError(
                f"Lab {lab.name}'s draw gives {name} of shape {values.shape} in case "
                f"{case.name}, where its Array's shape is {shape}."
            )
        out[name] = values.astype(lab.array(name).dtype, copy=False)
    return out, {k: int(v) for k, v in drawn.items()}


def hidden_count(lab: Lab) -> int:
    return len(lab.hidden_cases) + lab.random_cases


def cases_for(lab: Lab, secret: str | None, text: str | None = None) -> list[Case]:
    """Every case a grading runs; `text`, the submission's, keys the public values."""
    return public_cases(lab, secret, text) + (hidden_cases(lab, secret) if secret else [])


def find_case(lab: Lab, name: str, secret: str | None) -> Case:
    for case in cases_for(lab, secret):
        if case.name == name:
            return case
    raise KeyError(name)


def timing_case(lab: Lab) -> Case:
    """The timing case before any draw: the sizes the lab's own draw defines come with
    the inputs (timing_inputs)."""
    return Case(
        "timing",
        lab.full_sizes(lab.timing_sizes),
        Visibility.PUBLIC,
        derive_seed(PUBLIC_KEY, lab.name, "timing"),
    )


def random_signed(rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
    """Values in +-[0.5, 1.0) from one float32 draw each (fast at the timing sizes):
    v = 4 r - 2, then low + |v| (high - low) / 2 with v's sign, computed in place. v is
    never -0 (4 r - 2 rounds to +0), so copysign is the sign test v < 0, at a fifth of
    np.where's cost."""
    v = rng.random(shape, dtype=np.float32)
    v *= np.float32(4.0)
    v -= np.float32(2.0)
    low, high = MAGNITUDE
    magnitude = np.abs(v)
    magnitude *= np.float32((high - low) / 2.0)
    magnitude += np.float32(low)
    return np.copysign(magnitude, v, out=magnitude)


def draw(rng: np.random.Generator, array: Array, sizes) -> np.ndarray:
    """An input's values: the lab's own draw, or random_signed, as the array's type."""
    shape = array.shape(sizes)
    values = array.draw(rng, shape, sizes) if array.draw else random_signed(rng, shape)
    return np.asarray(values).astype(array.dtype, copy=False).reshape(shape)


def make_inputs(lab: Lab, case: Case) -> dict[str, np.ndarray]:
    """The case's inputs from its seed: the lab's own draw first, then the others."""
    rng = np.random.default_rng(case.seed)
    inputs = given(lab, rng, case)[0]
    for arr in lab.inputs:
        if arr.name not in inputs:
            inputs[arr.name] = draw(rng, arr, case.sizes)
    return {arr.name: inputs[arr.name] for arr in lab.inputs}


def timing_inputs(
    lab: Lab, seed: int, case: Case | None = None
) -> tuple[Case, dict[str, np.ndarray]]:
    """The timing case (or `case`, timed as if it were), with the sizes the lab's own
    draw defines, and the inputs the host draws from the grading's timing seed: those
    of the lab's own draw (a sparse matrix's structure, the same for every launch) and
    those that are no kernel buffer (a mask in constant memory). The GPU draws the
    other buffers itself, afresh before every timed launch (grader.backends.timing)."""
    case = case or timing_case(lab)
    rng = np.random.default_rng(seed)
    host, drawn = given(lab, rng, case)
    if lab.draw is not None:
        case = with_drawn(lab, case, drawn)
    buffers = lab.buffers
    for arr in lab.inputs:
        if arr.name not in buffers:
            host[arr.name] = draw(rng, arr, case.sizes)
    return case, host


def widened(values: np.ndarray) -> np.ndarray:
    """Values as the reference computes with them: float64, or int64 for integers."""
    return values.astype(np.int64 if values.dtype.kind in "iu" else np.float64)


def expected_outputs(lab: Lab, case: Case, inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    return lab.reference({k: widened(v) for k, v in inputs.items()}, case.sizes)
