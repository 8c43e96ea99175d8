"""What is CUDA's own in timing a pair of launches: the L2 flush before each, what a round
costs beyond the kernels, and the note that says how it was timed. When to stop is
grader.backends.timing.Plan's."""

from __future__ import annotations

FLUSH_BYTES = 256 << 20  # cleared before every timed launch: several times any L2
ROUND_OVERHEAD_S = 0.002  # launches, events and the flush, beyond the kernels themselves


def note(rounds: int, reason: str) -> str:
    """How the pair was timed and why timing stopped: the grader adds what the rounds say
    (grader.grading.timing.performance_of)."""
    flushed = f"L2 flushed ({FLUSH_BYTES >> 20} MB memset) before every launch"
    return f"{rounds} interleaved rounds, CUDA events, {flushed}; stopped because {reason}"
