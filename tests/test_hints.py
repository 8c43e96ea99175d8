"""Each hint recognises its bug from the wrong elements, and only that bug; every detector
belongs to a family with a stable identifier, the one the class view counts and the JSON
report carries as `hint_kind`."""

import re
from dataclasses import replace

import numpy as np
import pytest

from grader.judge import cases, hints
from grader.judge.compare import PRECISION, allowances, compare
from grader.labs import all_labs, get
from grader.model.lab import Case
from grader.model.launch import POISON_BITS, bits_as_float
from grader.model.result import CaseResult, Diagnostic, Kind, Status


def context(lab_name, sizes, mutate, tile=(16, 16, 1)):
    lab = get(lab_name)
    case = Case("t", lab.full_sizes(sizes), seed=7)
    inputs = cases.make_inputs(lab, case)
    want = cases.expected_outputs(lab, case, inputs)
    name = lab.outputs[0].name
    allowed = allowances(lab, case, inputs)[name]
    got = mutate(want[name].astype(np.float32).copy(), inputs, lab, case)
    cmp = compare(name, want[name], got, allowed.tolerance, allowed.magnitude)
    return lab, hints.Context(lab, case.sizes, inputs, cmp, allowed.tolerance, tile)


def hint_of(lab_name, sizes, mutate, tile=(16, 16, 1)):
    lab, ctx = context(lab_name, sizes, mutate, tile)
    return hints.first_hint(lab.hints, ctx)


def corrupt_last_tile(got, *_):
    got[512:, :] += 1.0
    got[:, 512:] += 1.0
    return got


def test_last_partial_tile():
    hint = hint_of("matmul-tiled", {"Width": 517}, corrupt_last_tile)
    assert "last, partial tile" in hint and "512" in hint


def test_a_last_block_whose_spare_threads_left_early_is_told_to_keep_them():
    """Reduction's last, partial block wrong: threads past n read past the end, unless
    the run found them leaving before a barrier or a shuffle (a warp-shuffle sum with an
    early return), where loading 0 is not the fix the student lacks."""

    def last_wrong(got, *_):
        got[-1] += 1.0
        return got

    lab, ctx = context("reduction", {"n": 100000, "TILE_X": 512}, last_wrong)
    plain = hints.first_hint(lab.hints, ctx)
    assert "Only the last block's sum" in plain and "instead of reading past the end" in plain
    left = Diagnostic(Kind.BARRIER_DIVERGENCE, "thread (160,0,0) had already returned")
    told = hints.first_hint(lab.hints, replace(ctx, findings=(left,)))
    assert "Only the last block's sum" in told and "instead of returning" in told
    assert "reading past the end" not in told


def test_truncated_tile_loop():
    def truncated(got, inputs, lab, case):
        m = inputs["M"].astype(np.float64)
        m[:, 512:] = 0
        return (m @ inputs["N"]).astype(np.float32)

    hint = hint_of("matmul-tiled", {"Width": 517}, truncated)
    assert "k >= 512" in hint and "ceil(Width / TILE)" in hint


def test_transposed():
    assert "transpose" in hint_of("matmul-naive", {"Width": 64}, lambda g, *_: g.T.copy())


def test_swapped_operands():
    def swap(got, inputs, *_):
        return (inputs["N"].astype(np.float64) @ inputs["M"]).astype(np.float32)

    assert "exchanged" in hint_of("matmul-naive", {"Width": 64}, swap)


def test_nothing_and_partly_written():
    poison = bits_as_float(POISON_BITS)

    def nothing(got, *_):
        got[:] = poison
        return got

    def tail(got, *_):
        got[:, 60:] = poison
        return got

    assert "Nothing was written" in hint_of("matmul-naive", {"Width": 64}, nothing)
    assert "x 60..63" in hint_of("matmul-naive", {"Width": 64}, tail)


@pytest.mark.parametrize("lab", ["conv2d", "conv2d-clamp", "conv2d-wrap"])
def test_ghost_border(lab):
    def border(got, *_):
        got[0, 5] += 1
        got[-2, 7] -= 1
        return got

    hint = hint_of(lab, {"Width": 100, "Height": 60, "MASK_WIDTH": 5}, border)
    assert "border 2 elements wide" in hint


def test_ghost_border_names_the_rule():
    def border(got, *_):
        got[:, 0] += 1
        return got

    sizes = {"Width": 100, "Height": 60, "MASK_WIDTH": 5}
    assert "nearest edge" in hint_of("conv2d-clamp", sizes, border)
    assert "repeats" in hint_of("conv2d-wrap", sizes, border)


@pytest.mark.parametrize(
    "lab,mask", [("conv2d", "mask"), ("conv2d-valid", "kernel"), ("conv3d", "mask")]
)
def test_flipped_mask(lab, mask):
    sizes = {
        "conv2d": {"Width": 40, "Height": 30, "MASK_WIDTH": 5},
        "conv2d-valid": {"input_rows": 40, "input_cols": 30, "kernel_rows": 3, "kernel_cols": 5},
        "conv3d": {"W": 12, "H": 10, "D": 9, "MASK_WIDTH": 3},
    }[lab]

    def flip(got, inputs, spec, case):
        changed = {k: v.astype(np.float64) for k, v in inputs.items()}
        changed[mask] = np.flip(changed[mask])
        return spec.reference(changed, case.sizes)[spec.outputs[0].name].astype(np.float32)

    assert "flipped on every axis" in hint_of(lab, sizes, flip)


def test_shifted_by_one():
    def shift(got, *_):
        return np.roll(got, 1, axis=1)

    hint = hint_of("conv2d", {"Width": 64, "Height": 48, "MASK_WIDTH": 5}, shift)
    assert "moved by 1 along x" in hint


def test_a_random_error_gets_no_pattern_hint():
    def scatter(got, *_):
        got[10, 20] += 3.0
        got[30, 3] -= 2.0
        return got

    assert hint_of("matmul-naive", {"Width": 64}, scatter) is None


def test_pitch_hint_for_nan_outputs():
    def nan(got, *_):
        got[1, 2, 3] = np.nan
        return got

    hint = hint_of("conv3d-pitched", {"W": 20, "H": 10, "D": 6, "MASK_WIDTH": 5}, nan)
    assert "pitch" in hint


@pytest.mark.parametrize(
    "lab,sizes",
    [
        ("conv2d", {"Width": 40, "Height": 30, "MASK_WIDTH": 5}),
        ("conv3d", {"W": 12, "H": 10, "D": 9, "MASK_WIDTH": 3}),
    ],
)
def test_every_rearranged_mask_is_named(lab, sizes):
    ndim = 3 if lab == "conv3d" else 2
    for order, flips in hints._mask_changes(ndim):

        def rearrange(got, inputs, spec, case, order=order, flips=flips):
            changed = {k: v.astype(np.float64) for k, v in inputs.items()}
            changed["mask"] = np.transpose(changed["mask"], order)
            if flips:
                changed["mask"] = np.flip(changed["mask"], flips)
            return spec.reference(changed, case.sizes)["P"].astype(np.float32)

        hint = hint_of(lab, sizes, rearrange)
        assert hint and hint == hints.mask_rearranged("mask")(context(lab, sizes, rearrange)[1])
        assert hints._describe_change(ndim, order, flips) in hint


def test_a_3d_mask_with_x_and_z_exchanged():
    def swap_xz(got, inputs, spec, case):
        changed = {k: v.astype(np.float64) for k, v in inputs.items()}
        changed["mask"] = np.swapaxes(changed["mask"], 0, 2)
        return spec.reference(changed, case.sizes)["P"].astype(np.float32)

    hint = hint_of("conv3d", {"W": 20, "H": 18, "D": 12, "MASK_WIDTH": 5}, swap_xz)
    assert "x and z axes exchanged" in hint


def test_shifted_on_three_axes_at_once():
    def shift(got, *_):
        return np.roll(got, (-1, -1, -1), axis=(0, 1, 2))

    hint = hint_of("conv3d", {"W": 24, "H": 20, "D": 16, "MASK_WIDTH": 3}, shift)
    assert "moved by -1 along x, -1 along y and -1 along z" in hint


def test_the_partial_tile_hint_only_for_the_students_own_tile():
    # wrong beyond 32 x 32 of a 50 x 50 output: a 32-tile pattern, but the tile is 16
    def beyond_32(got, *_):
        got[32:, :] += 1.0
        got[:, 32:] += 1.0
        return got

    hint = hint_of("matmul-naive", {"Width": 50}, beyond_32)
    assert hint is None or "partial tile" not in hint
    assert "partial tile" in hint_of("matmul-naive", {"Width": 50}, beyond_32, tile=(32, 32, 1))


def test_no_partial_tile_hint_when_the_output_is_whole_tiles():
    def last_rows(got, *_):
        got[48:, :] += 1.0
        return got

    hint = hint_of("matmul-naive", {"Width": 64}, last_rows)
    assert hint is None or "partial tile" not in hint


def test_hints_quote_their_own_case():
    for width in (100, 517, 33):

        def truncated(got, inputs, lab, case, width=width):
            m = inputs["M"].astype(np.float64)
            m[:, (width // 16) * 16 :] = 0
            return (m @ inputs["N"]).astype(np.float32)

        hint = hint_of("matmul-tiled", {"Width": width}, truncated)
        assert f"Width is {width}" in hint, hint


def results(lab_name: str, passed) -> list[CaseResult]:
    """The lab's public and hidden cases, passed where `passed(sizes)` says so."""
    lab = get(lab_name)
    out = []
    for case in cases.cases_for(lab, "secret"):
        status = Status.PASSED if passed(case.sizes) else Status.FAILED
        out.append(
            CaseResult(name=case.name, visibility=case.visibility, sizes=case.sizes, status=status)
        )
    return out


def test_square_only_is_said_when_squareness_is_the_cause():
    lab = get("conv2d")
    kind, found = hints.cross_case(lab, results("conv2d", lambda s: s["Width"] == s["Height"]))
    assert kind == "square_only" and "Right for every square input (Width = Height)" in found
    assert "Width and Height are exchanged" in found
    assert "MASK_WIDTH" not in found


def test_a_kernel_failing_only_at_one_mask_size_is_told_about_the_mask():
    lab = get("conv2d")
    kind, found = hints.cross_case(lab, results("conv2d", lambda s: s["MASK_WIDTH"] != 7))
    assert kind == "macro_only" and "Only the cases with MASK_WIDTH 7 fail" in found
    assert "sized for a smaller MASK_WIDTH" in found and "square" not in found
    kind, found = hints.cross_case(lab, results("conv2d", lambda s: s["MASK_WIDTH"] == 5))
    assert "MASK_WIDTH 3 and 7 fail" in found and "written for MASK_WIDTH 5 only" in found


def test_a_3d_kernel_right_only_for_cubes_is_told_the_order_of_its_sizes():
    lab = get("conv3d")
    kind, found = hints.cross_case(lab, results("conv3d", lambda s: s["W"] == s["H"] == s["D"]))
    assert kind == "cubic_only" and "cubic" in found and "order of W, H and D" in found


def test_a_3d_kernel_right_whenever_two_sizes_agree_names_those_two():
    lab = get("conv3d")
    kind, found = hints.cross_case(lab, results("conv3d", lambda s: s["W"] == s["H"]))
    assert "Right whenever W = H" in found and "W and H are exchanged" in found
    assert "cubic" not in found


def test_valid_convolution_squareness_is_the_input_s():
    lab = get("conv2d-valid")
    right = lambda s: s["input_rows"] == s["input_cols"]  # noqa: E731
    kind, found = hints.cross_case(lab, results("conv2d-valid", right))
    assert "input_rows and input_cols are exchanged" in found


def test_no_cross_case_hint_when_everything_or_nothing_fails():
    lab = get("conv2d")
    assert hints.cross_case(lab, results("conv2d", lambda s: False)) is None
    assert hints.cross_case(lab, results("conv2d", lambda s: True)) is None


def test_lower_precision_is_named_even_with_every_element_within_its_bound():
    def off_in_precision(got, inputs, lab, case):
        allowed = allowances(lab, case, inputs)["P"]
        off = 4 * PRECISION * 2.0**-24 * allowed.magnitude  # each within 5 sqrt(64) u B
        return got + np.where(np.arange(got.size).reshape(got.shape) % 2, off, -off)

    _, ctx = context("matmul-naive", {"Width": 64}, off_in_precision)
    assert ctx.cmp.mismatches == 0 and not ctx.cmp.ok
    hint = hints.lower_precision(ctx)
    assert "less precise than float32" in hint and "4096 elements" in hint


def test_wrong_sums_are_not_lower_precision():
    lab, ctx = context("matmul-naive", {"Width": 64}, lambda got, *_: got * 0)
    assert hints.lower_precision(ctx) is None


# -- patterns any output can show, and the stencil labs' (issue 32) ---------------------


def output_hint_of(lab_name, sizes, mutate, tile=(16, 16, 1)):
    _, ctx = context(lab_name, sizes, mutate, tile)
    return hints.output_hint(ctx)


def test_unwritten_columns_that_repeat_lead_to_the_index_arithmetic_not_the_grid():
    poison = bits_as_float(POISON_BITS)

    def stripes(got, *_):  # 8 columns of every 32 written
        for start in range(8, 64, 32):
            got[:, start : start + 24] = poison
        return got

    kind, hint = output_hint_of("matmul-naive", {"Width": 64}, stripes)
    assert kind == "unwritten_pattern" and "repeats every 32 along x" in hint
    assert "only x 0..7 is written" in hint and "not from the grid" in hint
    assert "blockIdx.x * TILE_X + threadIdx.x" in hint and "TILE_Z" not in hint


def test_a_tail_left_unwritten_is_no_pattern():
    poison = bits_as_float(POISON_BITS)

    def tail(got, *_):
        got[:, 60:] = poison
        return got

    assert output_hint_of("matmul-naive", {"Width": 64}, tail)[0] == "partly_unwritten"


def test_an_output_all_nan_on_a_gpu_says_what_it_saw_and_names_the_output_read_first():
    lab = get("spmv-csr")
    case = cases.cases_for(lab, "secret")[0]  # a sparse matrix's sizes come with its draw
    inputs = cases.make_inputs(lab, case)
    want = cases.expected_outputs(lab, case, inputs)["y"]
    got = np.full(want.shape, np.nan, np.float32)  # the GPU's NaN is not the grader's
    got[:3] = bits_as_float(POISON_BITS)
    allowed = allowances(lab, case, inputs)["y"]
    cmp = compare("y", want, got, allowed.tolerance, allowed.magnitude)
    ctx = hints.Context(lab, case.sizes, inputs, cmp, allowed.tolerance, (256, 1, 1))
    kind, hint = hints.output_hint(ctx)
    assert kind == "all_nan" and "Every element of y is NaN (514 computed, 3" in hint
    assert "y[i] += ... on an element nothing set first" in hint and "likeliest" not in hint
    assert "skipped by a condition" not in hint
    raced = Diagnostic(Kind.RACE, "a race on __shared__ partial[0]")
    assert hints.all_nan(replace(ctx, findings=(raced,))) is None  # the race says why


def test_wrong_only_along_the_seams_between_tiles_is_the_halo():
    def seams(got, *_):
        got[:, 14:18] = 0  # within 2 of the seam at x 16
        return got

    kind, hint = output_hint_of("conv2d", {"Width": 64, "Height": 48, "MASK_WIDTH": 5}, seams)
    assert kind == "tile_seams" and "within 2 of a seam" in hint and "partial" not in hint


def test_an_image_read_column_major_is_told_so_not_that_the_mask_is_exchanged():
    def column_major(got, inputs, lab, case):
        flat = {"N": hints._column_major(inputs["N"])}
        _, ctx = context("conv2d", case.sizes, lambda g, *_: g)
        return hints.reference_with(ctx, **flat).T.copy().reshape(got.shape).astype(np.float32)

    for width, height in ((48, 48), (64, 40)):
        sizes = {"Width": width, "Height": height, "MASK_WIDTH": 5}
        kind, hint = output_hint_of("conv2d", sizes, column_major)
        assert kind == "column_major" and "column-major" in hint
        assert ("axes exchanged" in hint) == (width == height)


# -- the built-in hints are the lab's to keep, replace or drop ---------------------------


def gathered(fault):
    return f"Strayed from {hints.listing(sorted(hints.strayed(fault)))}."


def sizes_differ(lab, cases):
    return "The failing cases are the oblong ones."


def fault_of(lab, sizes, messages: list[str], tile=(16, 16, 1)) -> hints.Fault:
    found = [Diagnostic(Kind.OUT_OF_BOUNDS, m) for m in messages]
    return hints.Fault(lab, lab.full_sizes(sizes), {}, tile, found)


def test_a_fault_past_a_buffer_blames_the_partial_tile_unless_the_lab_says_otherwise():
    lab = get("matmul-naive")
    sizes = {"Width": 100}
    past = "thread (3,0,0) of block (6,0,0) read M[10000], 1 element past the end of M"
    fault = fault_of(lab, sizes, [past + " (10000 elements), at line 12."])
    assert hints.fault_hint(fault)[0] == "partial_tile_fault"
    assert hints.strayed(fault) == {"M": "past the end"}
    own = replace(lab, fault_hints=(gathered,))
    assert hints.fault_hint(replace(fault, lab=own)) == ("gathered", "Strayed from M.")
    assert hints.fault_hint(replace(fault, lab=replace(lab, fault_hints=()))) is None


def test_a_stencil_lab_reads_a_fault_past_its_image_as_a_ghost_cell_at_every_size():
    lab = get("conv2d")
    for width, block in ((100, 6), (64, 3)):
        sizes = {"Width": width, "Height": 90, "MASK_WIDTH": 5}
        past = f"thread (3,0,0) of block ({block},0,0) read N[{width * 90}], 1 element"
        fault = fault_of(lab, sizes, [f"{past} past the end of N ({width * 90} elements)."])
        kind, hint = hints.fault_hint(fault)
        assert kind == "ghost_cells_fault" and "partial" not in hint
        assert "The access past the end of N is a ghost cell" in hint


def test_strayed_reads_both_backends_and_leaves_shared_memory_out():
    lab = get("conv2d")
    sizes = {"Width": 64, "Height": 64, "MASK_WIDTH": 5}
    gpu = "conv2d read or wrote before the start of P (4096 elements): the GPU stopped it"
    shared = "thread (0,0,0) of block (0,0,0) wrote tile[20][3], 2 elements past the end of"
    fault = fault_of(lab, sizes, [gpu, shared + " __shared__ tile[20][20]"])
    assert hints.strayed(fault) == {"P": "before the start"}


def test_a_lab_replaces_the_cross_case_and_precision_hints():
    lab = get("conv2d")
    square = results("conv2d", lambda s: s["Width"] == s["Height"])
    assert hints.cross_case(replace(lab, cross_case_hints=()), square) is None
    own = replace(lab, cross_case_hints=(sizes_differ, hints.square_only))
    kind, found = hints.cross_case(own, square)
    assert kind == "sizes_differ" and found.startswith("The failing cases are the oblong")
    assert "Width and Height are exchanged" in found

    def off_in_precision(got, inputs, lab, case):
        off = 4 * PRECISION * 2.0**-24 * allowances(lab, case, inputs)["P"].magnitude
        return got + np.where(np.arange(got.size).reshape(got.shape) % 2, off, -off)

    lab, ctx = context("matmul-naive", {"Width": 64}, off_in_precision)
    assert hints.output_hint(ctx)[0] == "lower_precision"
    ctx.lab = replace(lab, precision_hints=())
    assert hints.output_hint(ctx) is None


# -- hint families ------------------------------------------------------------------------


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
