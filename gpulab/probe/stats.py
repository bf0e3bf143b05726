"""Latency percentiles, computed the way the course's measurement file reports them.

The rule is nearest rank on the sorted sample, ``sorted[min(n - 1, int(q * n))]``:
with it the data file's rows are self-consistent (n=1000: p99.9 equals the
maximum; n=1500: p99.9 is the second largest sample, below the maximum).
Interpolating percentiles (numpy's default) would report values no request
ever had; a tail percentile should be a latency some request saw.
"""
from __future__ import annotations

from statistics import fmean

PERCENTILES = (("p50_ms", 0.50), ("p90_ms", 0.90), ("p99_ms", 0.99), ("p999_ms", 0.999))


def percentile(ordered: list[float], q: float) -> float:
    """The ``q`` quantile (0..1) of an ascending, non-empty list, by nearest rank."""
    if not ordered:
        raise ValueError("no samples")
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def summarize(latencies_ms: list[float]) -> dict[str, float | int]:
    """``{"n", "p50_ms", "p90_ms", "p99_ms", "p999_ms", "max_ms", "mean_ms"}`` rounded to 0.1 us, as the data file."""
    ordered = sorted(latencies_ms)
    row: dict[str, float | int] = {"n": len(ordered)}
    for key, q in PERCENTILES:
        row[key] = round(percentile(ordered, q), 4)
    row["max_ms"] = round(ordered[-1], 4)
    row["mean_ms"] = round(fmean(ordered), 4)
    return row
