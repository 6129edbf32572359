"""Statistics of repeated runs: median, mean and p99 with bootstrap 95 % confidence intervals.

Samples are iteration times grouped by seed (one seed = one run of a mode). Iterations of one run
share that run's conditions, so the intervals come from a two-level (hierarchical) bootstrap:
resample the seeds with replacement, then the iterations within each drawn seed. Percentiles
interpolate linearly between order statistics (numpy's default), so the p99 of 35 samples is not
simply the maximum. Two estimates whose intervals overlap are reported as "no significant
difference" — the comparison is not claimed either way.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

STATS: dict[str, Callable[[np.ndarray], float]] = {
    "median": lambda a: float(np.median(a)),
    "mean": lambda a: float(np.mean(a)),
    "p99": lambda a: float(np.percentile(a, 99)),
}


@dataclass(frozen=True)
class Estimate:
    value: float
    lo: float
    hi: float

    def overlaps(self, other: Estimate) -> bool:
        return self.lo <= other.hi and other.lo <= self.hi

    def text(self, digits: int = 3) -> str:
        return f"{self.value:.{digits}f} [{self.lo:.{digits}f}, {self.hi:.{digits}f}]"

    def as_dict(self) -> dict:
        return {"value": self.value, "lo": self.lo, "hi": self.hi}


def bootstrap(by_seed: Mapping[int, Sequence[float]], stat: Callable[[np.ndarray], float],
              rounds: int = 2000, seed: int = 0, level: float = 0.95) -> Estimate:
    """``stat`` of all samples, with a hierarchical bootstrap interval (seeds, then iterations)."""
    groups = [np.asarray(v, float) for v in by_seed.values() if len(v)]
    if not groups:
        raise ValueError("no samples")
    value = stat(np.concatenate(groups))
    rng = np.random.default_rng(seed)
    draws = np.empty(rounds)
    for i in range(rounds):
        picked = rng.integers(0, len(groups), len(groups))
        parts = [groups[g][rng.integers(0, len(groups[g]), len(groups[g]))] for g in picked]
        draws[i] = stat(np.concatenate(parts))
    alpha = (1 - level) / 2
    lo, hi = np.quantile(draws, [alpha, 1 - alpha])
    return Estimate(value, float(min(lo, value)), float(max(hi, value)))


def summarise(by_seed: Mapping[int, Sequence[float]], rounds: int = 2000) -> dict[str, Estimate]:
    """median, mean and p99 of the samples, each with its 95 % interval."""
    return {name: bootstrap(by_seed, fn, rounds, seed=i) for i, (name, fn) in enumerate(STATS.items())}


def ratio(a: Mapping[int, Sequence[float]], b: Mapping[int, Sequence[float]], stat: str,
          rounds: int = 2000) -> Estimate:
    """stat(a) / stat(b) with a bootstrap interval (a and b resampled independently)."""
    fn = STATS[stat]
    ga = [np.asarray(v, float) for v in a.values() if len(v)]
    gb = [np.asarray(v, float) for v in b.values() if len(v)]
    value = fn(np.concatenate(ga)) / fn(np.concatenate(gb))
    rng = np.random.default_rng(7)
    draws = np.empty(rounds)

    def resample(groups: list[np.ndarray]) -> np.ndarray:
        picked = rng.integers(0, len(groups), len(groups))
        return np.concatenate([groups[g][rng.integers(0, len(groups[g]), len(groups[g]))] for g in picked])

    for i in range(rounds):
        draws[i] = fn(resample(ga)) / fn(resample(gb))
    lo, hi = np.quantile(draws, [0.025, 0.975])
    return Estimate(value, float(min(lo, value)), float(max(hi, value)))
