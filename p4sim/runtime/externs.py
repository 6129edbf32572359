"""Stateful v1model externs: registers, counters, direct counters, meters, direct meters.

Contract 2 of docs/architecture.md. Data-plane calls follow simple_switch exactly, including
its out-of-range behaviour (``targets/simple_switch/primitives.cpp``): a register read at an
index >= size leaves the destination unchanged (``read`` returns the caller's ``default``), an
out-of-range write, count or meter execution does nothing. Control-plane calls (``set_cell``,
``write_cell``, ``set_config``...) raise ``ExternError`` for a bad index instead.

Meters are BMv2's two-rate three-colour marker: rates in units (packets or bytes) per
microsecond and burst sizes in units, as ``meter_set_rates`` takes them. Buckets start full;
tokens accrue from a fixed time origin; the peak bucket is checked first (short -> RED, nothing
taken), then the committed bucket (short -> YELLOW), exactly as ``src/bm_sim/meters.cpp``. An unconfigured meter
marks every packet GREEN.
"""

from __future__ import annotations

from dataclasses import dataclass

from p4sim.errors import UserError

GREEN, YELLOW, RED = 0, 1, 2
COUNTER_KINDS = ("packets", "bytes", "packets_and_bytes")
METER_KINDS = ("packets", "bytes")


class ExternError(UserError):
    """A control-plane operation on an extern with a bad index, value or configuration."""


def _check_index(kind: str, name: str, size: int, index: int) -> None:
    if not isinstance(index, int) or not 0 <= index < size:
        raise ExternError(f"{kind} {name}: index {index!r} out of range 0..{size - 1}")


class Register:
    """``register<bit<W>>(size)``: an array of W-bit cells, zero at start."""

    __slots__ = ("name", "size", "bitwidth", "cells", "_mask")

    def __init__(self, name: str, size: int, bitwidth: int) -> None:
        self.name, self.size, self.bitwidth = name, size, bitwidth
        self._mask = (1 << bitwidth) - 1
        self.cells = [0] * size

    def read(self, index: int, default: int = 0) -> int:
        """Data-plane read; out of range returns ``default`` (0: what simple_switch 1.15.5 writes)."""
        if 0 <= index < self.size:
            return self.cells[index]
        return default

    def write(self, index: int, value: int) -> None:
        """Data-plane write, truncated to the cell width; out of range does nothing."""
        if 0 <= index < self.size:
            self.cells[index] = value & self._mask

    def reset(self) -> None:
        self.cells = [0] * self.size

    def get_cell(self, index: int) -> int:
        _check_index("register", self.name, self.size, index)
        return self.cells[index]

    def set_cell(self, index: int, value: int) -> None:
        _check_index("register", self.name, self.size, index)
        if not 0 <= value <= self._mask:
            raise ExternError(f"register {self.name}: value {value} does not fit in bit<{self.bitwidth}>")
        self.cells[index] = value


class Counter:
    """``counter(size, type)``: per index [packets, bytes] (BMv2 keeps both for every type)."""

    __slots__ = ("name", "size", "kind", "cells")

    def __init__(self, name: str, size: int, kind: str = "packets_and_bytes") -> None:
        if kind not in COUNTER_KINDS:
            raise ExternError(f"counter {name}: unknown counter type {kind!r}")
        self.name, self.size, self.kind = name, size, kind
        self.cells = [[0, 0] for _ in range(size)]

    def count(self, index: int, nbytes: int) -> None:
        if 0 <= index < self.size:
            cell = self.cells[index]
            cell[0] += 1
            cell[1] += nbytes

    def write_cell(self, index: int, packets: int, nbytes: int) -> None:
        _check_index("counter", self.name, self.size, index)
        self.cells[index] = [packets, nbytes]

    def read_cell(self, index: int) -> tuple[int, int]:
        _check_index("counter", self.name, self.size, index)
        packets, nbytes = self.cells[index]
        return packets, nbytes

    def reset(self) -> None:
        self.cells = [[0, 0] for _ in range(self.size)]


class DirectCounter:
    """``direct_counter(type)``: the counts live in each ``TableEntry`` (packets, bytes)."""

    __slots__ = ("name", "kind", "table")

    def __init__(self, name: str, kind: str = "packets_and_bytes", table: str | None = None) -> None:
        if kind not in COUNTER_KINDS:
            raise ExternError(f"direct_counter {name}: unknown counter type {kind!r}")
        self.name, self.kind, self.table = name, kind, table

    @staticmethod
    def count(entry: object | None, nbytes: int) -> None:
        """Count one packet of ``nbytes`` against a table entry; a miss (None) counts nothing."""
        if entry is not None:
            entry.packets += 1
            entry.bytes += nbytes


@dataclass(slots=True)
class MeterConfig:
    """trTCM parameters: rates in units per microsecond, bursts in units."""

    cir: float
    cburst: int
    pir: float
    pburst: int


class _Bucket:
    __slots__ = ("rate", "burst", "tokens", "tokens_last", "color")

    def __init__(self, rate: float, burst: int, color: int) -> None:
        self.rate, self.burst, self.color = rate, burst, color
        self.tokens = burst
        self.tokens_last = 0


class MeterState:
    """One meter cell: two token buckets (peak, then committed), or unconfigured."""

    __slots__ = ("buckets",)

    def __init__(self) -> None:
        self.buckets: list[_Bucket] | None = None

    def configure(self, cfg: MeterConfig | None) -> None:
        if cfg is None:
            self.buckets = None
            return
        # BMv2 stores {CIR, PIR} then reverses: the peak bucket is checked first.
        self.buckets = [_Bucket(cfg.pir, cfg.pburst, RED), _Bucket(cfg.cir, cfg.cburst, YELLOW)]

    def execute(self, units: int, now_us: int) -> int:
        buckets = self.buckets
        if buckets is None:
            return GREEN
        for b in buckets:
            since_init = int(now_us * b.rate)
            if since_init > b.tokens_last:
                b.tokens = min(b.tokens + since_init - b.tokens_last, b.burst)
                b.tokens_last = since_init
            if b.tokens < units:
                return b.color
            b.tokens -= units
        return GREEN


def _check_config(what: str, cir: float, cburst: int, pir: float, pburst: int) -> MeterConfig:
    for label, v in (("committed rate", cir), ("committed burst", cburst), ("peak rate", pir),
                     ("peak burst", pburst)):
        if v < 0:
            raise ExternError(f"{what}: {label} {v} is negative")
    if cir > pir:
        raise ExternError(f"{what}: committed rate {cir} exceeds peak rate {pir} (BMv2 rejects this)")
    return MeterConfig(float(cir), int(cburst), float(pir), int(pburst))


class Meter:
    """``meter(size, type)``: an array of trTCM cells; ``execute`` returns 0/1/2 (G/Y/R)."""

    __slots__ = ("name", "size", "kind", "cells", "configs")

    def __init__(self, name: str, size: int, kind: str = "packets") -> None:
        if kind not in METER_KINDS:
            raise ExternError(f"meter {name}: unknown meter type {kind!r}")
        self.name, self.size, self.kind = name, size, kind
        self.cells = [MeterState() for _ in range(size)]
        self.configs: list[MeterConfig | None] = [None] * size

    def set_config(self, index: int, cir: float, cburst: int, pir: float, pburst: int) -> None:
        _check_index("meter", self.name, self.size, index)
        cfg = _check_config(f"meter {self.name}[{index}]", cir, cburst, pir, pburst)
        self.configs[index] = cfg
        self.cells[index].configure(cfg)

    def reset_config(self, index: int) -> None:
        _check_index("meter", self.name, self.size, index)
        self.configs[index] = None
        self.cells[index].configure(None)

    def execute(self, index: int, nbytes: int, now_us: int, default: int = GREEN) -> int:
        """Colour one packet; out of range returns ``default`` (GREEN = 0, as simple_switch 1.15.5)."""
        if not 0 <= index < self.size:
            return default
        units = 1 if self.kind == "packets" else nbytes
        return self.cells[index].execute(units, now_us)


class DirectMeter:
    """``direct_meter(type)``: per-entry trTCM state, keyed by the entry object."""

    __slots__ = ("name", "kind", "table", "_states")

    def __init__(self, name: str, kind: str = "packets", table: str | None = None) -> None:
        if kind not in METER_KINDS:
            raise ExternError(f"direct_meter {name}: unknown meter type {kind!r}")
        self.name, self.kind, self.table = name, kind, table
        self._states: dict[int, tuple[object, MeterState]] = {}

    def set_config(self, entry: object, cir: float, cburst: int, pir: float, pburst: int) -> None:
        cfg = _check_config(f"direct_meter {self.name}", cir, cburst, pir, pburst)
        entry.meter_config = cfg
        self._states.pop(id(entry), None)

    def execute(self, entry: object | None, nbytes: int, now_us: int) -> int:
        """Colour one packet against a table entry's meter; a miss or no config is GREEN."""
        if entry is None or entry.meter_config is None:
            return GREEN
        slot = self._states.get(id(entry))
        if slot is None or slot[0] is not entry:
            state = MeterState()
            state.configure(entry.meter_config)
            self._states[id(entry)] = (entry, state)
        else:
            state = slot[1]
        return state.execute(1 if self.kind == "packets" else nbytes, now_us)
