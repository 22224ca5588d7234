"""Figures shared by the benchmarks."""

from __future__ import annotations

import statistics


def percentile(values: list[float], q: float) -> float:
    """The ``q`` quantile (0..1) of ``values``, nearest rank."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def summary(values: list[float]) -> str:
    """Median, p90 and range of timings in ms, as the benchmarks print them."""
    return (
        f"median {statistics.median(values):7.1f} ms  p90 {percentile(values, 0.9):7.1f} ms"
        f"  min..max {min(values):.1f}..{max(values):.1f}  (n={len(values)})"
    )
