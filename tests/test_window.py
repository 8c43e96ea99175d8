"""A timing's phases (grader.backends.window): laps summed by phase, read back from a
worker with anything odd left out, and the held window's unaccounted rest."""

from __future__ import annotations

import time

from grader.backends import window


def test_laps_add_up_by_phase_and_chain():
    measured = window.Window()
    start = time.perf_counter()
    time.sleep(0.01)
    middle = measured.lap(window.LAUNCHES, start)
    time.sleep(0.01)
    measured.lap(window.WAITS, middle)
    measured.lap(window.LAUNCHES, time.perf_counter())
    sent = measured.to_json()
    assert set(sent) == set(window.PHASES)
    assert 0.01 <= sent[window.LAUNCHES] < 0.1 and 0.01 <= sent[window.WAITS] < 0.1
    assert sent[window.HELD] == 0.0


def test_only_known_phases_with_finite_seconds_are_read():
    sent = {window.L2: 0.001, window.WAITS: float("inf"), window.AFTER: -1, "mine": 2, 3: 1}
    assert window.read(sent) == {window.L2: 0.001}
    assert window.read([window.L2, 1.0]) == {} and window.read(None) == {}
    assert window.read({"compile": 1.0}, ("compile",)) == {"compile": 1.0}


def test_the_rest_of_the_held_window_is_what_no_phase_inside_took():
    phases = {window.HELD: 0.2, window.WAITS: 0.06, window.LAUNCHES: 0.04, window.GATE: 1.0}
    assert abs(window.other(phases) - 0.1) < 1e-12  # the wait for the gate is outside it
    assert window.other({window.WAITS: 0.1}) == 0.0


def test_no_phase_shares_a_name_with_a_stage():
    from grader.course import stages

    assert not set(window.PHASES) & set(stages.STAGES)
    assert window.OTHER not in window.PHASES  # computed, never sent
