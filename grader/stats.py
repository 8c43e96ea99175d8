"""Summaries of timing samples, shared by the timing worker and the scoring."""

from __future__ import annotations

import statistics


def ratios(student_ms: list[float], reference_ms: list[float]) -> list[float]:
    """Per-round speedups: reference time over student time."""
    return [r / s for s, r in zip(student_ms, reference_ms, strict=True) if s > 0]


def relative_spread(values: list[float]) -> float:
    """Interquartile range over the median (the range itself below four values)."""
    if not values:
        return float("inf")
    middle = statistics.median(values)
    if middle <= 0:
        return float("inf")
    if len(values) < 4:
        return (max(values) - min(values)) / middle
    q1, _, q3 = statistics.quantiles(values, n=4)
    return (q3 - q1) / middle


def speedup(student_ms: list[float], reference_ms: list[float]) -> float:
    """Median of the per-round reference/student ratios."""
    found = ratios(student_ms, reference_ms)
    return statistics.median(found) if found else 0.0
