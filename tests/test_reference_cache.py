"""grader.grading.reference_cache: the reference's sums of the cases every submission
shares, kept in the grader's cache, are what computing them gives, bit for bit; an entry
that is not what it should be is computed afresh, and a public case that the secret and
the submission's text draw is never kept."""

import gc
import sys
import threading

import numpy as np
import pytest

from grader.grading import reference_cache
from grader.judge import cases, launch_macros
from grader.judge.compare import Sums, allowances, allowed, sums
from grader.judge.launch import at_launch
from grader.labs import all_labs, get
from grader.model.interface import LAUNCH_MACROS, Interface

SECRET = "test-secret"
# every lab's own reference kernels launch with these or take the lab's defaults
LAUNCH = Interface(launch=dict(zip(LAUNCH_MACROS, (256, 1, 1, 512, 1, 1), strict=True)))


@pytest.fixture
def cache(tmp_path, monkeypatch):
    """An empty grader cache where every entry computed is kept, however fast."""
    monkeypatch.setenv("GRADER_CACHE", str(tmp_path))
    monkeypatch.setattr(reference_cache, "READ_SECONDS", -1.0)
    return tmp_path / reference_cache.KIND


def _same(a: Sums, b: Sums) -> bool:
    return all(
        getattr(a, part).keys() == getattr(b, part).keys()
        and all(
            v.dtype == getattr(b, part)[k].dtype and v.tobytes() == getattr(b, part)[k].tobytes()
            for k, v in getattr(a, part).items()
        )
        for part in reference_cache.PARTS
    )


def _not_computed(*args):
    raise AssertionError("computed where the cache holds the entry")


def _graded(lab, case):
    inputs = cases.make_inputs(lab, case)
    return inputs, at_launch(lab, case, LAUNCH)


@pytest.mark.parametrize("name", sorted(all_labs()))
def test_an_entry_gives_the_sums_bit_for_bit(name, cache, monkeypatch):
    lab = get(name)
    hidden = [c for c in cases.cases_for(lab, SECRET) if c.visibility.value == "hidden"]
    for case in (cases.public_cases(lab)[0], hidden[-1]):
        inputs, sized = _graded(lab, case)
        computed = sums(lab, sized, inputs)
        first = reference_cache.reference_sums(lab, case, sized, inputs)
        with monkeypatch.context() as patch:
            patch.setattr(reference_cache, "sums", _not_computed)
            again = reference_cache.reference_sums(lab, case, sized, inputs)
        assert _same(first, computed) and _same(again, computed)


def test_a_public_case_drawn_from_the_text_is_never_kept(cache):
    lab = get("matmul-tiled")
    case = cases.public_cases(lab, SECRET, "__global__ void matmul() {}")[0]
    assert not reference_cache.shared(lab, case)
    inputs, sized = _graded(lab, case)
    reference_cache.reference_sums(lab, case, sized, inputs)
    assert not cache.exists()


def test_the_launch_macros_and_the_inputs_key_an_entry(cache):
    """reduction's expected sums are per TILE_X: a kernel's other tile is another entry."""
    lab = get("reduction")
    case = cases.public_cases(lab)[-1]
    inputs = cases.make_inputs(lab, case)
    other = Interface(launch=dict(zip(LAUNCH_MACROS, (128, 1, 1, 256, 1, 1), strict=True)))
    for interface in (LAUNCH, other):
        sized = at_launch(lab, case, interface)
        found = reference_cache.reference_sums(lab, case, sized, inputs)
        assert _same(found, sums(lab, sized, inputs))
    changed = {k: -v for k, v in inputs.items()}
    reference_cache.reference_sums(lab, case, at_launch(lab, case, LAUNCH), changed)
    assert len(list(cache.iterdir())) == 3


@pytest.mark.parametrize(
    "spoil",
    [
        lambda arrays: b"not an npz",
        lambda arrays: b"PK\x03\x04 a zip cut short",
        lambda arrays: {**arrays, "expected.P": arrays["expected.P"][:-1]},  # a shape
        lambda arrays: {k: v for k, v in arrays.items() if not k.startswith("terms")},
        lambda arrays: {**arrays, "expected.P": np.array([{"P": 1}], dtype=object)},
        lambda arrays: {**arrays, "stray.P": arrays["expected.P"]},
    ],
)
def test_an_entry_that_is_not_as_written_is_computed_afresh(spoil, cache, tmp_path):
    lab = get("matmul-naive")
    case = cases.public_cases(lab)[0]
    inputs, sized = _graded(lab, case)
    computed = reference_cache.reference_sums(lab, case, sized, inputs)
    (entry,) = cache.iterdir()
    with np.load(entry) as held:
        spoilt = spoil({k: held[k] for k in held.files})
    if isinstance(spoilt, bytes):
        entry.write_bytes(spoilt)
    else:
        with entry.open("wb") as out:
            np.savez(out, **spoilt)
    assert _same(reference_cache.reference_sums(lab, case, sized, inputs), computed)


def test_an_exact_lab_keeps_its_expected_outputs_alone(cache):
    lab = get("histogram")
    case = cases.public_cases(lab)[-1]
    inputs, sized = _graded(lab, case)
    found = reference_cache.reference_sums(lab, case, sized, inputs)
    assert found.bound == {} and found.terms == {}
    assert _same(reference_cache.reference_sums(lab, case, sized, inputs), found)
    assert allowed(lab, sized, found).keys() == allowances(lab, sized, inputs).keys()


class _Litter:
    """Garbage whose collection runs Python code, so that the interpreter may switch
    threads in the middle of building an AST."""

    def __del__(self):
        sum(range(20))


def _read_at_once(work, threads: int = 4) -> list[str]:
    """What `work`, run by `threads` threads at once among collections that switch
    threads every microsecond, raised (as sentences)."""
    raised: list[str] = []

    def loop():
        try:
            for _ in range(300):
                litter = [_Litter() for _ in range(3)]
                litter.append(litter)
                work()
        except Exception as error:  # noqa: BLE001 - the test says which
            raised.append(f"{type(error).__name__}: {error}")

    interval, threshold = sys.getswitchinterval(), gc.get_threshold()
    sys.setswitchinterval(1e-6)
    gc.set_threshold(5, 1, 1)
    try:
        running = [threading.Thread(target=loop) for _ in range(threads)]
        for thread in running:
            thread.start()
        for thread in running:
            thread.join()
    finally:
        sys.setswitchinterval(interval)
        gc.set_threshold(*threshold)
    return raised


def test_cases_read_entries_and_launch_macros_side_by_side(cache, monkeypatch):
    """The cases run side by side: numpy reads an entry's headers with ast.literal_eval,
    and CPython 3.11 counts the AST's depth once for all threads (SystemError: AST
    constructor recursion depth mismatch, seen in CI)."""
    lab = get("matmul-naive")
    case = cases.public_cases(lab)[0]
    inputs, sized = _graded(lab, case)
    reference_cache.reference_sums(lab, case, sized, inputs)
    monkeypatch.setattr(reference_cache, "sums", _not_computed)
    text = "#define TILE_WIDTH (2 * (4 + 4))\n"

    def work():
        reference_cache.reference_sums(lab, case, sized, inputs)
        launch_macros.describe(text, LAUNCH.launch, {}, lab)

    assert _read_at_once(work) == []
