"""Every lab the registry finds: whole in its folders, with hidden cases at the edges;
the numpy references of the convolution family against loops; case generation from a
secret."""

import itertools
import math
from pathlib import Path

import numpy as np
import pytest
from lab_kit import default_interface

from grader import lab_readme
from grader.judge import cases
from grader.judge.launch import launch_sizes
from grader.labs import all_labs, get, numerics
from grader.model.lab import Case

LABS = sorted(all_labs())


def test_grader_labs_has_the_thirteen_labs_of_the_course():
    assert len(LABS) == 13


@pytest.mark.parametrize("name", LABS)
def test_a_lab_is_whole_in_its_folders(name):
    lab = get(name)
    assert lab.home.name == lab.template_home.name == name
    assert (lab.home / "reference.cu").is_file() and (lab.home / "baseline.cu").is_file()
    assert {"kernel.cu", "README.md"} <= {p.name for p in lab.template_home.iterdir()}
    assert (lab.home / "wrong" / "EXPECTED.toml").is_file()
    sizes = launch_sizes(lab, cases.public_cases(lab)[0].sizes, default_interface(lab))
    arrays = {a.name for a in (*lab.inputs, *lab.outputs, *lab.scratch)}
    for kernel in lab.kernels:
        for param in kernel.params:
            assert param.array_name in arrays if param.is_pointer else param.value_name in sizes
    assert {c.array for c in lab.constants} <= {a.name for a in lab.inputs}
    assert math.prod(lab.default_block) <= 1024


@pytest.mark.parametrize("name", LABS)
def test_hidden_cases_reach_the_edges(name):
    lab = get(name)
    extents = [lab.extent(c.sizes) for c in hidden(name)]
    assert any(all(e == 1 for e in extent) for extent in extents)  # a size of 1
    assert any(any(e % 16 for e in extent) for extent in extents)  # no multiple of a tile
    assert len(set(extents)) >= 5


@pytest.mark.parametrize("name", LABS)
def test_pitches_are_padded_and_differ(name):
    lab = get(name)
    pitched = [p for k in lab.kernels for p in k.params if p.pitch]
    for case in hidden(name) + cases.public_cases(lab):
        s = case.sizes
        for param in pitched:
            array = lab.array(param.array_name)
            row = array.shape(s)[-1] * np.dtype(array.dtype).itemsize
            assert s[param.pitch] > row and s[param.pitch] % np.dtype(array.dtype).itemsize == 0
        assert len({s[p.pitch] for p in pitched}) == len(pitched)


def loop_correlate(image, mask, ghost):
    radius = mask.shape[0] // 2
    out = np.zeros(image.shape)
    for pos in itertools.product(*(range(n) for n in image.shape)):
        total = 0.0
        for off in itertools.product(*(range(m) for m in mask.shape)):
            src = [p - radius + o for p, o in zip(pos, off, strict=True)]
            if ghost == "clamp":
                src = [min(max(s, 0), n - 1) for s, n in zip(src, image.shape, strict=True)]
            elif ghost == "wrap":
                src = [s % n for s, n in zip(src, image.shape, strict=True)]
            elif any(s < 0 or s >= n for s, n in zip(src, image.shape, strict=True)):
                continue
            total += image[tuple(src)] * mask[off]
        out[pos] = total
    return out


@pytest.mark.parametrize("ghost", ["zero", "clamp", "wrap"])
@pytest.mark.parametrize("shape,mask", [((7, 5), 3), ((3, 2), 7), ((4, 6, 5), 3), ((1, 1), 5)])
def test_centred_correlation_matches_loops(ghost, shape, mask):
    rng = np.random.default_rng(1)
    image = rng.standard_normal(shape)
    weights = rng.standard_normal((mask,) * len(shape))
    got = numerics.correlate_same(image, weights, ghost)
    np.testing.assert_allclose(got, loop_correlate(image, weights, ghost), atol=1e-12)


def test_valid_correlation_matches_loops():
    rng = np.random.default_rng(2)
    image, kernel = rng.standard_normal((9, 11)), rng.standard_normal((3, 7))
    want = np.array(
        [[np.sum(image[r : r + 3, c : c + 7] * kernel) for c in range(5)] for r in range(7)]
    )
    np.testing.assert_allclose(numerics.correlate_valid(image, kernel), want, atol=1e-12)


def hidden(name, secret="s"):
    return cases.hidden_cases(get(name), secret)


@pytest.mark.parametrize("name", LABS)
def test_cases_reproduce_from_lab_name_and_secret(name):
    lab = get(name)
    first, again = cases.cases_for(lab, "secret-1"), cases.cases_for(lab, "secret-1")
    assert first == again
    other = cases.hidden_cases(lab, "secret-2")
    assert [c.seed for c in cases.hidden_cases(lab, "secret-1")] != [c.seed for c in other]
    for case in first:
        assert cases.find_case(lab, case.name, "secret-1") == case
        inputs = cases.make_inputs(lab, case)
        own = own_draw(lab, case)
        floats = [inputs[a.name] for a in lab.inputs if a.draw is None and a.name not in own]
        for values in floats:
            assert values.dtype == np.float32
            assert np.all(np.abs(values) >= 0.5) and np.all(np.abs(values) <= 1.0)
        if floats and min(v.size for v in floats) > 16:
            assert all((v < 0).any() and (v > 0).any() for v in floats)
        for array in lab.inputs:
            assert inputs[array.name].dtype == np.dtype(array.dtype)


def own_draw(lab, case) -> set[str]:
    """The inputs the lab's own draw gives (Lab.draw)."""
    return set(lab.draw(np.random.default_rng(case.seed), case.sizes)[0]) if lab.draw else set()


@pytest.mark.parametrize("name", [n for n in LABS if get(n).draw is not None])
def test_a_labs_own_draw_gives_hidden_structure_from_the_secret_and_keeps_it_apart(name):
    """Inputs drawn together (a sparse matrix's structure) differ with the secret, agree
    with the sizes they define, and those sizes are not shown as the case's."""
    lab = get(name)
    one, other = hidden(name, "secret-1"), hidden(name, "secret-2")
    differ = 0
    for a, b in zip(one, other, strict=True):
        first, second = cases.make_inputs(lab, a), cases.make_inputs(lab, b)
        own = own_draw(lab, a)
        differ += any(not np.array_equal(first[n], second[n]) for n in own)
        assert a.drawn and set(a.drawn).isdisjoint(a.shown_sizes)
        for n in own:
            assert first[n].shape == lab.array_shape(n, a.sizes)
    assert differ >= len(one) - 1  # a matrix with no entry is the same under any secret
    for case in cases.public_cases(lab):
        assert cases.make_inputs(lab, case).keys() == {a.name for a in lab.inputs}


@pytest.mark.parametrize("name", LABS)
def test_random_hidden_sizes_come_from_the_secret(name):
    lab = get(name)
    pick = {s: [c.sizes for c in hidden(name, s) if c.name.startswith("random")] for s in "abcd"}
    assert len({str(v) for v in pick.values()}) > 1
    assert cases.hidden_count(lab) == len(hidden(name))


@pytest.mark.parametrize("name", LABS)
def test_without_a_secret_only_public_cases(name):
    lab = get(name)
    assert all(c.visibility == "public" for c in cases.cases_for(lab, None))
    assert len(cases.cases_for(lab, None)) == len(lab.public_cases)


@pytest.mark.parametrize("name", LABS)
def test_with_a_secret_the_public_cases_keep_their_sizes_and_draw_other_values(name):
    # fixed values graded for points would let a file hold the public cases' answers
    lab = get(name)
    plain = cases.public_cases(lab)
    assert cases.public_cases(lab, None) == plain
    for secret in ("a", "b"):
        keyed = [c for c in cases.cases_for(lab, secret) if c.visibility == "public"]
        assert [(c.name, c.shown_sizes) for c in keyed] == [(c.name, c.shown_sizes) for c in plain]
        for mine, fixed in zip(keyed, plain, strict=True):
            assert mine.seed != fixed.seed
            ours, theirs = cases.make_inputs(lab, mine), cases.make_inputs(lab, fixed)
            assert any(not np.array_equal(ours[n], theirs[n]) for n in ours)
    # and from the file: values one grading printed are not the next file's
    same = cases.public_cases(lab, "a", "kernel one")
    assert same == cases.public_cases(lab, "a", "kernel one")
    other = cases.public_cases(lab, "a", "kernel two")
    assert all(x.seed != y.seed for x, y in zip(same, other, strict=True))


@pytest.mark.parametrize("name", LABS)
def test_reference_and_tolerance_shapes(name):
    from grader.judge.compare import allowances

    lab = get(name)
    case = cases.public_cases(lab)[0]
    case = Case(case.name, launch_sizes(lab, case.sizes, default_interface(lab)), seed=case.seed)
    inputs = cases.make_inputs(lab, case)
    expected = cases.expected_outputs(lab, case, inputs)
    allowed = allowances(lab, case, inputs)
    for out in lab.outputs:
        assert expected[out.name].shape == out.shape(case.sizes)
        assert allowed[out.name].tolerance.shape == out.shape(case.sizes)
        assert expected[out.name].dtype == (np.int64 if out.exact else np.float64)


def test_the_student_guides_lab_table_is_the_registrys():
    from grader.cli.student import list_labs, markdown_table

    guide = (Path(__file__).resolve().parents[1] / "docs" / "student.md").read_text()
    assert markdown_table(list_labs()) in guide


@pytest.mark.parametrize("name", LABS)
def test_the_template_readme_states_the_labs_signatures_cases_and_scoring(name):
    """What validate-lab checks of a course's lab (grader.lab_readme), for the grader's own."""
    assert lab_readme.problems(get(name)) == []
