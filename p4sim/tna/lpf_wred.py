"""Tofino's low-pass filters and WRED: ``Lpf``, ``DirectLpf``, ``Wred``, ``DirectWred``.

Why it exists: Tofino's meter ALUs also run a first-order low-pass filter per cell (a program
smooths a packet length, a queue depth or any value with it) and WRED built on the same filter
(a drop/no-drop verdict that grows linearly with the smoothed queue depth). Intel's driver
configures each cell with an LPF spec (type RATE or SAMPLE, gain and decay time constants in ns,
output scale-down factor) or a WRED spec (time constant in ns, min/max thresholds, max drop
probability); this module is p4sim's model of both, per index or per table entry.

The model (Intel's public Tofino model, ``mau-lpf-meter.cpp``, computes the same quantities with
shift-and-add arithmetic):

* ``Δt`` is the time since the cell last ran; ``τ`` the time constant: for SAMPLE the gain
  (rise) constant when the input ``D`` exceeds the filter's value ``V``, else the decay (fall)
  constant; for RATE the gain constant (Tofino programs one constant for rate filters);
  ``k = e^(-Δt/τ)`` (``τ == 0``: ``k = 0``, the filter follows its input).
* SAMPLE: ``V' = V k + D (1 - k)``, an exponentially weighted moving average of the samples.
  RATE: ``V' = V k + D``, a decaying sum: for ``D`` every ``Δt`` it settles at ``D / (1 - k)``,
  about ``D τ / Δt``, i.e. the input's rate times ``τ``.
* The first execution of a cell (after configuration or reset) gives ``V' = D``, as on Tofino,
  whose cell timestamp lies far in the past then (``Δt ≥ 16 τ`` makes the hardware take ``D``).
* ``V'`` is kept as a 32-bit unsigned integer (rounded to nearest, saturating at 2^32 - 1);
  the LPF's output is ``V' >> output_scale_down_factor``, cut to the result type's width.
* WRED filters its input as a SAMPLE LPF with one time constant; with ``V'`` the smoothed
  value, the cell answers ``drop_value`` with probability 0 for ``V' <= min``,
  ``max_probability (V' - min) / (max - min)`` for ``min < V' <= max`` and 1 above ``max``,
  else ``no_drop_value``. An unconfigured WRED never drops (the driver's default thresholds
  are 0xff000000 cells); an unconfigured LPF passes its input through (SAMPLE, τ = 0).

Simplifications, stated in docs/p4sim.md: p4sim computes ``e^(-Δt/τ)`` exactly in double
precision for the whole ``Δt``, where Tofino decays by the largest power-of-two multiple of ``τ``
in ``Δt`` with a short Taylor series and carries the rest to the next update (single updates
round differently); times are p4sim's microsecond clock in ns; WRED's coin is Python's PRNG,
not Tofino's LFSR.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass

from p4sim.errors import UserError

V_MAX = (1 << 32) - 1
LPF_SAMPLE, LPF_RATE = "SAMPLE", "RATE"
MAX_SCALE_DOWN = 31


@dataclass(frozen=True)
class LpfSpec:
    """One LPF cell's configuration (bfrt's ``$LPF_SPEC_*`` fields)."""

    type: str = LPF_SAMPLE
    gain_time_constant_ns: float = 0.0
    decay_time_constant_ns: float = 0.0
    output_scale_down_factor: int = 0

    def check(self, what: str) -> LpfSpec:
        if self.type not in (LPF_SAMPLE, LPF_RATE):
            raise UserError(f"{what}: LPF type {self.type!r}, expected RATE or SAMPLE")
        for name in ("gain_time_constant_ns", "decay_time_constant_ns"):
            value = getattr(self, name)
            if not (math.isfinite(value) and value >= 0):
                raise UserError(f"{what}: {name} {value}: must be a finite number >= 0")
        if not 0 <= self.output_scale_down_factor <= MAX_SCALE_DOWN:
            raise UserError(f"{what}: output_scale_down_factor {self.output_scale_down_factor}: "
                            f"must be 0..{MAX_SCALE_DOWN}")
        return self


@dataclass(frozen=True)
class WredSpec:
    """One WRED cell's configuration (bfrt's ``$WRED_SPEC_*`` fields); thresholds are in the
    units of the value the program passes (Tofino: queue cells)."""

    time_constant_ns: float = 0.0
    min_thresh: int = 0xFF000000
    max_thresh: int = 0xFF000000
    max_probability: float = 0.0

    def check(self, what: str) -> WredSpec:
        if not (math.isfinite(self.time_constant_ns) and self.time_constant_ns >= 0):
            raise UserError(f"{what}: time_constant_ns {self.time_constant_ns}: must be a finite number >= 0")
        if not 0 <= self.min_thresh <= self.max_thresh <= V_MAX:
            raise UserError(f"{what}: thresholds min {self.min_thresh}, max {self.max_thresh}: "
                            f"need 0 <= min <= max <= {V_MAX}")
        if not 0.0 <= self.max_probability <= 1.0:
            raise UserError(f"{what}: max_probability {self.max_probability}: must be within 0..1")
        return self


class _FilterCell:
    """The state of one cell: its filter value and when it last ran (None: never)."""

    __slots__ = ("value", "last_ns")

    def __init__(self) -> None:
        self.value = 0
        self.last_ns: float | None = None

    def run(self, sample: int, now_ns: float, rate: bool, gain_ns: float, decay_ns: float) -> int:
        if self.last_ns is None:
            new = float(sample)
        else:
            dt = max(now_ns - self.last_ns, 0.0)
            tau = gain_ns if rate or sample > self.value else decay_ns
            k = math.exp(-dt / tau) if tau > 0 else 0.0
            new = self.value * k + (sample if rate else sample * (1.0 - k))
        self.last_ns = now_ns
        self.value = min(int(new + 0.5), V_MAX)
        return self.value


def _run_lpf(cell: _FilterCell, spec: LpfSpec, sample: int, now_us: int, out_mask: int) -> int:
    v = cell.run(sample, now_us * 1000.0, spec.type == LPF_RATE, spec.gain_time_constant_ns,
                 spec.decay_time_constant_ns)
    return (v >> spec.output_scale_down_factor) & out_mask


def _wred_verdict(cell: _FilterCell, spec: WredSpec, sample: int, now_us: int, rng: random.Random) -> bool:
    """True: drop. The cell filters the sample (SAMPLE, one time constant), then decides."""
    v = cell.run(sample, now_us * 1000.0, False, spec.time_constant_ns, spec.time_constant_ns)
    if v <= spec.min_thresh:
        return False
    if v > spec.max_thresh:
        return True
    span = spec.max_thresh - spec.min_thresh
    p = spec.max_probability * ((v - spec.min_thresh) / span if span else 1.0)
    return rng.random() < p


class Lpf:
    """``Lpf<T, I>(size)``: ``size`` cells, each with its own spec and state."""

    def __init__(self, name: str, size: int, width: int) -> None:
        self.name, self.size, self.width = name, size, width
        self._mask = (1 << width) - 1
        self.specs = [LpfSpec()] * size
        self.cells = [_FilterCell() for _ in range(size)]

    def execute(self, sample: int, index: int, now_us: int) -> int:
        """The filtered value of cell ``index`` after ``sample`` (an index past the end: 0)."""
        if not 0 <= index < self.size:
            return 0
        return _run_lpf(self.cells[index], self.specs[index], sample, now_us, self._mask)

    def configure(self, index: int, spec: LpfSpec) -> None:
        self.specs[index] = spec.check(f"Lpf '{self.name}'[{index}]")
        self.cells[index] = _FilterCell()

    def reset(self) -> None:
        self.specs = [LpfSpec()] * self.size
        self.cells = [_FilterCell() for _ in range(self.size)]


class DirectLpf:
    """``DirectLpf<T>()``: one cell per entry of its table (keyed by the entry object, so a
    deleted and re-added entry starts unconfigured)."""

    def __init__(self, name: str, width: int) -> None:
        self.name, self.width = name, width
        self._mask = (1 << width) - 1
        self._cells: dict[int, tuple[object, LpfSpec, _FilterCell]] = {}

    def _slot(self, entry: object) -> tuple[object, LpfSpec, _FilterCell]:
        slot = self._cells.get(id(entry))
        if slot is None or slot[0] is not entry:
            slot = self._cells[id(entry)] = (entry, LpfSpec(), _FilterCell())
        return slot

    def execute(self, sample: int, entry: object | None, now_us: int) -> int:
        if entry is None:
            return 0
        _, spec, cell = self._slot(entry)
        return _run_lpf(cell, spec, sample, now_us, self._mask)

    def spec(self, entry: object) -> LpfSpec:
        slot = self._cells.get(id(entry))
        return slot[1] if slot is not None and slot[0] is entry else LpfSpec()

    def configure(self, entry: object, spec: LpfSpec) -> None:
        self._cells[id(entry)] = (entry, spec.check(f"DirectLpf '{self.name}'"), _FilterCell())

    def reset(self) -> None:
        self._cells.clear()


class Wred:
    """``Wred<T, I>(size, drop_value, no_drop_value)``: ``execute`` answers one of the two."""

    def __init__(self, name: str, size: int, drop_value: int, no_drop_value: int) -> None:
        self.name, self.size = name, size
        self.drop_value, self.no_drop_value = drop_value & 0xFF, no_drop_value & 0xFF
        self.rng = random.Random()
        self.specs = [WredSpec()] * size
        self.cells = [_FilterCell() for _ in range(size)]

    def execute(self, sample: int, index: int, now_us: int) -> int:
        if not 0 <= index < self.size:
            return self.no_drop_value
        drop = _wred_verdict(self.cells[index], self.specs[index], sample, now_us, self.rng)
        return self.drop_value if drop else self.no_drop_value

    def configure(self, index: int, spec: WredSpec) -> None:
        self.specs[index] = spec.check(f"Wred '{self.name}'[{index}]")
        self.cells[index] = _FilterCell()

    def reset(self) -> None:
        self.specs = [WredSpec()] * self.size
        self.cells = [_FilterCell() for _ in range(self.size)]


class DirectWred:
    """``DirectWred<T>(drop_value, no_drop_value)``: one cell per entry of its table."""

    def __init__(self, name: str, drop_value: int, no_drop_value: int) -> None:
        self.name = name
        self.drop_value, self.no_drop_value = drop_value & 0xFF, no_drop_value & 0xFF
        self.rng = random.Random()
        self._cells: dict[int, tuple[object, WredSpec, _FilterCell]] = {}

    def execute(self, sample: int, entry: object | None, now_us: int) -> int:
        if entry is None:
            return self.no_drop_value
        slot = self._cells.get(id(entry))
        if slot is None or slot[0] is not entry:
            slot = self._cells[id(entry)] = (entry, WredSpec(), _FilterCell())
        drop = _wred_verdict(slot[2], slot[1], sample, now_us, self.rng)
        return self.drop_value if drop else self.no_drop_value

    def spec(self, entry: object) -> WredSpec:
        slot = self._cells.get(id(entry))
        return slot[1] if slot is not None and slot[0] is entry else WredSpec()

    def configure(self, entry: object, spec: WredSpec) -> None:
        self._cells[id(entry)] = (entry, spec.check(f"DirectWred '{self.name}'"), _FilterCell())

    def reset(self) -> None:
        self._cells.clear()


__all__ = ["LPF_RATE", "LPF_SAMPLE", "DirectLpf", "DirectWred", "Lpf", "LpfSpec", "Wred", "WredSpec"]
