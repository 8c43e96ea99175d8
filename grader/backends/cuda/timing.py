"""How long to keep timing, and what the samples say.

Each round times the student and the reference launch once, back to back, so the
per-round ratio reference/student cancels slow drifts of the clock. Timing stops once
the ratios' relative spread (interquartile range over the median, as the report shows
it) is under the target, or when the next round would not fit the budget."""

from __future__ import annotations

from dataclasses import dataclass

from grader import defaults
from grader.backends.timed import WARMUPS
from grader.stats import ratios, relative_spread

FLUSH_BYTES = 256 << 20  # cleared before every timed launch: several times any L2
ROUND_OVERHEAD_S = 0.002  # launches, events and the flush, beyond the kernels themselves


@dataclass(frozen=True)
class Plan:
    budget_s: float
    target_spread: float = defaults.TIMING_TARGET_SPREAD
    min_rounds: int = defaults.TIMING_MIN_ROUNDS
    max_rounds: int = defaults.TIMING_MAX_ROUNDS

    def warmups(self, slowest_s: float) -> int:
        """Warm-up launches of each kernel after the first: none for a slow kernel, whose
        first run already brought the clocks up and whose repeats would eat the budget."""
        return 0 if slowest_s > 0.05 else WARMUPS

    def stop_reason(
        self,
        student_ms: list[float],
        reference_ms: list[float],
        elapsed_s: float,
        round_s: float,
    ) -> str | None:
        """Why to stop now, or None to time another round. `round_s` is what one more
        round is expected to cost."""
        rounds = len(student_ms)
        if rounds >= self.min_rounds:
            spread = relative_spread(ratios(student_ms, reference_ms))
            if spread < self.target_spread:
                return f"spread {spread:.2%} is under {self.target_spread:.0%}"
        if rounds >= self.max_rounds:
            return f"reached {self.max_rounds} rounds"
        if elapsed_s + round_s > self.budget_s:
            return f"the {self.budget_s:g} s budget is spent"
        return None


def note(rounds: int, reason: str, spread: float) -> str:
    flushed = f"L2 flushed ({FLUSH_BYTES >> 20} MB memset) before every launch"
    text = f"{rounds} interleaved rounds, CUDA events, {flushed}; stopped because {reason}"
    if "spread" in reason:
        return text + "."
    return f"{text}; the per-round speedup spread {spread:.2%}."
