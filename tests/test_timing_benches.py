"""bench/timing_spread.py's replay, the traced worker's plan of bench/timing_policies.py and
bench/timing_timeline.py's wrappers, which only a GPU would otherwise exercise (a new
argument of the worker's Plan once left timing_policies.py recording nothing, unnoticed),
and the GPU benches' sentence where there is no GPU."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

from grader.backends.cuda import worker

ROOT = Path(__file__).resolve().parents[1]
spec = importlib.util.spec_from_file_location("timing_spread", ROOT / "bench" / "timing_spread.py")
spread = importlib.util.module_from_spec(spec)
spec.loader.exec_module(spread)  # puts the checkout on the path, for bench.timing_policies
from bench.timing_policies import Trace, fixed_plan  # noqa: E402


def test_the_traced_plan_takes_every_argument_the_worker_gives_its_plan():
    source = Path(worker.__file__).read_text()
    keywords = re.findall(r"(\w+)=", re.search(r"\bPlan\(([^)]*)\)", source).group(1))
    values = {"max_rounds": 5, "scored": (0.15, 0.6)}
    assert set(keywords) <= set(values), f"the worker now passes {keywords}"
    plan = fixed_plan(7)(3.0, **{k: values[k] for k in keywords})
    assert plan.min_rounds == plan.max_rounds == 5 and plan.target_error == 0.0


def _traces(ratios: list[float]) -> list[Trace]:
    rounds = [(0.012, 0.012 * r) for r in ratios]
    return [Trace((0.012, 0.012), rounds)]


def test_rounds_that_agree_give_five_gradings_that_agree_at_the_least_rounds():
    rounds, farthest, off = spread.replay("histogram/reference.cu", _traces([1.0]), "16:0.01", 20)
    assert (rounds, farthest, off) == (5, 0.0, 0.0)


NOISY = [0.95, 0.97, 0.99, 1.0, 1.0, 1.01, 1.03, 1.05]  # a 12 µs kernel's rounds


def test_a_stricter_shown_error_times_noisy_rounds_longer_and_steadies_the_speedup():
    noisy = _traces(NOISY)
    loose = spread.replay("histogram/reference.cu", noisy, "16:0.01:::-", 300)
    strict = spread.replay("histogram/reference.cu", noisy, "32:0.006:::-", 300)
    assert loose[0] < strict[0] <= 32
    assert strict[1] < loose[1] and strict[2] <= loose[2]


def test_a_brief_kernels_rounds_are_timed_to_the_brief_error_up_to_the_cap():
    """12 µs runs are a brief kernel's (defaults.TIMING_BRIEF_ROUND): the rule's shown
    error does not stop them, the brief tier's does, or the cap."""
    noisy = _traces(NOISY)
    shown = spread.replay("scan/reference.cu", noisy, "64:0.006:::-", 200)
    brief = spread.replay("scan/reference.cu", noisy, "64:0.006", 200)
    assert shown[0] + 10 < brief[0] <= 64
    assert brief[1] < shown[1] and brief[2] <= shown[2]
    capped = spread.replay("scan/reference.cu", noisy, "16:0.006", 50)
    assert capped[0] <= 16


def test_a_rule_may_say_under_what_a_rounds_kernels_are_brief():
    """After an @, a rule sets the milliseconds under which a round's kernels are brief
    (timed to the brief error): spmv-csr's 144 µs runs are not at 0.1 ms, and are at
    the default (defaults.TIMING_BRIEF_ROUND, 1 ms)."""
    noisy = [(0.144, 0.144 * r) for r in NOISY]
    traces = [Trace((0.144, 0.144), noisy)]
    short = spread.replay("spmv-csr/reference.cu", traces, "64:0.006:::0.003@0.1", 200)
    brief = spread.replay("spmv-csr/reference.cu", traces, "64:0.006", 200)
    assert short[0] + 10 < brief[0] <= 64 and brief[1] < short[1]
    assert spread.brief_round_s("0.003", "1") == 0.001 and spread.brief_round_s("-", "") == 0


def test_more_least_rounds_steady_a_speedup_that_stopped_on_a_lucky_spread():
    """Five rounds that happen to agree stop a noisy kernel's timing early (its spread
    estimated from five), so that gradings lie apart; a rule's fourth field, Plan's least
    rounds, times more before the spread is trusted."""
    noisy = _traces([0.97, 0.985, 0.99, 0.995, 1.0, 1.0, 1.005, 1.01, 1.015, 1.03])
    five = spread.replay("spmv-csr/reference.cu", noisy, "32:0.006", 300)
    twelve = spread.replay("spmv-csr/reference.cu", noisy, "32:0.006:0.005:12", 300)
    assert twelve[0] >= 12 and five[0] < twelve[0]
    assert twelve[1] < five[1] and twelve[2] <= five[2]


def test_a_kernel_may_be_timed_at_another_size():
    lab, file = spread.spec_lab("histogram/reference.cu@n=33554432")
    assert lab.timing_sizes == {"n": 1 << 25} and file == "reference.cu"


def test_the_timeline_records_each_wrapped_call_and_passes_its_value_on(monkeypatch):
    from types import SimpleNamespace

    from bench import timing_timeline
    from grader.grading import timing

    class Backend:
        def time(self, *args, **kwargs):
            return SimpleNamespace(checked=6, check_seconds=0.02)

    monkeypatch.setattr(timing.Expected, "_compute", lambda self, launch: [launch])
    monkeypatch.setattr(timing, "judge", lambda *args: ["untrusted"])
    monkeypatch.setattr(timing, "get_ready", lambda *args: "ready")
    line = timing_timeline.Timeline()
    timing_timeline.watch(line, Backend)
    assert timing.Expected._compute(None, 3) == [3]
    assert Backend().time().checked == 6
    assert timing.judge(None) == ["untrusted"]
    assert timing.get_ready(None) == "ready"
    names = [what for what, start, end in line.events]
    assert names[0].startswith("expected launch 3") and "6 launches checked" in names[1]
    assert names[2].startswith("judge") and names[3].startswith("made ready")
    assert all(0 <= s <= e for _, s, e in line.events)


def test_the_gpu_benches_need_a_gpu_and_say_so(monkeypatch, capsys):
    from bench import gpu_labs, timing_timeline

    monkeypatch.setattr("grader.backends.gpu_status", lambda: (False, "no GPU here"))
    for bench in (timing_timeline, gpu_labs):
        assert bench.main(["--labs", "histogram"]) == 2
        assert "needs a usable NVIDIA GPU: no GPU here" in capsys.readouterr().err
    assert spread.main(["--kernels", "histogram/reference.cu"]) == 2
    assert "GPU to record (or --traces): no GPU here" in capsys.readouterr().err
