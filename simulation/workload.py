"""Workloads for dlcp-sim: a model profile turned into the PS job's gradient groups, compute times,
and background flow-size distributions.

Why this exists: the training traffic must come from the same model profiles the host agent and the
Mininet evaluation use (host_agent/profiles/*.json) with backpropagation order and the same compute
model as host_agent/overlap.py (compute proportional to parameters, forward 1/3 and backward 2/3,
the total ``ratio`` x the time the worker's own gradients take on its link), and background from
the published web-search and data-mining flow-size CDFs (simulation/data/*.cdf, sources cited in
the files). Everything here is plain data; simulation/job.py hands it to the C++ side.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path

from host_agent.overlap import buckets_of

PROFILES = Path(__file__).resolve().parent.parent / "host_agent" / "profiles"
CDFS = Path(__file__).resolve().parent / "data"
BACKGROUNDS = ("web-search", "data-mining")
ELEM_BYTES = 4                 # float32 gradients


class WorkloadError(ValueError):
    """A bad workload argument: the message names what and where."""


@dataclass
class PsWorkload:
    """One PS job: gradient groups in model order (front first) and their compute times."""
    model: str
    scale: float               # bytes per group = the profile's bytes x scale
    group_bytes: list[int]     # model order
    layer_class: list[int]     # model order: front group 7 ... last group 0
    forward_s: list[float]
    backward_s: list[float]
    iterations: int

    @property
    def bytes_per_worker(self) -> int:
        return sum(self.group_bytes)


def ps_workload(model: str, scale: float, groups: int, iterations: int, host_bps: int,
                compute_ratio: float) -> PsWorkload:
    """The profile ``model`` (host_agent/profiles/<model>.json) cut into ``groups`` contiguous
    groups, each ``scale`` x its real size, with compute = ``compute_ratio`` x the worker's gradient
    time on a ``host_bps`` link (1/3 forward, 2/3 backward, per group by size)."""
    path = PROFILES / f"{model}.json"
    if not path.is_file():
        known = ", ".join(sorted(p.stem for p in PROFILES.glob("*.json")))
        raise WorkloadError(f"--model: unknown profile '{model}' (known: {known})")
    if not 0 < scale <= 1:
        raise WorkloadError(f"--scale: {scale} outside (0, 1]")
    layers = json.loads(path.read_text())["layers"]
    sizes = [int(layer["params"]) * ELEM_BYTES for layer in layers]
    parts = buckets_of(sizes, groups)        # the host agent's own grouping (DDP-like buckets)
    group_bytes = [max(ELEM_BYTES, int(sum(sizes[i] for i in g) * scale) // ELEM_BYTES * ELEM_BYTES) for g in parts]
    n = len(parts)
    layer_class = [7 - (k * 8) // n for k in range(n)]
    total = sum(group_bytes)
    compute = compute_ratio * total * 8 / host_bps
    share = [b / total for b in group_bytes]
    return PsWorkload(model, scale, group_bytes, layer_class, [compute / 3 * s for s in share],
                      [compute * 2 / 3 * s for s in share], iterations)


def load_cdf(name: str) -> tuple[list[float], list[float]]:
    """(bytes, cumulative probability) points of a background distribution (simulation/data)."""
    if name not in BACKGROUNDS:
        raise WorkloadError(f"--background-cdf: unknown '{name}' (known: {', '.join(BACKGROUNDS)})")
    path = CDFS / f"{name.replace('-', '_')}.cdf"
    xs: list[float] = []
    ps: list[float] = []
    for lineno, line in enumerate(path.read_text().splitlines(), 1):
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        try:
            x, p = (float(v) for v in line.split())
        except ValueError:
            raise WorkloadError(f"{path}:{lineno}: expected 'bytes probability', got '{line}'") from None
        if (xs and (x < xs[-1] or p < ps[-1])) or not 0 <= p <= 1 or math.isnan(x):
            raise WorkloadError(f"{path}:{lineno}: points must grow, probability in 0..1: '{line}'")
        xs.append(x)
        ps.append(p)
    if not ps or ps[-1] != 1.0:
        raise WorkloadError(f"{path}: the last point must have probability 1")
    return xs, ps


def cdf_mean(xs: list[float], ps: list[float]) -> float:
    """Mean of the piecewise-linear distribution (as the C++ sampler draws it)."""
    return sum((ps[i] - ps[i - 1]) * (xs[i] + xs[i - 1]) / 2 for i in range(1, len(xs)))
