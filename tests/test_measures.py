"""The "why this speed" section's shared pieces (grader/report/measures.py): who measured
which case, each measure of the two profiles side by side, the notes and the roofline."""

from __future__ import annotations

from dataclasses import replace

import profile_kit as kit

from grader.model.profile import KernelProfile, Source
from grader.report import measures


def _rows(report) -> dict[str, tuple[str, str]]:
    return {r.label: (r.student, r.reference) for r in measures.rows(report)}


def test_the_measures_side_by_side():
    rows = _rows(kit.report(kit.rows_from_x(), kit.naive()))
    assert rows["global loads: sectors per request"] == ("8.5", "2")
    assert rows["global stores: sectors per request"] == ("16", "2")
    assert rows["global bytes per output element"] == ("516", "516")
    assert rows["FLOPs per global byte"] == ("0.25", "0.25")
    assert rows["idle lanes in memory requests"] == ("0%", "0%")
    assert rows["occupancy"] == ("64/64 warps per SM (threads)",) * 2
    # what neither kernel does is not a row
    assert not any(label.startswith(("shared", "atomics", "constant")) for label in rows)


def test_conflicts_atomics_and_a_measure_only_one_side_has():
    rows = _rows(kit.report(kit.global_atomics(), kit.histogram_reference()))
    assert rows["atomics on global memory"] == ("1000", "250")
    assert rows["atomics on shared memory"] == ("-", "1000")
    assert rows["shared loads: bank conflicts per request"] == ("-", "0")
    assert "FLOPs per global byte" in rows  # the kit counts FLOPs for every lab
    rows = _rows(kit.report(kit.tile_read_down_column(), kit.tiled_reference()))
    assert rows["shared loads: bank conflicts per request"] == ("15.5", "1")
    assert rows["occupancy"] == (
        "64/64 warps per SM (threads)",
        "16/64 warps per SM (registers)",
    )


def test_a_lab_without_flops_has_no_intensity_row():
    student = replace(kit.global_atomics(), useful_flops=0.0)
    assert "FLOPs per global byte" not in _rows(kit.report(student, student))


def test_a_lab_of_several_kernels_has_an_occupancy_row_for_each():
    scan = kit.profile(
        KernelProfile("scan", occupancy=kit.FULL),
        KernelProfile("scan_sums", occupancy=kit.occupancy(8, "shared memory")),
        KernelProfile("add_sums"),
        outputs=1024,
    )
    rows = _rows(kit.report(scan, scan))
    assert rows["occupancy of scan_sums"] == ("8/64 warps per SM (shared memory)",) * 2
    assert "occupancy of add_sums" not in rows


def test_who_measured_which_case():
    report = kit.report(kit.rows_from_x(), kit.naive())
    assert measures.profiled(report) == "case width-64 (Width=64), measured by the CPU model"
    ncu = replace(kit.naive(), source=Source.NSIGHT_COMPUTE)
    assert measures.profiled(kit.report(ncu, kit.naive())).endswith(
        "measured by Nsight Compute (the reference's by the CPU model)"
    )


def test_notes_say_what_was_not_measured():
    student = replace(kit.rows_from_x(), note="occupancy was not computed: no nvcc")
    assert measures.notes(kit.report(student, kit.naive())) == [
        "Your kernel: occupancy was not computed: no nvcc"
    ]
    report = kit.report(kit.rows_from_x(), None)
    assert measures.notes(report) == [
        "The reference could not be profiled, so nothing is compared."
    ]
    assert set(_rows(report)["global loads: sectors per request"]) == {"8.5", "-"}
    assert report.advice == []


def test_the_roofline_in_a_sentence():
    assert measures.roofline(kit.roofline()) == (
        "Roofline: yours 800 GFLOP/s at 0.5 FLOP/byte, 1600 GB/s; the reference's 5200 "
        "GFLOP/s at 1.7 FLOP/byte, 3000 GB/s; this GPU's ceilings 4000 GB/s and 60000 "
        "GFLOP/s (global bytes requested, an upper estimate)."
    )
    assert "at 0" not in measures.roofline(kit.roofline(flops=False))


def test_the_section_as_lines():
    report = kit.report(kit.rows_from_x(), kit.naive(), kit.roofline())
    lines = measures.section(report).lines()
    assert lines[0] == "Why this speed: case width-64 (Width=64), measured by the CPU model"
    assert "global loads: sectors per request: yours 8.5, the reference's 2" in lines
    assert lines[-2].startswith("Global loads and stores are uncoalesced")
    assert lines[-1].startswith("Roofline: ")


def test_an_occupancy_without_registers_is_said_to_be_the_most():
    """No nvcc: the registers per thread are unknown, so the row is an upper bound."""
    guess = replace(kit.occupancy(16, "shared memory"), registers_counted=False)
    student = kit.profile(KernelProfile("reduction", occupancy=guess), outputs=1)
    rows = _rows(kit.report(student, None))
    assert rows["occupancy"][0] == (
        "at most 16/64 warps per SM (shared memory), registers not counted"
    )
